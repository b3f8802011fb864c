"""The dashboard in a real browser: queries appear and change state live, results page, cancel
and kill buttons work, errors point into the SQL, and each user sees only their own things."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.web.conftest import Dashboard

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

LONG_QUERY = "SELECT sum(id % 7) FROM range(100000000000)"
# Generous: the machine runs Spark on two cores while the browser polls.
SLOW = 120_000
DASH = "\N{EN DASH}"  # as the pages write ranges of rows


@pytest.fixture(scope="module")
def alice_session(dashboard: Dashboard) -> int:
    return dashboard.open_session("alice")


def _row(page: Any, query_id: int) -> Any:
    return page.locator(f'#query-list tr[data-query-id="{query_id}"]')


def test_a_query_appears_and_finishes_without_a_reload(
    dashboard: Dashboard,
    alice_session: int,
    login: Callable[..., Any],
    screenshot: Callable[[Any, str], None],
) -> None:
    page = login("alice")
    # A mark that a reload would wipe out: the page must update itself in place.
    page.evaluate("window.stillTheSamePage = true")
    submitted = dashboard.submit(
        "alice",
        "SELECT id, id * 2 AS twice, CAST(id AS STRING) AS name FROM range(250)",
        session_id=alice_session,
    )
    row = _row(page, submitted["id"])
    expect(row).to_be_visible(timeout=SLOW)
    expect(row).to_have_attribute("data-state", "success", timeout=SLOW)
    expect(row.locator("td").last).to_have_text("250")  # Rows, the last column
    assert page.evaluate("window.stillTheSamePage") is True
    screenshot(page, "queries")

    # Open it and page through its result.
    page.locator(f"#q-{submitted['id']}").click()
    expect(page.get_by_test_id("query-state")).to_have_text("success")
    # What its Spark tasks cost: range(250) read by its tasks.
    expect(page.get_by_test_id("query-cost")).to_contain_text("0 B, 250 rows")
    result = page.locator("#result-page")
    expect(result.locator(".count")).to_contain_text(f"250 rows, 1{DASH}100 shown", timeout=SLOW)
    expect(result.locator("tbody tr")).to_have_count(100)
    expect(result.locator("thead")).to_contain_text("twice")
    result.get_by_role("button", name="Next rows →").click()
    expect(page.locator("#result-page .count")).to_contain_text(f"101{DASH}200 shown")
    expect(page.locator("#result-page tbody tr").first.locator("td").first).to_have_text("100")
    page.get_by_role("button", name="Next rows →").click()
    expect(page.locator("#result-page .count")).to_contain_text(f"201{DASH}250 shown")
    expect(page.get_by_role("button", name="Next rows →")).to_have_count(0)
    page.get_by_role("button", name="← Previous rows").click()
    expect(page.locator("#result-page .count")).to_contain_text(f"101{DASH}200 shown")
    screenshot(page, "query")


def test_cancel_a_running_query_from_its_page(
    dashboard: Dashboard, alice_session: int, login: Callable[..., Any]
) -> None:
    page = login("alice")
    submitted = dashboard.submit("alice", LONG_QUERY, session_id=alice_session)
    page.goto(f"/ui/queries/{submitted['id']}")
    state = page.get_by_test_id("query-state")
    expect(state).to_have_text("running", timeout=SLOW)
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Cancel query").click()
    expect(state).to_have_text("cancelled", timeout=SLOW)
    assert dashboard.query("alice", submitted["id"])["state"] == "cancelled"
    expect(page.get_by_role("button", name="Cancel query")).to_have_count(0)


def test_a_failed_query_marks_where_its_error_is(
    dashboard: Dashboard,
    alice_session: int,
    login: Callable[..., Any],
    screenshot: Callable[[Any, str], None],
) -> None:
    submitted = dashboard.submit(
        "alice", "SELECT id,\n       no_such_column + 1\nFROM range(3)", session_id=alice_session
    )
    page = login("alice")
    page.goto(f"/ui/queries/{submitted['id']}")
    expect(page.get_by_test_id("query-state")).to_have_text("failed", timeout=SLOW)
    error = page.get_by_test_id("query-error")
    expect(error).to_contain_text("UNRESOLVED_COLUMN")
    expect(error).to_contain_text("line 2")
    expect(page.locator("mark#error-at")).to_have_text("no_such_column")
    screenshot(page, "failed")


def test_sessions_page_kills_a_session(
    dashboard: Dashboard, login: Callable[..., Any], screenshot: Callable[[Any, str], None]
) -> None:
    session_id = dashboard.open_session("alice")
    page = login("alice")
    page.goto("/ui/sessions")
    row = page.locator(f'#session-list tr[data-session-id="{session_id}"]')
    expect(row).to_have_attribute("data-state", "idle")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Kill").click()
    expect(page.locator("#notices")).to_contain_text(f"Session {session_id} is killed")
    expect(row).to_have_attribute("data-state", "killed", timeout=SLOW)
    expect(row.get_by_role("button", name="Kill")).to_have_count(0)
    screenshot(page, "sessions")


def test_sessions_page_groups_one_off_queries_sessions(
    dashboard: Dashboard, login: Callable[..., Any], screenshot: Callable[[Any, str], None]
) -> None:
    """Each one-off query runs in a session of its own: the list folds them into one row
    that says how many there are and links to the list with them."""
    one_off = dashboard.submit("bob", "SELECT 'on its own'")
    dashboard.wait("bob", one_off["id"])
    with dashboard.api("bob") as api:
        counts = [
            api.get("/v1/sessions", params=params).json()["total"]
            for params in ({"one_off": "true"}, {})
        ]
    page = login("bob")
    page.goto("/ui/sessions")
    row = page.locator(f'#session-list tr[data-session-id="{one_off["session_id"]}"]')
    group = page.locator("#session-list tr.one-off-group")
    expect(group).to_have_attribute("data-one-off", str(counts[0] - counts[1]))
    expect(row).to_have_count(0)
    screenshot(page, "grouped")
    group.get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"/ui/sessions\?one_off=true$"))
    expect(row).to_be_visible()
    expect(group).to_have_count(0)
    page.get_by_role("link", name="Hide them").click()
    expect(page).to_have_url(re.compile(r"/ui/sessions$"))
    expect(row).to_have_count(0)


def test_engines_page_shows_recycle_to_admins_only(
    dashboard: Dashboard, login: Callable[..., Any], screenshot: Callable[[Any, str], None]
) -> None:
    admin = login("carol")
    admin.goto("/ui/engines")
    running = admin.locator('#engine-list tr[data-state="running"]')
    expect(running.first).to_be_visible()
    expect(running.first.get_by_role("button", name="Recycle")).to_be_visible()
    screenshot(admin, "engines")
    user = login("bob")
    user.goto("/ui/engines")
    expect(user.locator('#engine-list tr[data-state="running"]').first).to_be_visible()
    expect(user.get_by_role("button", name="Recycle")).to_have_count(0)


def test_each_user_sees_only_their_own(
    dashboard: Dashboard, alice_session: int, login: Callable[..., Any]
) -> None:
    bob_session = dashboard.open_session("bob")
    mine = dashboard.submit("bob", "SELECT 'bob was here'", session_id=bob_session)
    theirs = dashboard.submit("alice", "SELECT 'alice was here'", session_id=alice_session)
    dashboard.wait("bob", mine["id"])
    dashboard.wait("alice", theirs["id"])

    bob = login("bob")
    expect(_row(bob, mine["id"])).to_be_visible()
    expect(_row(bob, theirs["id"])).to_have_count(0)
    expect(bob.locator("#query-list tbody")).not_to_contain_text("alice")
    # Another user's query is absent, as through the API (404, not 403).
    response = bob.goto(f"/ui/queries/{theirs['id']}")
    assert response is not None and response.status == 404
    expect(bob.get_by_test_id("error")).to_contain_text("QUERY_NOT_FOUND")
    for fragment in ("state", "result"):
        answer = bob.request.get(f"/ui/queries/{theirs['id']}/{fragment}")
        assert answer.status == 404, fragment
    bob.goto("/ui/sessions")
    expect(bob.locator(f'#session-list tr[data-session-id="{bob_session}"]')).to_be_visible()
    expect(bob.locator(f'#session-list tr[data-session-id="{alice_session}"]')).to_have_count(0)

    admin = login("carol")
    expect(_row(admin, mine["id"])).to_be_visible()
    expect(_row(admin, theirs["id"])).to_be_visible()
    admin.goto("/ui/queries?owner=bob")
    expect(_row(admin, theirs["id"])).to_have_count(0)
    expect(_row(admin, mine["id"])).to_be_visible()


def test_the_list_pages_by_cursor(dashboard: Dashboard, login: Callable[..., Any]) -> None:
    session_id = dashboard.open_session("bob")
    ids = [dashboard.submit("bob", f"SELECT {n}", session_id=session_id)["id"] for n in range(52)]
    try:
        page = login("bob")
        page.goto(f"/ui/queries?session_id={session_id}")
        rows = page.locator("#query-list tbody tr")
        expect(rows).to_have_count(50)
        expect(page.locator("#query-list .count")).to_contain_text(f"52 queries, 1{DASH}50 shown")
        expect(page.get_by_role("link", name="← Newest")).to_have_count(0)
        page.get_by_role("link", name="Older →").click()
        # The page after the cursor: the two oldest, and it stays put while it polls.
        expect(page).to_have_url(re.compile(rf"after={ids[2]}"))
        expect(rows).to_have_count(2)
        expect(rows.first).to_have_attribute("data-query-id", str(ids[1]))
        expect(page.locator("#query-list .count")).to_contain_text(f"older than query {ids[2]}")
        expect(page.get_by_role("link", name="Older →")).to_have_count(0)
        page.get_by_role("link", name="← Newest").click()
        expect(rows.first).to_have_attribute("data-query-id", str(ids[-1]))
    finally:
        dashboard.wait("bob", ids[-1])


def test_sign_in_and_out(dashboard: Dashboard, browser: Any, login: Callable[..., Any]) -> None:
    context = browser.new_context(base_url=dashboard.url)
    try:
        page = context.new_page()
        page.goto("/ui/sessions")
        expect(page).to_have_url(re.compile(r"/ui/login\?next=%2Fui%2Fsessions"))
        page.get_by_label("User name").fill("alice")
        page.get_by_label("Password or access token").fill("wrong")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_test_id("login-error")).to_have_text(
            "Wrong user name, password or token."
        )
        page.get_by_label("Password or access token").fill("alice-secret")
        page.get_by_role("button", name="Sign in").click()
        expect(page).to_have_url(re.compile(r"/ui/sessions$"))
        expect(page.get_by_test_id("user")).to_have_text("alice")
        (cookie,) = [c for c in context.cookies() if c["name"] == "sparkgate_session"]
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"

        # The cookie is a token: it works for the API's reads, until signing out revokes it.
        copied = {"sparkgate_session": cookie["value"]}
        assert httpx.get(f"{dashboard.url}/v1/whoami", cookies=copied).status_code == 200
        # A change without the dashboard's header is not made on the cookie's word.
        assert (
            httpx.post(f"{dashboard.url}/v1/sessions", json={}, cookies=copied).status_code == 401
        )
        page.get_by_role("button", name="Sign out").click()
        expect(page).to_have_url(re.compile(r"/ui/login"))
        assert httpx.get(f"{dashboard.url}/v1/whoami", cookies=copied).status_code == 401
    finally:
        context.close()


def test_a_token_signs_in_too(dashboard: Dashboard, browser: Any) -> None:
    with dashboard.api("bob") as api:
        secret = api.post("/v1/tokens", json={"name": "for the browser"}).json()["token"]
    context = browser.new_context(base_url=dashboard.url)
    try:
        page = context.new_page()
        page.goto("/ui/login")
        page.get_by_label("Password or access token").fill(secret)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_test_id("user")).to_have_text("bob")
    finally:
        context.close()


def test_phone_width_and_keyboard(dashboard: Dashboard, login: Callable[..., Any]) -> None:
    page = login("alice", width=390, height=844)
    # Nothing wider than the screen but the tables' own scrolling boxes.
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0
    # The skip link comes first, then the sections, reachable by Tab alone.
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Queries", exact=True)).to_be_focused()
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/ui/sessions$"))


def test_usage_page_charts_costs_by_a_tag(dashboard: Dashboard, login: Callable[..., Any]) -> None:
    """A query tagged team=finance: the usage page by that tag has its row and a drawn chart,
    the row's figures those of the query's own cost."""
    submitted = dashboard.submit(
        "alice", "SELECT count(*) FROM range(3000)", tags={"team": "finance"}
    )
    done = dashboard.wait("alice", submitted["id"])
    assert done["state"] == "success" and done["tags"] == {"team": "finance"}, done
    page = login("alice")
    page.get_by_role("link", name="Usage", exact=True).click()
    expect(page).to_have_url(re.compile(r"/ui/usage$"))
    page.get_by_test_id("usage-by").select_option("tag")
    page.get_by_test_id("usage-tag").fill("team")
    page.get_by_role("button", name="Show").click()
    row = page.locator('[data-testid="usage-table"] tr[data-key="finance"]')
    expect(row).to_be_visible()
    expect(row.locator("td").nth(3)).to_have_text(str(done["cost"]["tasks"]))
    chart = page.locator("#usage-chart")
    expect(chart).not_to_have_attribute("data-points", "0")
    expect(chart.locator("canvas")).to_have_count(1)
