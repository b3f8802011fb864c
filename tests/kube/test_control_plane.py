"""The local Kubernetes the chart and the launcher are tested on: a real API server (RBAC), the
controller manager and the test kubelet, driven through the Python client as a user would."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
import textwrap
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client as k8s

from sparkgate_dev.kube import PODMAN, Cluster
from sparkgate_dev.kube._runtime import memory_controller, start_ticks

Obj = dict[str, Any]
M = TypeVar("M")


def build(model: Callable[..., M], manifest: Obj) -> M:
    """A client model from a manifest as one writes it (camelCase keys)."""
    return model(**manifest)


def pod(name: str, image: str, *args: str, restart: str = "Never", **spec: Any) -> k8s.V1Pod:
    container: Obj = {"name": "main", "image": image, "args": list(args)}
    container.update(spec.pop("container", {}))
    manifest = {
        "metadata": {"name": name, **spec.pop("metadata", {})},
        "spec": {"restartPolicy": restart, "containers": [container], **spec},
    }
    return build(k8s.V1Pod, manifest)


def shell(name: str, command: str, **spec: Any) -> k8s.V1Pod:
    return pod(name, "shell", **spec, container={"command": ["sh", "-c", command]})


def python(name: str, script: str, *args: str, **spec: Any) -> k8s.V1Pod:
    return pod(name, "python", "-c", textwrap.dedent(script), *args, **spec)


def marker_volume(directory: Path) -> Obj:
    return {
        "volumes": [
            {"name": "markers", "hostPath": {"path": str(directory), "type": "DirectoryOrCreate"}}
        ],
        "container": {"volumeMounts": [{"name": "markers", "mountPath": "/markers"}]},
    }


def status(p: k8s.V1Pod) -> k8s.V1PodStatus:
    assert p.status is not None
    return p.status


def container(p: k8s.V1Pod) -> k8s.V1ContainerStatus:
    statuses = status(p).container_statuses
    assert statuses, p.status
    return statuses[0]


def terminated(p: k8s.V1Pod) -> k8s.V1ContainerStateTerminated:
    state = container(p).state
    assert state is not None and state.terminated is not None, p.status
    return state.terminated


def phase_is(*phases: str) -> Callable[[k8s.V1Pod], bool]:
    return lambda p: status(p).phase in phases


def restarted(times: int) -> Callable[[k8s.V1Pod], bool]:
    return lambda p: bool(status(p).container_statuses) and container(p).restart_count >= times


def namespace(cluster: Cluster, name: str) -> str:
    cluster.core().create_namespace(build(k8s.V1Namespace, {"metadata": {"name": name}}))
    return name


def wait_for(check: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while True:
        if check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.2)


def alive(pid: int) -> bool:
    return start_ticks(pid) is not None


def test_a_failed_pod_has_its_exit_code_and_its_log_through_the_api_server(
    cluster: Cluster,
) -> None:
    cluster.core().create_namespaced_pod("default", shell("fails", "echo hi; exit 3"))
    failed = cluster.wait_pod("default", "fails", phase_is("Failed", "Succeeded"))
    assert status(failed).phase == "Failed"
    state = terminated(failed)
    assert (state.exit_code, state.reason) == (3, "Error")
    assert container(failed).restart_count == 0
    assert failed.spec is not None and failed.spec.node_name == "node-1"
    assert cluster.core().read_namespaced_pod_log("fails", "default") == "hi\n"
    node = cluster.core().read_node("node-1")
    assert node.status is not None
    assert {c.type: c.status for c in node.status.conditions or []}["Ready"] == "True"


def test_a_deployment_becomes_available_scales_and_its_service_resolves(cluster: Cluster) -> None:
    ns = namespace(cluster, "web")
    labels = {"app": "web"}
    server = {
        "name": "web",
        "image": "python",
        "args": ["-m", "http.server", "8080", "--bind", "$(POD_IP)"],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [{"name": "http", "containerPort": 8080}],
        "startupProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1},
        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1},
    }
    deployment = build(
        k8s.V1Deployment,
        {
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": {"containers": [server]}},
            },
        },
    )
    cluster.apps().create_namespaced_deployment(ns, deployment)
    for name, spec in (
        ("web", {"ports": [{"port": 80, "targetPort": "http"}]}),
        ("web-pods", {"clusterIP": "None", "ports": [{"port": 8080}]}),
    ):
        service = {"metadata": {"name": name}, "spec": {"selector": labels, **spec}}
        cluster.core().create_namespaced_service(ns, build(k8s.V1Service, service))
    web = cluster.core().read_namespaced_service("web", ns)
    assert web.spec is not None and web.spec.cluster_ip
    cluster_ip = web.spec.cluster_ip

    def available(replicas: int) -> bool:
        found = cluster.apps().read_namespaced_deployment("web", ns).status
        assert found is not None
        return found.available_replicas == replicas and found.ready_replicas == replicas

    wait_for(lambda: available(2), what="2 available replicas")
    cluster.apps().patch_namespaced_deployment_scale("web", ns, {"spec": {"replicas": 3}})
    wait_for(lambda: available(3), what="3 available replicas")
    pods = cluster.core().list_namespaced_pod(ns, label_selector="app=web").items
    ips = {str(status(p).pod_ip) for p in pods}
    assert len(ips) == 3
    assert all(ip.startswith("10.244.1.") for ip in ips)

    def endpoints_are_the_pods() -> bool:
        found = cluster.core().read_namespaced_endpoints("web", ns)
        return {a.ip for s in found.subsets or [] for a in s.addresses or []} == ips

    wait_for(endpoints_are_the_pods, what="the Service's endpoints")
    client_script = """
        import json, socket, urllib.request
        names = {}
        for name in ("web", "web.web", "web.web.svc.cluster.local", "web-pods"):
            found = socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)
            names[name] = sorted({address[4][0] for address in found})
        with urllib.request.urlopen("http://web/", timeout=10) as answer:
            code = answer.status
        print(json.dumps({"names": names, "status": code, "hostname": socket.gethostname()}))
    """
    cluster.core().create_namespaced_pod(ns, python("client", client_script))
    done = cluster.wait_pod(ns, "client", phase_is("Succeeded", "Failed"))
    output = cluster.core().read_namespaced_pod_log("client", ns)
    assert status(done).phase == "Succeeded", output
    seen = json.loads(output)
    assert (seen["status"], seen["hostname"]) == (200, "client")
    names = seen["names"]
    assert names.pop("web-pods") == sorted(ips)  # headless: the ready pods themselves
    assert all(addresses == [cluster_ip] for addresses in names.values()), names
    # The ClusterIP answers on the host too (port 80, relayed to a pod's port 8080).
    with urllib.request.urlopen(f"http://{cluster_ip}/", timeout=10) as answer:
        assert answer.status == 200


def test_deletion_sends_sigterm_first_and_sigkill_after_the_grace_period(
    cluster: Cluster, tmp_path: Path
) -> None:
    script = """
        import os, signal, time
        out = open("/markers/log", "a", buffering=1)
        out.write(f"started {os.getpid()}\\n")
        signal.signal(signal.SIGTERM, lambda *_: out.write("TERM\\n"))
        while True:
            time.sleep(0.2)
            out.write("alive\\n")
    """
    stubborn = python(
        "stubborn", script, terminationGracePeriodSeconds=600, **marker_volume(tmp_path)
    )
    cluster.core().create_namespaced_pod("default", stubborn)
    cluster.wait_pod("default", "stubborn", phase_is("Running"))
    log = tmp_path / "log"
    wait_for(lambda: log.exists() and "alive" in log.read_text(), what="the pod to run")
    pid = int(log.read_text().split()[1])
    cluster.core().delete_namespaced_pod("stubborn", "default")
    wait_for(lambda: "alive" in log.read_text().partition("TERM\n")[2], what="life after TERM")
    terminating = cluster.core().read_namespaced_pod("stubborn", "default")
    assert terminating.metadata is not None and terminating.metadata.deletion_timestamp
    assert alive(pid)  # within its grace period: it ignores SIGTERM and runs on
    # A second delete with a shorter grace period brings the SIGKILL forward.
    cluster.core().delete_namespaced_pod("stubborn", "default", grace_period_seconds=1)
    cluster.wait_pod_gone("default", "stubborn")
    assert not alive(pid)


def test_a_pods_service_account_token_is_allowed_what_its_role_allows_and_nothing_else(
    cluster: Cluster,
) -> None:
    ns = namespace(cluster, "rbac")
    core, rbac = cluster.core(), cluster.rbac()
    core.create_namespaced_service_account(
        ns, build(k8s.V1ServiceAccount, {"metadata": {"name": "reader"}})
    )
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
    rbac.create_namespaced_role(
        ns, build(k8s.V1Role, {"metadata": {"name": "pod-reader"}, "rules": [rule]})
    )
    binding = build(
        k8s.V1RoleBinding,
        {
            "metadata": {"name": "reader-reads-pods"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "pod-reader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        },
    )
    rbac.create_namespaced_role_binding(ns, binding)
    script = """
        import json, os, ssl, urllib.error, urllib.request
        directory = "/var/run/secrets/kubernetes.io/serviceaccount"
        token = open(f"{directory}/token").read()
        namespace = open(f"{directory}/namespace").read()
        context = ssl.create_default_context(cafile=f"{directory}/ca.crt")
        host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
        answers = {}
        for kind in ("pods", "secrets"):
            request = urllib.request.Request(
                f"https://{host}:{port}/api/v1/namespaces/{namespace}/{kind}",
                headers={"Authorization": f"Bearer {token}"},
            )
            try:
                with urllib.request.urlopen(request, context=context) as answer:
                    answers[kind] = answer.status
            except urllib.error.HTTPError as exc:
                answers[kind] = exc.code
        print(json.dumps(answers))
    """
    core.create_namespaced_pod(ns, python("asker", script, serviceAccountName="reader"))
    done = cluster.wait_pod(ns, "asker", phase_is("Succeeded", "Failed"))
    output = core.read_namespaced_pod_log("asker", ns)
    assert status(done).phase == "Succeeded", output
    assert json.loads(output) == {"pods": 200, "secrets": 403}


def test_the_kubelet_carries_on_after_an_api_server_restart(
    cluster: Cluster, tmp_path: Path
) -> None:
    script = """
        import time
        open("/markers/starts", "a").write("start\\n")
        time.sleep(3600)
    """
    steady = python("steady", script, restart="Always", **marker_volume(tmp_path))
    cluster.core().create_namespaced_pod("default", steady)
    cluster.wait_pod("default", "steady", phase_is("Running"))
    cluster.plane.restart_apiserver()
    cluster.core().create_namespaced_pod("default", shell("after", "echo after"))
    done = cluster.wait_pod("default", "after", phase_is("Succeeded", "Failed"))
    assert status(done).phase == "Succeeded"
    assert cluster.core().read_namespaced_pod_log("after", "default") == "after\n"
    still = cluster.core().read_namespaced_pod("steady", "default")
    assert status(still).phase == "Running"
    assert container(still).restart_count == 0
    assert (tmp_path / "starts").read_text() == "start\n"  # one process, not two
    cluster.core().delete_namespaced_pod("steady", "default", grace_period_seconds=0)


def test_pods_owned_by_a_deleted_pod_are_garbage_collected(cluster: Cluster) -> None:
    owner = cluster.core().create_namespaced_pod("default", shell("owner", "exec sleep 3600"))
    assert owner.metadata is not None
    reference = {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner.metadata.uid}
    owned = shell(
        "owned",
        "exec sleep 3600",
        metadata={"ownerReferences": [reference]},
        terminationGracePeriodSeconds=1,
    )
    cluster.core().create_namespaced_pod("default", owned)
    cluster.wait_pod("default", "owned", phase_is("Running"))
    cluster.core().delete_namespaced_pod("owner", "default", grace_period_seconds=1)
    cluster.wait_pod_gone("default", "owner")
    cluster.wait_pod_gone("default", "owned")


def test_a_crashing_container_restarts_with_back_off_and_keeps_its_previous_log(
    cluster: Cluster,
) -> None:
    cluster.core().create_namespaced_pod(
        "default", shell("crasher", "echo run; exit 1", restart="Always")
    )
    crashed = cluster.wait_pod("default", "crasher", restarted(2))
    assert status(crashed).phase == "Running"
    last = container(crashed).last_state
    assert last is not None and last.terminated is not None
    assert last.terminated.exit_code == 1
    previous = cluster.core().read_namespaced_pod_log("crasher", "default", previous=True)
    assert previous == "run\n"
    cluster.core().delete_namespaced_pod("crasher", "default", grace_period_seconds=0)


def test_a_failing_liveness_probe_restarts_the_container(cluster: Cluster) -> None:
    liveness: Obj = {
        "exec": {"command": ["test", "-f", "/data/alive"]},
        "periodSeconds": 1,
        "failureThreshold": 2,
    }
    unhealthy = pod(
        "unhealthy",
        "shell",
        restart="Always",
        terminationGracePeriodSeconds=1,
        volumes=[{"name": "data", "emptyDir": {}}],
        container={
            "command": ["sh", "-c", "touch /data/alive; sleep 1; rm /data/alive; exec sleep 3600"],
            "livenessProbe": liveness,
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        },
    )
    cluster.core().create_namespaced_pod("default", unhealthy)
    restarted_once = cluster.wait_pod("default", "unhealthy", restarted(1))
    last = container(restarted_once).last_state
    assert last is not None and last.terminated is not None
    assert "liveness" in str(last.terminated.message)
    cluster.core().delete_namespaced_pod("unhealthy", "default", grace_period_seconds=0)


def test_config_maps_and_secrets_reach_env_and_volumes_and_updates_reach_the_volume(
    cluster: Cluster,
) -> None:
    ns = namespace(cluster, "config")
    core = cluster.core()
    core.create_namespaced_config_map(
        ns, build(k8s.V1ConfigMap, {"metadata": {"name": "settings"}, "data": {"mode": "one"}})
    )
    core.create_namespaced_secret(
        ns, build(k8s.V1Secret, {"metadata": {"name": "creds"}, "stringData": {"pw": "s3cret"}})
    )
    script = """
        import os, time
        print(os.environ["PASSWORD"], os.environ["SETTING_mode"], open("/config/mode").read())
        while open("/config/mode").read() == "one":
            time.sleep(0.2)
        print(open("/config/mode").read())
    """
    reader = python(
        "reader",
        script,
        volumes=[{"name": "config", "configMap": {"name": "settings"}}],
        container={
            "env": [
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "pw"}}}
            ],
            "envFrom": [{"prefix": "SETTING_", "configMapRef": {"name": "settings"}}],
            "volumeMounts": [{"name": "config", "mountPath": "/config"}],
        },
    )
    core.create_namespaced_pod(ns, reader)
    cluster.wait_pod(ns, "reader", phase_is("Running"))
    core.patch_namespaced_config_map("settings", ns, {"data": {"mode": "two"}})
    done = cluster.wait_pod(ns, "reader", phase_is("Succeeded", "Failed"))
    output = core.read_namespaced_pod_log("reader", ns)
    assert status(done).phase == "Succeeded", output
    assert output == "s3cret one one\ntwo\n"


def test_a_container_over_its_memory_limit_is_oom_killed(cluster: Cluster) -> None:
    if memory_controller() is None:
        pytest.skip("no writable memory cgroup here: the kubelet cannot enforce memory limits")
    script = "blocks = [bytearray(16 << 20) for _ in range(64)]"
    limits = {"resources": {"limits": {"memory": "64Mi"}}}
    cluster.core().create_namespaced_pod("default", python("hog", script, container=limits))
    done = cluster.wait_pod("default", "hog", phase_is("Succeeded", "Failed"))
    state = terminated(done)
    assert (status(done).phase, state.reason, state.exit_code) == ("Failed", "OOMKilled", 137)


def test_a_restarted_kubelet_adopts_running_pods_and_cleans_up_deleted_ones(
    cluster: Cluster, tmp_path: Path
) -> None:
    script = """
        import os, sys, time
        open(f"/markers/{sys.argv[1]}", "a").write(f"{os.getpid()}\\n")
        time.sleep(3600)
    """
    for name in ("kept", "dropped"):
        manifest = python(name, script, name, restart="Always", **marker_volume(tmp_path))
        cluster.core().create_namespaced_pod("default", manifest)
    for name in ("kept", "dropped"):
        cluster.wait_pod("default", name, phase_is("Running"))
    wait_for(lambda: all((tmp_path / n).exists() for n in ("kept", "dropped")))
    kept_pid, dropped_pid = (int((tmp_path / n).read_text()) for n in ("kept", "dropped"))
    cluster.kill_kubelet()
    assert alive(kept_pid) and alive(dropped_pid)  # a kubelet's death is not its pods'
    cluster.core().delete_namespaced_pod("dropped", "default")
    cluster.start_kubelet()
    cluster.wait_pod_gone("default", "dropped")
    assert not alive(dropped_pid)
    kept = cluster.core().read_namespaced_pod("kept", "default")
    assert container(kept).restart_count == 0
    assert alive(kept_pid)
    assert (tmp_path / "kept").read_text() == f"{kept_pid}\n"  # adopted, not started again
    cluster.core().delete_namespaced_pod("kept", "default", grace_period_seconds=0)
    cluster.wait_pod_gone("default", "kept")
    wait_for(lambda: not alive(kept_pid), what="the kept pod's process to end")


def test_an_image_of_podmans_local_storage_runs_with_podman(
    cluster: Cluster, tmp_path: Path
) -> None:
    podman = str(PODMAN) if PODMAN.exists() else shutil.which("podman")
    if (
        podman is None
        or subprocess.run([podman, "info"], capture_output=True, check=False).returncode
    ):
        pytest.skip("no working podman here")
    image = "localhost/sparkgate-kubelet-test:sh"
    # The smallest image this machine can make without a registry: the host's dash and libc.
    root = tmp_path / "root"
    for path in ("/usr/bin/dash", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"):
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, root / path.lstrip("/"))
    (root / "bin").mkdir()
    (root / "bin" / "sh").symlink_to("/usr/bin/dash")
    tarball = tmp_path / "root.tar"
    with tarfile.open(tarball, "w") as tar:
        tar.add(root, arcname=".")
    subprocess.run([podman, "import", str(tarball), image], check=True, capture_output=True)
    try:
        env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        command = ["/bin/sh", "-c", "echo $HOSTNAME $POD_IP; exit 5"]
        manifest = pod("podded", image, container={"command": command, "env": env})
        cluster.core().create_namespaced_pod("default", manifest)
        done = cluster.wait_pod("default", "podded", phase_is("Succeeded", "Failed"))
        assert terminated(done).exit_code == 5
        log = cluster.core().read_namespaced_pod_log("podded", "default")
        assert log == f"podded {status(done).pod_ip}\n"
        left = subprocess.run(
            [podman, "ps", "--all", "--quiet", "--filter", "name=_podded_"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert left.stdout == ""  # the ended container is removed
    finally:
        subprocess.run([podman, "rmi", "--force", image], capture_output=True, check=False)
