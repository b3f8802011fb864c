"""The Usage page's chart and table as a reader sees them (real Chromium): the x-axis names
each day once (each hour once on a one-day range), the totals table has its headers apart and
its numbers right-aligned; the queries table shows each query's tags; the Engines page tells
an admin whose work each engine runs, and other users nothing new."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import Dashboard

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def tagged(dashboard: Dashboard) -> dict[str, Any]:
    """An ended query of bob's with a cost and a tag."""
    submitted = dashboard.submit("bob", "SELECT count(*) FROM range(5000)", tags={"team": "axis"})
    done = dashboard.wait("bob", submitted["id"])
    assert done["state"] == "success" and done["cost"], done
    return done


def _x_labels(page: Any) -> list[str]:
    chart = page.locator("#usage-chart")
    expect(chart).to_have_attribute("data-x-labels", re.compile(r"\S"))
    return str(chart.get_attribute("data-x-labels")).split()


@pytest.mark.parametrize(
    ("days", "pattern"), [(7, r"\d\d-\d\d"), (30, r"\d\d-\d\d"), (1, r"\d\d:00")]
)
def test_the_chart_names_each_day_or_hour_once(
    tagged: dict[str, Any], login: Callable[..., Any], days: int, pattern: str
) -> None:
    page = login("bob", width=1000)
    page.goto(f"/ui/usage?days={days}")
    labels = _x_labels(page)
    assert len(labels) >= 3, labels
    assert len(labels) == len(set(labels)), f"repeated axis labels: {labels}"
    assert all(re.fullmatch(pattern, label) for label in labels), labels
    if days == 7:  # room for every day: each one named
        assert len(labels) == 7, labels


def test_the_totals_read_as_a_table(tagged: dict[str, Any], login: Callable[..., Any]) -> None:
    page = login("bob")
    page.goto("/ui/usage")
    table = page.get_by_test_id("usage-table")
    headers = table.locator("thead th")
    boxes = [headers.nth(i).bounding_box() for i in range(headers.count())]
    for left, right in itertools.pairwise(boxes):
        assert left and right
        # Apart: a visible gap between one header's text and the next one's cell.
        assert right["x"] >= left["x"] + left["width"] - 0.5
        text = headers.nth(boxes.index(left)).evaluate(
            "th => { const r = document.createRange(); r.selectNodeContents(th); "
            "return r.getBoundingClientRect().right; }"
        )
        assert right["x"] - text >= 8, "headers run together"
    row = table.locator("tbody tr[data-key='bob']")
    expect(row).to_be_visible()
    for cell in range(row.locator("td").count()):
        align = row.locator("td").nth(cell).evaluate("td => getComputedStyle(td).textAlign")
        assert align == "right"


def test_the_queries_table_shows_tags(tagged: dict[str, Any], login: Callable[..., Any]) -> None:
    page = login("bob")
    row = page.locator(f'#query-list tr[data-query-id="{tagged["id"]}"]')
    expect(row.locator("td.tags")).to_have_text(re.compile(r"team=axis"))


def test_the_engines_page_says_whose_work_an_engine_runs_to_admins(
    dashboard: Dashboard, login: Callable[..., Any]
) -> None:
    carol = login("carol")
    carol.goto("/ui/engines")
    # The web suite's server shares one engine between everyone (share level server).
    expect(carol.get_by_test_id("engine-whose").first).to_have_text(re.compile("shared"))
    bob = login("bob")
    bob.goto("/ui/engines")
    expect(bob.locator("#engine-list tbody tr").first).to_be_visible()
    expect(bob.get_by_test_id("engine-whose")).to_have_count(0)
