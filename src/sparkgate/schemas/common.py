"""What every answer of the native API builds on: the closed base model, the timestamp
and Spark settings types, and the paging keys of a list.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# ``iso()``'s text: ISO 8601 in UTC with milliseconds, ``2024-05-01T12:00:00.000Z``.
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
# Spark properties as given (``{"spark.sql.shuffle.partitions": "4"}``).
SparkConf = dict[str, str]


def iso(ts: float | None) -> str | None:
    """A stored epoch time as a ``Timestamp``; None (or NaN) when there is none."""
    if ts is None or math.isnan(ts):
        return None
    return stamp(ts)


def stamp(ts: float) -> str:
    """A time every record has (when it was made) as a ``Timestamp``."""
    # Clamped to what a datetime holds: an older release stored token expiries past year
    # 9999, and one such row must not break every later read of the list it is in.
    moment = min(max(ts, _EARLIEST), _LATEST)
    return (
        datetime.fromtimestamp(moment, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


_EARLIEST = datetime(1, 1, 2, tzinfo=UTC).timestamp()
_LATEST = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- paging -----------------------------------------------------------------------------------


class Paging(Body):
    """The paging keys of a list (``paging.py``)."""

    next: str | None = Field(description="Pass as `?after=` for the next page; null: the last.")
    total: int | None = Field(description="Every matching row; null when not counted.")
    offset: int | None = Field(description="The offset asked; null for a cursor page.")
    limit: int
