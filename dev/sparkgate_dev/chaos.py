"""The chaos suite: the whole multi-machine shape on one machine, under load, through faults.

Two ``sparkgate server`` nodes share a fresh PostgreSQL database (reached through a TCP proxy
the suite can pause), one home (warehouse, metastore, results, checkpoints) and a Spark
standalone cluster (their engines are applications there). Four sessions submit small, large,
failing and cancelled queries through both nodes, and a stream job writes a counter into a
table. Faults are injected one after another; after each, the load pauses and the invariants
are checked. ``bench/chaos.py`` runs the full form and prints the table; the short form runs in
the tests (tests/e2e/test_cluster.py).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import make_url

from sparkgate.client import FINAL_STATES, Client, ClientError
from sparkgate.schemas.queries import Query
from sparkgate.settings import Settings
from sparkgate.states import LIVE_ENGINE_STATES, TERMINAL_STATEMENT_STATES
from sparkgate.store import Store
from sparkgate_dev import (
    TEST_SPARK_CONF,
    ServerProcess,
    cluster,
    env_for,
    eventually,
    free_port,
    local_test_settings,
)
from sparkgate_dev.proxy import TcpProxy

T = TypeVar("T")

PG_ADMIN_URL = os.environ.get(
    "SPARKGATE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
# The release before this one: the store starts at its schema, and the last fault restarts a
# node with the newer migration pending while the other node runs on (0008 adds tables only,
# for the Spark Connect door, which the rig leaves off; 0009 a table of idempotency keys,
# which a node on the older schema ignores, as the release before did; so both releases'
# code runs on either schema: the expand step of an expand/contract upgrade).
OLD_REVISION = "0007_keyset_indexes"
STREAM_JOB = "chaos-counter"
SINK_TABLE = "chaos_counter"
STRAY_GRACE = 5.0  # seconds a process killed at close may take to be gone


@dataclass(frozen=True)
class Profile:
    name: str
    heartbeat_timeout: float  # engines' heartbeat timeout (the issue measured with 15 s)
    outage: float  # how long the store is unreachable
    load_before: float  # seconds of load before each fault
    load_after: float  # seconds of load after recovery, before the checks
    # Seconds a query may take beyond the heartbeat timeout (and an outage) to be final: the
    # longest query of the mix under the load, and the reaper's round.
    slack: float = 30.0


# The short form (CI) keeps every fault and check, with the load running 3 s either side. Its
# slack is the longest query of the mix on the slowest machine it met: the large query, on an
# engine relaunched after "kill -9 engine drivers", ran 37.5 s on a machine running Spark at
# half the speed of earlier days (raw PySpark's CPU per statement, bench/cpu.py, 85-95 ms
# against 35-49). A query stuck still fails the check, a minute after the timeout.
SHORT = Profile(
    "short", heartbeat_timeout=6.0, outage=9.0, load_before=3.0, load_after=3.0, slack=60.0
)
FULL = Profile("full", heartbeat_timeout=15.0, outage=15.0, load_before=20.0, load_after=15.0)

# What the sessions submit, and what each must end as when nothing goes wrong.
SMALL = "SELECT id, id * 2 AS twice FROM range(100)"
LARGE = "SELECT id % 10 AS k, count(*) AS n FROM range(20000000) GROUP BY id % 10 ORDER BY k"
FAILING = "SELECT * FROM chaos_no_such_table"
ENDLESS = "SELECT sum(id % 7) FROM range(100000000000)"
QUERIES: dict[str, tuple[str, str]] = {
    "small": (SMALL, "success"),
    "large": (LARGE, "success"),
    "failing": (FAILING, "failed"),
    "cancelled": (ENDLESS, "cancelled"),
}
EXPECTED_ROWS: dict[str, list[list[Any]]] = {
    "small": [[i, i * 2] for i in range(100)],
    "large": [[k, 2_000_000] for k in range(10)],
}
MIX = ["small", "large", "failing", "small", "cancelled"]
WORKER_SLOTS = 4


# -- a fresh database ---------------------------------------------------------------------


@contextlib.contextmanager
def fresh_database(admin_url: str = PG_ADMIN_URL) -> Iterator[str]:
    """A new PostgreSQL database (its URL), dropped afterwards with whatever still uses it."""
    name = f"sgchaos_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def through(url: str, proxy: TcpProxy) -> str:
    """``url`` with its host and port those of ``proxy``."""
    return make_url(url).set(host="127.0.0.1", port=proxy.port).render_as_string(False)


# -- clients that fail over ---------------------------------------------------------------


class Failover:
    """Calls alternate between the nodes, as clients behind a load balancer would; each goes
    through sparkgate's own :class:`Client` over every node (this node first), which fails
    over to the next node when one cannot answer, for up to ``patience`` seconds."""

    def __init__(self, urls: list[str], *, patience: float = 180.0) -> None:
        self.clients = [
            Client(urls[i:] + urls[:i], timeout=60, patience=patience) for i in range(len(urls))
        ]
        self._turn = itertools.count()

    def call(self, fn: Callable[[Client], T]) -> T:
        return fn(self.clients[next(self._turn) % len(self.clients)])

    def close(self) -> None:
        for client in self.clients:
            client.close()

    def __enter__(self) -> Failover:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the rig ------------------------------------------------------------------------------


class Rig:
    """PostgreSQL (through a proxy), a standalone cluster and two nodes, all under ``root``;
    :meth:`close` stops every process it started, by pid, and drops the database."""

    def __init__(self, root: Path, profile: Profile, *, log: Callable[[str], None] = print):
        self.root = root
        self.profile = profile
        self.log = log
        self.home = root / "home"  # storage both nodes see: warehouse, results, checkpoints
        self.nodes: list[ServerProcess | None] = [None, None]
        self._stack = contextlib.ExitStack()
        self.metastore_port = free_port()
        self.direct_url = ""
        self.proxy: TcpProxy | None = None
        self.info: cluster.ClusterInfo | None = None

    # lifecycle

    def start(self) -> Rig:
        try:
            self.direct_url = self._stack.enter_context(fresh_database())
            self.proxy = TcpProxy(("127.0.0.1", make_url(self.direct_url).port or 5432))
            self.proxy.start()
            self._stack.callback(self.proxy.stop)
            self.log("starting the standalone cluster")
            # Four executor slots on the two-core machine: the shared engine keeps one, the
            # stream's engine holds one, and a warm engine takes one for its first 30 s. With
            # two, an engine relaunched after a fault waited out another's idle executor (30 s)
            # before its first task, which the invariants then counted against sparkgate
            # (CI: a query final 40 s after submission, 36 s allowed).
            self.info = cluster.start(self.root / "cluster", cores=WORKER_SLOTS)
            self._stack.callback(cluster.stop, self.root / "cluster")
            for i in range(2):
                self.start_node(i, OLD_REVISION)
            self.nodes_live()[0].wait_engines_running()
        except BaseException:
            self.close()
            raise
        return self

    def settings(self, revision: str) -> Settings:
        assert self.proxy is not None and self.info is not None
        hb = self.profile.heartbeat_timeout
        return local_test_settings(
            self.home,
            store_url=through(self.direct_url, self.proxy),
            store_revision=revision,
            spark_master=self.info.master_url,
            spark_conf=TEST_SPARK_CONF,
            metastore_uri=None,
            metastore_port=self.metastore_port,
            warm_engines=1,  # the default: a warm engine shares the cluster too
            engine_heartbeat_interval=1.0,
            engine_heartbeat_timeout=hb,
            lease_ttl=max(3.0, hb / 2),
        )

    def start_node(self, i: int, revision: str) -> ServerProcess:
        node = ServerProcess(self.settings(revision)).start()
        self.nodes[i] = node
        self.log(f"node {'AB'[i]} up on {node.url} (schema {revision})")
        return node

    def kill_node(self, i: int, sig: int = signal.SIGKILL) -> None:
        node = self.nodes[i]
        assert node is not None
        node.stop(sig)
        self.nodes[i] = None

    def nodes_live(self) -> list[ServerProcess]:
        return [node for node in self.nodes if node is not None]

    def failover(self, **kwargs: Any) -> Failover:
        """A client over the nodes as they are now (node A's URL first)."""
        return Failover([n.url for n in self.nodes_live()], **kwargs)

    @contextlib.contextmanager
    def store(self) -> Iterator[Store]:
        """The suite's own view of the store: straight to PostgreSQL, past the proxy."""
        store = Store.open(self.direct_url, hints=False)
        try:
            yield store
        finally:
            store.close()

    def engine_pids(self) -> list[int]:
        with self.store() as store:
            return [e.pid for e in store.engines.list_all() if e.pid is not None]

    def close(self) -> list[int]:
        """Stop everything the way a user would (nodes, then ``sparkgate stop``, then the
        cluster); the processes of the rig still alive afterwards (none, if all went well),
        which are then killed."""
        if self.proxy is not None:
            self.proxy.resume()
        for i, node in enumerate(self.nodes):
            if node is not None:
                node.stop()
                self.nodes[i] = None
        if self.direct_url:
            settings = self.settings("head")
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(
                    [sys.executable, "-m", "sparkgate.cli.main", "stop"],
                    env=env_for(settings),
                    cwd=self.root,
                    capture_output=True,
                    timeout=180,
                    check=False,
                )
        self._stack.close()  # the cluster, the proxy, the database
        # What was just killed (the worker's group: executors and their Python workers) may
        # be a moment from gone: a process still here after STRAY_GRACE is one left behind.
        deadline = time.monotonic() + STRAY_GRACE
        stray = processes_under(self.root)
        while stray and time.monotonic() < deadline:
            time.sleep(0.2)
            stray = processes_under(self.root)
        for pid in stray:
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                self.log(f"stray process {pid}: {command.decode(errors='replace')[:300]}")
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        return stray


def processes_under(root: Path) -> list[int]:
    """Processes (other than this one) whose command line or working directory is under
    ``root``: nodes, engines, executors, the cluster's daemons and the metastore all are."""
    found = []
    mark = str(root)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if mark in cmdline or cwd.startswith(mark):
            found.append(int(entry.name))
    return found


# -- the load -----------------------------------------------------------------------------


@dataclass
class Trace:
    kind: str
    phase: str
    session_id: int
    id: int | None = None
    state: str | None = None
    error_code: str | None = None
    submitted_at: float = 0.0
    ended_at: float | None = None

    @property
    def expected(self) -> str:
        return QUERIES[self.kind][1]

    @property
    def affected(self) -> bool:
        return self.state is not None and self.state != self.expected


class LoadStopped(Exception):
    """The load was stopped while one of its threads waited: the query in hand is dropped."""


class Load:
    """``sessions`` threads, each with a session of its own, submitting the mix through both
    nodes in turn until paused; a session that dies (its engine lost) is replaced.

    :meth:`stop` ends every thread and joins it, so none outlives the caller: a thread left
    running would go on calling the nodes (and logging through whatever logging holds then)
    after the test that started it has ended."""

    # Seconds :meth:`stop` lets the threads see it on their own (each waits at most one long
    # poll) before it closes their clients under them, and then waits for them at most.
    STOP_GRACE = 15.0
    STOP_TIMEOUT = 120.0

    def __init__(self, rig: Rig, sessions: int = 4) -> None:
        self.rig = rig
        self.sessions = sessions
        self.traces: list[Trace] = []
        self.phase = "warm-up"
        self.errors: list[str] = []
        self.sessions_replaced = 0
        # Submits whose node died before answering: the query may or may not have been taken
        # (a client cannot know; it is not sent again). Not traced, so not checked.
        self.unanswered = 0
        self._lock = threading.Lock()
        self._running = threading.Event()
        self._stop = threading.Event()
        self._idle = [threading.Event() for _ in range(sessions)]
        self._failovers: list[Failover | None] = [None] * sessions  # each thread's, for stop()
        self._threads = [
            threading.Thread(target=self._work, args=(i,), name=f"load-{i}", daemon=True)
            for i in range(sessions)
        ]

    def start(self, phase: str) -> None:
        self.phase = phase
        self._running.set()
        for thread in self._threads:
            thread.start()

    def resume(self, phase: str) -> None:
        self.phase = phase
        self._running.set()

    def pause(self, timeout: float = 300) -> None:
        """Let every thread finish the query in hand, then hold."""
        self._running.clear()
        for idle in self._idle:
            if not idle.wait(timeout):
                self.errors.append("a load thread did not come to rest")

    def stop(self) -> None:
        """End every thread and join it; the queries in hand are abandoned, not waited for.
        Raises if a thread is still running afterwards (it would outlive the test)."""
        self._stop.set()
        self._running.set()
        started = [t for t in self._threads if t.ident is not None]
        deadline = time.monotonic() + self.STOP_GRACE
        for thread in started:
            thread.join(max(0.0, deadline - time.monotonic()))
        # Still in a client call (a request, or a failover's patience): closing the thread's
        # clients makes that call fail at once, and the thread ends on it.
        for index, thread in enumerate(self._threads):
            failover = self._failovers[index]
            if thread.is_alive() and failover is not None:
                failover.close()
        deadline = time.monotonic() + self.STOP_TIMEOUT
        for thread in started:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in started if t.is_alive()]
        if alive:
            raise AssertionError(f"load threads still running after stop: {alive}")

    def _stopped(self) -> None:
        if self._stop.is_set():
            raise LoadStopped

    def of_phase(self, phase: str) -> list[Trace]:
        with self._lock:
            return [t for t in self.traces if t.phase == phase]

    def _work(self, index: int) -> None:
        failover: Failover | None = None
        session: int | None = None
        kinds = itertools.cycle(MIX[index % len(MIX) :] + MIX[: index % len(MIX)])
        try:
            while not self._stop.is_set():
                if not self._running.is_set():
                    self._idle[index].set()
                    self._running.wait()
                    if failover is not None:
                        failover.close()
                    failover = self._failovers[index] = None  # the nodes may have changed
                    continue
                self._idle[index].clear()
                if failover is None:
                    failover = self._failovers[index] = self.rig.failover()
                try:
                    if session is None:
                        session = self._open(failover)
                    if not self._run(failover, session, next(kinds)):
                        session = None
                        self.sessions_replaced += 1
                except Exception as exc:
                    if self._stop.is_set():
                        break  # stopped mid-query (LoadStopped, or its clients closed by stop)
                    # recorded: the "load ran clean" invariant fails on it
                    self.errors.append(f"load {index}: {type(exc).__name__}: {exc}")
                    session = None
                    time.sleep(0.5)
        finally:
            self._idle[index].set()
            if failover is not None:
                failover.close()

    def _open(self, failover: Failover, tries: int = 5) -> int:
        """A new idle session (a session whose engine dies while it starts is replaced)."""
        for _ in range(tries):
            self._stopped()
            try:
                created = failover.call(lambda c: c.create_session())
            except ClientError as exc:
                if exc.status != 0:
                    raise
                self.unanswered += 1  # its node died before answering: open another
                continue
            session_id = int(created.id)

            def ready(session_id: int = session_id) -> str | None:
                self._stopped()
                state = str(failover.call(lambda c: c.session(session_id)).state)
                return state if state in {"idle", "dead", "error", "killed"} else None

            if eventually(ready, timeout=300, interval=0.3, what=f"session {session_id}") == "idle":
                return session_id
        raise ClientError(409, "SESSION_NOT_READY", f"no session became idle in {tries} tries")

    def _run(self, failover: Failover, session_id: int, kind: str) -> bool:
        """One query, to its end; False if its session can take no more."""
        trace = Trace(kind, self.phase, session_id, submitted_at=time.time())
        try:
            submitted = failover.call(lambda c: c.submit(QUERIES[kind][0], session_id=session_id))
        except ClientError as exc:
            if exc.status in {400, 404, 409}:
                return False  # the session is gone: its engine was lost
            if exc.status == 0:
                self.unanswered += 1
                return False  # the session may be running the unanswered query: a new one
            raise
        trace.id = int(submitted.id)
        with self._lock:
            self.traces.append(trace)
        query_id = trace.id
        if kind == "cancelled":

            def started() -> bool:
                self._stopped()
                return bool(failover.call(lambda c: c.query(query_id)).state != "waiting")

            eventually(started, timeout=300, interval=0.2, what=f"query {query_id} to start")
            with contextlib.suppress(ClientError):  # it may have ended meanwhile
                failover.call(lambda c: c.cancel(query_id))
        final = wait_final(failover, query_id, stop=self._stop)
        trace.state = str(final.state)
        trace.error_code = final.error.code if final.error else None
        trace.ended_at = time.time()
        return trace.error_code != "ENGINE_LOST"


