"""Resource groups: where a query waits its turn, in Trino's configuration format.

The access file's ``resource_groups:`` key holds what Trino's ``resource-groups.json`` holds,
in YAML, so that a Trino file can be pasted:

    resource_groups:
      rootGroups:
        - name: analysts
          hardConcurrencyLimit: 2      # admitted (waiting or running) at once, whole subtree
          maxQueued: 100               # beyond it, new work is refused (429 naming the group)
          schedulingPolicy: fair       # or weighted: subgroups by schedulingWeight
          subGroups:
            - {name: "${USER}", hardConcurrencyLimit: 1, maxQueued: 10}
      selectors:                       # the first that matches places the query
        - {userGroup: analysts, queryType: interactive, group: "analysts.${USER}"}
        - {user: ".*", group: analysts}

Selectors match ``user`` and ``userGroup`` (regular expressions, matched whole, as Trino),
``source`` (the door: ``rest``, ``livy``, ``hive2``, ``connect``), ``queryType`` (``interactive``,
``one-off``, ``batch`` (a batch session, a job run's step), ``stream`` (a stream job's
statements, which hold their turn while the stream runs), ``connect`` (a Spark Connect
operation)) and ``clientTags`` (every tag named must be on the query).
Group names may hold ``${USER}``, ``${SOURCE}`` and the named groups of a selector's regular
expressions (``(?<tool>...)`` in ``source``, Java's syntax, as Trino): one group per user, door
or tool.

Scheduling: ``fair`` (the subgroup with the fewest admitted queries goes first) and
``weighted_fair`` (the fewest per unit of ``schedulingWeight``) as Trino; Trino's ``weighted``
(stochastic, by weight) is taken as ``weighted_fair``, and ``query_priority`` (by a session
property sparkgate has no counterpart of) as ``fair``. Trino's statement types as a
``queryType`` (``SELECT``, ``DATA_DEFINITION``...) are accepted and never match: sparkgate's query
types are the kinds of work above.

This module parses the file and places a query (``place``); the queue itself, admission and
fair turns are the store's (``sparkgate.store.resource_groups``), which gets the groups as
``GroupSpec`` rows. Trino's keys sparkgate does not enforce (memory and CPU limits,
``softConcurrencyLimit``, ``jmxExport``) are accepted and logged, so a pasted file loads.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sparkgate.store.resource_groups import GroupSpec

log = logging.getLogger("sparkgate.auth")

QUERY_TYPES = ("interactive", "one-off", "batch", "stream", "connect")
SOURCES = ("rest", "livy", "hive2", "connect")
# Trino's queryType values: statement types, which sparkgate does not classify.
TRINO_QUERY_TYPES = (
    "SELECT",
    "EXPLAIN",
    "DESCRIBE",
    "INSERT",
    "UPDATE",
    "MERGE",
    "DELETE",
    "ANALYZE",
    "DATA_DEFINITION",
    "ALTER_TABLE_EXECUTE",
)
_VARIABLE = re.compile(r"\$\{(\w+)\}")
# Java's named group, "(?<name>", not a lookbehind "(?<=" or "(?<!"
_JAVA_NAMED_GROUP = re.compile(r"\(\?<(?=[A-Za-z])")
_NOT_ENFORCED = (
    "softMemoryLimit",
    "softConcurrencyLimit",
    "softCpuLimit",
    "hardCpuLimit",
    "jmxExport",
    "perQueryLimits",
    "schedulingPolicyMaxQueued",
)


class _Group(BaseModel):
    """A resource group: a queue, and a limit on what it admits at once."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        description="Its name, without `.`; may hold `${USER}`, `${SOURCE}` and a selector's "
        "named groups (one group per user, door or tool). Its full name is dotted: "
        "`analysts.alice`.",
    )
    hardConcurrencyLimit: int = Field(
        ge=0,
        description="Queries admitted (waiting for an engine or running) at once, counted over "
        "its whole subtree; more wait in its queue.",
    )
    maxQueued: int = Field(
        ge=0, description="Queries its queue holds; beyond it, 429 `LIMIT_EXCEEDED` naming it."
    )
    schedulingPolicy: Literal["fair", "weighted", "weighted_fair", "query_priority"] = Field(
        default="fair",
        description="Which subgroup goes next: `fair` the one with the fewest admitted, "
        "`weighted_fair` (and Trino's `weighted`) the fewest per unit of `schedulingWeight`; "
        "`query_priority` is taken as `fair`. Within a group, users take turns.",
    )
    schedulingWeight: int = Field(
        default=1,
        ge=1,
        description="Its weight under a `weighted_fair` parent, and of its Spark FAIR pool "
        "(`group:<name>`) in a shared engine.",
    )
    subGroups: list[_Group] = Field(
        default_factory=list,
        description="Its subgroups; a group with subgroups takes no query itself.",
    )
    softMemoryLimit: str | None = Field(
        default=None, description="Trino's; accepted, not enforced."
    )
    softConcurrencyLimit: int | None = Field(
        default=None, description="Trino's; accepted, not enforced."
    )
    softCpuLimit: str | None = Field(default=None, description="Trino's; accepted, not enforced.")
    hardCpuLimit: str | None = Field(default=None, description="Trino's; accepted, not enforced.")
    jmxExport: bool | None = Field(default=None, description="Trino's; accepted, not enforced.")

    @field_validator("name")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        if "." in value:
            raise ValueError(f"group name {value!r} holds a '.', which separates group names")
        if "${" in _VARIABLE.sub("", value):
            raise ValueError(f"group name {value!r}: a '${{' that does not start a ${{name}}")
        return value

    @model_validator(mode="after")
    def _unique_children(self) -> _Group:
        _check_unique(self.subGroups, f"subGroups of {self.name}")
        return self


