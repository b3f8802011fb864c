"""The Helm chart (deploy/helm/sparkgate), offline: strict lint, every rendering validated
strictly against the published schemas of Kubernetes 1.25 to 1.31, wrong values refused by its
values.schema.json, the Roles' exact rights, the engines' NetworkPolicy, and what the nodes'
environment means to sparkgate's own settings and launcher. Installing it against a real API
server is tests/kube's."""

from __future__ import annotations

import base64
import json
import os
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import annotated_types
import helm_python as helm
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml
from helm_python import _native

from sparkgate.auth.access import parse_access
from sparkgate.auth.passwords import check_password, hash_password
from sparkgate.auth.passwords import parse as parse_passwords
from sparkgate.launcher.kubernetes import engine_pod
from sparkgate.settings import EnginePod, Settings
from sparkgate.states import EngineKind, EngineState
from sparkgate.store.records import EngineRecord

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "sparkgate"
KUBE_VERSIONS = [f"1.{minor}.0" for minor in range(25, 32)]
RELEASE, NAMESPACE = "sg", "analytics"
PG = "postgresql+psycopg://sparkgate:pw@postgres.db:5432/sparkgate"
LEVELS = ("default", "user", "group", "server", "connection")

# Settings the chart sets from values of its own (ports, store, auth, ...), so `config` refuses
# them; and those no chart value sets, with why.
SET_BY_CHART = {
    "home", "store_url", "host", "port", "thrift_port", "connect_port", "auth",
    "auth_password_file", "admins", "insecure", "ssl_certfile", "ssl_keyfile", "access_file",
    "launcher", "kubernetes_image", "kubernetes_namespace", "kubernetes_service_account",
    "kubernetes_labels", "kubernetes_engine_pods", "kubernetes_env_secret",
    "kubernetes_name_prefix",
}  # fmt: skip
NOT_SETTABLE = {"kubernetes_kubeconfig"}  # pods reach the API server as their service account

ACCESS = {
    "admins": ["carol"],
    "groups": {"analysts": ["dave"]},
    "rules": [{"groups": ["analysts"], "allow": ["sql"]}],
    "resource_groups": {
        "rootGroups": [{"name": "analysts", "hardConcurrencyLimit": 2, "maxQueued": 10}],
        "selectors": [{"user": ".*", "group": "analysts"}],
    },
}

TOLERATION = {"key": "spark", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}

# Every part of the chart switched on: several nodes on PostgreSQL, TLS, an access file, an
# Ingress, placement of nodes and of engines per share level.
FULL: dict[str, Any] = {
    "replicaCount": 3,
    "image": {"repository": "registry.example.com/sparkgate", "tag": "0.1.0"},
    "imagePullSecrets": [{"name": "regcred"}],
    "store": {"url": PG},
    "auth": {
        "methods": "password,jwt",
        "admin": {"name": "carol", "password": "carols-secret"},
        "users": [f"dave:{hash_password('daves-secret', rounds=4)}"],
    },
    "tls": {"secretName": "sparkgate-tls"},
    "access": ACCESS,
    "config": {
        "engine_idle_timeout": 600,
        "warm_engines": 2,
        "load_max_bytes": 21474836480,
        "metrics_public": True,
        "engine_share_level": "user",
        "stream_retry_min_backoff": "5s",
        "spark_conf": {"spark.sql.shuffle.partitions": "8"},
        "udf_modules": ["acme.udfs"],
    },
    "extraEnv": [{"name": "TZ", "value": "UTC"}],
    "storage": {"hostPath": "/srv/sparkgate", "mountPath": "/data/sparkgate"},
    "engines": {
        "pods": {
            "default": {
                "cpu": "1",
                "memory": "2g",
                "executor_cpu": "500m",
                "executor_memory": "2g",
                "max_executors": 4,
            },
            "user": {
                "memory": "4g",
                "node_selector": {"pool": "spark"},
                "tolerations": [TOLERATION],
            },
            "group": {"max_executors": 8, "service_account": "sparkgate-etl"},
            "server": {"cpu": "2", "memory": "8g"},
            "connection": {"memory": "1g", "max_executors": 1},
        },
        "podAnnotations": {"example.com/team": "data"},
    },
    "ingress": {
        "enabled": True,
        "className": "nginx",
        "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "180"},
        "hosts": [
            {"host": "sparkgate.example.com", "paths": [{"path": "/", "pathType": "Prefix"}]}
        ],
        "tls": [{"secretName": "sparkgate-web-tls", "hosts": ["sparkgate.example.com"]}],
    },
    "service": {"type": "LoadBalancer", "annotations": {"example.com/lb": "internal"}},
    "podDisruptionBudget": {"maxUnavailable": "34%"},
    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "2Gi"}},
    "podAnnotations": {"example.com/scrape": "true"},
    "podLabels": {"team": "data"},
    "nodeSelector": {"pool": "system"},
    "tolerations": [TOLERATION],
    "affinity": {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "node"}},
                    },
                }
            ],
        },
    },
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "node"}},
        }
    ],
    "priorityClassName": "data-platform",
}
VALUE_SETS = {"default": {}, "full": FULL}


