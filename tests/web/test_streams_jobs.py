"""Streams and jobs in a real browser: a stream job's page charts its progress as it arrives
and stops it; a job's page shows its deploy decisions and the manifest change behind them;
another user sees of them what the API shows them, and nothing more."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import Dashboard

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

SLOW = 180_000  # ms: Spark on two cores, with the browser polling

STREAM = "web_ticks"
# Rate -> a windowed count (so that the state-size chart has something to draw) -> noop.
SCRIPT = """
CREATE STREAM ticks USING rate OPTIONS ('rowsPerSecond'='20');
CREATE TEMPORARY VIEW per_window AS
  SELECT window(timestamp, '2 seconds') AS w, count(*) AS n
  FROM ticks WATERMARK timestamp DELAY OF INTERVAL 1 SECOND
  GROUP BY window(timestamp, '2 seconds');
SAVE STREAM per_window TO noop IDENTIFIED BY counts OUTPUT MODE UPDATE TRIGGER 500ms
"""

JOB = "web_clicks"
DEFINITIONS = {
    "path": "web.sql",
    "content": "CREATE DATABASE IF NOT EXISTS web_jobs;\n"
    "CREATE STREAM numbers USING rate OPTIONS ('rowsPerSecond'='5')",
}
MANIFEST = f"""\
name: {JOB}
description: even numbers
target-table: web_jobs.clicks
sql: SELECT value FROM numbers WHERE value % 2 = 0
trigger: 500ms
"""


def _stop(client: httpx.Client, name: str) -> None:
    """Stop a stream job and wait until it has stopped: the next test gets the cores back."""
    if client.post(f"/v1/streams/{name}/stop").status_code == 404:
        return
    deadline = time.monotonic() + 120
    while client.get(f"/v1/streams/{name}").json()["state"] not in ("stopped", "failed"):
        if time.monotonic() > deadline:
            raise AssertionError(f"stream job {name} did not stop")
        time.sleep(0.5)


@pytest.fixture
def alice(dashboard: Dashboard) -> Iterator[httpx.Client]:
    with dashboard.api("alice") as client:
        yield client


def test_a_stream_jobs_page_charts_its_progress_live_and_stops_it(
    alice: httpx.Client,
    login: Callable[..., Any],
    screenshot: Callable[[Any, str], None],
) -> None:
    created = alice.post("/v1/streams", json={"name": STREAM, "sql": SCRIPT})
    assert created.status_code == 201, created.text
    try:
        page = login("alice")
        page.goto("/ui/streams")
        row = page.locator(f'#stream-list tr[data-stream="{STREAM}"]')
        expect(row).to_be_visible()
        # The list is live: the job turns running with no reload.
        expect(row).to_have_attribute("data-state", "running", timeout=SLOW)
        screenshot(page, "streams")
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_function("document.documentElement.scrollWidth <= 390")
        screenshot(page, "streams-phone")
        page.set_viewport_size({"width": 1280, "height": 900})

        row.get_by_role("link", name=STREAM).click()
        page.wait_for_url(f"**/ui/streams/{STREAM}")
        page.evaluate("window.stillTheSamePage = true")  # a reload would wipe it out
        expect(page.get_by_test_id("stream-state")).to_have_text("running")
        _charts_grow(page)
        assert page.evaluate("window.stillTheSamePage") is True
        for metric in ("input_rows_per_second", "batch_duration_ms", "state_rows"):
            expect(page.locator(f'[data-metric="{metric}"] canvas')).to_be_visible(timeout=SLOW)
        expect(page.locator('#stream-state tr[data-query="counts"]')).to_contain_text("noop")
        screenshot(page, "stream")
        page.set_viewport_size({"width": 390, "height": 844})
        # Nothing wider than the phone: tables scroll in their box, charts shrink to fit.
        page.wait_for_function("document.documentElement.scrollWidth <= 390")
        screenshot(page, "stream-phone")
        page.set_viewport_size({"width": 1280, "height": 900})

        # Another user: not in their list; page, chart data and buttons answer 404.
        bob = login("bob")
        bob.goto("/ui/streams")
        expect(bob.locator("#stream-list")).to_be_visible()
        expect(bob.locator(f'tr[data-stream="{STREAM}"]')).to_have_count(0)
        opened = bob.goto(f"/ui/streams/{STREAM}")
        assert opened is not None and opened.status == 404
        assert bob.request.get(f"/ui/streams/{STREAM}/progress").status == 404
        stop = bob.request.post(f"/ui/streams/{STREAM}/stop", headers={"HX-Request": "true"})
        assert stop.status == 404
        assert alice.get(f"/v1/streams/{STREAM}").json()["state"] == "running"

        # Stop from the page, confirmed in the browser's dialog; Start takes the button's place.
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Stop").click()
        expect(page.get_by_test_id("stream-state")).to_have_text("stopped", timeout=SLOW)
        expect(page.get_by_role("button", name="Start")).to_be_visible()
        screenshot(page, "stream-stopped")
    finally:
        _stop(alice, STREAM)


def _charts_grow(page: Any) -> None:
    """The stream page's charts get points, then more of them, as batches finish."""
    charts = page.locator("#stream-charts")
    expect(charts).not_to_have_attribute("data-points", "0", timeout=SLOW)
    drawn = int(charts.get_attribute("data-points") or 0)
    page.wait_for_function(
        "n => Number(document.getElementById('stream-charts').dataset.points) > n",
        arg=drawn,
        timeout=SLOW,
    )


