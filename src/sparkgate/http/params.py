"""The numbers a client sends, bounded where they enter: a 422 naming the field, never a 500.

The store's integers are 64-bit (SQLite INTEGER, PostgreSQL BIGINT). An id, offset or limit
beyond them used to reach the store and fail there (``OverflowError: Python int too large to
convert to SQLite INTEGER``); seconds could be infinite or NaN. Every door's route takes its
numbers as these types, so the bound is written once and shows in the OpenAPI schema.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Header, Path, Query
from pydantic import Field, Strict

from sparkgate.doors import DOORS, DoorName
from sparkgate.store.schema import ID_MAX as INT64_MAX

# A day: longer waits are capped by the server's long-poll limit anyway; more is a mistake.
MAX_WAIT = 86_400.0

# An object's id in a path: /v1/queries/{query_id}. Ids start at 1; 0 is simply absent (404).
Id = Annotated[int, Path(ge=0, le=INT64_MAX)]
# The same in a JSON body: {"session_id": 3}. Numbers in a body are strict (as every body
# number below): JSON has numbers, so true, "3" or 3.5 there is a client's mistake, which
# pydantic's lax mode would take as 1 or 3 (the fuzzer's {"expires_in": true} made a token
# that lived one second).
IdField = Annotated[int, Strict(), Field(ge=0, le=INT64_MAX)]
IdQuery = Annotated[int | None, Query(ge=0, le=INT64_MAX)]
Offset = Annotated[int, Query(ge=0, le=INT64_MAX, description="Rows to skip.")]
# How many items a list answers (a page of a long list, or the latest few).
ListLimit = Annotated[int, Query(ge=1, le=1000)]
# The last lines of a log (an engine's): at most what a reader can page through.
LogTail = Annotated[int | None, Query(ge=1, le=1_000_000, description="Only the last N lines.")]
# A result page's size; the server caps it at result_page_max.
PageLimit = Annotated[int | None, Query(ge=0, le=INT64_MAX, description="Rows in the page.")]
Wait = Annotated[
    float,
    Query(
        ge=0,
        le=MAX_WAIT,
        allow_inf_nan=False,
        description="Seconds to hold the answer until the query is final (capped by the "
        "server's long-poll limit).",
    ),
]
Since = Annotated[
    float | None, Query(allow_inf_nan=False, description="Epoch seconds: events from then on.")
]
Until = Annotated[
    float | None, Query(allow_inf_nan=False, description="Epoch seconds: events before then.")
]
# The door an access-history event came through.
Door = Annotated[DoorName | None, Query(description="The door: " + ", ".join(DOORS) + ".")]
# A list's search text (``?q=``): a case-insensitive substring; empty (a search box left
# blank) finds everything. Bounded: each row is scanned for it, and no one types more.
SEARCH_MAX = 1000
Search = Annotated[
    str | None,
    Query(
        max_length=SEARCH_MAX,
        pattern="^[^\\x00]*$",  # no NUL: PostgreSQL's text cannot hold one
        description=f"Only those holding this text, in any case (at most {SEARCH_MAX} characters).",
    ),
]

# Livy's paging: ``from`` (a row or log line) and ``size`` (how many; negative: all). Livy
# types both as a 32-bit Int; a page one row larger than asked is read to see whether more
# follow, so a 64-bit size would overflow the store's LIMIT.
INT32_MAX = 2**31 - 1
LivyFrom = Annotated[int | None, Query(alias="from", ge=0, le=INT32_MAX)]
LivySize = Annotated[int | None, Query(ge=-INT32_MAX - 1, le=INT32_MAX)]

# A submit's key for safe retries (service/idempotency.py checks and uses it).
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="A key of yours (1-255 printable ASCII characters, a UUID say) naming this "
        "request: sent again with the same body within a day (`SPARKGATE_IDEMPOTENCY_KEY_TTL`), "
        "to any node, it answers what the first request made instead of making another. The "
        "same key with another body answers 422 `IDEMPOTENCY_KEY_REUSED`; keys are per user.",
    ),
]
# The success answer of a route that takes an Idempotency-Key: what says it was a repeat.
REPLAYED_HEADER = "Idempotent-Replayed"


def created(description: str) -> dict[int | str, dict[str, Any]]:
    """The 201 of a route taking an Idempotency-Key, with the header a repeat answers."""
    header = {
        "description": "`true` when the answer is the result of an earlier request with the "
        "same Idempotency-Key (nothing new was made).",
        "schema": {"type": "string", "enum": ["true"]},
    }
    return {201: {"description": description, "headers": {REPLAYED_HEADER: header}}}