@pytest.fixture(scope="module")
def chart() -> Iterator[helm.Chart]:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def render(
    chart: helm.Chart, values: dict[str, Any], *, kube_version: str = "1.31.0", name: str = RELEASE
) -> list[dict[str, Any]]:
    """The chart's objects as an install into NAMESPACE would create them (NOTES aside)."""
    # Chart.render() passes no Kubernetes version; the library takes one (as `helm template
    # --kube-version`), and the PodDisruptionBudget's API version depends on it.
    options = {"name": name, "namespace": NAMESPACE, "kube_version": f"v{kube_version}"}
    rendered: dict[str, str] = json.loads(
        _native.call_string("helm_render", chart._raw(), json.dumps(values), json.dumps(options))
    )
    return [
        doc
        for path, text in sorted(rendered.items())
        if not path.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"{len(found)} {kind} named {name}"
    return found[0]


def engine_template(objects: list[dict[str, Any]]) -> dict[str, Any]:
    configmap = one(objects, "ConfigMap", f"{RELEASE}-sparkgate-engine")
    template: dict[str, Any] = yaml.safe_load(configmap["data"]["pod.yaml"])
    return template


def node_container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = one(objects, "Deployment")["spec"]["template"]["spec"][
        "containers"
    ][0]
    return container


def node_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    """The node's SPARKGATE_* variables with a value (the pod's address aside)."""
    return {e["name"]: e["value"] for e in node_container(objects)["env"] if "value" in e}


def test_lint_is_clean_in_strict_mode() -> None:
    for version in (KUBE_VERSIONS[0], KUBE_VERSIONS[-1]):
        for values in VALUE_SETS.values():
            report = helm.lint(CHART, values, strict=True, kube_version=f"v{version}")
            problems = [m for m in report["messages"] if m["severity"] >= 2]
            assert report["errors"] == [] and problems == [], (version, report)


@pytest.mark.parametrize("version", KUBE_VERSIONS)
@pytest.mark.parametrize("value_set", sorted(VALUE_SETS))
def test_rendering_is_valid_kubernetes(chart: helm.Chart, value_set: str, version: str) -> None:
    objects = render(chart, VALUE_SETS[value_set], kube_version=version)
    kinds = {o["kind"] for o in objects}
    assert {"Deployment", "Service", "ServiceAccount", "Role", "RoleBinding", "ConfigMap",
            "Secret", "PodDisruptionBudget", "NetworkPolicy", "Job"} <= kinds  # fmt: skip
    assert ("Ingress" in kinds) == (value_set == "full")
    # The engine pod template is a Pod too, and what the launcher makes of it (below).
    for document in [*objects, engine_template(objects)]:
        kubernetes_validate.validate(document, version, strict=True)


def node_settings(objects: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> Settings:
    """sparkgate's settings in a node of this rendering (its env Secret's values included)."""
    for name in list(os.environ):
        if name.startswith("SPARKGATE_"):
            monkeypatch.delenv(name)
    secret = one(objects, "Secret", f"{RELEASE}-sparkgate-env")
    env = {**node_env(objects), "SPARKGATE_HOST": "10.0.0.7"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name, value in secret["data"].items():
        monkeypatch.setenv(name, base64.b64decode(value).decode())
    return Settings()


def test_the_launcher_makes_valid_engine_pods_of_the_charts_settings(
    chart: helm.Chart, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render(chart, FULL)
    template = tmp_path / "pod.yaml"
    template.write_text(
        one(objects, "ConfigMap", f"{RELEASE}-sparkgate-engine")["data"]["pod.yaml"]
    )
    settings = node_settings(objects, monkeypatch)
    pods = dict(settings.kubernetes_engine_pods)
    pods["default"] = pods["default"].model_copy(update={"template": template})
    settings = settings.model_copy(update={"kubernetes_engine_pods": pods})
    for share_key in ("user:dave", "group:analysts", None, "session:12"):
        record = EngineRecord(
            id=42, kind=EngineKind.SHARED, state=EngineState.STARTING, session_id=None, conf={},
            node_id="n", host=None, pid=None, app_id=None, log_path=None, error=None, version=1,
            created_at=0.0, started_at=None, heartbeat_at=None, finished_at=None,
            updated_at=0.0, share_key=share_key,
        )  # fmt: skip
        pod = engine_pod(settings, record)
        for version in KUBE_VERSIONS:
            kubernetes_validate.validate(pod, version, strict=True)
        labels = pod["metadata"]["labels"]
        policy = one(objects, "NetworkPolicy")["spec"]["podSelector"]["matchLabels"]
        assert policy.items() <= labels.items()
        mounts = {m["name"]: m["mountPath"] for m in pod["spec"]["containers"][0]["volumeMounts"]}
        assert mounts == {"home": "/data/sparkgate", "access": "/etc/sparkgate/access"}
        assert pod["spec"]["containers"][0]["envFrom"] == [
            {"secretRef": {"name": f"{RELEASE}-sparkgate-env"}}
        ]
        assert "SPARKGATE_STORE_URL" not in {e["name"] for e in pod["spec"]["containers"][0]["env"]}


def test_a_nodes_environment_is_sparkgates_settings(
    chart: helm.Chart, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render(chart, FULL)
    settings = node_settings(objects, monkeypatch)
    assert settings.store_url == PG
    assert (settings.host, settings.port, settings.thrift_port, settings.connect_port) == (
        "10.0.0.7", 8998, 10009, 15002,
    )  # fmt: skip
    assert settings.launcher == "kubernetes"
    assert settings.kubernetes_namespace == NAMESPACE
    assert settings.kubernetes_image == "registry.example.com/sparkgate:0.1.0"
    assert settings.kubernetes_service_account == f"{RELEASE}-sparkgate-engine"
    assert settings.kubernetes_env_secret == f"{RELEASE}-sparkgate-env"
    assert settings.kubernetes_labels == {
        "app.kubernetes.io/name": "sparkgate",
        "app.kubernetes.io/instance": RELEASE,
        "app.kubernetes.io/component": "engine",
    }
    pods = {level: pod.model_dump(exclude_none=True) for level, pod in
            settings.kubernetes_engine_pods.items()}  # fmt: skip
    expected = {level: dict(FULL["engines"]["pods"][level]) for level in LEVELS}
    expected["default"]["template"] = Path("/etc/sparkgate/engine/pod.yaml")
    assert pods == expected
    # `config` as written, big numbers and durations included.
    assert settings.engine_idle_timeout == 600
    assert settings.load_max_bytes == 21474836480
    assert settings.metrics_public is True
    assert settings.stream_retry_min_backoff == 5.0
    assert settings.spark_conf == {"spark.sql.shuffle.partitions": "8"}
    assert settings.udf_modules == ["acme.udfs"]
    # The files it names are mounted, from the chart's ConfigMaps and Secrets.
    container = node_container(objects)
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {
        v["name"]: v for v in one(objects, "Deployment")["spec"]["template"]["spec"]["volumes"]
    }
    assert settings.access_file is not None and settings.auth_password_file is not None
    assert settings.ssl_certfile is not None
    assert volumes[mounts[str(settings.access_file.parent)]]["configMap"]["name"] == (
        f"{RELEASE}-sparkgate-access"
    )
    assert volumes[mounts[str(settings.auth_password_file.parent)]]["secret"]["secretName"] == (
        f"{RELEASE}-sparkgate-auth"
    )
    assert volumes[mounts[str(settings.ssl_certfile.parent)]]["secret"]["secretName"] == (
        "sparkgate-tls"
    )
    assert volumes[mounts[str(settings.home)]]["hostPath"]["path"] == "/srv/sparkgate"


def test_the_access_file_and_the_password_file_are_what_sparkgate_reads(
    chart: helm.Chart,
) -> None:
    objects = render(chart, FULL)
    rules = parse_access(
        one(objects, "ConfigMap", f"{RELEASE}-sparkgate-access")["data"]["access.yaml"]
    )
    assert rules.admins == {"carol"} and rules.resource_groups is not None
    data = one(objects, "Secret", f"{RELEASE}-sparkgate-auth")["data"]
    users = parse_passwords(base64.b64decode(data["passwords"]).decode())
    assert sorted(users) == ["carol", "dave"]
    assert check_password("carols-secret", users["carol"])
    assert base64.b64decode(data["admin-password"]).decode() == "carols-secret"


def test_a_generated_admin_password_is_in_the_password_file(chart: helm.Chart) -> None:
    data = one(render(chart, {}), "Secret", f"{RELEASE}-sparkgate-auth")["data"]
    password = base64.b64decode(data["admin-password"]).decode()
    users = parse_passwords(base64.b64decode(data["passwords"]).decode())
    assert len(password) == 24 and list(users) == ["admin"]
    assert check_password(password, users["admin"])


REFUSED: dict[str, tuple[dict[str, Any], str]] = {
    "a port as a string": (
        {"ports": {"http": "8998"}},
        "at '/ports/http': got string, want integer",
    ),
    "a port out of range": ({"ports": {"connect": 70000}}, "at '/ports/connect': maximum"),
    "an unknown key": ({"replicas": 2}, "at '': additional properties 'replicas' not allowed"),
    "an unknown key deeper": (
        {"engines": {"pods": {"user": {"mem": "2g"}}}},
        "at '/engines/pods/user': additional properties 'mem' not allowed",
    ),
    "an unknown share level": (
        {"engines": {"pods": {"team": {}}}},
        "at '/engines/pods': additional properties 'team' not allowed",
    ),
    "an unknown setting": (
        {"config": {"engine_idle_timout": 60}},
        "at '/config': additional properties 'engine_idle_timout' not allowed",
    ),
    "a setting the chart sets": (
        {"config": {"store_url": PG}},
        "at '/config': additional properties 'store_url' not allowed",
    ),
    "a setting of the wrong type": (
        {"config": {"warm_engines": "two"}},
        "at '/config/warm_engines': got string, want integer",
    ),
    "several nodes on SQLite": (
        {"replicaCount": 2, "store": {"url": "sqlite:////var/lib/sparkgate/sparkgate.db"}},
        "at '/store/url': 'sqlite:////var/lib/sparkgate/sparkgate.db' does not match pattern "
        "'^postgresql'",
    ),
    "several nodes without a store": (
        {"replicaCount": 2},
        "at '/store/existingSecret': minLength: got 0, want 1",
    ),
    "a store of another kind": (
        {"store": {"url": "mysql://db/sparkgate"}},
        "at '/store/url': 'mysql://db/sparkgate' does not match pattern",
    ),
    "a store URL and a store Secret": (
        {"store": {"url": PG, "existingSecret": "mine"}},
        "at '/store/url': maxLength: got",
    ),
    "a negative memory": (
        {"engines": {"pods": {"default": {"memory": "-2g"}}}},
        "at '/engines/pods/default/memory': '-2g' does not match pattern",
    ),
    "a memory without its unit": (
        {"engines": {"pods": {"server": {"executor_memory": "2048"}}}},
        "at '/engines/pods/server/executor_memory': '2048' does not match pattern",
    ),
    "a CPU as a number": (
        {"engines": {"pods": {"user": {"cpu": 2}}}},
        "at '/engines/pods/user/cpu': got number, want string",
    ),
    "no executor at all": (
        {"engines": {"pods": {"user": {"max_executors": 0}}}},
        "at '/engines/pods/user/max_executors': minimum: got 0, want 1",
    ),
    "a toleration's unknown effect": (
        {"engines": {"pods": {"user": {"tolerations": [{"key": "a", "effect": "Never"}]}}}},
        "at '/engines/pods/user/tolerations/0/effect'",
    ),
    "an unknown launcher": (
        {"engines": {"launcher": "yarn"}},
        "at '/engines/launcher': value must be one of 'kubernetes', 'local'",
    ),
    "an unknown sign-in": ({"auth": {"methods": "kerberos"}}, "at '/auth/methods': 'kerberos'"),
    "a password file line not bcrypt": (
        {"auth": {"users": ["dave:secret"]}},
        "at '/auth/users/0': 'dave:secret' does not match pattern",
    ),
    "a claim and a host path": (
        {"storage": {"existingClaim": "home", "hostPath": "/srv/sparkgate"}},
        "at '/storage/hostPath': maxLength: got",
    ),
    "a relative mount path": (
        {"storage": {"mountPath": "data"}},
        "at '/storage/mountPath': 'data' does not match pattern",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_wrong_values_are_refused(chart: helm.Chart, case: str) -> None:
    values, message = REFUSED[case]
    with pytest.raises(helm.HelmValuesError) as refused:
        chart.validate_schema(values)
    assert message in str(refused.value)
    # Installing and rendering validate the same way.
    with pytest.raises(helm.HelmValuesError):
        render(chart, values)


def test_several_nodes_on_postgresql_are_accepted(chart: helm.Chart) -> None:
    chart.validate_schema({"replicaCount": 2, "store": {"url": PG}})
    chart.validate_schema({"replicaCount": 2, "store": {"existingSecret": "sparkgate-env"}})


def rules(role: dict[str, Any]) -> set[tuple[str, str, str, tuple[str, ...]]]:
    return {
        (group, resource, verb, tuple(rule.get("resourceNames", ())))
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def grants(group: str, resource: str, *verbs: str, names: tuple[str, ...] = ()) -> set[Any]:
    return {(group, resource, verb, names) for verb in verbs}


def test_roles_grant_exactly_what_each_account_needs(chart: helm.Chart) -> None:
    objects = render(chart, FULL)
    assert not {o["kind"] for o in objects} & {"ClusterRole", "ClusterRoleBinding"}
    node, engine = f"{RELEASE}-sparkgate", f"{RELEASE}-sparkgate-engine"
    cleanup = f"{RELEASE}-sparkgate-cleanup"
    expected = {
        node: grants("", "pods", "create", "get", "list", "watch", "delete")
        | grants("", "pods/log", "get"),
        engine: grants("", "pods", "create", "get", "list", "watch", "delete", "deletecollection"),
        cleanup: grants("apps", "deployments/scale", "patch", names=(node,))
        | grants("", "pods", "list", "deletecollection"),
    }
    roles = {o["metadata"]["name"]: rules(o) for o in objects if o["kind"] == "Role"}
    assert roles == expected
    # Each bound to its own account, in the release's namespace, and used by its pods.
    bindings = {o["roleRef"]["name"]: o["subjects"] for o in objects if o["kind"] == "RoleBinding"}
    assert bindings == {
        name: [{"kind": "ServiceAccount", "name": name, "namespace": NAMESPACE}] for name in roles
    }
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "ServiceAccount"} == set(roles)
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == node
    assert node_env(objects)["SPARKGATE_KUBERNETES_SERVICE_ACCOUNT"] == engine
    job = one(objects, "Job")
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == cleanup
    # The cleanup's account exists only for `helm uninstall`, before the job.
    for name in (cleanup,):
        for kind in ("ServiceAccount", "Role", "RoleBinding", "Job"):
            annotations = one(objects, kind, name)["metadata"]["annotations"]
            assert annotations["helm.sh/hook"] == "pre-delete"


def test_the_network_policy_admits_only_the_releases_nodes_and_engines(
    chart: helm.Chart,
) -> None:
    objects = render(chart, FULL)
    spec = one(objects, "NetworkPolicy")["spec"]
    engine_labels = engine_template(objects)["metadata"]["labels"]
    node_labels = one(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert spec["podSelector"] == {"matchLabels": engine_labels}
    assert engine_labels == json.loads(node_env(objects)["SPARKGATE_KUBERNETES_LABELS"])
    assert not spec["podSelector"]["matchLabels"].items() <= node_labels.items()
    assert spec["policyTypes"] == ["Ingress"]
    # One rule, from pods of this namespace only (no namespaceSelector, no ipBlock): nodes and
    # engines of this release, on any port (drivers and executors pick theirs).
    assert spec["ingress"] == [{
        "from": [
            {"podSelector": {"matchLabels": {
                k: v for k, v in node_labels.items() if k.startswith("app.kubernetes.io/")
            }}},
            {"podSelector": {"matchLabels": engine_labels}},
        ]
    }]  # fmt: skip
    other_release = render(chart, FULL, name="other")
    assert one(other_release, "NetworkPolicy")["spec"]["podSelector"] != spec["podSelector"]


def labels_of(selector: str) -> dict[str, str]:
    pairs = (term.partition("=") for term in selector.split(","))
    return {key: value for key, _, value in pairs}


def test_uninstall_stops_the_nodes_then_deletes_the_engine_pods(chart: helm.Chart) -> None:
    objects = render(chart, FULL)
    container = one(objects, "Job")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert (
        labels_of(env["CLEANUP_ENGINE_SELECTOR"]) == engine_template(objects)["metadata"]["labels"]
    )
    assert (
        labels_of(env["CLEANUP_NODE_SELECTOR"])
        == (one(objects, "Deployment")["spec"]["selector"]["matchLabels"])
    )
    assert env["CLEANUP_DEPLOYMENT"] == one(objects, "Deployment")["metadata"]["name"]
    assert container["command"] == ["python3", "-c"]
    compile(container["args"][0], "cleanup.py", "exec")
    # Engines as local processes leave no pod behind: no hook, no engine account.
    local = render(chart, {"engines": {"launcher": "local"}})
    assert {o["kind"] for o in local} & {"Job", "Role", "NetworkPolicy"} == set()


def test_nodes_roll_one_at_a_time_and_stop_gracefully(chart: helm.Chart) -> None:
    deployment = one(render(chart, FULL), "Deployment")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }  # fmt: skip
    pod = deployment["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 150
    container = pod["containers"][0]
    assert container["args"] == ["serve"]
    assert container["readinessProbe"]["httpGet"] == {
        "path": "/healthz", "port": "http", "scheme": "HTTPS",
    }  # fmt: skip
    assert container["livenessProbe"]["tcpSocket"] == {"port": "http"}
    # The env Secret is read at a container's start: another store rolls the nodes.
    moved = {**FULL, "store": {"url": PG.replace("postgres.db", "postgres-2.db")}}
    annotations = one(render(chart, moved), "Deployment")["spec"]["template"]["metadata"]
    assert (
        annotations["annotations"]["checksum/store"]
        != (deployment["spec"]["template"]["metadata"]["annotations"]["checksum/store"])
    )


def test_service_ports_are_the_container_ports(chart: helm.Chart) -> None:
    values = {"ports": {"http": 9000, "thrift": 0, "connect": 15003}}
    objects = render(chart, values)
    service = {p["name"]: p["port"] for p in one(objects, "Service")["spec"]["ports"]}
    container = {p["name"]: p["containerPort"] for p in node_container(objects)["ports"]}
    assert service == container == {"http": 9000, "connect": 15003}
    assert node_env(objects)["SPARKGATE_THRIFT_PORT"] == "0"


def test_the_disruption_budget_follows_the_api_servers_version(chart: helm.Chart) -> None:
    assert one(render(chart, {}, kube_version="1.20.0"), "PodDisruptionBudget")["apiVersion"] == (
        "policy/v1beta1"
    )
    assert one(render(chart, {}, kube_version="1.21.0"), "PodDisruptionBudget")["apiVersion"] == (
        "policy/v1"
    )


def test_engine_pod_names_fit_a_dns_label_whatever_the_release_name(chart: helm.Chart) -> None:
    prefixes = set()
    for name in (
        "sg",
        "a-release-name-long-enough-to-need-cutting",
        "a-release-name-long-enough-too",
    ):
        prefix = node_env(render(chart, {}, name=name))["SPARKGATE_KUBERNETES_NAME_PREFIX"]
        # An executor's pod: <prefix>-engine-<id>-exec-<n>, as Spark checks it.
        assert len(f"{prefix}-engine-9999999-exec-2147483647") <= 63, prefix
        prefixes.add(prefix)
    assert len(prefixes) == 3


def settings_schema(annotation: Any) -> dict[str, Any]:
    """The JSON schema of a settings field's type, as values.schema.json writes it."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (typing.Union, types.UnionType):  # X | None: the value is left out instead
        (inner,) = [a for a in args if a is not type(None)]
        return settings_schema(inner)
    if origin is typing.Annotated:
        return settings_schema(args[0])
    if origin is Literal:
        return {"type": "string", "enum": list(args)}
    if origin is dict:
        return {"type": "object", "additionalProperties": settings_schema(args[1])}
    if origin is list:
        return {"type": "array", "items": settings_schema(args[0])}
    names = {bool: "boolean", int: "integer", float: "number", str: "string", Path: "string"}
    return {"type": names[annotation]}


def test_config_takes_every_other_setting_with_its_type(chart: helm.Chart) -> None:
    """A new setting of sparkgate must be added to values.schema.json's `config` (or be set
    by the chart): this fails, printing the entry, until it is."""
    durations = Settings.__pydantic_decorators__.field_validators["_parse_duration"].info.fields
    expected: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        if name in SET_BY_CHART | NOT_SETTABLE:
            continue
        schema = settings_schema(field.annotation)
        if name in durations:  # "5s" as well as 5
            schema = {"type": ["number", "string"]}
        for constraint in field.metadata:
            if isinstance(constraint, annotated_types.Ge):
                schema["minimum"] = constraint.ge
        expected[name] = schema
    assert chart.schema is not None
    config = chart.schema["properties"]["config"]["properties"]
    assert config == expected, json.dumps(
        {k: v for k, v in expected.items() if config.get(k) != v}, indent=2
    )
    assert set(Settings.model_fields) >= SET_BY_CHART | NOT_SETTABLE
    # The pod's address and the store's URL come from the downward API and the env Secret.
    rendered = {*node_env(render(chart, FULL)), "SPARKGATE_HOST", "SPARKGATE_STORE_URL"}
    assert {f"SPARKGATE_{name.upper()}" for name in SET_BY_CHART} <= rendered
    pod = chart.schema["definitions"]["enginePod"]["properties"]
    assert set(pod) == set(EnginePod.model_fields)