def _deploy(client: httpx.Client, manifest: str) -> dict[str, Any]:
    """Deploy one manifest and wait until the deployment has ended."""
    body = {
        "manifests": [{"path": f"jobs/{JOB}.yaml", "content": manifest}],
        "definitions": [DEFINITIONS],
        "wait": 120,
    }
    submitted = client.post("/v1/deployments", json=body)
    assert submitted.status_code == 202, submitted.text
    deadline = time.monotonic() + 300
    while True:
        deployment: dict[str, Any] = client.get(f"/v1/deployments/{submitted.json()['id']}").json()
        if deployment["state"] != "running":
            assert deployment["state"] == "succeeded", deployment
            return deployment
        if time.monotonic() > deadline:
            raise AssertionError(f"deployment still running: {deployment}")
        time.sleep(0.5)


def test_a_jobs_page_shows_its_deploy_decisions_and_the_change_behind_them(
    dashboard: Dashboard,
    alice: httpx.Client,
    login: Callable[..., Any],
    screenshot: Callable[[Any, str], None],
) -> None:
    try:
        first = _deploy(alice, MANIFEST)
        assert [d["action"] for d in first["decisions"]] == ["start-clean"]
        changed = MANIFEST.replace("value % 2 = 0", "value % 3 = 0").replace("even", "every third")
        second = _deploy(alice, changed)
        assert [d["action"] for d in second["decisions"]] == ["restart-clean"]

        page = login("alice")
        page.goto("/ui/jobs")
        row = page.locator(f'#job-list tr[data-job="{JOB}"]')
        expect(row).to_have_attribute("data-state", "running", timeout=SLOW)
        expect(page.get_by_test_id("deployments")).to_contain_text("new version")
        screenshot(page, "jobs")
        row.get_by_role("link", name=JOB).click()
        page.wait_for_url(f"**/ui/jobs/{JOB}")
        _two_decisions_and_their_diffs(page)
        screenshot(page, "job")

        # A description-only change, deployed with the page open: recorded without a restart,
        # and the page shows the new decision and what changed, with no reload.
        page.evaluate("window.stillTheSamePage = true")
        described = _deploy(alice, changed.replace("every third numbers", "one in three"))
        assert [d["action"] for d in described["decisions"]] == ["update"]
        decisions = page.locator("li.decision")
        expect(decisions).to_have_count(3, timeout=SLOW)
        expect(decisions.nth(0)).to_have_attribute("data-action", "update")
        kept = page.get_by_test_id("kept-diff")
        expect(kept.locator(".diff-add")).to_have_text("+description: one in three")
        expect(page.get_by_test_id("job-version")).to_have_text("2")
        assert page.evaluate("window.stillTheSamePage") is True
        page.set_viewport_size({"width": 390, "height": 844})
        page.wait_for_function("document.documentElement.scrollWidth <= 390")
        screenshot(page, "job-phone")

        _bob_sees_what_the_api_shows_him(dashboard, login)
    finally:
        _stop(alice, JOB)


