"""What sparkgate keeps of a streaming query's progress: a few numbers per micro-batch, taken
from Spark's progress JSON (``StreamingQueryProgress.json``). Pure.

    summarize(json.loads(event.progress.json))
    -> {"batch_id": 7, "input_rows": 50, "input_rows_per_second": 10.0, ...}
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any


def summarize(progress: dict[str, Any]) -> dict[str, Any]:
    """Batch id, start time (epoch seconds), input rows, rows per second (in and processed),
    batch duration, watermark and state rows; ``durations_ms`` breaks the batch down."""
    durations = progress.get("durationMs") or {}
    state_rows = [op.get("numRowsTotal") for op in progress.get("stateOperators") or []]
    event_time = progress.get("eventTime") or {}
    return {
        "run_id": progress.get("runId"),
        "batch_id": int(progress.get("batchId", -1)),
        "at": _epoch(progress.get("timestamp")),
        "input_rows": int(progress.get("numInputRows") or 0),
        "input_rows_per_second": _number(progress.get("inputRowsPerSecond")),
        "processed_rows_per_second": _number(progress.get("processedRowsPerSecond")),
        "batch_duration_ms": _int(progress.get("batchDuration", durations.get("triggerExecution"))),
        "watermark": event_time.get("watermark"),
        "state_rows": sum(int(n) for n in state_rows if n is not None) if state_rows else None,
        "durations_ms": {k: int(v) for k, v in durations.items() if isinstance(v, (int, float))},
    }


def _epoch(timestamp: Any) -> float | None:
    if not isinstance(timestamp, str):
        return None
    try:
        return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