def wait_final(
    failover: Failover,
    query_id: int,
    timeout: float = 600,
    *,
    stop: threading.Event | None = None,
) -> Query:
    """The query once final; raises :class:`LoadStopped` as soon as ``stop`` is set."""
    deadline = time.monotonic() + timeout
    while True:
        if stop is not None and stop.is_set():
            raise LoadStopped
        query = failover.call(lambda c: c.query(query_id, wait=5))
        if query.state in FINAL_STATES:
            return query
        if time.monotonic() > deadline:
            raise AssertionError(f"query {query_id} still {query.state} after {timeout}s")


def _logged_at(line: str) -> str:
    """A log line's time as ``YYYY-MM-DD HH:MM:SS``: sparkgate's lines start so, Spark's
    (log4j) with ``YY/MM/DD HH:MM:SS``."""
    if line[2:3] == "/" and line[5:6] == "/":
        return f"20{line[0:2]}-{line[3:5]}-{line[6:8]}{line[8:17]}"
    return line[:19]


# -- the stream ---------------------------------------------------------------------------


def start_stream(failover: Failover) -> None:
    failover.call(
        lambda c: c.create_stream(
            STREAM_JOB,
            "CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='5');\n"
            f"SAVE STREAM numbers TO TABLE {SINK_TABLE} TRIGGER 500ms",
        )
    )


