"""The test kubelet's pure rules, by example (no cluster): the phase of a pod from its
containers' states, the restart back-off, ``$(VAR)`` expansion, quantities, the hosts file and
the Service relay's table."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from sparkgate_dev.kube._env import expand, quantity
from sparkgate_dev.kube._proxy import service_backends
from sparkgate_dev.kube._status import pod_phase, restart_delay, should_restart
from sparkgate_dev.kube.kubelet import hosts_file

Obj = dict[str, Any]
RUNNING: Obj = {"running": {"startedAt": "2026-01-01T00:00:00Z"}}
WAITING: Obj = {"waiting": {"reason": "ContainerCreating"}}


def exited(code: int) -> Obj:
    return {"terminated": {"exitCode": code}}


def statuses(*states: Obj, last: Obj | None = None) -> list[Obj]:
    return [
        {"name": f"c{i}", "state": state, "lastState": last or {}} for i, state in enumerate(states)
    ]


def spec(containers: int, policy: str, init: int = 0) -> Obj:
    return {
        "restartPolicy": policy,
        "containers": [{"name": f"c{i}"} for i in range(containers)],
        "initContainers": [{"name": f"c{i}"} for i in range(init)],
    }


@pytest.mark.parametrize(
    ("policy", "states", "phase"),
    [
        ("Never", [WAITING], "Pending"),
        ("Never", [RUNNING], "Running"),
        ("Never", [exited(0)], "Succeeded"),
        ("Never", [exited(3)], "Failed"),
        ("Never", [exited(0), RUNNING], "Running"),
        ("Never", [exited(0), exited(1)], "Failed"),
        ("OnFailure", [exited(0)], "Succeeded"),
        ("Always", [exited(0)], "Running"),
    ],
)
def test_the_phase_follows_the_containers_and_the_restart_policy(
    policy: str, states: list[Obj], phase: str
) -> None:
    assert pod_phase(spec(len(states), policy), [], statuses(*states)) == phase


def test_a_container_waiting_to_restart_keeps_its_pod_running() -> None:
    crashed = statuses(WAITING, last=exited(1))
    assert pod_phase(spec(1, "Always"), [], crashed) == "Running"


def test_init_containers_hold_the_pod_pending_and_a_failed_one_fails_it_under_never() -> None:
    assert pod_phase(spec(1, "Never", init=1), statuses(RUNNING), statuses(WAITING)) == "Pending"
    assert pod_phase(spec(1, "Never", init=1), statuses(exited(1)), statuses(WAITING)) == "Failed"
    assert pod_phase(spec(1, "Always", init=1), statuses(exited(1)), statuses(WAITING)) == "Pending"


def test_restarts_back_off_doubling_up_to_the_cap_the_first_at_once() -> None:
    assert [restart_delay(n, 1.0, 20.0) for n in range(7)] == [0, 1, 2, 4, 8, 16, 20]
    assert should_restart("OnFailure", 1, init=False)
    assert not should_restart("OnFailure", 0, init=False)
    assert should_restart("Always", 0, init=False)
    assert not should_restart("Always", 0, init=True)  # an init container that succeeded
    assert not should_restart("Never", 1, init=False)


def test_references_expand_as_kubernetes_expands_them() -> None:
    env = {"POD_IP": "10.244.1.7", "EMPTY": ""}
    assert expand("--bind $(POD_IP)", env) == "--bind 10.244.1.7"
    assert expand("$(MISSING) $$(POD_IP) $(EMPTY)x", env) == "$(MISSING) $(POD_IP) x"


def test_quantities() -> None:
    assert quantity("64Mi") == 64 * 2**20
    assert quantity("1.5G") == Decimal(1_500_000_000)
    assert quantity("250m") == Decimal("0.25")


def meta(namespace: str, name: str) -> Obj:
    return {"namespace": namespace, "name": name}


SERVICES = [
    {
        "metadata": meta("web", "api"),
        "spec": {"clusterIP": "10.96.0.20", "ports": [{"name": "http", "port": 80}]},
    },
    {"metadata": meta("web", "pods"), "spec": {"clusterIP": "None", "ports": [{"port": 8080}]}},
    {
        "metadata": meta("default", "kubernetes"),
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]},
    },
]
ENDPOINTS = [
    {
        "metadata": meta("web", "api"),
        "subsets": [
            {
                "addresses": [{"ip": "10.244.1.2"}, {"ip": "10.244.1.3"}],
                "ports": [{"name": "http", "port": 8080}],
            }
        ],
    },
    {
        "metadata": meta("web", "pods"),
        "subsets": [
            {"addresses": [{"ip": "10.244.1.2", "hostname": "p0"}], "ports": [{"port": 8080}]}
        ],
    },
]


def test_the_hosts_file_names_services_at_their_cluster_ip_and_headless_ones_at_their_pods() -> (
    None
):
    pod = {"metadata": meta("web", "client"), "spec": {}}
    lines = hosts_file(pod, "10.244.1.9", SERVICES, ENDPOINTS).splitlines()
    assert "10.244.1.9\tclient" in lines
    assert "10.96.0.20\tapi api.web api.web.svc api.web.svc.cluster.local" in lines
    assert "10.244.1.2\tpods pods.web pods.web.svc pods.web.svc.cluster.local" in lines
    assert "10.244.1.2\tp0.pods.web.svc.cluster.local" in lines
    # Another namespace's Services go by their qualified names only.
    assert (
        "10.96.0.1\tkubernetes.default kubernetes.default.svc kubernetes.default.svc.cluster.local"
        in lines
    )


def test_the_relay_sends_a_cluster_ip_port_to_the_ready_endpoints_of_the_same_port() -> None:
    table = service_backends(SERVICES, ENDPOINTS, ("127.0.0.1", 6443))
    assert table == {
        ("10.96.0.20", 80): [("10.244.1.2", 8080), ("10.244.1.3", 8080)],
        ("10.96.0.1", 443): [("127.0.0.1", 6443)],
    }
