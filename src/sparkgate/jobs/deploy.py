"""Deploys: what ``POST /v1/deployments`` (``sparkgate deploy``) does, on a server node.

1. Everything sent is checked first (``jobs.bundle``): any problem, anywhere, and the request
   is refused (422) with every problem listed; nothing changes.
2. The ``deploy`` lease is taken (a second deploy waits up to ``wait`` seconds for it, then is
   refused naming the deploy that holds it), the plan is made (``jobs.plan``) from the store,
   the stream jobs' states and the checkpoint directories, and recorded with every decision.
3. Threads of the node carry the plan out (``deploy_parallelism`` jobs at a time, each job's
   steps in order), renewing the lease, recording each decision's outcome; the deployment
   ends ``succeeded``, or ``failed`` if any job could not be deployed. If the node dies, the
   ``deployments`` duty (on any node) settles it as abandoned.

A streaming job runs as the stream job of the same name; version ``v`` keeps its state under
``<checkpoints>/<name>/<v>/``, so a new version never loads an old one's state.

    deployer.submit(manifests, template, definitions, prune=False, plan_only=False, wait=30)
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from sparkgate.errors import (
    DeployInProgress,
    ManifestsInvalid,
    SparkgateError,
    StreamJobActive,
    StreamJobNotFound,
)
from sparkgate.jobs.bundle import Bundle, DeclaredJob, files_of, load_bundle
from sparkgate.jobs.files import SourceFile
from sparkgate.jobs.plan import Action, ActionKind, Current, plan
from sparkgate.jobs.script import Metadata
from sparkgate.recorded import (
    DeployIncomplete,
    DeploymentAbandoned,
    DeploymentInterrupted,
    ErrorCode,
    RecordedError,
)
from sparkgate.settings import Settings
from sparkgate.states import DeploymentState, StreamJobState
from sparkgate.store import Store
from sparkgate.store.jobs import PlannedDecision
from sparkgate.store.records import (
    DeploymentRecord,
    JobDecisionRecord,
    JobRecord,
    StreamJobRecord,
)
from sparkgate.streaming.definitions import retry_defaults
from sparkgate.streaming.jobs import Streams

log = logging.getLogger("sparkgate.deploy")

LEASE = "deploy"
_J = StreamJobState
# A stream job in these states runs, or is on its way to: "running" for the deploy decision.
# stopping and failing are on their way to not running: a deploy waits for them, then starts.
_RUNNING = frozenset({_J.PENDING, _J.STARTING, _J.RUNNING, _J.RESTARTING})
_POLL = 0.2


class DeployFailed(SparkgateError):
    """One job could not be deployed as planned (the others go on)."""

    code = ErrorCode.JOB_NOT_DEPLOYED


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
            raise ManifestsInvalid([e.to_json() for e in bundle.errors])
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
        run = _Run(self, record, bundle, owner)
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
        running = stream is not None and stream.state in _RUNNING
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
            time.sleep(_POLL)
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
        lease = self.store.leases.get(LEASE)
        for deployment in self.store.deployments.running():
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
                error=None if error is None else error.to_json(),
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


class _Run:
    """One deployment being carried out, on its own thread."""

    def __init__(self, deployer: Deployer, record: DeploymentRecord, bundle: Bundle, owner: str):
        self.deployer = deployer
        self.store = deployer.store
        self.streams = deployer.streams
        self.settings = deployer.settings
        self.clock = deployer.clock
        self.record = record
        self.jobs = {job.name: job for job in bundle.jobs}
        self.owner = owner
        self.lost = threading.Event()
        self.done = threading.Event()
        self.failed: list[str] = []
        self._lock = threading.Lock()

    def run(self) -> None:
        renewer = threading.Thread(
            target=self._renew, name=f"deploy-{self.record.id}-lease", daemon=True
        )
        renewer.start()
        try:
            decisions = self.store.deployments.decisions(self.record.id)
            # Jobs are independent (one writer per table): up to deploy_parallelism at once.
            workers = max(1, min(self.settings.deploy_parallelism, len(decisions)))
            with ThreadPoolExecutor(workers, thread_name_prefix=f"deploy-{self.record.id}") as pool:
                list(pool.map(self._carry_out, decisions))
        except Exception:
            log.exception("deployment %s failed", self.record.id)
            self._failed("(the deployment itself)")
        finally:
            self.done.set()
            renewer.join()
            self._finish(self.failed)

    def _carry_out(self, decision: JobDecisionRecord) -> None:
        if self._stopped():
            return  # left planned; the deployment's end marks it skipped
        action = Action(
            decision.job, ActionKind(decision.action), decision.to_version, decision.reason
        )
        self._outcome(decision.id, "in_progress", note=_STARTING_NOTE.get(action.kind))
        try:
            note = self.apply(action)
        except Exception as exc:
            self._failed(action.name)
            error = _error_of(exc)
            log.warning("deploying %s (%s) failed: %s", action.name, action.kind, error.to_json())
            self._outcome(decision.id, "failed", note="not deployed", error=error)
        else:
            self._outcome(decision.id, "done", note=note)

    def _failed(self, name: str) -> None:
        with self._lock:
            self.failed.append(name)

    def _finish(self, failed: list[str]) -> None:
        now = self.clock()
        error: RecordedError
        if self.lost.is_set() or self.deployer.closing:
            why = "lost the deploy lease" if self.lost.is_set() else "its server node stopped"
            error = DeploymentInterrupted(
                f"Deployment {self.record.id} stopped before its end: {why}. "
                "Deploy again: the plan starts from what runs now."
            ).recorded()
            self.deployer.end(self.record.id, DeploymentState.FAILED, error, now, why)
        elif failed:
            error = DeployIncomplete(
                f"{len(failed)} job(s) not deployed: {', '.join(failed)}.", jobs=failed
            ).recorded()
            self.deployer.end(self.record.id, DeploymentState.FAILED, error, now, "")
        else:
            self.deployer.end(self.record.id, DeploymentState.SUCCEEDED, None, now, "")
        self.store.leases.release(LEASE, self.owner)

    def _renew(self) -> None:
        interval = max(self.settings.lease_ttl / 3, 0.2)
        while not self.done.wait(interval):
            try:
                renewed = self.store.leases.renew(
                    LEASE, self.owner, now=self.clock(), ttl=self.settings.lease_ttl
                )
                state = self.store.deployments.get(self.record.id).state
            except Exception:
                log.exception("renewing the deploy lease failed")
                continue
            if not renewed or state is not DeploymentState.RUNNING:
                self.lost.set()
                return

    def _stopped(self) -> bool:
        return self.lost.is_set() or self.deployer.closing

    def _outcome(
        self,
        decision_id: int,
        outcome: str,
        *,
        note: str | None = None,
        error: RecordedError | None = None,
    ) -> None:
        stored = None if error is None else error.to_json()
        self.store.deployments.set_outcome(
            decision_id, outcome, now=self.clock(), note=note, error=stored
        )

    # -- one action ----------------------------------------------------------------------

    def apply(self, action: Action) -> str:
        """Carry out one decision; what was done. Raises if it could not be."""
        kind = action.kind
        if kind in (ActionKind.NOTHING, ActionKind.ORPHANED):
            return "nothing to do"
        if kind is ActionKind.ERROR:
            raise DeployFailed(action.reason, job=action.name)
        if kind is ActionKind.REMOVE:
            return self._remove(action.name)
        job = self.jobs[action.name]
        stored = self.store.jobs.find(action.name)
        if kind is ActionKind.REGISTER:
            return self._register(job, stored, action)
        if kind is ActionKind.UPDATE:
            return self._update(job)
        assert action.version is not None
        if kind in (ActionKind.START_CLEAN, ActionKind.RESTART_CLEAN):
            return self._start_clean(job, action.version)
        return self._resume(job)

    def _register(self, job: DeclaredJob, stored: JobRecord | None, action: Action) -> str:
        assert action.version is not None
        if stored is not None and not stored.batch:
            self._drop_stream(job.name)  # mode changed: the stream job goes
        record = self._record(job, stored, action.version)
        return f"batch job at version {record.version}: sparkgate jobs run {job.name}"

    def _update(self, job: DeclaredJob) -> str:
        record = self._record(job, self.store.jobs.get(job.name), None)
        steps = [s.step for s in job.steps(_metadata(record), self._checkpoint(record))]
        conf = job.manifest.properties
        self._settled(
            job.name, lambda: self.streams.redefine_running(job.name, sql=steps, conf=conf)
        )
        return "recorded without a restart: applies from the query's next start"

    def _start_clean(self, job: DeclaredJob, version: int) -> str:
        self._stop(job.name)
        stored = self.store.jobs.find(job.name)
        record = self._record(job, stored, version)
        root = self.deployer.checkpoint_root(job.name, version)
        shutil.rmtree(root, ignore_errors=True)  # a clean state: nothing of an earlier try
        self._launch(job, record, root)
        return f"running version {version} with clean state ({root})"

    def _resume(self, job: DeclaredJob) -> str:
        self._stop(job.name)
        record = self._record(job, self.store.jobs.get(job.name), None)
        root = self.deployer.checkpoint_root(job.name, record.version)
        self._launch(job, record, root)
        return f"running version {record.version} from its checkpoint"

    def _record(self, job: DeclaredJob, stored: JobRecord | None, version: int | None) -> JobRecord:
        """Store the manifest: as a new version (new query id and time), or the current one."""
        now = self.clock()
        manifest = job.manifest.to_json()
        if stored is None or (version is not None and version != stored.version):
            assert version is not None
            record = self.store.jobs.add_version(
                job.name,
                job.manifest.mode,
                version,
                manifest,
                job.fingerprints,
                query_id=str(uuid.uuid4()),
                now=now,
            )
        else:
            record = self.store.jobs.update_manifest(job.name, manifest, job.fingerprints, now=now)
        steps = [s.step.to_json() for s in job.steps(_metadata(record), self._checkpoint(record))]
        self.store.jobs.set_steps(job.name, steps, now=now)
        return self.store.jobs.get(job.name)

    def _launch(self, job: DeclaredJob, record: JobRecord, root: Path) -> None:
        """Create or redefine the stream job for this version, start it, wait until it runs."""
        steps = [s.step for s in job.steps(_metadata(record), self._checkpoint(record))]
        conf = dict(job.manifest.properties)
        existing = self.store.stream_jobs.find(job.name)
        if existing is None:
            self.streams.create(
                job.name, steps, conf=conf, checkpoint_root=str(root), owner=self.record.owner
            )
        else:
            self.streams.redefine(job.name, sql=steps, conf=conf, checkpoint_root=str(root))
            self.streams.start(job.name)
        final = self._wait(job.name, {_J.RUNNING, _J.FAILED, _J.STOPPED}, "start running")
        if final.state is not _J.RUNNING:
            error = final.error or {"message": f"the stream job is {final.state.value}"}
            raise DeployFailed(
                f"Job '{job.name}' did not start: [{error.get('code', ErrorCode.FAILED)}] "
                f"{error.get('message', '')}",
                job=job.name,
                cause=error,
            )
        self.store.jobs.mark_started(job.name, record.version)

    def _checkpoint(self, record: JobRecord) -> str:
        """Where the version's query keeps its checkpoint: ``<root>/<query name = job name>``."""
        return str(self.deployer.checkpoint_root(record.name, record.version) / record.name)

    def _stop(self, name: str) -> None:
        """Stop the job's stream job at a batch boundary, if it runs; wait until it has."""
        stream = self.store.stream_jobs.find(name)
        if stream is None or stream.state in (_J.STOPPED, _J.FAILED):
            return
        if stream.state in _RUNNING:
            self.streams.stop(name)
        self._wait(name, {_J.STOPPED, _J.FAILED}, "stop")

    def _drop_stream(self, name: str) -> None:
        if self.store.stream_jobs.find(name) is not None:
            self._stop(name)
            self.streams.delete(name, keep_checkpoints=True)
        shutil.rmtree(self.settings.resolved_checkpoints_dir / name, ignore_errors=True)

    def _remove(self, name: str) -> str:
        stored = self.store.jobs.get(name)
        if not stored.batch:
            self._drop_stream(name)
        self.store.jobs.mark_removed(name, now=self.clock())
        return "stopped and removed" if not stored.batch else "removed"

    def _wait(self, name: str, states: set[StreamJobState], what: str) -> StreamJobRecord:
        deadline = time.monotonic() + self.settings.deploy_timeout
        while True:
            stream = self.store.stream_jobs.get(name)
            if stream.state in states:
                return stream
            if time.monotonic() > deadline:
                raise DeployFailed(
                    f"Job '{name}' did not {what} within {self.settings.deploy_timeout:g}s "
                    f"(SPARKGATE_DEPLOY_TIMEOUT); its stream job is {stream.state.value} and "
                    "carries on.",
                    job=name,
                )
            if self._stopped():
                raise DeployFailed(f"The deployment stopped while job '{name}' was to {what}.")
            time.sleep(_POLL)

    def _settled(self, name: str, change: Callable[[], object]) -> None:
        """Make a change that needs the stream job not starting or stopping right now."""
        deadline = time.monotonic() + self.settings.deploy_timeout
        while True:
            try:
                change()
                return
            except StreamJobNotFound:
                raise
            except StreamJobActive:
                if time.monotonic() > deadline or self._stopped():
                    raise
                time.sleep(_POLL)


_STARTING_NOTE = {
    ActionKind.START_CLEAN: "starting",
    ActionKind.RESUME: "starting",
    ActionKind.RESTART_CLEAN: "stopping, then starting clean",
    ActionKind.RESTART_RESUME: "stopping, then resuming",
    ActionKind.REMOVE: "stopping and removing",
}


def _metadata(record: JobRecord) -> Metadata:
    return Metadata(
        record.name,
        str(record.manifest.get("description", "")),
        record.query_id,
        record.version,
        record.query_created_at,
    )


def _decisions(actions: list[Action], versions: dict[str, int]) -> list[PlannedDecision]:
    return [
        PlannedDecision(a.name, versions.get(a.name), a.version, a.kind.value, a.reason)
        for a in actions
    ]


def _error_of(exc: Exception) -> RecordedError:
    if isinstance(exc, SparkgateError):
        return exc.recorded()
    return SparkgateError(f"{type(exc).__name__}: {exc}").recorded()
