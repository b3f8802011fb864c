"""One deployment carried out, on its own thread of the node (step 3 of ``service.deployer``):
each decision applied (``deploy_parallelism`` jobs at a time, each job's steps in order), the
deploy lease renewed meanwhile, each outcome recorded, and the deployment ended.

Apart from the ``Deployer``, which accepts, plans and records deploys and settles abandoned
ones: this is the part that stops and starts stream jobs and waits for them. It sees the
``Deployer`` through ``DeployControl`` only, so that it stays below the module that starts it.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from sparkgate.errors import SparkgateError
from sparkgate.errors.streams import StreamJobActive, StreamJobNotFound
from sparkgate.jobs.bundle import Bundle, DeclaredJob
from sparkgate.jobs.plan import Action
from sparkgate.jobs.script import Metadata
from sparkgate.recorded import (
    DeployIncomplete,
    DeploymentInterrupted,
    ErrorCode,
    RecordedError,
)
from sparkgate.service.stream_jobs import Streams
from sparkgate.settings import Settings
from sparkgate.states import ActionKind, DeploymentState, StreamJobState
from sparkgate.store import Store
from sparkgate.store.records import DeploymentRecord, JobDecisionRecord, JobRecord, StreamJobRecord

log = logging.getLogger("sparkgate.deploy")

# The lease, the states and the pause are the Deployer's too (``service.deployer`` imports them from
# here: it starts runs, so it sits above this module).
LEASE = "deploy"
_J = StreamJobState
# A stream job in these states runs, or is on its way to: "running" for the deploy decision.
# stopping and failing are on their way to not running: a deploy waits for them, then starts.
RUNNING = frozenset({_J.PENDING, _J.STARTING, _J.RUNNING, _J.RESTARTING})
POLL = 0.2


class DeployFailed(SparkgateError):
    """One job could not be deployed as planned (the others go on)."""

    code = ErrorCode.JOB_NOT_DEPLOYED


class DeployControl(Protocol):
    """What a deployment run asks of the ``Deployer`` that started it (``service.deployer``); a
    protocol, so that this module stays below the one that starts runs."""

    settings: Settings
    store: Store
    streams: Streams
    clock: Callable[[], float]

    @property
    def closing(self) -> bool: ...

    def checkpoint_root(self, name: str, version: int) -> Path: ...

    def end(
        self,
        deployment_id: int,
        state: DeploymentState,
        error: RecordedError | None,
        now: float,
        skipped: str,
    ) -> bool: ...


class DeploymentRun:
    """One deployment being carried out, on its own thread."""

    def __init__(
        self, deployer: DeployControl, record: DeploymentRecord, bundle: Bundle, owner: str
    ):
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
        self.store.deployments.set_outcome(
            decision_id, outcome, now=self.clock(), note=note, error=error
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
            error = final.error or RecordedError(
                ErrorCode.FAILED, f"the stream job is {final.state.value}"
            )
            raise DeployFailed(
                f"Job '{job.name}' did not start: [{error.code}] {error.message}",
                job=job.name,
                cause=error.to_json(),
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
        if stream.state in RUNNING:
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
            time.sleep(POLL)

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
                time.sleep(POLL)


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


def _error_of(exc: Exception) -> RecordedError:
    if isinstance(exc, SparkgateError):
        return exc.recorded()
    return SparkgateError(f"{type(exc).__name__}: {exc}").recorded()
