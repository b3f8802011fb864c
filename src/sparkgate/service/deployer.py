"""Deploys: what ``POST /v1/deployments`` (``sparkgate deploy``) does, on a server node.

1. Everything sent is checked first (``jobs.bundle``): any problem, anywhere, and the request
   is refused (422) with every problem listed; nothing changes.
2. The ``deploy`` lease is taken (a second deploy waits up to ``wait`` seconds for it, then is
   refused naming the deploy that holds it), the plan is made (``jobs.plan``) from the store,
   the stream jobs' states and the checkpoint directories, and recorded with every decision.
3. Threads of the node carry the plan out (``service.deployment_run``: ``deploy_parallelism``
   jobs at a time, each job's steps in order), renewing the lease, recording each decision's
   outcome; the deployment ends ``succeeded``, or ``failed`` if any job could not be deployed.
   If the node dies, the ``deployments`` duty (on any node) settles it as abandoned.

A streaming job runs as the stream job of the same name; version ``v`` keeps its state under
``<checkpoints>/<name>/<v>/``, so a new version never loads an old one's state.

    deployer.submit(manifests, template, definitions, prune=False, plan_only=False, wait=30)
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sparkgate.errors.jobs import DeployInProgress, ManifestsInvalid
from sparkgate.jobs.bundle import Bundle, files_of, load_bundle
from sparkgate.jobs.files import SourceFile
from sparkgate.jobs.plan import Action, Current, plan
from sparkgate.recorded import DeploymentAbandoned, RecordedError
from sparkgate.service.deployment_run import LEASE, POLL, RUNNING, DeploymentRun
from sparkgate.service.stream_jobs import Streams
from sparkgate.settings import Settings
from sparkgate.states import ActionKind, DeploymentState, StreamJobState
from sparkgate.store import Store
from sparkgate.store.jobs import PlannedDecision
from sparkgate.store.records import DeploymentRecord, JobRecord, StreamJobRecord
from sparkgate.streaming.definitions import retry_defaults

log = logging.getLogger("sparkgate.deploy")

_J = StreamJobState


@dataclass(frozen=True)
class Submitted:
    deployment: DeploymentRecord
    actions: list[Action]


class Deployer:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        streams: Streams,
        node_id: str,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.streams = streams
        self.node_id = node_id
        self.clock = clock
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- requests ------------------------------------------------------------------------

    def submit(
        self,
        manifests: Sequence[SourceFile],
        template: SourceFile | None = None,
        definitions: Sequence[SourceFile] = (),
        *,
        prune: bool = False,
        plan_only: bool = False,
        wait: float = 0.0,
        user: str | None = None,
        check: Callable[[Bundle], None] | None = None,
    ) -> Submitted:
        """Check, plan and record a deploy; unless ``plan_only``, start carrying it out.
        ``user``: who deploys (the deployment's owner, and the owner of stream jobs it makes)."""
        bundle = load_bundle(manifests, template, definitions, retry_defaults(self.settings))
        if not bundle.ok:
            raise ManifestsInvalid(bundle.errors)
        if check is not None:
            check(bundle)  # the caller's access checks (denied Spark settings), before anything
        files = files_of(manifests, template, definitions)
        if plan_only:
            actions = self.plan(bundle, prune=prune)
            record = self.store.deployments.add(
                _decisions(actions, self._versions()),
                files=files,
                now=self.clock(),
                plan_only=True,
                prune=prune,
                node_id=self.node_id,
                owner=user,
            )
            return Submitted(record, actions)
        owner = f"{self.node_id}/{uuid.uuid4().hex[:12]}"
        self._acquire(owner, wait)
        try:
            actions = self.plan(bundle, prune=prune)
            record = self.store.deployments.add(
                _decisions(actions, self._versions()),
                files=files,
                now=self.clock(),
                prune=prune,
                node_id=self.node_id,
                lease_owner=owner,
                owner=user,
            )
        except BaseException:
            self.store.leases.release(LEASE, owner)
            raise
        run = DeploymentRun(self, record, bundle, owner)
        thread = threading.Thread(target=run.run, name=f"deploy-{record.id}", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()
        return Submitted(record, actions)

    def plan(self, bundle: Bundle, *, prune: bool = False) -> list[Action]:
        """The decision for every declared job, and every stored one no longer declared."""
        current = {job.name: self.current(job) for job in self.store.jobs.all()}
        actions = plan([job.declared() for job in bundle.jobs], current, prune=prune)
        managed = {name for name, job in current.items() if not job.removed}
        # A stream job of the same name that deploy did not make: never take it over.
        for index, action in enumerate(actions):
            new = action.name not in managed and action.kind is not ActionKind.REMOVE
            if new and self.store.stream_jobs.find(action.name) is not None:
                actions[index] = Action(
                    action.name,
                    ActionKind.ERROR,
                    None,
                    f"a stream job named '{action.name}' exists that deploys do not manage "
                    f"(made with sparkgate streams create): delete it (sparkgate streams "
                    f"delete {action.name} --stop) or name the job differently",
                )
        return actions

    def current(self, job: JobRecord) -> Current:
        """What the planner needs to know about a stored job, from the store and the disk."""
        stream = None if job.batch else self.store.stream_jobs.find(job.name)
        running = stream is not None and stream.state in RUNNING
        checkpoint = self.has_checkpoint(job.name, job.version)
        ran = stream is not None and stream.state is _J.RUNNING and self._runs_version(stream, job)
        return Current(
            job.name,
            job.version,
            job.batch,
            job.query_fingerprint,
            job.config_fingerprint,
            job.supervision_fingerprint,
            running,
            job.started_before or ran,
            checkpoint,
            job.removed,
        )

    def checkpoint_root(self, name: str, version: int) -> Path:
        return self.settings.resolved_checkpoints_dir / name / str(version)

    def has_checkpoint(self, name: str, version: int) -> bool:
        """The version's query has committed offsets to start again from."""
        offsets = self.checkpoint_root(name, version) / name / "offsets"
        try:
            return any(offsets.iterdir())
        except OSError:
            return False

    def _runs_version(self, stream: StreamJobRecord, job: JobRecord) -> bool:
        return stream.checkpoint_root == str(self.checkpoint_root(job.name, job.version))

    def _versions(self) -> dict[str, int]:
        return {job.name: job.version for job in self.store.jobs.all()}

    def _acquire(self, owner: str, wait: float) -> None:
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            ttl = self.settings.lease_ttl
            if self.store.leases.acquire(LEASE, owner, now=self.clock(), ttl=ttl):
                return
            if time.monotonic() >= deadline or self._closing.is_set():
                break
            time.sleep(POLL)
        lease = self.store.leases.get(LEASE)
        deployment = None if lease is None else self.store.deployments.find_by_owner(lease.owner)
        if deployment is None:
            node = lease.owner.rsplit("/", 1)[0] if lease is not None else None
            raise DeployInProgress(None, node, wait)
        raise DeployInProgress(deployment.id, deployment.node_id, wait)

    # -- the deployments duty ------------------------------------------------------------

    def settle(self, now: float) -> None:
        """Deployments whose node stopped renewing the deploy lease (it died) end ``failed``;
        their unfinished decisions ``skipped``. Two lease periods of silence are needed, so a
        node that is only slow is not overtaken."""
        running = self.store.deployments.running()
        if not running:
            return  # the usual round: one read
        lease = self.store.leases.get(LEASE)
        for deployment in running:
            held = (
                lease is not None
                and lease.owner == deployment.lease_owner
                and lease.expires_at + self.settings.lease_ttl >= now
            )
            if held or now - deployment.created_at < 2 * self.settings.lease_ttl:
                continue
            error = DeploymentAbandoned(
                f"Deployment {deployment.id} stopped making progress: its node "
                f"({deployment.node_id}) no longer holds the deploy lease (it stopped or died). "
                "Deploy again: the plan starts from what runs now."
            ).recorded()
            self.end(deployment.id, DeploymentState.FAILED, error, now, "its deployment ended")
            if lease is not None and lease.owner == deployment.lease_owner:
                self.store.leases.release(LEASE, lease.owner)
            log.warning("deployment %s abandoned by node %s", deployment.id, deployment.node_id)

    @property
    def closing(self) -> bool:
        """The node is stopping: deployments stop after their current step."""
        return self._closing.is_set()

    def end(
        self,
        deployment_id: int,
        state: DeploymentState,
        error: RecordedError | None,
        now: float,
        skipped: str,
    ) -> bool:
        """End a running deployment; decisions it did not finish become ``skipped``."""
        with self.store.db.begin() as conn:
            moved = self.store.transitions.deployment(
                deployment_id,
                state,
                now=now,
                expected=[DeploymentState.RUNNING],
                conn=conn,
                error=error,
            )
            if moved.applied:
                self.store.deployments.skip_unfinished(
                    deployment_id, now=now, note=skipped, conn=conn
                )
        return moved.applied

    def close(self, timeout: float = 10.0) -> None:
        """The node stops: deployments stop after the step they are in (up to ``timeout``);
        those still running are ended ``failed`` and the lease released."""
        self._closing.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))


def _decisions(actions: list[Action], versions: dict[str, int]) -> list[PlannedDecision]:
    return [
        PlannedDecision(a.name, versions.get(a.name), a.version, a.kind.value, a.reason)
        for a in actions
    ]
