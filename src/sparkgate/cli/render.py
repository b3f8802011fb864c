"""Rich tables for results, queries and sessions."""

from __future__ import annotations

import json
from typing import Any

from rich.table import Table


def cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def result_table(schema: list[dict[str, str]], rows: list[list[Any]]) -> Table:
    table = Table(show_lines=False, header_style="bold")
    for column in schema:
        table.add_column(f"{column['name']}\n[dim]{column['type']}[/]")
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    return table


def queries_table(queries: list[dict[str, Any]]) -> Table:
    table = Table(header_style="bold")
    for name in ("id", "session", "state", "created", "finished", "query"):
        table.add_column(name, overflow="fold")
    for q in queries:
        text = " ".join(q["query"].split())
        table.add_row(
            str(q["id"]),
            str(q["session_id"]),
            q["state"],
            q["created_at"] or "",
            q["finished_at"] or "",
            text if len(text) <= 60 else text[:57] + "...",
        )
    return table


def sessions_table(sessions: list[dict[str, Any]]) -> Table:
    table = Table(header_style="bold")
    for name in ("id", "kind", "name", "state", "engine", "statements", "created"):
        table.add_column(name)
    for s in sessions:
        table.add_row(
            str(s["id"]),
            s["kind"],
            s["name"] or "",
            s["state"],
            cell(s["engine_id"]),
            str(s["statement_count"]),
            s["created_at"] or "",
        )
    return table


def describe_error(error: dict[str, Any] | None) -> str:
    if not error:
        return "unknown error"
    where = ""
    if error.get("line") is not None:
        where = f" (line {error['line']}, position {error.get('position')})"
    message = str(error.get("message", "")).strip()
    return f"[{error.get('code', 'ERROR')}] {message}{where}"


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
