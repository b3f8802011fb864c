"""The dashboard's strict Content-Security-Policy, in Chromium: every page sends it, every page
works under it (results page, forms submit, lists poll, and pause in a hidden tab) with no
breach, and what the policy forbids is both blocked and seen.

The ``login`` fixture watches every signed-in page of the web suite and fails a test whose
pages broke the policy: the stream pages' live charts and Stop buttons, the lists' paging and
the kill and cancel buttons are checked under it by their own modules. This module walks the
pages those do not need, on the same server.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.web.conftest import Dashboard

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

SLOW = 120_000  # ms
DASH = "\N{EN DASH}"  # as the pages write ranges of rows

POLICY = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def _policy(response: Any) -> dict[str, str]:
    assert response is not None
    header = response.headers.get("content-security-policy")
    assert header, f"{response.url} sends no Content-Security-Policy"
    directives = [part.strip().split(None, 1) for part in header.split(";") if part.strip()]
    return {name: value for name, value in directives}


def test_every_page_sends_the_policy_and_works_under_it(
    dashboard: Dashboard,
    login: Callable[..., Any],
    csp_violations: list[str],
) -> None:
    submitted = dashboard.submit("alice", "SELECT id, id * 2 AS twice FROM range(250)")
    query = dashboard.wait("alice", submitted["id"])
    assert query["state"] == "success", query

    page = login("alice")  # the sign-in form posts under the policy too
    for path in ("/ui/queries", "/ui/sessions", "/ui/engines", "/ui/streams", "/ui/jobs"):
        assert _policy(page.goto(path)) == POLICY, path
        expect(page.locator("main h1")).to_be_visible()

    # A query's page: its result is fetched by htmx (hx-trigger="load") and pages by buttons.
    assert _policy(page.goto(f"/ui/queries/{query['id']}")) == POLICY
    expect(page.get_by_test_id("query-state")).to_have_text("success")
    count = page.locator("#result-page .count")
    expect(count).to_contain_text(f"250 rows, 1{DASH}100 shown", timeout=SLOW)
    page.get_by_role("button", name="Next rows →").click()
    expect(count).to_contain_text(f"101{DASH}200 shown")
    expect(page.locator("#result-page tbody tr").first).to_contain_text("100")

    # A filter form submits (GET, to the page itself).
    page.goto("/ui/sessions")
    page.get_by_label("Kind").select_option("batch")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"kind=batch"))
    # A one-off query's session is folded into the one-off row, whose link keeps the filter.
    page.locator("#session-list tr.one-off-group").get_by_role("link").click()
    expect(page).to_have_url(re.compile(r"kind=batch&one_off=true"))
    batch = page.locator(f'#session-list tr[data-session-id="{query["session_id"]}"]')
    expect(batch).to_have_count(1)

    _polls_pause_in_a_hidden_tab(page)

    # An error page, and another user's query, are pages of the dashboard too.
    missing = page.goto("/ui/queries/999999999")
    assert missing is not None and missing.status == 404 and _policy(missing) == POLICY
    bob = login("bob")
    theirs = bob.goto(f"/ui/queries/{query['id']}")
    assert theirs is not None and theirs.status == 404 and _policy(theirs) == POLICY

    # Signing out is a form too; the sign-in page it lands on has the policy.
    page.goto("/ui/queries")
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/ui/login")
    assert _policy(page.goto("/ui/login")) == POLICY
    assert csp_violations == []


def _polls_pause_in_a_hidden_tab(page: Any) -> None:
    """A list's poll (``hx-trigger="every 2s"``) skips its turns while the tab is hidden, and
    goes on when it is shown (app.js does it: a trigger filter would need eval)."""
    page.goto("/ui/queries")
    polls: list[str] = []
    page.on(
        "request",
        lambda request: (
            polls.append(request.url) if request.headers.get("hx-request") == "true" else None
        ),
    )
    page.wait_for_function("() => typeof htmx !== 'undefined'")
    page.wait_for_timeout(2500)
    assert polls, "the list does not poll"
    page.evaluate(
        "() => Object.defineProperty(document, 'visibilityState',"
        " {value: 'hidden', configurable: true})"
    )
    page.wait_for_timeout(500)  # a request already on its way
    polls.clear()
    page.wait_for_timeout(4500)
    assert polls == [], "a hidden tab polled"
    page.evaluate("() => delete document.visibilityState")
    deadline = time.monotonic() + 30
    while not polls:
        assert time.monotonic() < deadline, "the poll did not come back"
        page.wait_for_timeout(250)


def test_what_the_policy_forbids_is_blocked_and_seen(
    login: Callable[..., Any], csp_violations: list[str]
) -> None:
    """Markup that slipped into a page could style nothing, run nothing (no <script>, no on*
    handler) and have htmx evaluate nothing; and the watch every web test relies on sees each
    attempt."""
    page = login("bob")
    page.goto("/ui/queries")
    blocked = page.evaluate(
        """() => {
        document.body.insertAdjacentHTML("beforeend",
          '<p id="styled" style="color: rgb(255, 0, 0)">styled</p>' +
          '<img src="/ui/static/favicon.svg" alt="" onload="window.handlerRan = true">' +
          '<button id="filtered" hx-get="/ui/queries" hx-swap="none"' +
          ' hx-trigger="click[window.filterRan = true]">go</button>');
        const script = document.createElement("script");
        script.textContent = "window.ranInline = true";
        document.body.append(script);
        htmx.process(document.getElementById("filtered"));
        document.getElementById("filtered").click();
        return {color: getComputedStyle(document.getElementById("styled")).color};
    }"""
    )
    assert blocked["color"] != "rgb(255, 0, 0)"
    expected = (
        "style-src-attr blocked inline",  # style=""
        "script-src-attr blocked inline",  # onload=""
        "script-src-elem blocked inline",  # <script>
        "htmx:evalDisallowedError",  # an hx-trigger filter
    )
    deadline = time.monotonic() + 10
    while not all(any(sign in seen for seen in csp_violations) for sign in expected):
        assert time.monotonic() < deadline, csp_violations
        page.wait_for_timeout(100)
    ran = page.evaluate("() => [window.ranInline, window.handlerRan, window.filterRan]")
    assert ran == [None, None, None]
    csp_violations.clear()  # expected here: the fixture's check is for the pages' own code
