"""Logging for server nodes and engines: readable text by default, one JSON object per line
with ``SPARKGATE_LOG_FORMAT=json``.

Records carry the query, session, user and engine they concern whenever those are known: the
API binds them per request, the service around submit and cancel, an engine binds its id for
the whole process and the statement's ids around each statement it runs.

    logs.configure(settings, process="server")
    with logs.bound(query_id=7, session_id=3):
        log.info("submitted")
    # text: 2026-01-02 10:00:00,123 INFO sparkgate.service.queries submitted [query=7 session=3]
    # json: {"time": "...", "level": "INFO", "logger": "sparkgate.service.queries",
    #        "message": "submitted", "process": "server", "query_id": 7, "session_id": 3}
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, TextIO

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

from sparkgate.settings import Settings

FIELDS = ("query_id", "session_id", "user", "engine_id")
_TEXT_NAMES = {"query_id": "query", "session_id": "session", "user": "user", "engine_id": "engine"}

Value = int | str
# One variable holding every field, so that binding several costs one set and one reset.
_context: ContextVar[Mapping[str, Value]] = ContextVar(
    "sparkgate_log_context", default=MappingProxyType({})
)
# Fields true of the whole process (an engine's id). Kept apart from the context variable
# because a thread starts with an empty context: the heartbeat and statement threads would
# not see a value set in the main thread.
_process: dict[str, Value] = {}


def _fields(
    query_id: int | None, session_id: int | None, user: str | None, engine_id: int | None
) -> dict[str, Value]:
    given = {"query_id": query_id, "session_id": session_id, "user": user, "engine_id": engine_id}
    return {name: value for name, value in given.items() if value is not None}


def bind(
    *,
    query_id: int | None = None,
    session_id: int | None = None,
    user: str | None = None,
    engine_id: int | None = None,
) -> None:
    """Add fields to the current context until it ends: for a request, whose task (and the
    threads it hands work to) has a context of its own that ends with it."""
    added = _fields(query_id, session_id, user, engine_id)
    if added:
        _context.set({**_context.get(), **added})


@contextmanager
def bound(
    *,
    query_id: int | None = None,
    session_id: int | None = None,
    user: str | None = None,
    engine_id: int | None = None,
) -> Iterator[None]:
    """Add fields for the ``with`` block only: for code called from a context that lives
    longer than the work (a HiveServer2 connection, an engine's thread)."""
    token = _context.set({**_context.get(), **_fields(query_id, session_id, user, engine_id)})
    try:
        yield
    finally:
        _context.reset(token)


def bind_process(*, engine_id: int | None = None) -> None:
    """The fields every record of this process carries, from any thread (replacing those
    bound before)."""
    _process.clear()
    _process.update(_fields(None, None, None, engine_id))


def current() -> dict[str, Value]:
    """The fields a record logged here and now would carry."""
    return {**_process, **_context.get()}


class ContextFilter(logging.Filter):
    """Copies the context fields onto each record; a field passed with ``extra=`` wins."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in current().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


class TextFormatter(logging.Formatter):
    """The classic one-line format, with the context fields in brackets at the end of the
    first line: ``... statement 7 -> success [query=7 session=3 user=bob engine=2]``."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        tags = " ".join(
            f"{_TEXT_NAMES[name]}={getattr(record, name)}"
            for name in FIELDS
            if getattr(record, name, None) is not None
        )
        return f"{line} [{tags}]" if tags else line


class JsonLineFormatter(JsonFormatter):
    """One JSON object per record: time (ISO 8601, UTC) first, then level, logger, message,
    process ("server" or "engine"), thread, the context fields, and ``exception`` with the
    traceback when there is one."""

    def __init__(self, process: str) -> None:
        super().__init__(
            "%(levelname)s %(name)s %(message)s",
            rename_fields={"levelname": "level", "name": "logger", "exc_info": "exception"},
            static_fields={"process": process},
            # uvicorn adds an ANSI-coloured copy of some messages: noise in JSON.
            reserved_attrs=[*RESERVED_ATTRS, "color_message"],
        )

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        log_data["time"] = datetime.fromtimestamp(record.created, UTC).isoformat(
            timespec="milliseconds"
        )
        super().add_fields(log_data, record, message_dict)
        log_data["thread"] = record.threadName


_TEXT_FORMATS = {
    "server": "%(asctime)s %(levelname)s %(name)s %(message)s",
    # An engine runs statements on threads of their own: which one logged matters.
    "engine": "%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s",
}


def formatter(log_format: str, process: str) -> logging.Formatter:
    if log_format == "json":
        return JsonLineFormatter(process)
    return TextFormatter(_TEXT_FORMATS.get(process, _TEXT_FORMATS["server"]))


def configure(settings: Settings, *, process: str, stream: TextIO | None = None) -> logging.Handler:
    """Send every logger's records (uvicorn's too: they propagate to the root) to standard
    error in ``settings.log_format``. Calling it again replaces the handler it installed."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.set_name("sparkgate")
    handler.addFilter(ContextFilter())
    handler.setFormatter(formatter(settings.log_format, process))
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "sparkgate"]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        # Whatever configured them before (uvicorn's own config): ours is the only handler.
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    return handler
