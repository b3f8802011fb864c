"""A server node: the store, the service, and the background duties, wired together.

Nodes are stateless: everything they know is in the store, so any node answers any request
and a node can stop at any time. The engines and the embedded metastore they start are
detached processes and keep running through a node restart.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid

from sparkgate.auth.users import Users
from sparkgate.catalog.metastore import ensure_metastore
from sparkgate.duties.pods import settle_engine_pods
from sparkgate.duties.reaper import reap_idle_sessions, reap_lost_engines
from sparkgate.duties.results import (
    expire_audit_events,
    expire_idempotency_keys,
    expire_results,
    expire_uploads,
)
from sparkgate.duties.runner import Duty, DutyRunner
from sparkgate.launcher import launcher_for
from sparkgate.launcher.kubernetes import KubernetesLauncher
from sparkgate.launcher.placement import Placement
from sparkgate.metrics.process import NodeMetrics
from sparkgate.service import Service
from sparkgate.service.deployer import Deployer
from sparkgate.service.job_runs import JobRunner
from sparkgate.service.sessions import Sessions
from sparkgate.service.stream_jobs import Streams
from sparkgate.settings import Settings
from sparkgate.store import Store
from sparkgate.tables.janitor import TableJanitor

log = logging.getLogger("sparkgate.node")

# A session still not_started this long after creation lost its placing node: place it again.
_PLACEMENT_GRACE = 5.0


class ServerNode:
    def __init__(self, settings: Settings) -> None:
        self.node_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        home = settings.resolved_home
        home.mkdir(parents=True, exist_ok=True)
        self.metrics = NodeMetrics(self.node_id)
        self.store = Store.open(settings.resolved_store_url, hints=settings.hints)
        self.store.db.observe = self.metrics.observe_transaction
        self.store.migrate(settings.store_revision)
        metastore_uri = ensure_metastore(settings)
        # Engines get the resolved URI through their environment (Settings.to_env).
        self.settings = settings.model_copy(update={"metastore_uri": metastore_uri})
        self.placement = Placement(
            self.settings, self.store, launcher_for(self.settings, self.store), self.node_id
        )
        # Before any door listens: an engine left running under another access file would
        # otherwise serve the first sessions placed on it without this node's table rules.
        self.placement.stop_other_policies()
        self.users = Users(self.settings, self.store, on_failed_login=self.metrics.failed_login)
        self.sessions = Sessions(self.settings, self.store, self.placement, self.users)
        self.streams = Streams(self.settings, self.store, self.sessions)
        self.deployer = Deployer(self.settings, self.store, self.streams, self.node_id)
        self.job_runner = JobRunner(self.store, self.sessions)
        # What the doors call: every use case, with its access checks and audit.
        self.service = Service(
            self.settings,
            self.store,
            self.users,
            self.sessions,
            self.streams,
            self.deployer,
            self.job_runner,
        )
        self.duties = DutyRunner(
            self.store,
            self.node_id,
            [
                Duty("reaper", self._reap),
                Duty("placement", self._place),
                Duty("results", self._expire_results, every=60.0),
                Duty("table-janitor", TableJanitor(self.store).run),
                # The supervisor lease: its holder relaunches stream jobs that lost their engine.
                Duty("streams", self.streams.supervise),
                # Deployments whose node died end failed; batch job runs move step by step.
                Duty("deployments", self.deployer.settle),
                Duty("job-runs", self.job_runner.supervise),
                # The queue's safety net: each end admits the next itself (service.admission).
                Duty("queues", self.sessions.admission.settle, every=10.0),
            ],
            interval=self.settings.duty_interval,
            lease_ttl=self.settings.lease_ttl,
        )
        launcher = self.placement.launcher
        if isinstance(launcher, KubernetesLauncher):
            self.duties.duties.append(
                Duty("engine-pods", lambda now: settle_engine_pods(self.store, launcher, now=now))
            )

    def start(self) -> None:
        self.duties.start()
        log.info("node %s serving store %s", self.node_id, self.store.db.dialect)

    def stop(self) -> None:
        self.deployer.close()
        self.duties.stop()
        self.store.close()

    def _reap(self, now: float) -> None:
        reap_lost_engines(
            self.store,
            self.settings,
            self.placement.launcher,  # the launcher that started the engines ends them
            now=now,
            trusted_since=self.duties.store_reachable_since,
        )
        reap_idle_sessions(self.store, self.settings, now=now)

    def _expire_results(self, now: float) -> None:
        expire_results(self.store, self.settings, now=now)
        expire_uploads(self.settings, now=now)
        if self.sessions.keys.enabled:  # a node on an older schema has no keys
            expire_idempotency_keys(self.store, self.settings, now=now)
        expire_audit_events(self.store, self.settings, now=now)
        if self.store.reuse.available():  # results kept for reuse past their time to live
            self.store.reuse.expire(now=now)

    def _place(self, now: float) -> None:
        for session in self.store.sessions.unplaced(created_before=now - _PLACEMENT_GRACE):
            self.sessions.place(session)
        self.placement.keep_shared()
        self.placement.keep_warm()
