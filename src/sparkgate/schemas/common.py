"""What every answer of the native API builds on: the closed base model, the timestamp
and Spark settings types, and the paging keys of a list.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

# ``iso()``'s text: ISO 8601 in UTC with milliseconds, ``2024-05-01T12:00:00.000Z``.
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
# Spark properties as given (``{"spark.sql.shuffle.partitions": "4"}``).
SparkConf = dict[str, str]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- paging -----------------------------------------------------------------------------------


class Paging(Body):
    """The paging keys of a list (``paging.py``)."""

    next: str | None = Field(description="Pass as `?after=` for the next page; null: the last.")
    total: int | None = Field(description="Every matching row; null when not counted.")
    offset: int | None = Field(description="The offset asked; null for a cursor page.")
    limit: int
