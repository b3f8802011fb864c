"""Rich tables for results, queries and sessions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from rich.table import Table


def cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def table(
    columns: Iterable[str],
    rows: Iterable[Iterable[str]],
    *,
    title: str | None = None,
    fold: bool = True,
) -> Table:
    """A table with a bold header; long cells wrap (``fold``) rather than being cut."""
    made = Table(header_style="bold", title=title, title_justify="left")
    for column in columns:
        made.add_column(column, overflow="fold" if fold else "ellipsis")
    for row in rows:
        made.add_row(*row)
    return made


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def result_table(schema: list[dict[str, str]], rows: list[list[Any]]) -> Table:
    table = Table(show_lines=False, header_style="bold")
    for column in schema:
        table.add_column(f"{column['name']}\n[dim]{column['type']}[/]")
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    return table


def queries_table(queries: list[dict[str, Any]]) -> Table:
    return table(
        ("id", "session", "state", "created", "finished", "query"),
        (
            (
                str(q["id"]),
                str(q["session_id"]),
                q["state"],
                q["created_at"] or "",
                q["finished_at"] or "",
                shorten(" ".join(q["query"].split()), 60),
            )
            for q in queries
        ),
    )


def sessions_table(sessions: list[dict[str, Any]]) -> Table:
    return table(
        ("id", "kind", "name", "state", "engine", "statements", "created"),
        (
            (
                str(s["id"]),
                s["kind"],
                s["name"] or "",
                s["state"],
                cell(s["engine_id"]),
                str(s["statement_count"]),
                s["created_at"] or "",
            )
            for s in sessions
        ),
        fold=False,
    )


def describe_error(error: dict[str, Any] | None) -> str:
    if not error:
        return "unknown error"
    where = ""
    if error.get("line") is not None:
        where = f" (line {error['line']}, position {error.get('position')})"
    message = str(error.get("message", "")).strip()
    return f"[{error.get('code', 'ERROR')}] {message}{where}"


def short_error(error: dict[str, Any] | None) -> str:
    """An error's first line, cut to fit a table cell; "" for none."""
    return shorten(describe_error(error).splitlines()[0], 80) if error else ""


def output_text(output: dict[str, Any] | None) -> str:
    """What a Python statement printed (``{"data": {"text/plain": ...}}``), or a batch file's
    log (``{"stdout", "stderr"}``)."""
    if not output:
        return ""
    data = output.get("data")
    if isinstance(data, dict):
        return str(data.get("text/plain", ""))
    return (str(output.get("stdout") or "") + str(output.get("stderr") or "")).rstrip()


def versions_text(decision: dict[str, Any]) -> str:
    """A deploy decision's versions: ``new -> 1``, ``2``, ``2 -> 3``, ``-``."""
    before, after = decision["from_version"], decision["to_version"]
    if before is None:
        return "-" if after is None else f"new -> {after}"
    if after is None or after == before:
        return str(before)
    return f"{before} -> {after}"
