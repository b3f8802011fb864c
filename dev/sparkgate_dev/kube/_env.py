"""A container's environment and the downward API, as the kubelet computes them: the image's
variables, then the API server's (``KUBERNETES_SERVICE_HOST``/``PORT``), then ``envFrom``, then
``env`` in order, with ``$(VAR)`` references expanded against what is defined so far."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

Obj = dict[str, Any]
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Reads a ConfigMap or Secret: (kind "configmaps"/"secrets", namespace, name) -> object or None.
Lookup = Callable[[str, str, str], Obj | None]


class ConfigError(Exception):
    """What the kubelet reports as ``CreateContainerConfigError``."""


@dataclass(frozen=True)
class PodAddresses:
    pod_ip: str
    host_ip: str


_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: defined names are replaced, ``$$`` is a literal ``$``,
    anything else stays as written."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REFERENCE.sub(replace, text)


_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod: Obj, path: str, addresses: PodAddresses) -> str:
    meta = pod["metadata"]
    spec = pod["spec"]
    simple = {
        "metadata.name": meta["name"],
        "metadata.namespace": meta.get("namespace", "default"),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": addresses.pod_ip,
        "status.podIPs": addresses.pod_ip,
        "status.hostIP": addresses.host_ip,
    }
    if path in simple:
        return str(simple[path])
    subscript = _SUBSCRIPT.match(path)
    if subscript:
        return str(meta.get(subscript.group(1), {}).get(subscript.group(2), ""))
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1], {})
        return "\n".join(f'{key}="{value}"' for key, value in sorted(values.items()))
    raise ConfigError(f"unsupported fieldRef {path!r}")


_UNITS: dict[str, int | Decimal] = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "m": Decimal("0.001"),
}


def quantity(text: str) -> Decimal:
    """A Kubernetes quantity (``512Mi``, ``1.5``, ``250m``) as a number."""
    match = re.fullmatch(r"([0-9.]+)(Ki|Mi|Gi|Ti|k|M|G|T|m|)", str(text).strip())
    if not match:
        raise ConfigError(f"unsupported quantity {text!r}")
    return Decimal(match.group(1)) * Decimal(_UNITS[match.group(2)])


def resource_value(container: Obj, ref: Obj) -> str:
    kind, _, resource = ref["resource"].partition(".")
    value = container.get("resources", {}).get(kind, {}).get(resource)
    if value is None:
        return "0"
    divisor = quantity(ref.get("divisor", "1"))
    return str((quantity(value) / divisor).to_integral_value(ROUND_CEILING))


def _key_of(lookup: Lookup, kind: str, namespace: str, ref: Obj) -> str | None:
    obj = lookup(kind, namespace, ref["name"])
    optional = bool(ref.get("optional", False))
    singular = kind.rstrip("s")
    if obj is None:
        if optional:
            return None
        raise ConfigError(f'{singular} "{ref["name"]}" not found')
    data = data_of(kind, obj)
    if ref["key"] not in data:
        if optional:
            return None
        raise ConfigError(f"couldn't find key {ref['key']} in {singular} {namespace}/{ref['name']}")
    return data[ref["key"]].decode(errors="replace")


def data_of(kind: str, obj: Obj) -> dict[str, bytes]:
    """A ConfigMap's or Secret's values as bytes (a Secret's are base64 in the API)."""
    if kind == "secrets":
        return {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
    values = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
    values.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
    return values


def container_env(
    pod: Obj,
    container: Obj,
    *,
    image_env: Mapping[str, str],
    addresses: PodAddresses,
    api_port: int,
    lookup: Lookup,
    default_path: bool = True,
) -> dict[str, str]:
    """``default_path``: a PATH for local images (a podman image brings its own)."""
    namespace = pod["metadata"].get("namespace", "default")
    env: dict[str, str] = {"PATH": DEFAULT_PATH} if default_path else {}
    env.update(image_env)
    env["HOSTNAME"] = pod["spec"].get("hostname") or pod["metadata"]["name"]
    # As a real kubelet injects them: in-cluster clients find the API server with these. The
    # API server listens on loopback, which every pod shares.
    env["KUBERNETES_SERVICE_HOST"] = "127.0.0.1"
    env["KUBERNETES_SERVICE_PORT"] = str(api_port)
    env["KUBERNETES_SERVICE_PORT_HTTPS"] = str(api_port)
    for source in container.get("envFrom") or []:
        prefix = source.get("prefix", "")
        for kind, key in (("configmaps", "configMapRef"), ("secrets", "secretRef")):
            if key not in source:
                continue
            ref = source[key]
            obj = lookup(kind, namespace, ref["name"])
            if obj is None:
                if ref.get("optional"):
                    continue
                raise ConfigError(f'{kind.rstrip("s")} "{ref["name"]}" not found')
            for key_name, raw in data_of(kind, obj).items():
                env[prefix + key_name] = raw.decode(errors="replace")
    for var in container.get("env") or []:
        name = var["name"]
        if "valueFrom" not in var:
            env[name] = expand(var.get("value", ""), env)
            continue
        source = var["valueFrom"]
        value: str | None
        if "fieldRef" in source:
            value = field_value(pod, source["fieldRef"]["fieldPath"], addresses)
        elif "resourceFieldRef" in source:
            value = resource_value(container, source["resourceFieldRef"])
        elif "configMapKeyRef" in source:
            value = _key_of(lookup, "configmaps", namespace, source["configMapKeyRef"])
        elif "secretKeyRef" in source:
            value = _key_of(lookup, "secrets", namespace, source["secretKeyRef"])
        else:
            raise ConfigError(f"unsupported valueFrom for {name}: {sorted(source)}")
        if value is not None:
            env[name] = value
    return env
