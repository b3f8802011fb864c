"""Running real sparkgate servers for tests and benchmarks, and cleaning up after them.

settings = local_test_settings(tmp_path / "home", metastore_uri=uri)
server = ServerProcess(settings).start()
...
server.stop(); kill_engines(settings)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import httpx

from sparkgate.auth.passwords import PasswordFile
from sparkgate.client import Client
from sparkgate.settings import Settings
from sparkgate.states import LIVE_ENGINE_STATES, TERMINAL_STATEMENT_STATES
from sparkgate.store import Store

T = TypeVar("T")

# Spark on two cores, as the project's tests must run it.
TEST_SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "768m",
}


def user_files(
    home: Path, passwords: Mapping[str, str], access: str | None = None
) -> dict[str, Path]:
    """A test server's users: a password file of ``passwords`` in ``home`` (and an access file
    holding ``access``), and the settings that name them, for ``local_test_settings``."""
    password_file = PasswordFile(home / "passwords")
    for name, password in passwords.items():
        password_file.set(name, password)
    files = {"auth_password_file": password_file.path}
    if access is not None:
        (home / "access.yaml").write_text(access)
        files["access_file"] = home / "access.yaml"
    return files


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def eventually(
    check: Callable[[], T | None], *, timeout: float = 60.0, interval: float = 0.1, what: str = ""
) -> T:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what or check} (last: {last!r})")


def wait_final(
    api: httpx.Client, query: dict[str, Any], *, timeout: float | None, poll: float = 10
) -> dict[str, Any]:
    """``query`` (a ``/v1/queries`` record) once it has ended, long-polled ``poll`` seconds at a
    time; failing past ``timeout`` seconds (None: the test's own timeout bounds it)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while query["state"] not in TERMINAL_STATEMENT_STATES:
        assert deadline is None or time.monotonic() < deadline, query
        ended: dict[str, Any] = api.get(f"/v1/queries/{query['id']}", params={"wait": poll}).json()
        query = ended
    return query


def local_test_settings(home: Path, **overrides: Any) -> Settings:
    """Settings for a test server: fast timeouts, Spark on two cores, no UI."""
    values: dict[str, Any] = {
        "home": home,
        "port": free_port(),
        "thrift_port": 0,  # the HiveServer2 tests ask for one
        "connect_port": 0,  # and the Spark Connect tests for theirs
        "spark_master": "local[2]",
        "spark_conf": TEST_SPARK_CONF,
        "engine_heartbeat_interval": 1.0,
        "engine_heartbeat_timeout": 8.0,
        "engine_start_timeout": 240.0,
        "duty_interval": 0.5,
        "lease_ttl": 4.0,
        "warm_engines": 1,
        **overrides,
    }
    return Settings(**values)


def env_for(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKGATE_")}
    env.update(settings.to_env())
    return env


class ServerProcess:
    """A real ``sparkgate server`` in a subprocess, with its engines cleaned up afterwards."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.resolved_home
        self.port = settings.port
        self.env = env_for(settings)
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = self.home / f"server-{self.port}.log"

    def start(self, *, wait: bool = True) -> ServerProcess:
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "sparkgate.cli.main", "server", "--port", str(self.port)],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.home,
                start_new_session=True,
            )
        if wait:
            self.wait_healthy()
        return self

    def wait_healthy(self, timeout: float = 180.0) -> None:
        def healthy() -> bool:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"server exited with {self.process.returncode}:\n{self.log()}")
            try:
                return httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        eventually(healthy, timeout=timeout, interval=0.2, what=f"server on {self.url}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-5000:] if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None:
            stop_group(self.process, sig)

    def client(self) -> Client:
        return Client(self.url, timeout=60)

    @contextlib.contextmanager
    def store(self) -> Iterator[Store]:
        store = Store.open(self.settings.resolved_store_url)
        try:
            yield store
        finally:
            store.close()

    def wait_engines_running(self, timeout: float = 240.0) -> None:
        """Wait until every live engine heartbeats (Spark up), so tests start warm."""

        def all_running() -> bool:
            with self.store() as store:
                live = store.engines.list_all(states=LIVE_ENGINE_STATES)
            return bool(live) and all(e.state.value == "running" for e in live)

        eventually(all_running, timeout=timeout, interval=0.5, what="engines running")


# The ``make_server`` fixture: a server of a test's own, from a home and setting overrides.
MakeServer = Callable[..., ServerProcess]


def stop_group(process: subprocess.Popen[Any], sig: int = signal.SIGTERM) -> None:
    """Stop a process started with ``start_new_session=True`` and what it started: ``sig`` to
    its group, then SIGKILL to the group if it has not exited within 30 s."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def kill_engines(settings: Settings, sig: int = signal.SIGKILL) -> None:
    """Kill every engine process a store knows of (tests clean up all they start)."""
    with contextlib.closing(Store.open(settings.resolved_store_url)) as store:
        engines = store.engines.list_all()
    for engine in engines:
        if engine.pid is None:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(engine.pid, sig)


def beeline(url: str, user: str, password: str, sql: str, home: Path) -> str:
    """Run ``sql`` with beeline (Hive's JDBC shell, from the jars pyspark ships); its output.
    ``home`` is beeline's $HOME (it writes its history there)."""
    from sparkgate.catalog.metastore import java_executable, pyspark_jars

    done = subprocess.run(
        [
            java_executable(),
            "-cp",
            f"{pyspark_jars()}/*",
            "org.apache.hive.beeline.BeeLine",
            "-u",
            url,
            "-n",
            user,
            "-p",
            password,
            "--silent=false",
            "-e",
            sql,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )
    return done.stdout + done.stderr


def wait_pids_gone(pids: list[int], timeout: float = 30.0) -> None:
    def gone() -> bool:
        for pid in pids:
            try:
                os.kill(pid, 0)
                return False
            except ProcessLookupError:
                continue
        return True

    eventually(gone, timeout=timeout, what=f"processes {pids} to exit")


# Every check Schemathesis has that judges the server alone. Left out: positive_data_acceptance
# (it expects a 2xx for any schema-valid input, but a valid id of nothing is a 404) and the
# checks that need the fuzzer to create objects and reuse them across users (use_after_free,
# ensure_resource_availability, object_level_authorization, ignored_auth): the e2e auth tests
# walk every route for 401s and for other users' ids instead.
FUZZ_CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "missing_required_header",
        "unsupported_method",
    ]
)


@dataclasses.dataclass(frozen=True)
class FuzzRun:
    """What one Schemathesis run against a server found."""

    exit_code: int
    cases: int  # test cases generated (each one request, or a short stateful sequence)
    failures: dict[str, int]  # failure kind -> unique failures
    output: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


def fuzz_api(
    url: str,
    auth: tuple[str, str],
    report_dir: Path,
    *,
    checks: str,
    max_examples: int,
    seed: int | None = None,
    max_time: float | None = None,
    workers: int = 1,
) -> FuzzRun:
    """Schemathesis over the server's ``/openapi.json`` as one user: it generates requests
    from the schema (valid and invalid), sends them, and checks each answer with ``checks``
    (comma-separated Schemathesis check names, or ``all``)."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run",
        f"{url}/openapi.json",
        "--auth",
        f"{auth[0]}:{auth[1]}",
        "--checks",
        checks,
        "--max-examples",
        str(max_examples),
        "--workers",
        str(workers),
        "--request-timeout",
        "60",
        "--generation-database",
        "none",
        "--no-color",
        "--report",
        "junit",
        "--report-dir",
        str(report_dir),
    ]
    if seed is not None:
        command += ["--seed", str(seed)]
    if max_time is not None:
        command += ["--max-time", str(int(max_time))]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    generated = re.search(r"(\d+) generated", output)
    failures = {
        kind: int(count)
        for kind, count in re.findall(r"❌ (\w+ [^:\n]+): (\d+)", output)
        if not kind.startswith(("Coverage", "Stateful", "Fuzzing", "Examples"))
    }
    return FuzzRun(done.returncode, int(generated.group(1)) if generated else 0, failures, output)
