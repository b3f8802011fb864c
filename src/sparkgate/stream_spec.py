"""What a streaming query is, as it is stored with it and restarted from: its sink, options,
trigger and retry policy. Below the store, which keeps it typed (``StreamQueryRecord.spec``),
and below ``streaming/``, which builds it from SQL (``definitions.py``) and runs it.

    spec = QuerySpec(name="clicks", view="v", format="parquet", options={"path": "/out"})
    QuerySpec.from_json(spec.to_json()) == spec
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
        return {
            "enabled": self.enabled,
            "max_attempts": self.max_attempts,
            "min_backoff": self.min_backoff,
            "max_backoff": self.max_backoff,
            "random_factor": self.random_factor,
            "stable_period": self.stable_period,
        }

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

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "view": self.view,
            "format": self.format,
            "table": self.table,
            "output_mode": self.output_mode.value if self.output_mode else None,
            "trigger": (
                {"seconds": self.trigger.seconds, "text": self.trigger.text}
                if self.trigger
                else None
            ),
            "partition_by": list(self.partition_by),
            "options": dict(self.options),
            "checkpoint_location": self.checkpoint_location,
            "retry": self.retry.to_json(),
            "sql": self.sql,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> QuerySpec:
        trigger = data.get("trigger")
        mode = data.get("output_mode")
        return cls(
            name=data["name"],
            view=data["view"],
            format=data["format"],
            table=data.get("table"),
            output_mode=OutputMode(mode) if mode else None,
            trigger=Trigger(float(trigger["seconds"]), trigger["text"]) if trigger else None,
            partition_by=tuple(data.get("partition_by", ())),
            options=dict(data.get("options", {})),
            checkpoint_location=data.get("checkpoint_location"),
            retry=RetryPolicy.from_json(data["retry"]),
            sql=data.get("sql", ""),
        )
