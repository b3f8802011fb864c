"""What HiveServer2 clients show while a query runs: its operation log and its progress."""

from __future__ import annotations

import time
from typing import Any

from sparkgate.hive2.handles import failure_text
from sparkgate.hive2.idl import T
from sparkgate.states import TERMINAL_STATEMENT_STATES, StatementState
from sparkgate.store.records import StatementRecord


def log_lines(statement: StatementRecord) -> list[str]:
    """The operation log a client prints while it waits: what happened to the query."""

    def at(seconds: float) -> str:
        return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))

    lines = [
        f"{at(statement.created_at)} INFO sparkgate: query {statement.id} queued in session "
        f"{statement.session_id}"
    ]
    if statement.started_at is not None:
        lines.append(f"{at(statement.started_at)} INFO sparkgate: query {statement.id} running")
    if statement.finished_at is not None:
        seconds = statement.finished_at - (statement.started_at or statement.created_at)
        if statement.state is StatementState.SUCCESS:
            rows = statement.result.row_count if statement.result else 0
            what = f"succeeded: {rows} rows in {seconds:.3f} s"
        else:
            what = f"{statement.state.value}: {failure_text(statement.error, statement.state)}"
        lines.append(f"{at(statement.finished_at)} INFO sparkgate: query {statement.id} {what}")
    return lines


# beeline renders progress with a fixed nine-column format (Hive's InPlaceUpdate): fewer
# headers or cells fail in the client ("MissingFormatArgumentException").
_PROGRESS_HEADERS = [
    "QUERY",
    "MODE",
    "STATUS",
    "TOTAL",
    "COMPLETED",
    "RUNNING",
    "PENDING",
    "FAILED",
    "KILLED",
]


def progress(statement: StatementRecord) -> Any:
    """The statement's progress as HiveServer2 reports it: one row for the query (sparkgate
    knows its progress fraction, not Spark's task counts)."""
    done = statement.state in TERMINAL_STATEMENT_STATES
    row = [f"query {statement.id}", "spark", statement.state.value.upper()]
    return T.TProgressUpdateResp(
        headerNames=_PROGRESS_HEADERS,
        rows=[row + [""] * (len(_PROGRESS_HEADERS) - len(row))],
        progressedPercentage=1.0 if done else float(statement.progress),
        status=T.TJobExecutionStatus.COMPLETE if done else T.TJobExecutionStatus.IN_PROGRESS,
        footerSummary=f"QUERY {statement.id}",
        startTime=millis(statement.started_at or statement.created_at) or 0,
    )


def millis(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)
