"""Placement: which engine hosts a session, and keeping engines warm.

- An interactive session whose Spark conf can be set at run time (``spark.sql.*`` settings
  that are not static) goes to a shared engine: ``newSession()`` there costs a millisecond and
  keeps its temporary views and SQL conf apart from other sessions.
- A stream job's session goes to a streaming engine (``newSession()`` there too): long-running
  queries get drivers of their own, apart from interactive work, up to
  ``stream_engine_max_jobs`` jobs per engine.
- Shared and streaming engines host sessions of one share key only (``sessions.share_key``:
  one user's, one group's, or NULL for everyone's at share level ``server``); a warm engine
  nobody has claimed yet is claimed by the first key that needs one.
- A batch session, or a session asking for static conf (driver memory, executors, jars, ...),
  gets a dedicated engine: one from the warm pool when its conf allows, else a new process.

After engines of a placement (kind and share key) fail ``NO_EXECUTORS`` one after another,
no engine of it is launched until its backoff ends (``engine.backoff``): the warm pool and the
shared engine wait quietly; a session that needs a new engine then ends ``error`` at once with
``ENGINE_BACKOFF``, saying how many failed and when the next may start.

Engines enforce the access policy they were launched with (``Settings.access_policy``: the
access file's path and the admins, read once from their environment). A node places work only
on engines of its own policy, and when it starts it stops those of another (left running by a
node before a restart with another access file), so that no table rule goes unenforced.

Placement is one compare-and-set (``not_started -> starting`` with the engine id), so two
nodes placing the same session cannot both win; the loser's freshly launched dedicated engine
is told to stop.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

from sparkgate.engine.backoff import HISTORY, Backoff, no_executors_backoff
from sparkgate.errors import EngineBackoff
from sparkgate.launcher.base import Launcher
from sparkgate.recorded import EngineLaunchFailed
from sparkgate.settings import Settings
from sparkgate.states import EngineKind, EngineState, SessionKind, SessionState
from sparkgate.store import Store
from sparkgate.store.records import EngineRecord, SessionRecord
from sparkgate.tags import SETTING as TAGS_SETTING

log = logging.getLogger("sparkgate.placement")

# spark.sql.* settings fixed when the SparkSession is built; a shared engine cannot honour them.
STATIC_SQL_CONF = frozenset(
    {
        "spark.sql.warehouse.dir",
        "spark.sql.catalogImplementation",
        "spark.sql.extensions",
        "spark.sql.hive.metastore.version",
        "spark.sql.hive.metastore.jars",
        "spark.sql.hive.metastore.sharedPrefixes",
        "spark.sql.hive.metastore.barrierPrefixes",
        "spark.sql.queryExecutionListeners",
        "spark.sql.streaming.streamingQueryListeners",
        "spark.sql.ui.retainedExecutions",
        "spark.sql.event.truncate.length",
        "spark.sql.legacy.sessionInitWithConfigDefaults",
        "spark.sql.defaultUrlStreamHandlerFactory.enabled",
        "spark.sql.streaming.ui.enabled",
        "spark.sql.cache.serializer",
        "spark.sql.filesourceTableRelationCacheSize",
    }
)


def needs_own_engine(conf: dict[str, str]) -> bool:
    """True if any setting must be given when Spark starts (so no shared or warm engine)."""
    return any(
        (not key.startswith("spark.sql.") or key in STATIC_SQL_CONF) and key != TAGS_SETTING
        for key in conf
    )


class Placement:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        launcher: Launcher,
        node_id: str,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.launcher = launcher
        self.node_id = node_id
        self.clock = clock
        self.policy = settings.access_policy()

    def place(self, session: SessionRecord, *, fresh: bool = False) -> SessionRecord | None:
        """Put a ``not_started`` session on an engine (launching one if need be); the session
        as placed, or None if someone else placed or ended it. ``fresh``: the caller has just
        created ``session`` (else it is read again: the caller's copy may be stale)."""
        if not fresh:
            current = self.store.sessions.find(session.id)
            if current is None or current.state is not SessionState.NOT_STARTED:
                return None
            session = current
        own = needs_own_engine(session.conf)
        launched = False
        engine: EngineRecord | None
        # A one-off query runs in a session of its own on a shared engine, like an
        # interactive session's: newSession() there costs a millisecond, a driver seconds.
        one_off = session.kind is SessionKind.BATCH and session.attributes.isolation == "session"
        if (session.kind is SessionKind.INTERACTIVE or one_off) and not own:
            engine = self._shared(
                EngineKind.SHARED, self.settings.shared_engine_max_sessions, session.share_key
            )
        elif session.kind is SessionKind.STREAMING and not own:
            engine = self._shared(
                EngineKind.STREAMING, self.settings.stream_engine_max_jobs, session.share_key
            )
        else:
            engine = (
                None
                if own
                else self.store.engines.claim_warm(session.id, now=self.clock(), policy=self.policy)
            )
            if engine is None:
                engine = self._launch(
                    EngineKind.DEDICATED, session_id=session.id, conf=session.conf
                )
                launched = True
        now = self.clock()
        placed = self.store.transitions.session(
            session.id,
            SessionState.STARTING,
            now=now,
            expected=[SessionState.NOT_STARTED],
            engine_id=engine.id,
        )
        log.info("session %s -> engine %s (%s)", session.id, engine.id, placed)
        if not placed.applied and engine.kind is EngineKind.DEDICATED:
            self.stop_engine(engine.id)
        elif not launched and engine.kind is EngineKind.DEDICATED:
            self.keep_warm()  # we took one from the pool
        if not placed.applied:
            return None
        # What the transition wrote, without reading it back.
        return dataclasses.replace(
            session,
            state=SessionState.STARTING,
            engine_id=engine.id,
            updated_at=now,
            version=session.version + 1,
        )

    def _shared(self, kind: EngineKind, room: int, share_key: str | None) -> EngineRecord:
        """An engine of ``kind`` for a session with this share key: one already serving the
        key with room, else the warm unclaimed one (claimed for the key), else a new one. So
        two users' sessions never share a driver unless the share level says they may."""
        engine = self.store.engines.shared_with_room(room, kind, share_key, policy=self.policy)
        if engine is None and share_key is not None:
            engine = self._claim_warm(kind, share_key)
        if engine is not None:
            return engine
        self.check_backoff(kind, share_key)
        # Checked and added in one serialised transaction: nodes placing at once share one.
        engine, new = self.store.engines.shared_or_add(
            room, kind, share_key, now=self.clock(), node_id=self.node_id, policy=self.policy
        )
        return self._start(engine) if new else engine

    def _claim_warm(self, kind: EngineKind, share_key: str) -> EngineRecord | None:
        """A warm engine for a share key that has none, made its own: the spare engine of
        ``kind`` if it runs; for a shared one, else a running engine of the warm pool (a
        driver with the default conf serves either way); else the spare still starting.
        The placement duty starts what replaces it (within ``duty_interval``), not this
        request: on two cores a JVM starting beside the first query would slow it by seconds."""
        engines, now = self.store.engines, self.clock()
        running = [EngineState.RUNNING]
        policy = self.policy
        engine = engines.claim_shared(kind, share_key, now=now, states=running, policy=policy)
        if engine is None and kind is EngineKind.SHARED:
            engine = engines.claim_warm_as_shared(share_key, now=now, policy=policy)
            if engine is not None:
                log.info("warm engine %s is now a shared engine of %s", engine.id, share_key)
        return engine or engines.claim_shared(kind, share_key, now=now, policy=policy)

    def keep_warm(self) -> None:
        """Keep ``warm_engines`` dedicated engines started and unassigned."""
        missing = self.settings.warm_engines - self.store.engines.warm_count()
        if missing > 0 and self.backoff(EngineKind.DEDICATED, None) is not None:
            return
        for _ in range(max(missing, 0)):
            self._launch(EngineKind.DEDICATED)

    def keep_shared(self) -> None:
        """Keep one shared engine running for interactive sessions, if the settings ask."""
        if not self.settings.shared_engine:
            return
        room = self.settings.shared_engine_max_sessions
        shared = self.store.engines.shared_with_room(
            room, EngineKind.SHARED, None, policy=self.policy
        )
        if shared is not None:
            return  # the usual tick: one read
        if self.backoff(EngineKind.SHARED, None) is not None:
            return
        engine, new = self.store.engines.shared_or_add(
            self.settings.shared_engine_max_sessions,
            EngineKind.SHARED,
            None,
            now=self.clock(),
            node_id=self.node_id,
            policy=self.policy,
        )
        if new:
            self._start(engine)

    def backoff(self, kind: EngineKind, share_key: str | None) -> Backoff | None:
        """The backoff this placement is in now after NO_EXECUTORS failures, if any."""
        history = self.store.engines.recent(kind, share_key, limit=HISTORY)
        backoff = no_executors_backoff(
            history,
            minimum=self.settings.engine_backoff_min,
            maximum=self.settings.engine_backoff_max,
        )
        return None if backoff is None or backoff.allows(self.clock()) else backoff

    def check_backoff(self, kind: EngineKind, share_key: str | None) -> None:
        """Raise EngineBackoff rather than launch an engine of a placement backing off."""
        backoff = self.backoff(kind, share_key)
        if backoff is not None:
            placement = f"{kind.value} engines" + (f" of {share_key}" if share_key else "")
            raise EngineBackoff(placement, backoff.attempt, backoff.next_at, self.clock())

    def stop_other_policies(self) -> list[int]:
        """Stop the live engines launched to enforce another access policy than this node's
        (the ids of those told to stop). Each finishes the statements it runs, which were
        checked when they started, and takes no more; its sessions end with it."""
        stopped = []
        for engine in self.store.engines.of_other_policy(self.policy):
            log.warning(
                "engine %s was launched with another access file or other admins than this "
                "node's; stopping it, so that no session runs under rules no longer in force",
                engine.id,
            )
            self.stop_engine(engine.id)
            stopped.append(engine.id)
        return stopped

    def stop_engine(self, engine_id: int) -> None:
        self.store.transitions.engine(
            engine_id,
            EngineState.STOPPING,
            now=self.clock(),
            expected=[EngineState.STARTING, EngineState.RUNNING],
        )

    def _launch(
        self,
        kind: EngineKind,
        *,
        session_id: int | None = None,
        conf: dict[str, str] | None = None,
        share_key: str | None = None,
    ) -> EngineRecord:
        self.check_backoff(kind, share_key)
        engine = self.store.engines.add(
            kind,
            now=self.clock(),
            conf=conf,
            node_id=self.node_id,
            session_id=session_id,
            share_key=share_key,
            policy=self.policy,
        )
        return self._start(engine)

    def _start(self, engine: EngineRecord) -> EngineRecord:
        """Launch the process for a new engine record (failed, with why, if it cannot)."""
        try:
            self.launcher.launch(engine)
        except Exception as exc:
            self.store.transitions.engine(
                engine.id,
                EngineState.FAILED,
                now=self.clock(),
                error=EngineLaunchFailed(str(exc)).recorded(),
            )
            raise
        log.info("launched %s engine %s", engine.kind.value, engine.id)
        return self.store.engines.get(engine.id)