def _two_decisions_and_their_diffs(page: Any) -> None:
    expect(page.get_by_test_id("job-version")).to_have_text("2")
    expect(page.get_by_test_id("state-paths")).to_contain_text(f"/{JOB}/2")
    decisions = page.locator("li.decision")
    expect(decisions).to_have_count(2)
    newest, oldest = decisions.nth(0), decisions.nth(1)
    expect(newest).to_have_attribute("data-action", "restart-clean")
    expect(newest.locator(".action")).to_contain_text("new version")
    expect(newest).to_contain_text("version 1 → 2")
    expect(newest.locator(".diff-del")).to_contain_text(["even numbers", "value % 2 = 0"])
    expect(newest.locator(".diff-add")).to_contain_text(["every third", "value % 3 = 0"])
    expect(oldest).to_have_attribute("data-action", "start-clean")
    expect(oldest.locator(".action")).to_have_text("started clean")
    expect(oldest.locator(".diff-add").first).to_be_visible()  # all of it was new
    expect(page.get_by_role("link", name="Stream job and charts →")).to_be_visible()


def _bob_sees_what_the_api_shows_him(dashboard: Dashboard, login: Callable[..., Any]) -> None:
    """Jobs are the team's in the API (``GET /v1/jobs`` lists every job to every user with the
    jobs right), so bob sees the job as the API shows it; the stream job it runs, and the
    deployments, are alice's, and stay hers."""
    with dashboard.api("bob") as api:
        assert JOB in [j["name"] for j in api.get("/v1/jobs").json()["jobs"]]
        assert api.get(f"/v1/streams/{JOB}").status_code == 404
        deployments = api.get("/v1/deployments").json()["deployments"]
        assert JOB not in [d["job"] for each in deployments for d in each["decisions"]]
    bob = login("bob")
    bob.goto("/ui/jobs")
    expect(bob.locator(f'#job-list tr[data-job="{JOB}"]')).to_have_count(1)
    expect(bob.get_by_test_id("deployments")).not_to_contain_text(JOB)
    bob.goto(f"/ui/jobs/{JOB}")
    expect(bob.locator("li.decision")).to_have_count(3)
    expect(bob.get_by_role("link", name="Stream job and charts →")).to_have_count(0)
    opened = bob.goto(f"/ui/streams/{JOB}")
    assert opened is not None and opened.status == 404
    missing = bob.goto("/ui/jobs/no_such_job")
    assert missing is not None and missing.status == 404


SESSION_QUERY = "web_ticks_q"


