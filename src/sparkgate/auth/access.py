"""Access rules: who is an admin, who is in which group, who may impersonate, which rights each
user has, which Spark settings users may not set, and per-user limits.

From ``SPARKGATE_ACCESS_FILE`` (YAML), re-read when the file changes; without one, every
authenticated user has every right but ``admin``, admins come from ``SPARKGATE_ADMINS``, and
the deny list of Spark settings is ``DEFAULT_CONF_DENY``.

    admins: [carol]
    groups: {analysts: [bob, dave]}
    impersonators: [airflow]
    rules:                      # the first rule naming the user (or a group of theirs) wins
      - {groups: [analysts], allow: [sql]}
      - {users: ["*"], allow: [sql, code, streams, jobs]}
    conf:
      deny: ["spark.master", "spark.driver.*"]
    limits: {sessions_per_user: 10, running_queries_per_user: 20}
    tables: [...]               # table rules and schema owners (sparkgate.auth.tables)
    schemas: [...]
    resource_groups: {...}      # Trino's resource groups (sparkgate.auth.resource_groups)
    quotas: [...]               # executor time per day or month (sparkgate.auth.quotas)
"""

from __future__ import annotations

import fnmatch
import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sparkgate.auth.quotas import Quota, QuotaEntry
from sparkgate.auth.resource_groups import ResourceGroups, ResourceGroupsFile
from sparkgate.auth.resource_groups import build as build_groups
from sparkgate.auth.tables import TableRules, _SchemaRule, _TableRule, build
from sparkgate.errors import ConfigurationError, DeniedSetting

log = logging.getLogger("sparkgate.auth")

SQL, CODE, STREAMS, JOBS, ADMIN = "sql", "code", "streams", "jobs", "admin"
RIGHTS = (SQL, CODE, STREAMS, JOBS, ADMIN)
USER_RIGHTS = frozenset({SQL, CODE, STREAMS, JOBS})

# Settings that would let a user escape the gateway: run code on the JVM command line, load
# jars, point the catalog or warehouse elsewhere, change the cluster, turn on listeners, or
# reach storage with the server's credentials. Resource settings (memory, cores) stay allowed.
DEFAULT_CONF_DENY = (
    "spark.master",
    "spark.submit.*",
    "spark.driver.extra*",
    "spark.driver.host",
    "spark.driver.bindAddress",
    "spark.driver.port",
    "spark.executor.extra*",
    "spark.executorEnv.*",
    "spark.jars*",
    "spark.files*",
    "spark.archives*",
    "spark.pyspark.*",
    "spark.plugins*",
    "spark.extraListeners",
    "spark.ui.*",
    "spark.authenticate*",
    "spark.ssl.*",
    "spark.kerberos.*",
    "spark.yarn.*",
    "spark.kubernetes.*",
    "spark.eventLog.*",
    "spark.hadoop.*",
    "spark.sql.warehouse.dir",
    "spark.sql.catalogImplementation",
    "spark.sql.catalog.*",
    "spark.sql.hive.metastore.*",
    "spark.sql.extensions",
    "spark.sql.queryExecutionListeners",
    "spark.sql.streaming.streamingQueryListeners",
    # A session without artifact isolation would put its files in every session's tasks.
    "spark.sql.artifact.*",
)
# Never settable, whatever the access file's deny list says: the user a Spark session checks
# table rules as, and the uploaded file a load may read (sparkgate.engine.authz).
ALWAYS_DENY = ("sparkgate.user", "sparkgate.upload")


class _Rule(BaseModel):
    """One entry of ``rules:``: the first entry naming the user, or a group of theirs, gives
    the user its rights; a user no entry names has none."""

    model_config = ConfigDict(extra="forbid")

    users: list[str] = Field(
        default_factory=list, description='User names the entry applies to; `"*"`: anyone.'
    )
    groups: list[str] = Field(
        default_factory=list,
        description="Groups the entry applies to (the access file's, and those a JWT or LDAP "
        'brings); `"*"`: anyone.',
    )
    allow: list[str] = Field(
        default_factory=list,
        description="The rights it gives: `sql` (SQL statements), `code` (Python statements, "
        "`pyspark` Livy sessions, batch files, paths), `streams` (streams and stream jobs), "
        "`jobs` (deploy and run jobs), `admin` (everything).",
    )

    @field_validator("allow")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [r for r in value if r not in RIGHTS]
        if unknown:
            raise ValueError(f"unknown right(s) {unknown}; rights are {', '.join(RIGHTS)}")
        return value


