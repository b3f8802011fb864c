"""``sparkgate usage``: what queries cost, by user and day."""

from __future__ import annotations

from typing import Annotated

import typer

from sparkgate.cli.common import JsonOption, ago, client, console, err_console, print_json
from sparkgate.cli.render import table
from sparkgate.units import byte_size


def usage(
    since: Annotated[
        str | None, typer.Option("--since", help="Queries that ended in the last while: 7d.")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="...and before this long ago: 1d.")
    ] = None,
    by_day: Annotated[bool, typer.Option("--by-day", help="A row per user and day (UTC).")] = False,
    user: Annotated[
        str | None, typer.Option("--user", help="Only this user's (admins; else your own).")
    ] = None,
    by: Annotated[
        str,
        typer.Option("--by", help="user, group, resource_group or tag:<key> (tag:team)."),
    ] = "user",
    as_json: JsonOption = False,
) -> None:
    """What queries cost (executor CPU and run time, bytes), by user (or group, resource
    group, a tag's value); yours, or for admins everyone's.

    Example: sparkgate usage --since 7d --by-day --by tag:team
    """
    with client() as sg:
        report = sg.usage(
            since=ago("--since", since),
            until=ago("--until", until),
            bucket="day" if by_day else None,
            user=user,
            group_by=by,
        )
    if as_json:
        print_json(report)
        return
    columns = (by, *(("day",) if by_day else ()), "queries", "tasks", "CPU s", "run s")
    rows = [
        (
            row.key or "",
            *(((row.bucket or "")[:10],) if by_day else ()),
            str(row.queries),
            str(row.cost.tasks),
            f"{row.cost.executor_cpu_time_ns / 1e9:.3f}",
            f"{row.cost.executor_run_time_ms / 1e3:.3f}",
        )
        for row in report.rows
    ]
    wide = ("read", "written", "shuffled")
    sizes = [
        (
            byte_size(row.cost.input_bytes),
            byte_size(row.cost.output_bytes),
            byte_size(row.cost.shuffle_write_bytes),
        )
        for row in report.rows
    ]
    # Money only when the server has prices set (each row then has one).
    priced = any(row.price is not None for row in report.rows)
    money = [((row.price.text if row.price else ""),) if priced else () for row in report.rows]
    console.print(
        table(
            (*columns, *wide, *(("price",) if priced else ())),
            [(*r, *s, *m) for r, s, m in zip(rows, sizes, money, strict=True)],
        )
    )
    if not rows:
        err_console.print("no queries with a cost in that span", highlight=False)