def stream_batch(failover: Failover) -> int:
    """The last batch the stream job's query committed (-1: none yet, or not running)."""
    job = failover.call(lambda c: c.stream(STREAM_JOB))
    queries = job.queries
    if job.state != "running" or not queries or queries[0].state != "running":
        return -1
    return int((queries[0].last_progress or {}).get("batch_id", -1))


def stream_advances(failover: Failover, past: int, timeout: float = 300) -> int:
    return eventually(
        lambda: b if (b := stream_batch(failover)) > past else None,
        timeout=timeout,
        interval=0.3,
        what=f"the stream past batch {past}",
    )


def sink_stats(failover: Failover, session_id: int) -> tuple[int, int, int, int]:
    """count, distinct values, min, max of the stream's sink table."""
    sql = f"SELECT count(*), count(DISTINCT value), min(value), max(value) FROM {SINK_TABLE}"
    query = failover.call(lambda c: c.submit(sql, session_id=session_id))
    final = wait_final(failover, int(query.id))
    assert final.state == "success", final
    [row] = failover.call(lambda c: list(c.rows(int(query.id))))
    count, distinct, low, high = (int(v) if v is not None else -1 for v in row)
    return count, distinct, low, high


# -- faults and the checks after each -----------------------------------------------------


@dataclass
class FaultReport:
    name: str
    detect: float | None = None  # seconds from the fault until sparkgate saw it
    recover: float | None = None  # seconds from the fault until all served again
    queries: int = 0
    affected: int = 0
    longest: float | None = None  # seconds the slowest query of the phase took to be final
    # seconds in the phase during which no query could go on: the store out of reach, or
    # no Spark worker to run on (killed, until its replacement is ALIVE at the master)
    outage: float = 0.0
    invariants: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(self.invariants.values())


