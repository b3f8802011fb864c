"""Deciding how a recognised CTAS/RTAS runs: staged (two-phase) or as Spark runs it.

Pure: the statement and facts about the session and the catalog in, a decision out.

    plan(statement, session, target, database_location, existing=None)
    -> StageCreate(target, provider="parquet")

Decisions mirror Spark's documented behaviour where the statement cannot go ahead: ``CREATE
TABLE`` on an existing name is refused with ``TABLE_OR_VIEW_ALREADY_EXISTS`` (``IF NOT EXISTS``:
nothing happens), ``REPLACE TABLE`` on a missing one with ``TABLE_OR_VIEW_NOT_FOUND``. What
sparkgate cannot stage (Hive format, another catalog, a view, an external or partitioned table
to replace, ...) runs as Spark runs it (``Plain``), and the query's record says why.

Spark itself cannot replace a session-catalog (v1) table (``UNSUPPORTED_FEATURE``). sparkgate
replaces one atomically when the replacement keeps what readers depend on (format, columns,
options, no partitioning): the data moves to a new version directory and the table's location
switches in one catalog call. Anything else is left to Spark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from sparkgate.tables.locations import is_local
from sparkgate.tables.statement import CtasKind, CtasStatement

SESSION_CATALOG = "spark_catalog"
# File sources: data in a directory the protocol can stage, rename and remove.
FILE_PROVIDERS = frozenset({"parquet", "orc", "json", "csv", "text", "avro", "xml"})
# What Spark accepts as a v1 table or database name.
_V1_NAME = re.compile(r"^[A-Za-z0-9_]+$")


@dataclass(frozen=True)
class SessionFacts:
    atomic: bool  # settings.atomic_ctas, and the session's spark.sparkgate.ctas.atomic
    current_catalog: str
    current_database: str
    default_provider: str  # spark.sql.sources.default
    hive_by_default: bool  # spark.sql.legacy.createHiveTableByDefault
    disabled_by: str = "spark.sparkgate.ctas.atomic=false"
    catalog_implementation: str = "hive"  # spark.sql.catalogImplementation


@dataclass(frozen=True)
class Target:
    database: str
    name: str

    @property
    def quoted(self) -> str:
        """As Spark names it in errors: ```spark_catalog`.`db`.`t```."""
        return f"`{SESSION_CATALOG}`.`{self.database}`.`{self.name}`"

    @property
    def sql(self) -> str:
        return self.quoted

    def sibling(self, name: str) -> Target:
        return Target(self.database, name)


@dataclass(frozen=True)
class ExistingTable:
    """What ``DESCRIBE TABLE EXTENDED ... AS JSON`` says about a table or view."""

    type: str  # MANAGED, EXTERNAL, VIEW
    provider: str | None
    location: str | None
    partition_columns: tuple[str, ...] = ()
    bucketed: bool = False
    storage_properties: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    comment: str | None = None

    @classmethod
    def from_describe(cls, described: Mapping[str, Any]) -> ExistingTable:
        provider = described.get("provider")
        return cls(
            type=str(described.get("type", "")).upper(),
            provider=str(provider).lower() if provider else None,
            location=described.get("location"),
            partition_columns=tuple(described.get("partition_columns") or ()),
            bucketed=bool(described.get("num_buckets")),
            storage_properties=dict(described.get("storage_properties") or {}),
            properties=dict(described.get("table_properties") or {}),
            comment=described.get("comment"),
        )


@dataclass(frozen=True)
class Plain:
    """Run the statement as Spark runs it; ``reason`` goes into the query's record."""

    reason: str


@dataclass(frozen=True)
class Skip:
    """``CREATE TABLE IF NOT EXISTS`` on an existing table: Spark does nothing, nor do we."""

    target: Target


@dataclass(frozen=True)
class Refuse:
    """Fail as Spark fails, with its error condition and parameters."""

    condition: str
    parameters: Mapping[str, str]


@dataclass(frozen=True)
class StageCreate:
    target: Target
    provider: str
    database_location: str


@dataclass(frozen=True)
class StageReplace:
    target: Target
    provider: str
    database_location: str
    existing: ExistingTable


Decision = Plain | Skip | Refuse | StageCreate | StageReplace


def resolve_target(statement: CtasStatement, session: SessionFacts) -> Target | Plain:
    """The table the statement names, in the session catalog, or why it is not staged."""
    parts = statement.table.parts
    catalog = statement.table.catalog or (
        session.current_catalog if len(parts) == 1 else SESSION_CATALOG
    )
    if catalog.lower() != SESSION_CATALOG:
        return Plain(f"catalog {catalog}: only the session catalog ({SESSION_CATALOG}) is staged")
    database = statement.table.database or session.current_database
    if not (_V1_NAME.match(database) and _V1_NAME.match(statement.table.name)):
        return Plain("a name the session catalog does not accept; Spark reports the error")
    # The Hive metastore is case-insensitive and keeps names in lower case.
    return Target(database.lower(), statement.table.name.lower())


