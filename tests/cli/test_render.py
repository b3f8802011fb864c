"""What the CLI prints, without a server: tables on a terminal and in a pipe, and what
``sparkgate sql`` says while its query waits."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from sparkgate.cli.render import queries_table, result_table, short_error, table
from sparkgate.cli.waiting import status_text
from sparkgate.schemas.engines import Engine
from sparkgate.schemas.errors import RecordedError
from sparkgate.schemas.queries import Column, Query, QueryAccepted, Session


def printed(renderable: Any, *, terminal: bool) -> str:
    out = io.StringIO()
    # As cli.common makes its console: lines whole when there is no terminal.
    console = Console(file=out, force_terminal=terminal, width=80, soft_wrap=not terminal)
    console.print(renderable)
    return out.getvalue()


def test_without_a_terminal_a_table_is_tsv_whole_and_escaped() -> None:
    long = "v" * 150
    schema = [Column(name="label", type="string"), Column(name="m", type="map<string,int>")]
    rows: list[list[Any]] = [[long, {"k": 1}], ["tab\there\nand [bold]no markup[/]", None]]
    assert printed(result_table(schema, rows), terminal=False).splitlines() == [
        "label\tm",
        f'{long}\t{{"k": 1}}',
        "tab\\there\\nand [bold]no markup[/]\tNULL",
    ]


def test_without_a_terminal_nothing_is_cut_that_a_terminal_cuts() -> None:
    query = "SELECT " + ", ".join(f"column_{i}" for i in range(20))
    queries = [
        Query.read(
            {
                "id": 7,
                "session_id": 3,
                "owner": None,
                "query": query,
                "kind": "sql",
                "state": "success",
                "progress": 1.0,
                "created_at": "2026-11-26T12:00:00.123456Z",
                "started_at": None,
                "finished_at": "2026-11-26T12:00:01.5Z",
                "error": None,
                "result": None,
                "output": None,
            }
        )
    ]
    assert printed(queries_table(queries), terminal=False).splitlines() == [
        "id\tsession\tstate\tgroup\ttags\tcreated\tfinished\tquery",
        f"7\t3\tsuccess\t\t\t2026-11-26T12:00:00.123456Z\t2026-11-26T12:00:01.5Z\t{query}",
    ]
    drawn = printed(queries_table(queries), terminal=True)
    assert "┃" in drawn and "..." in drawn and "column_19" not in drawn
    error = RecordedError(code="BOOM", message="x" * 200 + "\nsecond line")
    styled = table(("job", "outcome", "error"), [("j", "[green]failed[/]", short_error(error))])
    assert printed(styled, terminal=False).splitlines() == [
        "job\toutcome\terror",
        f"j\tfailed\t[BOOM] {'x' * 200}",
    ]


def test_a_titled_table_says_its_title_first() -> None:
    made = table(("version", "outcome"), [("1", "start")], title="decisions")
    assert printed(made, terminal=False) == "# decisions\nversion\toutcome\n1\tstart\n"


QUERY = QueryAccepted.read({"id": 7, "state": "waiting", "session_id": 3})
SESSION = Session.read(
    {
        "id": 3,
        "kind": "interactive",
        "name": None,
        "state": "starting",
        "owner": None,
        "proxy_user": None,
        "conf": {},
        "engine_id": 1,
        "statement_count": 1,
        "created_at": "2026-11-26T12:00:00.000Z",
        "started_at": None,
        "finished_at": None,
        "last_activity_at": "2026-11-26T12:00:00.000Z",
        "error": None,
    }
)
ENGINE = Engine.read(
    {
        "id": 1,
        "kind": "shared",
        "state": "starting",
        "session_id": None,
        "host": None,
        "pid": None,
        "app_id": None,
        "spark_ui": None,
        "log_path": None,
        "created_at": "2026-11-26T12:00:00.000Z",
        "started_at": None,
        "heartbeat_at": None,
        "finished_at": None,
        "error": None,
    }
)


def test_a_query_waiting_for_an_engine_that_starts_says_so() -> None:
    said = status_text(QUERY, SESSION, ENGINE)
    assert said == (
        "query 7: waiting for its Spark engine to start (a new driver takes tens of seconds)"
    )
    assert status_text(QUERY, SESSION.model_copy(update={"state": "not_started"}), ENGINE) == said


def test_otherwise_the_status_is_the_querys_state() -> None:
    assert status_text(QUERY, None, None) == "query 7: waiting"
    running_engine = ENGINE.model_copy(update={"state": "running"})
    assert status_text(QUERY, SESSION, running_engine) == "query 7: waiting"
    idle = SESSION.model_copy(update={"state": "idle"})
    assert status_text(QUERY, idle, ENGINE) == "query 7: waiting"
    another = ENGINE.model_copy(update={"id": 2})
    assert status_text(QUERY, SESSION, another) == "query 7: waiting"
    running = QUERY.model_copy(update={"state": "running"})
    assert status_text(running, SESSION, ENGINE) == "query 7: running"
