"""What a streaming query is, as it is stored with it and restarted from: its sink, options,
trigger and retry policy. Below the store, which keeps it typed (``StreamQueryRecord.spec``),
and below ``streaming/``, which builds it from SQL (``definitions.py``) and runs it.

    spec = QuerySpec(name="clicks", view="v", format="parquet", options={"path": "/out"})
    QuerySpec.from_json(spec.to_json()) == spec
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from pydantic import TypeAdapter

from sparkgate.sql.statements import OutputMode, Trigger

MAX_ATTEMPTS_DEFAULT = 2_147_483_647


@dataclass(frozen=True)
class RetryPolicy:
    """The ``retry.*`` options of a query (``streaming/backoff.py`` turns them into delays)."""

    enabled: bool = True
    max_attempts: int = MAX_ATTEMPTS_DEFAULT
    min_backoff: float = 1.0  # seconds
    max_backoff: float = 3600.0
    random_factor: float = 0.0
    stable_period: float = 60.0  # running this long with progress resets the failure count

    def __post_init__(self) -> None:
        if self.max_attempts < 0:
            raise ValueError("retry.max.attempts must be 0 or more")
        if self.min_backoff < 0 or self.max_backoff < 0:
            raise ValueError("backoffs must not be negative")
        if self.min_backoff > self.max_backoff:
            raise ValueError(
                f"retry.min.backoff ({self.min_backoff:g}s) is more than "
                f"retry.max.backoff ({self.max_backoff:g}s)"
            )
        if self.random_factor < 0:
            raise ValueError("retry.random.factor must be 0 or more")
        if self.stable_period < 0:
            raise ValueError("retry.stable.period must not be negative")

    def to_json(self) -> dict[str, object]:
        """Its fields by name, in order: what a query's spec keeps (QuerySpec's codec writes
        the same) and what the retry options are parsed into."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RetryPolicy:
        return cls(
            enabled=bool(data["enabled"]),
            max_attempts=int(str(data["max_attempts"])),
            min_backoff=float(str(data["min_backoff"])),
            max_backoff=float(str(data["max_backoff"])),
            random_factor=float(str(data["random_factor"])),
            stable_period=float(str(data["stable_period"])),
        )


@dataclass(frozen=True)
class QuerySpec:
    """Everything needed to (re)start a streaming query, as stored with it."""

    name: str
    view: str
    format: str  # Spark's format, or "table" for a catalog table
    table: str | None = None
    output_mode: OutputMode | None = None
    trigger: Trigger | None = None
    partition_by: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)  # passed to Spark's writer
    checkpoint_location: str | None = None  # given in OPTIONS; else sparkgate's convention
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    sql: str = ""

    @property
    def resumable(self) -> bool:
        """Spark's memory sink cannot resume from a checkpoint unless in complete mode: a
        restart of such a query starts over (without a checkpoint)."""
        return self.format != "memory" or self.output_mode is OutputMode.COMPLETE

    def checkpoint(self, root: str) -> str | None:
        """Where the query's checkpoint lives: the option, else ``<root>/<name>``."""
        if self.checkpoint_location:
            return self.checkpoint_location
        if not self.resumable:
            return None
        return f"{root.rstrip('/')}/{self.name}"

    def to_json(self) -> dict[str, object]:
        """The JSON kept with the query (the ``spec`` column): every field, the trigger as
        ``{"seconds", "text"}`` and the retry policy as its fields."""
        stored: dict[str, object] = _codec().dump_python(self, mode="json")
        return stored

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> QuerySpec:
        """A spec as ``to_json`` keeps it; a field an earlier release did not write (``sql``)
        takes its default."""
        return _codec().validate_python(data)


@functools.cache
def _codec() -> TypeAdapter[QuerySpec]:
    # Built on first use, not at import: the CLI imports this module and never needs it.
    return TypeAdapter(QuerySpec)
