"""Tables for results, queries and sessions: Rich's on a terminal, TSV anywhere else."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from sparkgate.pricing import Money
from sparkgate.schemas.errors import RecordedError
from sparkgate.schemas.jobs import Decision
from sparkgate.schemas.queries import Column, Query, Session
from sparkgate.statement_cost import StatementCost
from sparkgate.units import byte_size

Cell = str | Text  # a str is Rich markup (a styled outcome); a Text is shown as it is


class Shortened(str):
    """A cell of text as it is (never read as markup: a query, an error message), which a
    terminal's table shows cut to ``width`` characters, and TSV prints whole."""

    width: int

    def __new__(cls, text: str, width: int) -> Shortened:
        made = super().__new__(cls, text)
        made.width = width
        return made


class Tabular(Table):
    """A table as Rich draws it on a terminal. Anywhere else (a pipe, a file) it prints
    whole as TSV: a header line, then a line per row, tab-separated, no box, nothing cut to
    a width (Rich would fit it to 80 columns, the width it assumes without a terminal). In
    a cell a backslash, tab or line break is written ``\\``, ``\\t``, ``\\n`` (``\\r``), as
    MySQL's batch mode and PostgreSQL's COPY do, so that each row stays one line."""

    def __init__(self, names: Sequence[str], *, title: str | None = None) -> None:
        super().__init__(header_style="bold", title=title, title_justify="left")
        self.names = list(names)
        self.cells: list[list[Cell]] = []

    def add_cells(self, cells: Iterable[Cell]) -> None:
        row = list(cells)
        self.cells.append(row)
        self.add_row(*(Text(shorten(c, c.width)) if isinstance(c, Shortened) else c for c in row))

    def tsv(self) -> str:
        lines = [self.names, *([_plain(c) for c in row] for row in self.cells)]
        text = "\n".join("\t".join(_escaped(c) for c in line) for line in lines)
        return f"# {self.title}\n{text}" if self.title else text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if console.is_terminal:
            yield from super().__rich_console__(console, options)
        else:  # as segments: Text would turn the tabs into spaces
            yield Segment(self.tsv())
            yield Segment.line()


def _plain(value: Cell) -> str:
    if isinstance(value, Text):
        return value.plain
    return str(value) if isinstance(value, Shortened) else Text.from_markup(value).plain


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def table(
    columns: Iterable[str],
    rows: Iterable[Iterable[Cell]],
    *,
    title: str | None = None,
    fold: bool = True,
) -> Tabular:
    """A table with a bold header; on a terminal, long cells wrap (``fold``) rather than
    being cut."""
    made = Tabular(list(columns), title=title)
    for column in made.names:
        made.add_column(column, overflow="fold" if fold else "ellipsis")
    for row in rows:
        made.add_cells(row)
    return made


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def result_table(schema: Sequence[Column], rows: list[list[Any]]) -> Tabular:
    """A query's rows; the header names each column and (on a terminal) its type. Values
    are shown as they are, never read as markup."""
    made = Tabular([column.name for column in schema])
    for column in schema:
        made.add_column(Text.assemble(column.name, "\n", (column.type, "dim")))
    for row in rows:
        made.add_cells(Text(cell(v)) for v in row)
    return made


def queries_table(queries: Sequence[Query]) -> Tabular:
    return table(
        ("id", "session", "state", "group", "tags", "created", "finished", "query"),
        (
            (
                str(q.id),
                str(q.session_id),
                q.state,
                group_text(q.resource_group, q.queue_position),
                Text(tags_text(q.tags)),
                q.created_at or "",
                q.finished_at or "",
                Shortened(" ".join(q.query.split()), 60),
            )
            for q in queries
        ),
    )


def group_text(group: str | None, turn: int | None) -> str:
    """A query's resource group, with its turn while queued: ``analysts.bob (turn 2)``."""
    if not group:
        return ""
    return f"{group} (turn {turn})" if turn else group


def tags_text(tags: dict[str, str] | None) -> str:
    """Tags as ``key=value`` pairs, sorted by key, comma-separated."""
    return ",".join(f"{k}={v}" for k, v in sorted((tags or {}).items()))


def sessions_table(sessions: Sequence[Session]) -> Tabular:
    return table(
        ("id", "kind", "name", "state", "engine", "statements", "created"),
        (
            (
                str(s.id),
                s.kind,
                Text(s.name or ""),
                s.state,
                cell(s.engine_id),
                str(s.statement_count),
                s.created_at or "",
            )
            for s in sessions
        ),
        fold=False,
    )


def describe_error(error: RecordedError | None) -> str:
    if not error:
        return "unknown error"
    where = ""
    if error.param("line") is not None:
        where = f" (line {error.param('line')}, position {error.param('position')})"
    return f"[{error.code}] {error.message.strip()}{where}"


def short_error(error: RecordedError | None) -> str:
    """An error's first line, cut to fit a table cell on a terminal; "" for none."""
    return Shortened(describe_error(error).splitlines()[0], 80) if error else ""


def cost_lines(cost: StatementCost, price: Money | None = None) -> list[tuple[str, str]]:
    """A query's cost (``GET /v1/queries/{id}``'s ``cost``) as ``name: value`` lines, and
    its ``price`` when prices are set."""
    priced = [("price", price.text)] if price is not None else []
    return [
        *priced,
        (
            "executor time",
            f"{cost.executor_cpu_time_ns / 1e9:.3f} s CPU, "
            f"{cost.executor_run_time_ms / 1e3:.3f} s run, {cost.tasks} tasks",
        ),
        (
            "input/output",
            f"{byte_size(cost.input_bytes)} ({cost.input_records} rows) read, "
            f"{byte_size(cost.output_bytes)} ({cost.output_records} rows) written",
        ),
        (
            "shuffle",
            f"{byte_size(cost.shuffle_read_bytes)} read, "
            f"{byte_size(cost.shuffle_write_bytes)} written",
        ),
        (
            "memory",
            f"{byte_size(cost.peak_execution_memory)} peak (one task's), "
            f"{byte_size(cost.memory_bytes_spilled)} spilled, "
            f"{byte_size(cost.disk_bytes_spilled)} to disk",
        ),
    ]


def output_text(output: dict[str, Any] | None) -> str:
    """What a Python statement printed (``{"data": {"text/plain": ...}}``), or a batch file's
    log (``{"stdout", "stderr"}``)."""
    if not output:
        return ""
    data = output.get("data")
    if isinstance(data, dict):
        return str(data.get("text/plain", ""))
    return (str(output.get("stdout") or "") + str(output.get("stderr") or "")).rstrip()


def versions_text(decision: Decision) -> str:
    """A deploy decision's versions: ``new -> 1``, ``2``, ``2 -> 3``, ``-``."""
    before, after = decision.from_version, decision.to_version
    if before is None:
        return "-" if after is None else f"new -> {after}"
    if after is None or after == before:
        return str(before)
    return f"{before} -> {after}"
