"""JDBC search patterns, as a catalog call's name arguments are: ``%`` any run, ``_`` one
character, ``\\`` escapes, ``*`` a wildcard too.

Apart from the calls (``catalog_calls``) because this is pure, no Spark, tested by examples:
what each name argument matches.
"""

from __future__ import annotations

import re

_EVERYTHING = frozenset({"", "%", "*"})


def jdbc_pattern(pattern: str | None) -> re.Pattern[str] | None:
    """A JDBC search pattern as a case-insensitive regex; None when it matches everything."""
    if pattern is None or pattern in _EVERYTHING:
        return None
    parts: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            parts.append(re.escape(next(chars, "\\")))
        elif char in "%*":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


def matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is None or pattern.fullmatch(name) is not None


def spark_prefilter(pattern: str | None) -> str | None:
    """A Spark catalog pattern (``*`` wildcards) matching at least what ``pattern`` matches, to
    narrow a listing before the exact match; None when it cannot help or cannot be said
    safely (Spark and Hive metastores read other characters as regex or alternation)."""
    if pattern is None or pattern in _EVERYTHING or not re.fullmatch(r"[A-Za-z0-9_%*]+", pattern):
        return None
    return re.sub(r"[%_*]+", "*", pattern)
