"""What the resource methods share besides the transport: the paging and filters of a
list's query, the Idempotency-Key of a submit, and the poll of the ``wait_*`` calls (for the
resources the server holds no long poll for). Shared by every group of calls, so in a module
of their own."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

Answer = TypeVar("Answer")


def paging(
    offset: int, limit: int, after: str | None, total: bool | None, **filters: Any
) -> dict[str, Any]:
    """A list's query: paging by a cursor (``after``, the way) or an offset, not both, then
    the ``filters`` that were given (see ``given``)."""
    params: dict[str, Any] = {"limit": limit}
    if offset:
        params["offset"] = offset
    if after is not None:
        params["after"] = after
    if total is not None:
        params["total"] = "true" if total else "false"
    return params | given(**filters)


def idempotency(key: str | None) -> dict[str, str]:
    """The header naming one submit: the same on each of its retries, new for the next."""
    return {"Idempotency-Key": key or str(uuid.uuid4())}


def given(**fields: Any) -> dict[str, Any]:
    """The fields that are not None, in order. An optional field or filter the caller did not
    set is left out of the request, not sent as null, so the server applies its own default;
    callers pass ``x or None`` where an empty value also means "not set"."""
    return {key: value for key, value in fields.items() if value is not None}


def poll(
    read: Callable[[], Answer],
    done: Callable[[Answer], bool],
    timeout: float,
    pause: float,
) -> Answer:
    """``read()`` every ``pause`` seconds until ``done`` says yes of what it read, or
    ``timeout`` passes: the last answer read, in either case (the caller looks at its state)."""
    deadline = time.monotonic() + timeout
    while True:
        answer = read()
        if done(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(pause)