class _Conf(BaseModel):
    """``conf:``: the Spark settings users may not set."""

    model_config = ConfigDict(extra="forbid")

    deny: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CONF_DENY),
        description="Patterns (`spark.driver.*`, case-insensitive) of the Spark settings users "
        "may not set in a session's or batch's conf, a manifest, a stream job, `SET` or "
        "HiveServer2's configuration (403 `SETTING_DENIED`). Replaces the default list, which "
        "covers what would escape the gateway (`spark.master`, `spark.jars*`, "
        "`spark.hadoop.*`, ...). `sparkgate.user` and `sparkgate.upload` are denied whatever "
        "it says; admins may set anything.",
    )


class _Limits(BaseModel):
    """``limits:``: per-user limits (admins have none); beyond one, 429 ``LIMIT_EXCEEDED``."""

    model_config = ConfigDict(extra="forbid")

    sessions_per_user: int | None = Field(
        default=None,
        ge=1,
        description="Active sessions (interactive and batch) a user may have at once.",
    )
    running_queries_per_user: int | None = Field(
        default=None, ge=1, description="Queries a user may have waiting or running at once."
    )


class _AccessFile(BaseModel):
    """The access file (``SPARKGATE_ACCESS_FILE``, YAML), re-read when it changes."""

    model_config = ConfigDict(extra="forbid")

    admins: list[str] = Field(
        default_factory=list,
        description="Users with every right, who see and act on everything; `@group` names a "
        "group's members. Replaces `SPARKGATE_ADMINS`.",
    )
    groups: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Group name to member users; added to the groups a JWT or LDAP brings.",
    )
    impersonators: list[str] = Field(
        default_factory=list,
        description="Users who may act for others: Livy's `proxyUser` (and `doAs`), "
        "HiveServer2's `hive.server2.proxy.user`.",
    )
    rules: list[_Rule] | None = Field(
        default=None,
        description="Who has which rights; the first entry naming the user or a group of "
        "theirs wins. Without it every user has every right but `admin` (only `sql` when "
        "`tables:` is set).",
    )
    conf: _Conf = Field(default_factory=_Conf, description="The Spark settings users may not set.")
    limits: _Limits = Field(default_factory=_Limits, description="Per-user limits.")
    tables: list[_TableRule] | None = Field(
        default=None,
        description="Table rules (Trino's file-based access control): which tables each user "
        "may read and change, with hidden columns, masks and row filters; the first rule "
        "matching the user and the table applies, none means no access. Without it every "
        "table is open to `sql`.",
    )
    schemas: list[_SchemaRule] = Field(
        default_factory=list,
        description="Schema owners: who may create, alter and drop in a schema.",
    )
    resource_groups: ResourceGroupsFile | None = Field(
        default=None,
        description="Trino's resource groups: where queries wait their turn "
        "(see [Resource groups](resource-groups.md)). Without it no query waits.",
    )
    quotas: list[QuotaEntry] = Field(
        default_factory=list,
        description="Executor time a user or group may spend per UTC day or month.",
    )

    @model_validator(mode="after")
    def _demoted_into_groups(self) -> _AccessFile:
        for index, quota in enumerate(self.quotas):
            if quota.demoteTo is None:
                continue
            if self.resource_groups is None or not self.resource_groups.has_leaf(quota.demoteTo):
                raise ValueError(
                    f"quotas[{index}]: demoteTo {quota.demoteTo!r} is not a group of "
                    "resource_groups that takes queries (one without subgroups)"
                )
        return self


