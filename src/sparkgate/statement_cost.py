"""What a statement's Spark tasks cost, in the figures Spark's task metrics count: the value
the engine sums, the store keeps and the answers show. At the bottom, beside nothing it needs,
so that reading an answer (the client, the CLI) does not load the store's tables.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, fields

# The figures of a statement that ran Spark tasks (a statement that ran none has no row), as
# Spark's task metrics count them: run time in milliseconds, CPU time in nanoseconds, the rest
# in bytes and rows. The store's tables add ``at``, when the statement ended (usage reads by
# time).
COST_COLUMNS = (
    "tasks",
    "executor_run_time_ms",
    "executor_cpu_time_ns",
    "input_bytes",
    "input_records",
    "output_bytes",
    "output_records",
    "shuffle_read_bytes",
    "shuffle_write_bytes",
    "memory_bytes_spilled",
    "disk_bytes_spilled",
    "peak_execution_memory",
)


@dataclass(frozen=True)
class StatementCost:
    """Spark's own counters, summed over a statement's tasks (the peak: the largest task's)."""

    tasks: int
    executor_run_time_ms: int
    executor_cpu_time_ns: int
    input_bytes: int
    input_records: int
    output_bytes: int
    output_records: int
    shuffle_read_bytes: int
    shuffle_write_bytes: int
    memory_bytes_spilled: int
    disk_bytes_spilled: int
    peak_execution_memory: int

    @classmethod
    def from_json(cls, text: str) -> StatementCost | None:
        """The engine's JSON (``Cost.json``): its figures in the order of ``COST_COLUMNS``;
        None for its ``null`` (no task ran)."""
        found = json.loads(text)
        return None if found is None else cls.of(found)

    @classmethod
    def of(cls, figures: Sequence[int | None]) -> StatementCost:
        """From figures in the order of ``COST_COLUMNS`` (None, as SQL's sum of no rows: 0)."""
        if len(figures) != len(COST_COLUMNS):
            raise ValueError(f"{len(COST_COLUMNS)} figures expected, not {len(figures)}")
        return cls(*(int(value or 0) for value in figures))

    @classmethod
    def total(cls, costs: Iterable[StatementCost]) -> StatementCost:
        """Costs summed as a report sums them (the peak: the largest)."""
        rows = [astuple(cost) for cost in costs]
        return cls.of(
            [
                max(column, default=0) if name == "peak_execution_memory" else sum(column)
                for name, column in zip(COST_COLUMNS, zip(*rows, strict=True), strict=True)
            ]
            if rows
            else [0] * len(COST_COLUMNS)
        )


# The dataclass and the store's columns name the same figures (checked once, at import).
assert tuple(f.name for f in fields(StatementCost)) == COST_COLUMNS
