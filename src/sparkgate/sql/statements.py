"""What sparkgate's SQL extensions parse into: plain immutable values, no Spark.

Each value keeps the text it was parsed from and where its parts are, so later checks (an
output mode the sink cannot write, a missing path) can point at the exact clause.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class OutputMode(StrEnum):
    APPEND = "append"
    COMPLETE = "complete"
    UPDATE = "update"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # as written: "DECIMAL(10, 2)", "ARRAY<STRING> NOT NULL COMMENT 'x'"


@dataclass(frozen=True)
class Option:
    key: str
    value: str
    offset: int  # where the key is, in the statement's text


@dataclass(frozen=True)
class CreateStream:
    """``CREATE [OR REPLACE] STREAM name [(col type, ...)] USING provider [OPTIONS (...)]``
    or ``CREATE [OR REPLACE] STREAM name FROM TABLE t [OPTIONS (...)]``: a streaming temporary
    view named ``name``, reading ``provider`` (or the catalog table ``table``)."""

    text: str
    name: str
    provider: str | None  # lowercased; None when reading a table
    table: str | None
    columns: tuple[Column, ...] | None = None
    options: tuple[Option, ...] = ()
    or_replace: bool = False
    offsets: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def schema_ddl(self) -> str | None:
        """The column list as a Spark DDL schema: ```id` BIGINT, `name` STRING``."""
        if self.columns is None:
            return None
        return ", ".join(f"`{c.name.replace('`', '``')}` {c.type}" for c in self.columns)

    def option(self, key: str) -> Option | None:
        return find_option(self.options, key)


@dataclass(frozen=True)
class Trigger:
    """A processing-time trigger: a micro-batch every ``seconds``."""

    seconds: float
    text: str  # as written: "5 SECONDS", "100ms"

    @property
    def spark_interval(self) -> str:
        return f"{round(self.seconds * 1000)} milliseconds"


@dataclass(frozen=True)
class SaveStream:
    """``SAVE STREAM [db.]view TO provider [IDENTIFIED BY name] [TRIGGER n unit]
    [OUTPUT MODE APPEND|COMPLETE|UPDATE] [PARTITIONED ON (col, ...)] [OPTIONS (...)]``:
    a streaming query writing the view to a sink (``TO TABLE t`` writes to a catalog table).
    """

    text: str
    view: str
    provider: str  # lowercased; "table" with ``table`` set for TO TABLE t
    table: str | None = None
    query_name: str | None = None  # IDENTIFIED BY
    trigger: Trigger | None = None
    output_mode: OutputMode | None = None
    partitioned_on: tuple[str, ...] = ()
    options: tuple[Option, ...] = ()
    offsets: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def name(self) -> str:
        """The query's name: IDENTIFIED BY's, else the view's (without its database)."""
        return self.query_name or self.view.rsplit(".", 1)[-1]

    def option(self, key: str) -> Option | None:
        return find_option(self.options, key)


@dataclass(frozen=True)
class StopStream:
    """``STOP STREAM name``: stop a streaming query of this session at a batch boundary."""

    text: str
    name: str


@dataclass(frozen=True)
class PassThrough:
    """Not a sparkgate extension: Spark runs ``text`` as it is."""

    text: str


Statement = CreateStream | SaveStream | StopStream | PassThrough
Extension = CreateStream | SaveStream | StopStream


def find_option(options: tuple[Option, ...], key: str) -> Option | None:
    """Options are case-insensitive, as Spark's are."""
    wanted = key.lower()
    return next((o for o in options if o.key.lower() == wanted), None)