class Chaos:
    """Runs the faults in order on a started :class:`Rig` under a :class:`Load`."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.load = Load(rig)
        self.reports: list[FaultReport] = []
        self._checker = rig.failover()
        self._check_session: int | None = None
        self._last_batch = -1
        self._last_sink_max = -1
        self._unanswered = 0

    def run(self) -> list[FaultReport]:
        start_stream(self._checker)
        self._last_batch = stream_advances(self._checker, 1)
        faults: list[tuple[str, Callable[[FaultReport], None]]] = [
            ("kill -9 a server node", self.kill_node),
            ("kill -9 engine drivers", self.kill_drivers),
            ("kill -9 the Spark worker", self.kill_worker),
            (f"store unreachable {self.rig.profile.outage:.0f}s", self.store_outage),
            ("node restart, migration pending", self.upgrade_node),
        ]
        self.load.start("baseline")
        try:
            time.sleep(self.rig.profile.load_before)
            for name, inject in faults:
                report = FaultReport(name)
                self.load.resume(name)
                time.sleep(self.rig.profile.load_before)
                self.rig.log(f"fault: {name}")
                inject(report)
                time.sleep(self.rig.profile.load_after)
                self.load.pause()
                self._check(report)
                self.reports.append(report)
                self.rig.log(f"  {report}")
        finally:
            try:
                self.load.stop()  # its threads joined: none goes on after the run
            finally:
                self._checker.close()
        return self.reports

    # the faults

    def kill_node(self, report: FaultReport) -> None:
        rig = self.rig
        survivor = rig.nodes[1]
        assert survivor is not None
        with survivor.client() as on_b:
            b_node = on_b.health().node
        started = time.monotonic()
        rig.kill_node(0)

        def b_holds_all() -> bool:
            with rig.store() as store:
                names = ("reaper", "placement", "streams")
                return all((lease := store.leases.get(n)) and lease.owner == b_node for n in names)

        eventually(b_holds_all, timeout=120, interval=0.2, what="node B to take the leases")
        report.detect = time.monotonic() - started
        self._serving()
        report.recover = time.monotonic() - started
        rig.start_node(0, OLD_REVISION)  # back to two for the faults that follow

    def kill_drivers(self, report: FaultReport) -> None:
        rig = self.rig
        with rig.store() as store:
            live = [e for e in store.engines.list_all(states=LIVE_ENGINE_STATES) if e.pid]
        started = time.monotonic()
        for engine in live:
            assert engine.pid is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(engine.pid, signal.SIGKILL)
        report.notes.append(f"engines killed: {[e.id for e in live]}")

        def all_lost() -> bool:
            with rig.store() as store:
                return all(store.engines.get(e.id).state.value == "lost" for e in live)

        eventually(all_lost, timeout=300, interval=0.2, what="the engines to be declared lost")
        report.detect = time.monotonic() - started
        self._check_session = None  # it died with its engine
        self._serving()
        report.recover = time.monotonic() - started

    def kill_worker(self, report: FaultReport) -> None:
        rig = self.rig
        assert rig.info is not None
        info = cluster.status(rig.root / "cluster")
        assert info is not None and info.worker_pid is not None
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(info.worker_pid, signal.SIGKILL)

        def worker_dead() -> bool:
            workers = cluster.master_state(rig.info.master_ui if rig.info else "").get("workers")
            return not any(w.get("state") == "ALIVE" for w in workers or [])

        eventually(worker_dead, timeout=180, interval=0.2, what="the master to lose the worker")
        report.detect = time.monotonic() - started
        cluster.start_worker(rig.root / "cluster")
        self._serving()
        report.recover = time.monotonic() - started
        # Until the cluster serves again no task runs: the new worker has to be ALIVE, then
        # each engine's dynamic allocation asks it for an executor. What the load's queries
        # waited for then is the fault's outage, not a query stuck past the heartbeat
        # timeout; one stuck is still late by the timeout and the profile's slack.
        report.outage = report.recover

    def store_outage(self, report: FaultReport) -> None:
        rig = self.rig
        assert rig.proxy is not None
        probe = rig.failover(patience=0)
        report.outage = rig.profile.outage
        started = time.monotonic()
        rig.proxy.pause()
        try:

            def refused() -> bool:
                try:
                    probe.clients[0].health()
                except ClientError as exc:
                    return exc.status == 503
                return False

            eventually(refused, timeout=60, interval=0.2, what="a node to answer 503")
            report.detect = time.monotonic() - started
            while time.monotonic() - started < rig.profile.outage:
                for client in probe.clients:
                    with contextlib.suppress(ClientError):
                        client.health()
                        report.notes.append("a node answered healthy during the outage")
                time.sleep(0.5)
        finally:
            rig.proxy.resume()
            probe.close()
        self._serving()
        report.recover = time.monotonic() - started

    def upgrade_node(self, report: FaultReport) -> None:
        rig = self.rig
        started = time.monotonic()
        rig.kill_node(0, signal.SIGTERM)
        rig.start_node(0, "head")
        with rig.store() as store, store.db.engine.connect() as conn:
            revision = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        report.notes.append(f"store at {revision}")
        report.invariants["migration applied"] = revision != OLD_REVISION
        self._serving()
        report.recover = time.monotonic() - started

    # serving again, and the invariants

    def _session(self) -> int:
        if self._check_session is None:
            self._check_session = self.load._open(self._checker)
        return self._check_session

    def _serving(self) -> None:
        """Every live node runs a query (in a new session if the last one died with its
        engine), and the stream makes progress."""
        self._checker.close()
        self._checker = self.rig.failover()
        for client in self._checker.clients:
            for _ in range(5):
                session = self._session()
                try:
                    query = client.submit(SMALL, session_id=session)
                except ClientError as exc:
                    if exc.status not in {400, 404, 409}:
                        raise
                    self._check_session = None
                    continue
                final = wait_final(self._checker, int(query.id))
                if final.state == "success":
                    break
                self._check_session = None  # lost with its engine: try a new session
            else:
                raise AssertionError(f"{client.server} did not serve a query in 5 tries")
        self._last_batch = stream_advances(self._checker, self._last_batch)

    def _check(self, report: FaultReport) -> None:
        rig, timeout = self.rig, self.rig.profile.heartbeat_timeout
        traces = self.load.of_phase(report.name)
        report.queries = len(traces)
        if (unanswered := self.load.unanswered - self._unanswered) > 0:
            report.notes.append(f"submits unanswered (their node died first): {unanswered}")
            self._unanswered = self.load.unanswered
        report.affected = sum(t.affected for t in traces)
        unexplained = [t for t in traces if t.affected and t.error_code != "ENGINE_LOST"]
        if unexplained:
            report.notes.append(
                "unexplained: "
                + ", ".join(f"{t.id} {t.kind}->{t.state} {t.error_code}" for t in unexplained)
            )
        report.invariants["failures explained"] = not unexplained

        # No query stays non-final past the heartbeat timeout. Each query of the phase, from
        # its submission to its final state, may take the heartbeat timeout (a lost engine's
        # queries end when it is declared lost), the outage when the store was taken away
        # (nothing can be recorded through it) or no worker was there to run a task, and
        # the profile's slack: the longest query of the mix on a loaded two-core machine,
        # and the reaper's round. Then nothing in the store may be left non-final (the load
        # is at rest): statements the load did not trace included.
        allowed = timeout + rig.profile.slack + report.outage
        took = {t.id: t.ended_at - t.submitted_at for t in traces if t.ended_at is not None}
        report.longest = max(took.values(), default=None)
        late = sorted((round(s, 1), i) for i, s in took.items() if s > allowed)
        started = time.monotonic()
        stuck = self._non_final(deadline=timeout + rig.profile.slack)
        report.invariants["all final in time"] = not stuck and not late
        if late:
            report.notes.append(f"final later than {allowed:.0f}s after submission: {late}")
            submitted = {t.id: t.submitted_at for t in traces if t.id is not None}
            report.notes.extend(self._timeline([i for _, i in late if i is not None], submitted))
            self._print_logs(min(submitted.values()), [i for _, i in late if i is not None])
        if stuck:
            report.notes.append(f"non-final after {time.monotonic() - started:.0f}s: {stuck}")

        readable = True
        live = rig.nodes_live()
        for trace in traces:
            if trace.state != "success" or trace.id is None:
                continue
            for node in live:
                with node.client() as client:
                    rows = list(client.rows(trace.id))
                if rows != EXPECTED_ROWS[trace.kind]:
                    readable = False
                    report.notes.append(f"query {trace.id} read wrong on {node.url}")
        report.invariants["results on every node"] = readable

        count, distinct, low, high = sink_stats(self._checker, self._session())
        once = count == distinct and low == 0 and high == count - 1
        report.invariants["stream exactly once"] = once and high > self._last_sink_max
        report.notes.append(f"sink: {count} rows, {distinct} distinct, {low}..{high}")
        self._last_sink_max = high

        orphans = self._orphans()
        report.invariants["no orphaned application"] = not orphans
        if orphans:
            report.notes.append(f"orphaned applications: {orphans}")
        report.invariants["load ran clean"] = not self.load.errors
        if self.load.errors:
            report.notes.append(f"load errors: {self.load.errors[:3]}")
            self.load.errors.clear()

    def _timeline(self, ids: list[int], submitted: dict[int, float]) -> list[str]:
        """Where each late query spent its time, from the store: seconds after its submission
        that it was recorded, started and ended, and by which engine; a CI failure then says
        which step waited (the submit's retries, the claim, the run or its report)."""
        with self.rig.store() as store:
            lines = []
            for query_id in ids:
                statement = store.statements.get(query_id)
                session = store.sessions.get(statement.session_id)
                at = submitted[query_id]

                def after(moment: float | None, at: float = at) -> str:
                    return "-" if moment is None else f"{moment - at:.1f}s"

                lines.append(
                    f"query {query_id} ({statement.kind}, {statement.state}): recorded "
                    f"{after(statement.created_at)}, started {after(statement.started_at)}, "
                    f"ended {after(statement.finished_at)} after submission; session "
                    f"{statement.session_id} on engine {session.engine_id}"
                )
            return lines

    def _print_logs(self, since: float, ids: list[int]) -> None:
        """The warnings and errors every node and engine logged since ``since``, and each line
        naming one of the queries ``ids``: printed, so a failed test's output shows them."""
        with self.rig.store() as store:
            paths = [Path(e.log_path) for e in store.engines.list_all() if e.log_path]
        paths += sorted(self.rig.home.glob("server-*.log"))
        start = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(since))
        marks = (" WARN ", " WARNING ", " ERROR ", *(f"[query={i} " for i in ids))
        for path in paths:
            if not path.exists():
                continue
            lines = [
                line
                for line in path.read_text(errors="replace").splitlines()
                if _logged_at(line) >= start and any(mark in line for mark in marks)
            ]
            if lines:
                self.rig.log(f"-- {path.name}: {len(lines)} lines, the last 60")
                for line in lines[-60:]:
                    self.rig.log(line[:400])

    def _non_final(self, deadline: float) -> list[tuple[int, str]]:
        terminal = [s.value for s in TERMINAL_STATEMENT_STATES]

        def pending() -> list[tuple[int, str]]:
            with self.rig.store() as store, store.db.engine.connect() as conn:
                rows = conn.execute(
                    sa.text("SELECT id, state FROM statements WHERE state NOT IN :t").bindparams(
                        sa.bindparam("t", expanding=True)
                    ),
                    {"t": terminal},
                ).all()
            return [(int(r[0]), str(r[1])) for r in rows]

        end = time.monotonic() + deadline
        left = pending()
        while left and time.monotonic() < end:
            time.sleep(0.5)
            left = pending()
        return left

    def _orphans(self) -> list[str]:
        """Applications at the master that no live engine owns (after the master's own
        detection of dead drivers has had its time)."""
        assert self.rig.info is not None
        master_ui = self.rig.info.master_ui

        def orphans() -> list[str]:
            with self.rig.store() as store:
                live = {
                    f"sparkgate-engine-{e.id}"
                    for e in store.engines.list_all(states=LIVE_ENGINE_STATES)
                }
            return [a["name"] for a in cluster.applications(master_ui) if a["name"] not in live]

        try:
            eventually(lambda: not orphans(), timeout=60, interval=0.5, what="orphans")
        except AssertionError:
            return orphans()
        return []


def describe(report: FaultReport) -> dict[str, Any]:
    def seconds(value: float | None) -> str:
        return "—" if value is None else f"{value:.1f}"

    return {
        "fault": report.name,
        "detect_s": seconds(report.detect),
        "recover_s": seconds(report.recover),
        "queries": report.queries,
        "affected": report.affected,
        "longest_s": seconds(report.longest),
        "invariants": "all hold"
        if report.passed
        else "broken: " + ", ".join(k for k, v in report.invariants.items() if not v),
    }


__all__ = [
    "FULL",
    "SHORT",
    "Chaos",
    "Failover",
    "FaultReport",
    "Load",
    "LoadStopped",
    "Profile",
    "Rig",
    "describe",
    "fresh_database",
]
