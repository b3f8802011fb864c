"""What the CLI prints, without a server: tables on a terminal and in a pipe, and what
``sparkgate sql`` says while its query waits."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

from sparkgate.cli.render import queries_table, result_table, short_error, table
from sparkgate.cli.waiting import status_text


def printed(renderable: Any, *, terminal: bool) -> str:
    out = io.StringIO()
    # As cli.common makes its console: lines whole when there is no terminal.
    console = Console(file=out, force_terminal=terminal, width=80, soft_wrap=not terminal)
    console.print(renderable)
    return out.getvalue()


def test_without_a_terminal_a_table_is_tsv_whole_and_escaped() -> None:
    long = "v" * 150
    schema = [{"name": "label", "type": "string"}, {"name": "m", "type": "map<string,int>"}]
    rows: list[list[Any]] = [[long, {"k": 1}], ["tab\there\nand [bold]no markup[/]", None]]
    assert printed(result_table(schema, rows), terminal=False).splitlines() == [
        "label\tm",
        f'{long}\t{{"k": 1}}',
        "tab\\there\\nand [bold]no markup[/]\tNULL",
    ]


def test_without_a_terminal_nothing_is_cut_that_a_terminal_cuts() -> None:
    query = "SELECT " + ", ".join(f"column_{i}" for i in range(20))
    queries = [
        {
            "id": 7,
            "session_id": 3,
            "state": "success",
            "created_at": "2026-11-26T12:00:00.123456Z",
            "finished_at": "2026-11-26T12:00:01.5Z",
            "query": query,
        }
    ]
    assert printed(queries_table(queries), terminal=False).splitlines() == [
        "id\tsession\tstate\tcreated\tfinished\tquery",
        f"7\t3\tsuccess\t2026-11-26T12:00:00.123456Z\t2026-11-26T12:00:01.5Z\t{query}",
    ]
    drawn = printed(queries_table(queries), terminal=True)
    assert "┃" in drawn and "..." in drawn and "column_19" not in drawn
    error = {"code": "BOOM", "message": "x" * 200 + "\nsecond line"}
    styled = table(("job", "outcome", "error"), [("j", "[green]failed[/]", short_error(error))])
    assert printed(styled, terminal=False).splitlines() == [
        "job\toutcome\terror",
        f"j\tfailed\t[BOOM] {'x' * 200}",
    ]


def test_a_titled_table_says_its_title_first() -> None:
    made = table(("version", "outcome"), [("1", "start")], title="decisions")
    assert printed(made, terminal=False) == "# decisions\nversion\toutcome\n1\tstart\n"


QUERY = {"id": 7, "state": "waiting", "session_id": 3}
SESSION = {"id": 3, "state": "starting", "engine_id": 1}
ENGINE = {"id": 1, "state": "starting"}


def test_a_query_waiting_for_an_engine_that_starts_says_so() -> None:
    said = status_text(QUERY, SESSION, ENGINE)
    assert said == (
        "query 7: waiting for its Spark engine to start (a new driver takes tens of seconds)"
    )
    assert status_text(QUERY, {**SESSION, "state": "not_started"}, ENGINE) == said


def test_otherwise_the_status_is_the_querys_state() -> None:
    assert status_text(QUERY, None, None) == "query 7: waiting"
    assert status_text(QUERY, SESSION, {**ENGINE, "state": "running"}) == "query 7: waiting"
    assert status_text(QUERY, {**SESSION, "state": "idle"}, ENGINE) == "query 7: waiting"
    assert status_text(QUERY, SESSION, {**ENGINE, "id": 2}) == "query 7: waiting"
    assert status_text({**QUERY, "state": "running"}, SESSION, ENGINE) == "query 7: running"
