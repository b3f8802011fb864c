"""The settings reference page, from ``sparkgate.settings`` itself.

Each setting's meaning is its field's docstring (the models set ``use_attribute_docstrings``),
its type and default are the field's own. ``SECTIONS`` orders the page: a setting in no section,
a section naming a field that does not exist, or a setting without a meaning makes ``page()``
raise, so the build fails before a setting can go undocumented.
"""

from __future__ import annotations

import json
import re
import types
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from sparkgate.settings import EnginePod, Settings

ENV_PREFIX = "SPARKGATE_"


@dataclass(frozen=True)
class Section:
    title: str
    intro: str  # Markdown, one paragraph
    fields: tuple[str, ...]


SECTIONS: tuple[Section, ...] = (
    Section(
        "Server and HTTP",
        "Where a node listens and what it accepts over HTTP.",
        (
            "host",
            "port",
            "http_keep_alive",
            "request_max_bytes",
            "load_max_bytes",
            "long_poll_max",
            "log_format",
        ),
    ),
    Section(
        "Store and storage",
        "The store (the database every node and engine shares) and the directories under the "
        "home. With several machines, every node and engine must see the same results, "
        "uploads, warehouse and checkpoints (a shared mount or Hadoop-compatible paths).",
        (
            "home",
            "store_url",
            "store_revision",
            "warehouse_dir",
            "results_dir",
            "checkpoints_dir",
            "uploads_dir",
            "staging_dir",
        ),
    ),
    Section(
        "Authentication",
        "How users prove who they are. See [Authentication](../how-to/authentication.md).",
        (
            "auth",
            "auth_password_file",
            "auth_jwt_jwks",
            "auth_jwt_issuer",
            "auth_jwt_audience",
            "auth_jwt_user_claim",
            "auth_jwt_leeway",
            "auth_ldap_url",
            "auth_ldap_user_dn",
            "auth_ldap_search_base",
            "auth_ldap_group_filter",
            "auth_ldap_group_attribute",
            "auth_cache_ttl",
            "dashboard_session_ttl",
        ),
    ),
    Section(
        "Access, TLS and exposure",
        "Who may do what, and what a node shows to the network. See "
        "[the access file](access-file.md), [TLS](../how-to/tls.md) and "
        "[security](../explanation/security.md).",
        (
            "access_file",
            "admins",
            "ssl_certfile",
            "ssl_keyfile",
            "insecure",
            "metrics_public",
            "spark_ui",
        ),
    ),
    Section(
        "Spark and the catalog",
        "What every engine's Spark runs against.",
        (
            "spark_master",
            "spark_conf",
            "catalog",
            "metastore_uri",
            "metastore_port",
            "udf_modules",
        ),
    ),
    Section(
        "Engines",
        "How engines (Spark drivers) are started, shared, watched and stopped. See "
        "[architecture](../explanation/architecture.md) and "
        "[failures](../explanation/failures.md).",
        (
            "launcher",
            "spark_submit",
            "engine_share_level",
            "warm_engines",
            "shared_engine",
            "shared_engine_max_sessions",
            "shared_engine_keep_executor",
            "engine_driver_memory",
            "engine_start_timeout",
            "engine_executor_timeout",
            "engine_backoff_min",
            "engine_backoff_max",
            "engine_idle_timeout",
            "engine_heartbeat_interval",
            "engine_heartbeat_timeout",
            "engine_store_patience",
            "hint_safety_poll",
            "hints",
        ),
    ),
    Section(
        "Kubernetes",
        "Used with `launcher` set to `kubernetes`: each engine is a driver pod, its executors "
        "pods. See [Kubernetes with Helm](../how-to/kubernetes.md).",
        (
            "kubernetes_image",
            "kubernetes_namespace",
            "kubernetes_service_account",
            "kubernetes_kubeconfig",
            "kubernetes_name_prefix",
            "kubernetes_labels",
            "kubernetes_env_secret",
            "kubernetes_engine_pods",
        ),
    ),
    Section(
        "Sessions, queries and results",
        "See [queries](../how-to/queries.md).",
        (
            "session_idle_timeout",
            "result_page_max",
            "result_retention",
            "idempotency_key_ttl",
            "python_output_max_chars",
            "batch_log_max_chars",
        ),
    ),
    Section(
        "Result reuse",
        "See [result reuse](../explanation/result-reuse.md).",
        ("reuse", "reuse_ttl", "reuse_max_bytes"),
    ),
    Section(
        "HiveServer2 and Spark Connect",
        "The doors of JDBC, ODBC, PyHive, dbt and Spark Connect clients. See "
        "[JDBC](../how-to/jdbc.md) and [Spark Connect](../how-to/spark-connect.md).",
        (
            "thrift_port",
            "thrift_idle_timeout",
            "thrift_status_wait",
            "thrift_fetch_max_rows",
            "thrift_login_timeout",
            "thrift_max_pending_logins_per_address",
            "connect_port",
        ),
    ),
    Section(
        "Livy API",
        "The Livy-compatible API (`/sessions`, `/batches`). See [Livy](../how-to/livy.md).",
        ("livy_sql_row_limit", "livy_csrf_protection", "livy_session_retention"),
    ),
    Section(
        "Tables",
        "How table writes are made safe.",
        ("atomic_ctas", "table_version_grace", "table_recovery_interval"),
    ),
    Section(
        "Streams and deploys",
        "The `stream_retry_*` settings are the server-wide defaults of every streaming "
        "query's `retry.*` options; a query's own `OPTIONS` win. See "
        "[streams](../how-to/streams.md) and [jobs](../how-to/jobs.md).",
        (
            "stream_retry_enabled",
            "stream_retry_max_attempts",
            "stream_retry_min_backoff",
            "stream_retry_max_backoff",
            "stream_retry_random_factor",
            "stream_retry_stable_period",
            "stream_progress_interval",
            "stream_progress_history",
            "stream_stop_timeout",
            "stream_engine_max_jobs",
            "deploy_timeout",
            "deploy_parallelism",
        ),
    ),
    Section(
        "Background duties",
        "Reaping, placement, the table janitor, stream supervision, deploys and job runs: each "
        "held by one node at a time through a lease in the store.",
        ("duty_interval", "lease_ttl"),
    ),
    Section(
        "Audit and charge-back",
        "See [auditing](../how-to/auditing.md) and "
        "[resource groups](../how-to/resource-groups.md).",
        (
            "audit_retention_days",
            "price_per_cpu_second",
            "price_per_gb_read",
            "price_per_gb_shuffled",
            "price_currency",
        ),
    ),
)