def test_a_sessions_stream_is_listed_charted_and_stopped_on_the_streams_page(
    dashboard: Dashboard,
    alice: httpx.Client,
    login: Callable[..., Any],
    screenshot: Callable[[Any, str], None],
) -> None:
    """A streaming query started by SAVE STREAM in an interactive session (not a stream job)
    is on the Streams page with its owner and session; its page charts its progress live and
    stops it (STOP STREAM in its session); another user sees none of it."""
    session_id = dashboard.open_session("alice")
    try:
        query_id = _save_stream(dashboard, alice, session_id)
        url = f"/ui/sessions/{session_id}/streams/{query_id}"

        page = login("alice")
        page.goto("/ui/streams")
        row = page.locator(f'#stream-list tr[data-session-stream="{query_id}"]')
        expect(row).to_have_attribute("data-state", "running", timeout=SLOW)
        expect(row).to_have_attribute("data-session-id", str(session_id))
        expect(row).to_contain_text("alice")
        expect(row).to_contain_text("web_session_ticks → noop")
        screenshot(page, "streams")
        row.get_by_role("link", name=SESSION_QUERY).click()
        page.wait_for_url(f"**{url}")
        expect(page.get_by_role("link", name="Streams", exact=True).first).to_have_attribute(
            "aria-current", "page"
        )
        page.evaluate("window.stillTheSamePage = true")
        expect(page.get_by_test_id("stream-state")).to_have_text("running")
        expect(page.get_by_test_id("stream-owner")).to_have_text("alice")
        _charts_grow(page)
        expect(page.locator('[data-metric="input_rows_per_second"] canvas')).to_be_visible()
        screenshot(page, "session-stream")

        _bob_cannot_see_it(login("bob"), url, query_id)
        streams = alice.get(f"/v1/sessions/{session_id}/streams").json()["queries"]
        assert [q["state"] for q in streams if q["id"] == query_id] == ["running"]

        # Stop from the page, confirmed in the browser's dialog: STOP STREAM in the session.
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Stop").click()
        expect(page.get_by_test_id("stream-state")).to_have_text("stopped", timeout=SLOW)
        expect(page.get_by_role("button", name="Stop")).to_have_count(0)
        assert page.evaluate("window.stillTheSamePage") is True
        screenshot(page, "session-stream-stopped")
        streams = alice.get(f"/v1/sessions/{session_id}/streams").json()["queries"]
        assert [q["state"] for q in streams if q["id"] == query_id] == ["stopped"]
        statements = alice.get("/v1/queries", params={"session_id": session_id}).json()
        assert any(q["query"].startswith("STOP STREAM") for q in statements["queries"])
        # Stopped, it stays listed (as stopped) while its session lives; a second stop is
        # refused and submits nothing.
        page.goto("/ui/streams")
        expect(row).to_have_attribute("data-state", "stopped")
        again = page.request.post(f"{url}/stop", headers={"HX-Request": "true"})
        assert again.status == 404 and "STREAM_QUERY_NOT_FOUND" in again.text()
        after = alice.get("/v1/queries", params={"session_id": session_id}).json()
        assert after["total"] == statements["total"]
    finally:
        # Ending the session stops its streaming queries (if the test did not get that far).
        alice.delete(f"/v1/sessions/{session_id}")


def _save_stream(dashboard: Dashboard, alice: httpx.Client, session_id: int) -> int:
    """Start a streaming query in the session, as a user would (SQL statements); its id."""
    for sql in (
        "CREATE STREAM web_session_ticks USING rate OPTIONS ('rowsPerSecond'='10')",
        f"SAVE STREAM web_session_ticks TO noop IDENTIFIED BY {SESSION_QUERY} TRIGGER 500ms",
    ):
        submitted = dashboard.submit("alice", sql, session_id=session_id)
        assert dashboard.wait("alice", submitted["id"])["state"] == "success", sql
    listed = alice.get(f"/v1/sessions/{session_id}/streams").json()["queries"]
    (query_id,) = [q["id"] for q in listed if q["name"] == SESSION_QUERY]
    return int(query_id)


def _bob_cannot_see_it(bob: Any, url: str, query_id: int) -> None:
    """Another user: not in their list; the page, its chart data and its Stop answer 404."""
    bob.goto("/ui/streams")
    expect(bob.get_by_test_id("session-streams")).to_be_visible()
    expect(bob.locator(f'tr[data-session-stream="{query_id}"]')).to_have_count(0)
    opened = bob.goto(url)
    assert opened is not None and opened.status == 404
    assert bob.request.get(f"{url}/progress").status == 404
    assert bob.request.get(f"{url}/state", headers={"HX-Request": "true"}).status == 404
    assert bob.request.post(f"{url}/stop", headers={"HX-Request": "true"}).status == 404
