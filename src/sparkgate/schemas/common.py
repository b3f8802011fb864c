"""What every answer of the native API builds on: the closed base model (read from a store
record's attributes), the timestamp and Spark settings types, and the paging keys of a list.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, model_validator


def _stamped(value: object) -> object:
    """The store's epoch seconds as ``iso()``'s text (None for NaN); text (a model built from
    another's fields) and None as they are."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return iso(value)
    return value


_DateTime = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
# ``iso()``'s text: ISO 8601 in UTC with milliseconds, ``2024-05-01T12:00:00.000Z``; given the
# store's epoch float, it is made here.
Timestamp = Annotated[_DateTime, BeforeValidator(_stamped)]
# A time a record may lack (None, or NaN): not ``Timestamp | None``, since NaN becomes None
# only once converted, and a union tries each branch on the value as given.
OptionalTimestamp = Annotated[_DateTime | None, BeforeValidator(_stamped)]
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
    """An answer's closed model, validated from a store record's attributes of the same names
    (``Session.model_validate(record)``): the record's enums, epoch times and error dicts are
    what its fields accept."""

    model_config = ConfigDict(extra="forbid", from_attributes=True)

    @classmethod
    def read(cls, answer: object) -> Self:
        """The model of an answer a server sent (the client's reading): keys this release does
        not know, which a newer server may add, are left out instead of refused, in nested
        models too; the server's own models stay closed."""
        return cls.model_validate(answer, context=_ANSWER)

    @model_validator(mode="before")
    @classmethod
    def _newer_keys(cls, data: Any, info: ValidationInfo) -> Any:
        if info.context is not _ANSWER or not isinstance(data, dict):
            return data
        known = cls._known_keys()
        return {key: value for key, value in data.items() if key in known}

    @classmethod
    def _known_keys(cls) -> frozenset[str]:
        keys = cls.__dict__.get("_keys")
        if keys is None:  # per class (not inherited): a subclass has fields of its own
            # An aliased field is read by its alias only (``schema``), as the server sends it.
            keys = frozenset(field.alias or name for name, field in cls.model_fields.items())
            cls._keys = keys
        return keys

    _keys: ClassVar[frozenset[str] | None] = None

    @classmethod
    def from_record(cls, record: object, **differing: object) -> Self:
        """The model of ``record``, with ``differing``: the fields the record does not have
        as they are (another name, a value computed from it)."""
        return cls.model_validate(_Overlay(record, differing) if differing else record)


# The validation context of an answer read by the client (``Body.read``).
_ANSWER = {"reading": "answer"}


class _Overlay:
    """A record whose attributes ``fields`` adds to or replaces: what ``from_attributes`` reads
    (it looks each field up by name) to build a model with a few keys of its own."""

    def __init__(self, record: object, fields: Mapping[str, object]) -> None:
        self._record = record
        self._fields = fields

    def __getattr__(self, name: str) -> object:
        # Called only for what the overlay itself lacks: the model's field names.
        return self._fields[name] if name in self._fields else getattr(self._record, name)


# -- paging -----------------------------------------------------------------------------------


class Paging(Body):
    """The paging keys of a list (``paging.py``)."""

    next: str | None = Field(description="Pass as `?after=` for the next page; null: the last.")
    total: int | None = Field(description="Every matching row; null when not counted.")
    offset: int | None = Field(description="The offset asked; null for a cursor page.")
    limit: int