# The settings the Helm chart (deploy/helm/sparkgate) sets from values of its own, and which;
# every other setting goes under its `config` value, by name.
CHART_VALUES: dict[str, str] = {
    "home": "`storage.mountPath` (the shared volume)",
    "store_url": "`store.url`, or `store.existingSecret`",
    "host": "the pod's IP address",
    "port": "`ports.http`",
    "thrift_port": "`ports.thrift`",
    "connect_port": "`ports.connect`",
    "auth": "`auth.methods`",
    "auth_password_file": "a file the chart writes from `auth.admin` and `auth.users`, or "
    "`auth.existingSecret`",
    "admins": "`auth.admin.name`",
    "insecure": "`insecure`",
    "ssl_certfile": "`tls.secretName`",
    "ssl_keyfile": "`tls.secretName`",
    "access_file": "`access` (the file's content)",
    "launcher": "`engines.launcher`",
    "kubernetes_image": "`engines.image` (default: the chart's image)",
    "kubernetes_engine_pods": "`engines.pods`",
    "kubernetes_namespace": "the release's namespace",
    "kubernetes_service_account": "the engines' account, `serviceAccount.engine`",
    "kubernetes_labels": "the release's engine labels",
    "kubernetes_env_secret": "the Secret holding the store URL",
    "kubernetes_name_prefix": "the release's full name",
    "kubernetes_kubeconfig": "nothing: pods reach the API server as their service account",
}

# A code span (``x`` or `x`), kept as it is (a table cell may hold "|" inside one); outside
# them "<" starts HTML, "*" and "_" emphasis, and "|" the next cell.
_CODE = re.compile(r"(``.+?``|`[^`\n]+`)", re.DOTALL)
_ESCAPES = (("\\", "\\\\"), ("<", "&lt;"), ("*", "\\*"), ("_", "\\_"), ("|", "\\|"))


class UndocumentedSetting(ValueError):
    """The page cannot say what a setting is: it is in no section, has no meaning, or a
    section names a setting that does not exist."""


