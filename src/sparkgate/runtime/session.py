"""What an engine keeps for each session it hosts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sparkgate.store.records import SessionRecord

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass
class OpenSession:
    record: SessionRecord
    spark: SparkSession
    # The Python namespace pyspark statements share across a session (a REPL's globals).
    namespace: dict[str, Any] = field(default_factory=dict)
    # What decides a query's answer here besides its text (catalog, schema, settings, temporary
    # names), as a digest, after its last statement; None: nothing in it may be reused.
    reuse_context: str | None = None
