"""Log records: the context fields, JSON lines, and the readable text format."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import threading
from collections.abc import Iterator
from typing import Any, Literal

import pytest

from sparkgate import logs
from sparkgate.settings import Settings


@pytest.fixture
def output() -> Iterator[Any]:
    """``configure(format, process)`` -> a stream holding what the root logger writes."""
    root = logging.getLogger()
    level = root.level
    installed: list[logging.Handler] = []

    def configure(log_format: Literal["text", "json"], process: str = "server") -> io.StringIO:
        stream = io.StringIO()
        settings = Settings(log_format=log_format)
        installed.append(logs.configure(settings, process=process, stream=stream))
        return stream

    yield configure
    for handler in installed:
        root.removeHandler(handler)
    root.setLevel(level)
    logs.bind_process()


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_json_lines_carry_the_context(output: Any) -> None:
    stream = output("json", "engine")
    log = logging.getLogger("sparkgate.test")
    logs.bind_process(engine_id=4)
    with logs.bound(query_id=7, session_id=3, user="bob"):
        log.info("statement %s -> %s", 7, "success")
    log.warning("between statements")

    first, second = (json.loads(line) for line in lines(stream))
    assert list(first)[:5] == ["time", "level", "logger", "message", "process"]
    assert first["time"].endswith("+00:00")  # ISO 8601, UTC
    assert first["level"] == "INFO" and first["logger"] == "sparkgate.test"
    assert first["message"] == "statement 7 -> success" and first["process"] == "engine"
    assert (first["query_id"], first["session_id"], first["user"]) == (7, 3, "bob")
    assert first["engine_id"] == 4 and first["thread"] == "MainThread"
    # Out of the block, only the process's own field is left.
    assert second["engine_id"] == 4 and second["message"] == "between statements"
    assert not {"query_id", "session_id", "user"} & set(second)


def test_json_exception_and_extra(output: Any) -> None:
    stream = output("json")
    log = logging.getLogger("sparkgate.test")
    with logs.bound(query_id=1):
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("it failed", extra={"query_id": 2, "color_message": "\x1b[31m"})
    (record,) = (json.loads(line) for line in lines(stream))
    assert record["level"] == "ERROR" and record["message"] == "it failed"
    assert "ValueError: boom" in record["exception"] and "Traceback" in record["exception"]
    assert record["query_id"] == 2  # a field given with extra= wins over the context's
    assert "color_message" not in record


def test_text_stays_readable(output: Any) -> None:
    stream = output("text")
    log = logging.getLogger("sparkgate.test")
    log.info("plain")
    with logs.bound(query_id=7, session_id=3, user="bob"):
        log.info("with context")
    plain, tagged = lines(stream)
    assert plain.endswith(" INFO sparkgate.test plain")
    assert tagged.endswith(" INFO sparkgate.test with context [query=7 session=3 user=bob]")
    assert not plain.startswith("{")


def test_engine_text_names_the_thread(output: Any) -> None:
    stream = output("text", "engine")
    logs.bind_process(engine_id=2)
    logging.getLogger("sparkgate.engine").info("running")
    assert lines(stream)[0].endswith(" INFO sparkgate.engine [MainThread] running [engine=2]")


def test_bindings_stay_in_their_context(output: Any) -> None:
    stream = output("json")
    log = logging.getLogger("sparkgate.test")
    logs.bind_process(engine_id=9)

    def request() -> None:  # a request's own context, as the server gives each one
        logs.bind(user="carol", session_id=5)
        log.info("in the request")

    contextvars.copy_context().run(request)
    log.info("after the request")
    with logs.bound(query_id=8):
        # A new thread starts with an empty context: only the process's fields reach it.
        thread = threading.Thread(target=lambda: log.info("in a thread"), name="worker")
        thread.start()
        thread.join()
    inside, after, in_thread = (json.loads(line) for line in lines(stream))
    assert (inside["user"], inside["session_id"], inside["engine_id"]) == ("carol", 5, 9)
    assert "user" not in after and after["engine_id"] == 9
    assert in_thread["thread"] == "worker" and in_thread["engine_id"] == 9
    assert "query_id" not in in_thread


def test_configure_again_replaces_its_handler(output: Any) -> None:
    first = output("text")
    second = output("json")
    logging.getLogger("sparkgate.test").info("once")
    assert lines(first) == []
    assert json.loads(lines(second)[0])["message"] == "once"
    ours = [h for h in logging.getLogger().handlers if h.get_name() == "sparkgate"]
    assert len(ours) == 1