def _check(model: type[Settings], pod: type[BaseModel]) -> None:
    fields = model.model_fields
    placed = [name for section in SECTIONS for name in section.fields]
    unknown = [name for name in placed if name not in fields]
    twice = sorted({name for name in placed if placed.count(name) > 1})
    missing = [name for name in fields if name not in placed]
    problems = []
    if missing:
        problems.append(f"settings in no section of SECTIONS: {', '.join(missing)}")
    if unknown:
        problems.append(f"SECTIONS names settings that do not exist: {', '.join(unknown)}")
    if twice:
        problems.append(f"settings in more than one section: {', '.join(twice)}")
    for owner, named in ((model.__name__, fields), (pod.__name__, pod.model_fields)):
        bare = [name for name, info in named.items() if not (info.description or "").strip()]
        if bare:
            problems.append(f"{owner} fields without a docstring: {', '.join(bare)}")
    unknown_chart = [name for name in CHART_VALUES if name not in fields]
    if unknown_chart:
        problems.append(f"CHART_VALUES names unknown settings: {', '.join(unknown_chart)}")
    if problems:
        raise UndocumentedSetting(
            "the settings reference (sparkgate/reference/settings.py) is out of date: "
            + "; ".join(problems)
        )


def env_var(name: str) -> str:
    return f"{ENV_PREFIX}{name.upper()}"


def _plain(text: str) -> str:
    """Markdown text safe in a table cell: one line, ``x`` code spans as `x`, and outside
    code spans no HTML or emphasis by accident."""
    out = []
    for i, part in enumerate(_CODE.split(" ".join(text.split()))):
        if i % 2:
            out.append("`" + part.strip("`") + "`")
        else:
            plain = part
            for char, escaped in _ESCAPES:
                plain = plain.replace(char, escaped)
            out.append(plain)
    return "".join(out)


def _code(value: str) -> str:
    fence = "``" if "`" in value else "`"
    pad = " " if "`" in value else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def type_name(annotation: Any) -> str:
    """How a field's type reads in the page (Markdown)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (Union, types.UnionType):
        kept = [arg for arg in args if arg is not type(None)]
        return " or ".join(type_name(arg) for arg in kept)
    if origin is Literal:
        return " \\| ".join(_code(str(arg)) for arg in args)
    if origin is dict:
        return f"JSON object of {_plural(args[1])}"
    if origin is list:
        return f"JSON list of {_plural(args[0])}"
    if getattr(annotation, "__metadata__", None) is not None:  # Annotated
        return type_name(get_args(annotation)[0])
    return _NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))


_NAMES: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    Path: "path",
    Any: "value",
}


def _plural(annotation: Any) -> str:
    if get_origin(annotation) is dict:
        return "objects"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#engine-pods) entries"
    return _NAMES.get(annotation, str(annotation)) + "s"


def field_type(model: type[BaseModel], name: str) -> str:
    """A field's type as the page shows it, with its bounds, and "duration" where a validator
    also takes SQL's notation ("500ms", "1h")."""
    info = model.model_fields[name]
    text = type_name(info.annotation)
    validators = model.__pydantic_decorators__.field_validators
    if "_parse_duration" in validators and name in validators["_parse_duration"].info.fields:
        text += " or duration"
    for constraint in info.metadata:
        if isinstance(constraint, annotated_types.Ge):
            text += f", ≥ {constraint.ge}"
    return text