def plan(
    statement: CtasStatement,
    session: SessionFacts,
    target: Target,
    database_location: str | None,
    existing: ExistingTable | None,
) -> Decision:
    if not session.atomic:
        return Plain(f"atomic CTAS is turned off ({session.disabled_by})")
    if statement.blockers:
        return Plain("; ".join(statement.blockers))
    if statement.kind.replaces and statement.if_not_exists:
        return Plain("OR REPLACE with IF NOT EXISTS; Spark reports the error")
    if database_location is None:
        return Plain(f"database {target.database} not found; Spark reports the error")
    if not is_local(database_location):
        return Plain(
            f"database location {database_location} is not a local filesystem path; "
            "staging needs one to rename in"
        )
    provider = statement.provider or ("hive" if session.hive_by_default else None)
    provider = (provider or session.default_provider).lower()
    if provider not in FILE_PROVIDERS:
        return Plain(
            f"provider {provider}: only file sources ({_names(FILE_PROVIDERS)}) are staged"
        )
    if statement.partition_columns and session.catalog_implementation != "hive":
        # Spark's in-memory catalog renames the directory but its partitions keep reading
        # the old one: a staged partitioned table would come out empty.
        return Plain("a partitioned table in the in-memory catalog, which cannot rename one")
    if existing is None:
        if statement.kind is CtasKind.REPLACE:
            search_path = (
                "[`system`.`builtin`, `system`.`session`, "
                f"`{session.current_catalog}`.`{session.current_database}`]"
            )
            return Refuse(
                "TABLE_OR_VIEW_NOT_FOUND",
                {"relationName": target.quoted, "searchPath": search_path},
            )
        return StageCreate(target, provider, database_location)
    if statement.kind is CtasKind.CREATE:
        if statement.if_not_exists:
            return Skip(target)
        return Refuse("TABLE_OR_VIEW_ALREADY_EXISTS", {"relationName": target.quoted})
    return _replace(statement, target, provider, database_location, existing)


def _replace(
    statement: CtasStatement,
    target: Target,
    provider: str,
    database_location: str,
    existing: ExistingTable,
) -> Decision:
    if existing.type == "VIEW":
        return Plain(f"{target.quoted} is a view; Spark decides")
    if existing.type != "MANAGED":
        return Plain(f"{target.quoted} is an {existing.type.lower()} table: its data is not ours")
    if existing.provider != provider:
        return Plain(f"the table is {existing.provider}; the replacement would be {provider}")
    if existing.partition_columns or statement.partition_columns:
        return Plain(
            "partitioned table: the catalog keeps each partition's location, and one switch "
            "cannot change them all at once"
        )
    if existing.bucketed or statement.bucketed:
        return Plain("bucketed table: its bucketing lives in the catalog, beside the location")
    if _lower_keys(existing.storage_properties) != _lower_keys(statement.options):
        return Plain("the replacement's OPTIONS differ from the table's; readers depend on them")
    if not is_local(existing.location):
        return Plain(f"table location {existing.location} is not a local filesystem path")
    return StageReplace(target, provider, database_location, existing)


def location_conflict(target: Target, location: str) -> Refuse:
    """Spark's refusal to put a managed table on a directory that is already there."""
    return Refuse(
        "LOCATION_ALREADY_EXISTS", {"identifier": target.quoted, "location": f"'{location}'"}
    )


class SparkField(TypedDict):
    """One column as Spark describes it, an item of ``StructType.jsonValue()["fields"]``."""

    name: str
    type: Any  # a type's name ("long"), or a complex type as Spark's JSON (array, map, struct)
    nullable: bool
    metadata: Mapping[str, Any]


def column_difference(table: list[SparkField], query: list[SparkField]) -> str | None:
    """Why a query's columns cannot replace a table's data (None: they can).

    Both are ``StructType.jsonValue()["fields"]``. Names must match exactly, types up to
    nullability (Spark's file tables read every column as nullable).
    """
    table_columns = [(f["name"], _without_nullability(f["type"])) for f in table]
    query_columns = [(f["name"], _without_nullability(f["type"])) for f in query]
    if table_columns == query_columns:
        return None
    return (
        f"the replacement's columns ({_describe(query_columns)}) differ from the table's "
        f"({_describe(table_columns)}); replacing them is beyond one location switch"
    )


def _without_nullability(data_type: Any) -> Any:
    if isinstance(data_type, dict):
        return {
            key: _without_nullability(value)
            for key, value in data_type.items()
            if key not in ("nullable", "containsNull", "valueContainsNull", "metadata")
        }
    if isinstance(data_type, list):
        return [_without_nullability(item) for item in data_type]
    return data_type


def _describe(columns: list[tuple[str, Any]]) -> str:
    shown = ", ".join(f"{name} {_type_name(t)}" for name, t in columns[:8])
    return shown + (", ..." if len(columns) > 8 else "")


def _type_name(data_type: Any) -> str:
    return data_type if isinstance(data_type, str) else str(data_type.get("type", "complex"))


def _lower_keys(values: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in values.items() if k.lower() != "path"}


def _names(values: frozenset[str]) -> str:
    return ", ".join(sorted(values))
