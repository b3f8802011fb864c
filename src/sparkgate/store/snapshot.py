"""Reading a store row into its record: each column's value made into its field's type.

A record declares its fields, and that is all it declares: how a column becomes a field follows
from the field's type, worked out once per record class. A state is its enum, a flag a bool
(SQLite keeps 0 and 1), a JSON object or list a fresh copy (an empty one for NULL where the field
is not optional), and a value with a reader of its own (a recorded error, a result, a session's
attributes, a stream's spec) is read by it. Written once, here, instead of once per record.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Self

Convert = Callable[[Any], Any]

# Field types whose column holds JSON that a reader of their own makes into the value.
_READERS: dict[type, Convert] = {}


def read_as(kind: type, reader: Convert) -> None:
    """Read a column into a field of type ``kind`` with ``reader`` (never given None: an
    optional field's NULL stays None). Registered before any record of such a field is read."""
    _READERS[kind] = reader


class Snapshot:
    """A dataclass record read from a row (or its mapping) with ``from_row``."""

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> Self:
        values = dict(row)
        for name, convert in _conversions(cls):
            values[name] = convert(values[name])
        return cls(**values)


_CONVERSIONS: dict[type, tuple[tuple[str, Convert], ...]] = {}


def _conversions(record: type) -> tuple[tuple[str, Convert], ...]:
    """The fields of ``record`` that a column's value is converted into, and how (worked out
    on its first read: its annotations name types only importable once its module is)."""
    found = _CONVERSIONS.get(record)
    if found is None:
        hints = typing.get_type_hints(record)
        found = tuple(
            (field.name, convert)
            for field in dataclasses.fields(record)
            if (convert := _conversion(hints[field.name])) is not None
        )
        _CONVERSIONS[record] = found
    return found


def _conversion(hint: Any) -> Convert | None:
    """How a column becomes a field typed ``hint``; None: as it is."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            return None
        convert = _conversion(inner[0])
        if convert is None or typing.get_origin(inner[0]) in (dict, list):
            return None  # an optional JSON value: NULL or the value, as stored
        return lambda value: None if value is None else convert(value)
    origin = typing.get_origin(hint)
    if origin is dict:
        return lambda value: dict(value or {})
    if origin is list:
        return lambda value: list(value or [])
    if hint is bool:
        return bool
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint
    if isinstance(hint, type):
        return _READERS.get(hint)
    return None