def _size(value: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f" ({value // scale} {unit})"
    return ""


def default_text(info: FieldInfo) -> str:
    """The default as it would be written in the environment (Markdown)."""
    if info.default_factory is not None:
        value: Any = info.default_factory()  # type: ignore[call-arg]
    else:
        value = info.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return _code("true" if value else "false")
    if isinstance(value, float):
        return _code(f"{value:g}" if abs(value) < 1e15 else str(value))
    if isinstance(value, int):
        return _code(str(value)) + _size(value)
    if isinstance(value, Enum):
        return _code(str(value.value))
    if isinstance(value, (dict, list)):
        return _code(json.dumps(value))
    return _code(str(value))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _setting_rows(model: type[Settings], names: tuple[str, ...]) -> list[str]:
    rows = [
        _row(["Setting", "Environment variable", "Type", "Default", "Meaning"]),
        _row(["---"] * 5),
    ]
    for name in names:
        info = model.model_fields[name]
        rows.append(
            _row(
                [
                    # An anchor per setting, so other pages can link to one.
                    f'<a id="{name}"></a>`{name}`',
                    f"`{env_var(name)}`",
                    field_type(model, name),
                    default_text(info),
                    _plain(info.description or ""),
                ]
            )
        )
    return rows


def _pod_rows(pod: type[BaseModel]) -> list[str]:
    rows = [_row(["Key", "Type", "Meaning"]), _row(["---"] * 3)]
    for name, info in pod.model_fields.items():
        rows.append(_row([f"`{name}`", field_type(pod, name), _plain(info.description or "")]))
    return rows


_INTRO = """\
# Settings

A server node reads its settings once, when it starts, from environment variables: every
setting below is `SPARKGATE_` followed by its name in capitals (`spark_master` is
`SPARKGATE_SPARK_MASTER`). The engines a node launches get the node's settings through the same
variables, so both sides agree on paths and timeouts. A few settings also have a
[`sparkgate server`](cli.md#sparkgate-server) option (`--host`, `--port`, `--thrift-port`,
`--connect-port`, `--insecure`, `--ssl-certfile`, `--ssl-keyfile`), which wins over the
environment.

How values are written:

- **Numbers of seconds** are plain numbers (`3600`, `0.5`). The `stream_retry_*` durations
  also take SQL's notation: `500ms`, `1s`, `1min`, `1h`, `1d`.
- **Booleans** are `true` or `false` (`1` and `0` work too).
- **Objects and lists** are JSON:
  `SPARKGATE_SPARK_CONF='{"spark.executor.memory": "4g"}'`,
  `SPARKGATE_UDF_MODULES='["mycompany.udfs"]'`. `SPARKGATE_ADMINS` also takes names separated
  by commas: `SPARKGATE_ADMINS=carol,dave`.
- **Unset** settings are simply not in the environment; the meaning says what then happens.

A session's own Spark conf is not a setting: a session asking only for runtime `spark.sql.*`
properties runs on the shared engine, and one asking for anything Spark fixes at start-up
(`spark.executor.memory`, `spark.jars`, static SQL settings) gets a dedicated engine started
with that conf.
"""


def _chart(model: type[Settings]) -> list[str]:
    lines = [
        "## In the Helm chart",
        "",
        "The chart (`deploy/helm/sparkgate`) sets these settings itself, from values of its "
        "own (or leaves them unset), and refuses them under `config`:",
        "",
        _row(["Setting", "Set from"]),
        _row(["---"] * 2),
    ]
    for name in model.model_fields:
        if name in CHART_VALUES:
            lines.append(_row([f"[`{name}`](#{name})", CHART_VALUES[name]]))
    lines += [
        "",
        "Every other setting goes under the chart's `config` value by its name, and the chart "
        "renders it as its environment variable (`values.schema.json` checks its type):",
        "",
        "```yaml",
        "config:",
        "  engine_idle_timeout: 600",
        "  spark_conf:",
        '    spark.sql.shuffle.partitions: "8"',
        "```",
        "",
    ]
    return lines


def render(model: type[Settings] = Settings, pod: type[BaseModel] = EnginePod) -> str:
    """The page for these models; raises ``UndocumentedSetting`` if one cannot be said."""
    _check(model, pod)
    lines = [_INTRO]
    for section in SECTIONS:
        lines += [f"## {section.title}", "", section.intro, ""]
        lines += _setting_rows(model, section.fields)
        lines.append("")
    lines += [
        "## Engine pods",
        "",
        "`SPARKGATE_KUBERNETES_ENGINE_PODS` is a JSON object whose keys are share levels "
        "(`default`, `user`, `group`, `server`, `connection`) and whose values take the keys "
        "below, all optional. An engine's pods take its share level's entry, then the "
        "`default` entry's for what that leaves unset, then Spark's defaults.",
        "",
        "```shell",
        "SPARKGATE_KUBERNETES_ENGINE_PODS='{",
        '  "default": {"cpu": "1", "memory": "2g", "executor_memory": "4g"},',
        '  "user": {"max_executors": 4, "node_selector": {"pool": "spark"}}',
        "}'",
        "```",
        "",
    ]
    lines += _pod_rows(pod)
    lines.append("")
    lines += _chart(model)
    return "\n".join(lines)


def page() -> str:
    return render(Settings, EnginePod)
