"""Durations as sparkgate's SQL extensions and options write them.

Options take the compact form, a number glued to its unit: ``50s``, ``100ms``, ``250us``,
``1m``, ``1min``, ``1h``, ``1d``. ``TRIGGER`` also takes a number and a unit word:
``TRIGGER 5 SECONDS``, ``TRIGGER 1 MINUTE``, ``TRIGGER 100 MILLISECONDS``.
"""

from __future__ import annotations

import re

COMPACT_UNITS: dict[str, float] = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
UNIT_WORDS: dict[str, float] = {
    "microsecond": 1e-6,
    "millisecond": 1e-3,
    "second": 1.0,
    "minute": 60.0,
    "hour": 3600.0,
    "day": 86400.0,
}
_COMPACT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*")
COMPACT_HELP = "a number and a unit with no space: 50s, 100ms, 250us, 1m, 1min, 1h, 1d"


def parse_duration(text: str) -> float:
    """Seconds in a compact duration: ``parse_duration("100ms") == 0.1``.

    Raises ValueError saying what is accepted.
    """
    match = _COMPACT.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in COMPACT_UNITS:
        raise ValueError(f"'{text}' is not a duration; write {COMPACT_HELP}")
    return float(match.group(1)) * COMPACT_UNITS[unit]


def unit_seconds(word: str) -> float | None:
    """Seconds in one unit named by a word (``SECONDS``, ``minute``) or a compact unit (``ms``);
    None if it names no unit."""
    lowered = word.lower()
    if lowered in COMPACT_UNITS:
        return COMPACT_UNITS[lowered]
    return UNIT_WORDS.get(lowered.removesuffix("s"))


def format_duration(seconds: float) -> str:
    """The shortest exact compact form: ``format_duration(0.25) == "250ms"``."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3)):
        count = seconds / size
        if count >= 1 and abs(count - round(count)) < 1e-9:
            return f"{round(count)}{unit}"
    micros = seconds / 1e-6
    if abs(micros - round(micros)) < 1e-6:
        return f"{round(micros)}us"
    return f"{seconds:g}s"
