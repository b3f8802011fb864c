"""One pod on the test kubelet's node: its containers' processes, restarts, probes, status and
termination. The kubelet's loop calls ``sync`` with the pod as the API server last showed it
(None once it is gone); everything a later kubelet needs to carry on is in ``state.json``."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from sparkgate_dev.kube._api import ApiError, KubeApi
from sparkgate_dev.kube._env import (
    ConfigError,
    Lookup,
    PodAddresses,
    container_env,
    expand,
    quantity,
)
from sparkgate_dev.kube._images import find_image
from sparkgate_dev.kube._podman import finish, run_argv
from sparkgate_dev.kube._probes import Prober
from sparkgate_dev.kube._runtime import ContainerProcess, MemoryCgroups, launch
from sparkgate_dev.kube._status import (
    now_iso,
    pod_conditions,
    pod_phase,
    restart_delay,
    should_restart,
)
from sparkgate_dev.kube._volumes import Mount, PodVolumes, VolumeError

log = logging.getLogger("kubelet")
Obj = dict[str, Any]
# How often a running pod's ConfigMap, Secret and token volumes are compared with the API's.
VOLUME_REFRESH_SECONDS = 2.0
NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"


@dataclass
class NodeContext:
    """What pods need from their node (the kubelet)."""

    api: KubeApi
    host_ip: str
    api_port: int
    ca_file: Path
    images_file: Path | None
    podman: str | None  # podman's command, for images of its local storage
    cgroups: MemoryCgroups
    backoff_base: float
    backoff_cap: float
    wake: Callable[[], None]
    hosts_for: Callable[[Obj, str], str]  # (pod, pod IP) -> /etc/hosts
    lookup: Lookup  # ConfigMaps and Secrets

    def request_token(
        self, namespace: str, account: str, expiration: int, audiences: list[str], pod: Obj
    ) -> tuple[str, float]:
        path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
        spec: Obj = {"audiences": audiences, "expirationSeconds": expiration}
        # Bound to the pod (void once it is deleted) when the pod names its account: without
        # the ServiceAccount admission plugin nothing writes "default" into the pod, and the
        # API server binds a token only to a pod that names the same account.
        if pod["spec"].get("serviceAccountName"):
            spec["boundObjectRef"] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod["metadata"]["name"],
                "uid": pod["metadata"]["uid"],
            }
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        try:
            answer = self.api.post(path, request)
        except (ApiError, httpx.HTTPError) as exc:
            raise ConfigError(f"token of service account {namespace}/{account}: {exc}") from exc
        expires = time.time() + expiration
        return str(answer["status"]["token"]), expires


@dataclass
class Container:
    spec: Obj
    init: bool
    restart_count: int = 0
    starts: int = 0  # runs so far: names each run's directory and log
    started_at: str | None = None
    terminated: Obj | None = None  # its state once it ended for good
    last_terminated: Obj | None = None
    restart_pending: bool = False
    waiting_reason: str = ""  # why it is not running yet, when there is more to say
    waiting_message: str = ""
    next_start: float = 0.0  # monotonic; back-off of restarts and retries
    process: ContainerProcess | None = None
    probers: dict[str, Prober] = field(default_factory=dict)
    kill_deadline: float | None = None
    kill_message: str = ""

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    def record(self) -> Obj:
        return {
            "restartCount": self.restart_count,
            "starts": self.starts,
            "startedAt": self.started_at,
            "terminated": self.terminated,
            "lastTerminated": self.last_terminated,
            "restartPending": self.restart_pending,
            "process": self.process.record() if self.process else None,
        }

    def restore(self, record: Obj) -> None:
        self.restart_count = record["restartCount"]
        self.starts = record["starts"]
        self.started_at = record["startedAt"]
        self.terminated = record["terminated"]
        self.last_terminated = record["lastTerminated"]
        self.restart_pending = record["restartPending"]
        if record["process"]:
            self.process = ContainerProcess.adopt(record["process"])

    def stop_probers(self) -> None:
        for prober in self.probers.values():
            prober.stop()
        self.probers = {}

    @property
    def ready(self) -> bool:
        if self.process is None or self.kill_deadline is not None:
            return False
        startup = self.probers.get("startup")
        if startup is not None and startup.state is not True:
            return False
        readiness = self.probers.get("readiness")
        return readiness is None or readiness.state is True


class PodWorker:
    def __init__(self, ctx: NodeContext, pod_dir: Path, pod: Obj, ip: str) -> None:
        self.ctx = ctx
        self.dir = pod_dir
        self.pod = pod
        meta = pod["metadata"]
        self.uid: str = meta["uid"]
        self.namespace: str = meta.get("namespace", "default")
        self.name: str = meta["name"]
        self.ip = ip
        self.start_time = now_iso()
        self.init = [Container(c, True) for c in pod["spec"].get("initContainers") or []]
        self.containers = [Container(c, False) for c in pod["spec"]["containers"]]
        self.volumes = PodVolumes(
            pod_dir,
            lookup=ctx.lookup,
            request_token=ctx.request_token,
            ca_file=ctx.ca_file,
        )
        self.prepared = False
        self.prepare_error = ""
        self.next_prepare = 0.0
        self.next_volume_refresh = 0.0
        self.hosts_text = ""
        self.phase = "Pending"
        self.conditions: dict[str, Obj] = {}
        self.published: Obj | None = None
        self.terminating = False
        self.deleting = False
        self.shutdown = False  # the kubelet stops: processes end, the pod's record stays
        self.kill_at = 0.0

    # -- persistence -----------------------------------------------------------------------

    def save(self) -> None:
        record = {
            "uid": self.uid,
            "namespace": self.namespace,
            "name": self.name,
            "ip": self.ip,
            "startTime": self.start_time,
            "pod": self.pod,
            "containers": {c.name: c.record() for c in (*self.init, *self.containers)},
        }
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(record))
        tmp.replace(self.dir / "state.json")

    @classmethod
    def load(cls, ctx: NodeContext, pod_dir: Path) -> PodWorker:
        """A pod a previous kubelet ran: its processes, if still alive, are adopted."""
        record = json.loads((pod_dir / "state.json").read_text())
        worker = cls(ctx, pod_dir, record["pod"], record["ip"])
        worker.start_time = record["startTime"]
        for container in (*worker.init, *worker.containers):
            if container.name in record["containers"]:
                container.restore(record["containers"][container.name])
        worker.prepared = False  # volumes and hosts are refreshed; probes start again
        return worker

    # -- the loop --------------------------------------------------------------------------

    @property
    def addresses(self) -> PodAddresses:
        return PodAddresses(self.ip, self.ctx.host_ip)

    @property
    def terminal(self) -> bool:
        return self.phase in ("Succeeded", "Failed")

    def sync(self, pod: Obj | None) -> bool:
        """Bring the pod's processes and status towards ``pod``; True once the pod is gone
        and everything of it cleaned up (drop the worker)."""
        if pod is None or pod["metadata"]["uid"] != self.uid:
            self.begin_termination(self.spec_grace(), deleting=False)
        else:
            self.pod = pod
            if pod["metadata"].get("deletionTimestamp"):
                grace = pod["metadata"].get("deletionGracePeriodSeconds")
                self.begin_termination(self.spec_grace() if grace is None else grace, True)
        if self.terminating:
            return self._terminate_step()
        self._reap()
        if not self.terminal:
            self._prepare()
            if self.prepared:
                self._liveness()
                self._run()
        self.publish()
        return False

    def spec_grace(self) -> float:
        grace = self.pod["spec"].get("terminationGracePeriodSeconds")
        return 30.0 if grace is None else float(grace)

    def _prepare(self) -> None:
        now = time.monotonic()
        if self.prepared and now < self.next_volume_refresh:
            self._write_hosts()
            return
        if not self.prepared and now < self.next_prepare:
            return
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self.volumes.sync(self.pod, self.addresses)
            self._write_hosts()
            hostname = self.dir / "hostname"
            hostname.write_text(f"{self.hostname}\n")
        except (VolumeError, OSError) as exc:
            self.prepare_error = str(exc)
            self.next_prepare = now + 1.0
            if self.prepared:
                log.warning("pod %s/%s: refreshing volumes: %s", self.namespace, self.name, exc)
                self.next_volume_refresh = now + VOLUME_REFRESH_SECONDS
            return
        if not self.prepared:
            self.prepared = True
            self.prepare_error = ""
            self._resume_adopted()
        self.next_volume_refresh = now + VOLUME_REFRESH_SECONDS

    @property
    def hostname(self) -> str:
        return str(self.pod["spec"].get("hostname") or self.name)[:63]

    def _write_hosts(self) -> None:
        text = self.ctx.hosts_for(self.pod, self.ip)
        if text == self.hosts_text:
            return
        path = self.dir / "hosts"
        # In place, not by rename: the file is bind-mounted by inode in running containers.
        with open(path, "a+") as out:
            out.seek(0)
            out.truncate()
            out.write(text)
        self.hosts_text = text

    def _resume_adopted(self) -> None:
        for container in (*self.init, *self.containers):
            process = container.process
            if process is not None and process.alive():
                spec = json.loads((process.exit_file.parent / "spec.json").read_text())
                self._start_probers(container, spec["env"])
                container.waiting_reason = ""

    # -- processes -------------------------------------------------------------------------

    def _reap(self) -> None:
        changed = False
        for container in (*self.init, *self.containers):
            process = container.process
            if process is None or process.alive():
                continue
            changed = True
            container.stop_probers()
            status = process.exit_status()
            oom = process.cgroup is not None and self.ctx.cgroups.oom_killed(process.cgroup)
            if process.podman_name and self.ctx.podman:
                oom = finish(self.ctx.podman, process.podman_name)
            if process.cgroup is not None:
                self.ctx.cgroups.remove(process.cgroup)
            code = int(status["exitCode"])
            reason = (
                "OOMKilled"
                if oom
                else status.get("reason") or ("Completed" if code == 0 else "Error")
            )
            terminated: Obj = {
                "exitCode": code,
                "reason": reason,
                "startedAt": container.started_at,
                "finishedAt": status.get("finishedAt") or now_iso(),
                "containerID": self._container_id(container),
            }
            if status.get("signal"):
                terminated["signal"] = status["signal"]
            message = status.get("message") or container.kill_message
            if message:
                terminated["message"] = message
            container.process = None
            container.kill_deadline = None
            container.kill_message = ""
            policy = self.pod["spec"].get("restartPolicy", "Always")
            restartable = not self.terminating or self.shutdown
            if restartable and should_restart(policy, code, init=container.init):
                container.last_terminated = terminated
                container.terminated = None
                container.restart_pending = True
                delay = restart_delay(
                    container.restart_count, self.ctx.backoff_base, self.ctx.backoff_cap
                )
                container.next_start = time.monotonic() + delay
                container.waiting_reason = "CrashLoopBackOff" if delay else ""
                container.waiting_message = (
                    f"back-off {delay:g}s restarting failed container={container.name} "
                    f"pod={self.name}_{self.namespace}({self.uid})"
                    if delay
                    else ""
                )
            else:
                container.terminated = terminated
            log.info(
                "pod %s/%s container %s exited: %s",
                self.namespace,
                self.name,
                container.name,
                terminated,
            )
        if changed:
            self.save()

    def _liveness(self) -> None:
        """Containers whose liveness or startup probe failed are killed (then restarted by
        their policy); past their grace period, with SIGKILL."""
        now = time.monotonic()
        for container in (*self.init, *self.containers):
            if container.process is None:
                continue
            if container.kill_deadline is not None:
                if now >= container.kill_deadline:
                    container.process.signal(signal.SIGKILL)
                continue
            for kind in ("startup", "liveness"):
                prober = container.probers.get(kind)
                if prober is not None and prober.state is False:
                    log.info(
                        "pod %s/%s container %s failed its %s probe: %s",
                        self.namespace,
                        self.name,
                        container.name,
                        kind,
                        prober.last_message,
                    )
                    container.kill_message = (
                        f"Container {container.name} failed {kind} probe, will be restarted"
                    )
                    container.stop_probers()
                    container.process.signal(signal.SIGTERM)
                    container.kill_deadline = now + self.spec_grace()
                    break

    def _run(self) -> None:
        now = time.monotonic()
        for container in self.init:
            if container.terminated is not None:
                if container.terminated["exitCode"] == 0:
                    continue
                return  # failed for good: the pod fails
            if container.process is None and now >= container.next_start:
                self._start(container)
            return  # one init container at a time, in order
        for container in self.containers:
            idle = container.process is None and container.terminated is None
            if idle and now >= container.next_start:
                self._start(container)

    def _start(self, container: Container) -> None:
        spec = container.spec
        image = find_image(self.ctx.images_file, spec["image"], self.ctx.podman)
        if image is None:
            pulled_before = container.waiting_reason in ("ErrImagePull", "ImagePullBackOff")
            container.waiting_reason = "ImagePullBackOff" if pulled_before else "ErrImagePull"
            container.waiting_message = (
                f'image "{spec["image"]}" is neither a local image of the test kubelet nor '
                "in podman's local storage (no registry can be reached)"
            )
            container.next_start = time.monotonic() + self.ctx.backoff_base
            return
        try:
            env = container_env(
                self.pod,
                spec,
                image_env=image.env,
                addresses=self.addresses,
                api_port=self.ctx.api_port,
                lookup=self.ctx.lookup,
                default_path=not image.podman,
            )
            mounts = self.volumes.mounts(self.pod, spec, env)
        except (ConfigError, VolumeError) as exc:
            container.waiting_reason = "CreateContainerConfigError"
            container.waiting_message = str(exc)
            container.next_start = time.monotonic() + 1.0
            return
        command = [expand(part, env) for part in spec.get("command") or []]
        args = [expand(part, env) for part in spec.get("args") or []]
        argv = image.argv(command, args)
        if not argv and not image.podman:
            container.waiting_reason = "CreateContainerError"
            container.waiting_message = "no command specified"
            container.next_start = time.monotonic() + 1.0
            return
        mounts.append(Mount(str(self.dir / "hosts"), "/etc/hosts", False))
        security = {
            **(self.pod["spec"].get("securityContext") or {}),
            **(spec.get("securityContext") or {}),
        }
        user, group = security.get("runAsUser"), security.get("runAsGroup")
        if container.restart_pending:
            container.restart_count += 1
            container.restart_pending = False
        container.starts += 1
        run_dir = self.dir / "containers" / container.name / str(container.starts)
        run_dir.mkdir(parents=True, exist_ok=True)
        podman_name = None
        cgroup = None
        if image.podman and self.ctx.podman:
            podman_name = (
                f"k8s_{container.name}_{self.name}_{self.namespace}_{self.uid[:8]}_"
                f"{container.starts}"
            )
            argv = run_argv(
                self.ctx.podman,
                podman_name,
                image.name,
                command=command,
                args=args,
                env_file=run_dir / "env",
                env=env,
                mounts=mounts,
                hostname=self.hostname,
                working_dir=spec.get("workingDir"),
                user=user,
                group=group,
                memory_bytes=self._memory_limit(container),
            )
            # The shim runs podman's client: with the kubelet's environment (podman's
            # settings), in the host's namespaces (podman makes the container's).
            launch_spec = {
                "argv": argv,
                "env": dict(os.environ),
                "cwd": "/",
                "isolate": False,
                "user": None,
                "group": None,
            }
        else:
            mounts.append(Mount(str(self.dir / "hostname"), "/etc/hostname", False))
            cgroup = self._cgroup(container)
            launch_spec = {
                "argv": argv,
                "env": env,
                "cwd": spec.get("workingDir") or image.working_dir,
                "hostname": self.hostname,
                "mounts": [vars(mount) for mount in mounts],
                "isolate": True,
                "user": user,
                "group": group,
            }
        container.process = launch(
            run_dir, self.log_path(container, container.starts), launch_spec, cgroup, podman_name
        )
        container.started_at = now_iso()
        container.terminated = None
        container.waiting_reason = ""
        container.waiting_message = ""
        self._start_probers(container, env)
        self._watch_exit(container.process)
        self.save()
        log.info(
            "pod %s/%s container %s started: pid %s, %s",
            self.namespace,
            self.name,
            container.name,
            container.process.pid,
            argv,
        )

    def _memory_limit(self, container: Container) -> int | None:
        limit = (container.spec.get("resources") or {}).get("limits", {}).get("memory")
        return None if limit is None else int(quantity(limit))

    def _cgroup(self, container: Container) -> Path | None:
        limit = self._memory_limit(container)
        if limit is None or not self.ctx.cgroups.available:
            return None
        name = f"{self.uid}-{container.name}-{container.starts}"
        return self.ctx.cgroups.create(name, limit)

    def _watch_exit(self, process: ContainerProcess) -> None:
        popen = process.popen
        if popen is None:
            return

        def wait() -> None:
            popen.wait()
            self.ctx.wake()

        threading.Thread(target=wait, name=f"wait {process.pid}", daemon=True).start()

    def _start_probers(self, container: Container, env: dict[str, str]) -> None:
        process = container.process
        assert process is not None
        startup_probe = container.spec.get("startupProbe")
        if process.podman_name and self.ctx.podman:
            exec_prefix = [self.ctx.podman, "exec", process.podman_name]
            exec_env = dict(os.environ)
        else:
            exec_prefix = [NSENTER, f"--target={process.pid}", "--mount", "--uts", "--"]
            exec_env = env

        def started() -> bool:
            startup = container.probers.get("startup")
            return startup is None or startup.state is True

        for kind in ("startup", "readiness", "liveness"):
            probe = container.spec.get(f"{kind}Probe")
            if probe is None:
                continue
            container.probers[kind] = Prober(
                kind,
                probe,
                container=container.spec,
                pod_ip=self.ip,
                exec_prefix=exec_prefix,
                exec_env=exec_env,
                gate=(lambda: True) if kind == "startup" or startup_probe is None else started,
                on_change=self.ctx.wake,
            ).start()

    def log_path(self, container: Container, start: int) -> Path:
        return self.dir / "logs" / container.name / f"{start}.log"

    def _container_id(self, container: Container) -> str:
        return f"sparkgate://{self.uid}-{container.name}-{container.starts}"

    # -- termination -----------------------------------------------------------------------

    def begin_termination(self, grace: float, deleting: bool) -> None:
        """SIGTERM to every container's process group now, SIGKILL after ``grace`` seconds; a
        later call with a shorter grace (a second delete) brings the SIGKILL forward."""
        now = time.monotonic()
        self.deleting = self.deleting or deleting
        if self.terminating:
            self.kill_at = min(self.kill_at, now + grace)
            return
        self.terminating = True
        self.kill_at = now + grace
        for container in (*self.init, *self.containers):
            container.stop_probers()
            if container.process is not None:
                container.process.signal(signal.SIGTERM)
        log.info(
            "pod %s/%s terminating (grace %ss, deleting=%s)",
            self.namespace,
            self.name,
            grace,
            deleting,
        )

    def _terminate_step(self) -> bool:
        self._reap()
        alive = [c.process for c in (*self.init, *self.containers) if c.process is not None]
        if alive:
            if time.monotonic() >= self.kill_at:
                for process in alive:
                    process.signal(signal.SIGKILL)
            return False
        if self.shutdown:
            self.save()
            return True
        if self.deleting:
            self.publish()
            try:
                self.ctx.api.delete(
                    f"/api/v1/namespaces/{self.namespace}/pods/{self.name}",
                    {"gracePeriodSeconds": 0, "preconditions": {"uid": self.uid}},
                )
            except ApiError as exc:
                if exc.status not in (404, 409):
                    return False  # the API server is away: try again at the next sync
            except Exception as exc:
                log.info("deleting pod %s/%s: %s; retrying", self.namespace, self.name, exc)
                return False
        self.cleanup()
        return True

    def begin_shutdown(self, grace: float) -> None:
        """The kubelet stops: the processes end as on a deletion, but the pod's record stays
        (its containers restart, by their policy, under the next kubelet)."""
        self.shutdown = True
        self.begin_termination(min(grace, self.spec_grace()), deleting=False)

    def cleanup(self) -> None:
        for container in (*self.init, *self.containers):
            container.stop_probers()
        shutil.rmtree(self.dir, ignore_errors=True)
        log.info("pod %s/%s cleaned up", self.namespace, self.name)

    # -- status ----------------------------------------------------------------------------

    def _container_status(self, container: Container) -> Obj:
        state: Obj
        if container.process is not None:
            state = {"running": {"startedAt": container.started_at}}
        elif container.terminated is not None:
            state = {"terminated": container.terminated}
        else:
            initializing = not container.init and any(
                (c.terminated or {}).get("exitCode") != 0 for c in self.init
            )
            default = "PodInitializing" if initializing else "ContainerCreating"
            waiting: Obj = {"reason": container.waiting_reason or default}
            message = container.waiting_message or (self.prepare_error if not self.prepared else "")
            if message:
                waiting["message"] = message
            state = {"waiting": waiting}
        status: Obj = {
            "name": container.name,
            "state": state,
            "lastState": (
                {"terminated": container.last_terminated} if container.last_terminated else {}
            ),
            "ready": container.ready,
            "restartCount": container.restart_count,
            "image": container.spec["image"],
            "imageID": f"sparkgate://{container.spec['image']}",
            "started": container.process is not None
            and ("startup" not in container.probers or container.probers["startup"].state is True),
        }
        if container.starts:
            status["containerID"] = self._container_id(container)
        return status

    def status(self) -> Obj:
        init_statuses = [self._container_status(c) for c in self.init]
        statuses = [self._container_status(c) for c in self.containers]
        phase = pod_phase(self.pod["spec"], init_statuses, statuses)
        conditions = pod_conditions(phase, init_statuses, statuses, self.conditions)
        status: Obj = {
            "phase": phase,
            "conditions": conditions,
            "hostIP": self.ctx.host_ip,
            "podIP": self.ip,
            "podIPs": [{"ip": self.ip}],
            "startTime": self.start_time,
            "containerStatuses": statuses,
        }
        if init_statuses:
            status["initContainerStatuses"] = init_statuses
        qos = (self.pod.get("status") or {}).get("qosClass")
        if qos:
            status["qosClass"] = qos
        return status

    def publish(self) -> None:
        """Write the pod's status to the API server when it changed."""
        status = self.status()
        if status == self.published:
            return
        became_terminal = status["phase"] in ("Succeeded", "Failed") and not self.terminal
        try:
            self.ctx.api.merge_patch(
                f"/api/v1/namespaces/{self.namespace}/pods/{self.name}/status",
                {"metadata": {"uid": self.uid}, "status": status},
            )
        except ApiError as exc:
            if exc.status not in (404, 409, 422):
                log.info("status of pod %s/%s: %s", self.namespace, self.name, exc)
                return
        except Exception as exc:
            log.info("status of pod %s/%s: %s; retrying", self.namespace, self.name, exc)
            return
        self.published = status
        self.phase = status["phase"]
        self.conditions = {c["type"]: c for c in status["conditions"]}
        if became_terminal:
            self._finish()

    def _finish(self) -> None:
        """Succeeded or Failed: nothing runs any more (an init container's failure leaves the
        regular containers unstarted)."""
        for container in (*self.init, *self.containers):
            container.stop_probers()
            if container.process is not None:
                container.process.signal(signal.SIGKILL)
        log.info("pod %s/%s is %s", self.namespace, self.name, self.phase)
        with contextlib.suppress(OSError):
            self.save()
