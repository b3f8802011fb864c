"""Catalog requests: the JSON a catalog statement's code holds, parsed into a
``CatalogRequest`` (or refused, saying what is wrong), and the JDBC search patterns its name
arguments are (``%`` any run, ``_`` one character, ``\\`` escapes, ``*`` a wildcard too).

Apart from the calls (``catalog_calls``) because this is pure, no Spark, tested by examples:
what a client may send, and what each name argument matches.
"""

from __future__ import annotations

import json
import re

from sparkgate.recorded import InvalidCatalogRequest
from sparkgate.runtime.catalog_request import CALL_FIELDS, CatalogRequest
from sparkgate.runtime.failures import DescribedError

# -- the request ----------------------------------------------------------------------


def parse_request(code: str) -> CatalogRequest:
    """The request in a catalog statement's code, or ``DescribedError`` saying what is wrong."""
    try:
        body = json.loads(code)
    except ValueError as exc:
        raise _invalid(
            f"The catalog request is not JSON ({exc}); send an object such as "
            '{"call": "tables", "schema": "%"}.'
        ) from None
    if not isinstance(body, dict):
        raise _invalid(f"The catalog request must be a JSON object, not {code.strip()[:100]}.")
    call = body.get("call")
    if not isinstance(call, str) or call not in CALL_FIELDS:
        raise _invalid(
            f"Unknown catalog call {json.dumps(call)}; use one of {', '.join(CALL_FIELDS)}."
        )
    names: dict[str, str | None] = {}
    for field in CALL_FIELDS[call]:
        value = body.get(field)
        if value is not None and not isinstance(value, str):
            raise _invalid(
                f"Field {field!r} of a {call!r} call must be a string or null, "
                f"not {json.dumps(value)}."
            )
        names[field] = value
    table_types = body.get("table_types") if call == "tables" else None
    if table_types is not None and not (
        isinstance(table_types, list) and all(isinstance(t, str) for t in table_types)
    ):
        raise _invalid(
            "Field 'table_types' of a 'tables' call must be a list of strings or null, "
            f"not {json.dumps(table_types)}."
        )
    return CatalogRequest(call, names, tuple(table_types) if table_types is not None else None)


def _invalid(message: str) -> DescribedError:
    return DescribedError(InvalidCatalogRequest(message).recorded())


# -- JDBC patterns --------------------------------------------------------------------

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