class _Selector(BaseModel):
    """A selector: the first whose conditions all match places the query in its group."""

    model_config = ConfigDict(extra="forbid")

    group: str = Field(
        min_length=1,
        description="The group it places the query in, dotted (`analysts.${USER}`); a group "
        "without subgroups.",
    )
    user: str | None = Field(
        default=None, description="The user: a regular expression, matched whole."
    )
    userGroup: str | None = Field(
        default=None,
        description="One of the user's groups: a regular expression, matched whole.",
    )
    source: str | None = Field(
        default=None,
        description="The door: a regular expression over `rest`, `livy`, `hive2`, `connect`; "
        "its named groups (`(?<tool>hive2|livy)`) may be used in `group`.",
    )
    queryType: str | None = Field(
        default=None,
        description="`interactive`, `one-off`, `batch` (a batch session, a job run's steps), "
        "`stream` (a stream job's steps) or `connect` (a Spark Connect operation). Trino's "
        "statement types are accepted and never match.",
    )
    clientTags: list[str] = Field(
        default_factory=list, description="Tags that must all be on the query."
    )

    @field_validator("user", "userGroup", "source")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                _pattern(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {value!r} ({exc})") from exc
        return value

    @field_validator("queryType")
    @classmethod
    def _query_type(cls, value: str | None) -> str | None:
        if value is not None and value not in QUERY_TYPES:
            if value in TRINO_QUERY_TYPES:
                log.warning("resource_groups: queryType %s never matches in sparkgate", value)
            else:
                raise ValueError(f"queryType {value!r} is none of {', '.join(QUERY_TYPES)}")
        return value


class ResourceGroupsFile(BaseModel):
    """The ``resource_groups:`` key of the access file (Trino's format)."""

    model_config = ConfigDict(extra="forbid")

    rootGroups: list[_Group] = Field(min_length=1, description="The top groups.")
    selectors: list[_Selector] = Field(
        min_length=1,
        description="Where queries go, in order; a query no selector takes is refused (403 "
        "`FORBIDDEN`).",
    )
    cpuQuotaPeriod: str | None = Field(default=None, description="Trino's; accepted, not enforced.")

    def has_leaf(self, group: str) -> bool:
        """Whether ``group`` (dotted, templates unexpanded) names a group that takes queries."""
        return _find_leaf(self.rootGroups, group.split(".")) is not None

    @model_validator(mode="after")
    def _selectors_name_groups(self) -> ResourceGroupsFile:
        _check_unique(self.rootGroups, "rootGroups")
        for index, selector in enumerate(self.selectors):
            if _find(self.rootGroups, selector.group.split(".")) is None:
                raise ValueError(
                    f"selectors[{index}]: group {selector.group!r} is not a group of rootGroups"
                )
            if _find_leaf(self.rootGroups, selector.group.split(".")) is None:
                raise ValueError(
                    f"selectors[{index}]: group {selector.group!r} has subgroups; queries are "
                    "placed in a group without subgroups (as in Trino)"
                )
        return self


def _check_unique(groups: list[_Group], where: str) -> None:
    names = [g.name for g in groups]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{where}: group names repeat: {', '.join(twice)}")


def _pattern(text: str) -> re.Pattern[str]:
    """A selector's regular expression, Java's named groups read as Python's."""
    return re.compile(_JAVA_NAMED_GROUP.sub("(?P<", text))


def _find(groups: list[_Group], path: list[str]) -> _Group | None:
    found: _Group | None = None
    level = groups
    for part in path:
        found = next((g for g in level if g.name == part), None)
        if found is None:
            return None
        level = found.subGroups
    return found


def _find_leaf(groups: list[_Group], path: list[str]) -> _Group | None:
    found = _find(groups, path)
    return found if found is not None and not found.subGroups else None


@dataclass(frozen=True)
class _Rule:
    group: str
    user: re.Pattern[str] | None
    user_group: re.Pattern[str] | None
    source: re.Pattern[str] | None
    query_type: str | None
    client_tags: frozenset[str]

    def match(
        self, user: str, groups: frozenset[str], source: str, query_type: str, tags: frozenset[str]
    ) -> dict[str, str] | None:
        """The variables a group name may use (the named groups matched), if it matches."""
        if (self.query_type is not None and self.query_type != query_type) or not (
            self.client_tags <= tags
        ):
            return None
        found: dict[str, str] = {}
        for pattern, values in (
            (self.user, [user]),
            (self.user_group, sorted(groups)),
            (self.source, [source]),
        ):
            if pattern is None:
                continue
            matched = next((m for v in values if (m := pattern.fullmatch(v)) is not None), None)
            if matched is None:
                return None
            found.update({k: v for k, v in matched.groupdict().items() if v is not None})
        return found


@dataclass(frozen=True)
class ResourceGroups:
    """The parsed configuration: the groups (as the store keeps them) and the selectors."""

    specs: tuple[GroupSpec, ...]
    rules: tuple[_Rule, ...]

    def place(
        self,
        user: str,
        groups: frozenset[str],
        *,
        source: str,
        query_type: str,
        tags: Iterable[str] = (),
    ) -> str | None:
        """The dotted name of the group the first matching selector names, with its
        ``${USER}`` and ``${SOURCE}`` expanded; None when no selector matches."""
        tag_set = frozenset(tags)
        for rule in self.rules:
            found = rule.match(user, groups, source, query_type, tag_set)
            if found is not None:
                return expand(rule.group, {**found, "USER": user, "SOURCE": source})
        return None


def expand(template: str, variables: dict[str, str]) -> str:
    """A group name with its ``${name}``s replaced. A value holding a "." would make a group
    of another depth: it is written with "_" instead."""
    return _VARIABLE.sub(
        lambda m: variables.get(m.group(1), m.group(0)).replace(".", "_"), template
    )


def build(parsed: ResourceGroupsFile) -> ResourceGroups:
    ignored = sorted({key for group in _walk(parsed.rootGroups, "") for key in group[1]})
    if ignored:
        log.warning("resource_groups: not enforced by sparkgate: %s", ", ".join(ignored))
    specs = tuple(
        GroupSpec(
            name=path,
            hard_concurrency_limit=group.hardConcurrencyLimit,
            max_queued=group.maxQueued,
            scheduling_policy=_POLICIES[group.schedulingPolicy],
            scheduling_weight=group.schedulingWeight,
        )
        for path, _, group in _walk(parsed.rootGroups, "")
    )
    rules = tuple(
        _Rule(
            group=s.group,
            user=None if s.user is None else _pattern(s.user),
            user_group=None if s.userGroup is None else _pattern(s.userGroup),
            source=None if s.source is None else _pattern(s.source),
            query_type=s.queryType,
            client_tags=frozenset(s.clientTags),
        )
        for s in parsed.selectors
    )
    return ResourceGroups(specs, rules)


# Trino's policies as admission applies them (see the module's doc).
_POLICIES = {
    "fair": "fair",
    "query_priority": "fair",
    "weighted": "weighted",
    "weighted_fair": "weighted",
}


def _walk(groups: list[_Group], prefix: str) -> Iterator[tuple[str, list[str], _Group]]:
    for group in groups:
        path = f"{prefix}{group.name}"
        unenforced = [key for key in _NOT_ENFORCED if getattr(group, key, None) is not None]
        yield path, unenforced, group
        yield from _walk(group.subGroups, f"{path}.")