@dataclass(frozen=True)
class AccessRules:
    """One version of the rules; ``Access`` swaps in a new one when the file changes."""

    admins: frozenset[str] = frozenset()
    groups: dict[str, frozenset[str]] = field(default_factory=dict)  # group -> members
    impersonators: frozenset[str] = frozenset()
    rules: tuple[tuple[frozenset[str], frozenset[str], frozenset[str]], ...] | None = None
    conf_deny: tuple[str, ...] = DEFAULT_CONF_DENY
    sessions_per_user: int | None = None
    running_queries_per_user: int | None = None
    # Table rules: None (no ``tables:`` section) leaves every table open to ``sql``.
    tables: TableRules | None = None
    # None (no ``resource_groups:``): no query waits for a turn.
    resource_groups: ResourceGroups | None = None
    quotas: tuple[Quota, ...] = ()

    def groups_of(self, user: str, known: frozenset[str] = frozenset()) -> frozenset[str]:
        return known | {g for g, members in self.groups.items() if user in members}

    def members_of(self, group: str, also: str) -> list[str]:
        """A group's members by the access file, and ``also`` (a user who signed in with it)."""
        return sorted(self.groups.get(group, frozenset()) | {also})

    def is_admin(self, user: str, groups: frozenset[str]) -> bool:
        return user in self.admins or any(f"@{g}" in self.admins for g in groups)

    def rights_of(self, user: str, groups: frozenset[str]) -> frozenset[str]:
        if self.is_admin(user, groups):
            return frozenset(RIGHTS)
        if self.rules is None:
            # With table rules, Python on the driver (``code``) would reach around them: a
            # user no ``rules:`` entry names gets ``sql`` only.
            return frozenset({SQL}) if self.tables is not None else USER_RIGHTS
        for users, rule_groups, allow in self.rules:
            if user in users or "*" in users or groups & rule_groups or "*" in rule_groups:
                return frozenset(RIGHTS) if ADMIN in allow else allow
        return frozenset()

    def denied_pattern(self, key: str) -> str | None:
        """The deny pattern that forbids setting ``key``, if any (case-insensitive)."""
        lowered = key.strip().lower()
        for pattern in (*ALWAYS_DENY, *self.conf_deny):
            if fnmatch.fnmatchcase(lowered, pattern.lower()):
                return pattern
        return None

    def check_settings(self, keys: Iterable[str], *, where: str | None = None) -> None:
        """Raise DeniedSetting for the first of ``keys`` the rules deny; ``where``: where it
        was written, for the message (``step sql of job clicks (clicks.yaml)``). The one check
        of Spark settings: the users layer calls it for every door, the engine for the SQL
        files only it can read."""
        for key in keys:
            pattern = self.denied_pattern(key)
            if pattern is not None:
                raise DeniedSetting(key, pattern, where)


def parse_access(text: str, source: str = "access file") -> AccessRules:
    try:
        raw: Any = yaml.safe_load(text) or {}
        parsed = _AccessFile.model_validate(raw)
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{source}: not valid YAML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigurationError(f"{source}: {problems}") from exc
    rules = None
    if parsed.rules is not None:
        rules = tuple(
            (frozenset(r.users), frozenset(r.groups), frozenset(r.allow)) for r in parsed.rules
        )
    return AccessRules(
        admins=frozenset(parsed.admins),
        groups={g: frozenset(m) for g, m in parsed.groups.items()},
        impersonators=frozenset(parsed.impersonators),
        rules=rules,
        conf_deny=tuple(parsed.conf.deny),
        sessions_per_user=parsed.limits.sessions_per_user,
        running_queries_per_user=parsed.limits.running_queries_per_user,
        tables=build(parsed.tables, parsed.schemas) if parsed.tables is not None else None,
        resource_groups=(
            None if parsed.resource_groups is None else build_groups(parsed.resource_groups)
        ),
        quotas=tuple(Quota.of(entry) for entry in parsed.quotas),
    )


class Access:
    """The rules in force: from the access file (re-read when it changes), or the defaults."""

    def __init__(self, path: Path | None, admins: list[str]) -> None:
        self.path = path
        self._default = AccessRules(admins=frozenset(admins))
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._rules = self._default
        if path is not None:
            self._rules = parse_access(self._read(path), str(path))  # a bad file stops start-up

    @staticmethod
    def _read(path: Path) -> str:
        try:
            return path.read_text()
        except OSError as exc:
            raise ConfigurationError(f"The access file {path} cannot be read: {exc}") from exc

    def rules(self) -> AccessRules:
        if self.path is None:
            return self._default
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            # Removed on purpose or mid-edit: keep what was in force rather than open up.
            return self._rules
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._rules = parse_access(self._read(self.path), str(self.path))
                except ConfigurationError as exc:
                    # A broken edit must not lock everyone out, nor open everything up: the
                    # rules in force stay until the file is fixed.
                    log.error("%s; keeping the rules in force", exc)
                self._stamp = stamp
            return self._rules
