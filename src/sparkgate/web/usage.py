"""The dashboard's usage page: what queries cost over the last days, by user, group, resource
group or a tag's value, as a table and a chart of each day's executor time by that key
(``static/usage.js`` draws it with uPlot from the page's own data attribute).

It reads the report ``GET /v1/usage`` answers (``service.usage``), for the signed-in user: their
own queries, or everyone's for an admin.
"""

from __future__ import annotations

import json
import time
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from sparkgate.errors import InvalidRequest
from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.service.usage import HOUR
from sparkgate.statement_cost import StatementCost
from sparkgate.store.usage import DAY, Usage
from sparkgate.web.templating import render

router = APIRouter(prefix="/ui", include_in_schema=False)

SPANS = (1, 7, 30, 90)  # days shown
METRICS = {"cpu": "executor CPU seconds", "run": "executor run seconds"}


@router.get("/usage")
def usage_page(
    request: Request,
    service: ServiceDep,
    user: UserDep,
    by: str = "user",
    tag: str = "",
    days: int = 7,
    metric: str = "cpu",
) -> HTMLResponse:
    if days not in SPANS:
        raise InvalidRequest(f"days: one of {', '.join(map(str, SPANS))}.", field="days")
    if metric not in METRICS:
        raise InvalidRequest(f"metric: one of {', '.join(METRICS)}.", field="metric")
    group_by = f"tag:{tag.strip()}" if by == "tag" else by
    now = time.time()
    since = now - now % DAY - (days - 1) * DAY  # whole UTC days, today's included
    # One day is charted by the hour (a single point per day would say nothing).
    step = "hour" if days == 1 else "day"
    daily = service.usage.report(user=user, group_by=group_by, since=since, bucket=step)
    totals = _totals(daily)
    chart = _chart(daily, since, days, metric, step)
    return render(
        request,
        "usage.html",
        by=by,
        tag=tag,
        days=days,
        spans=SPANS,
        metric=metric,
        metrics=METRICS,
        totals=totals,
        # Each key's total in money, when prices are set (else no column).
        prices={key: service.usage.price(cost) for key, _, cost in totals},
        priced=service.usage.prices.set,
        chart=json.dumps(chart, separators=(",", ":")),
        charted=len(chart["series"]),
    )


def _totals(daily: list[Usage]) -> list[tuple[str, int, StatementCost]]:
    """Each key's queries and costs over the span, the costliest (executor CPU) first."""
    keys: dict[str | None, list[Usage]] = {}
    for row in daily:
        keys.setdefault(row.key, []).append(row)
    totals = [
        (
            "(none)" if key is None else key,
            sum(r.queries for r in rows),
            StatementCost.total(r.cost for r in rows),
        )
        for key, rows in keys.items()
    ]
    return sorted(totals, key=lambda t: (-t[2].executor_cpu_time_ns, t[0]))


def _chart(
    daily: list[Usage], since: float, days: int, metric: str, step: str = "day"
) -> dict[str, Any]:
    """One point per UTC day (``step`` "hour": per hour), one series per key: the executor
    seconds of that day or hour."""
    width = HOUR if step == "hour" else DAY
    points = round(days * DAY / width)
    stamps = [since + i * width for i in range(points)]
    series: dict[str, list[float]] = {}
    for row in daily:
        name = "(none)" if row.key is None else row.key
        values = series.setdefault(name, [0.0] * points)
        index = round(((row.bucket or since) - since) / width)
        if 0 <= index < points:
            cost = row.cost
            seconds = (
                cost.executor_cpu_time_ns / 1e9
                if metric == "cpu"
                else cost.executor_run_time_ms / 1e3
            )
            values[index] += seconds
    return {
        "t": stamps,
        "step": step,
        "unit": "s",
        "series": [{"name": name, "values": series[name]} for name in sorted(series)],
    }
