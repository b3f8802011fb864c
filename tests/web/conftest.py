"""The dashboard's browser tests: real Chromium (Debian's package, driven by Playwright), a
real server with authentication on, real engines.

One server for the whole web suite (users below); one browser; a fresh browser context (its
own cookies) per user. Screenshots of each page go to ``build/screenshots/`` (not committed).

Every page a test signs in with is watched for breaches of the dashboard's
Content-Security-Policy (Chromium's console messages and ``securitypolicyviolation`` events):
a test whose pages broke the policy fails, whatever else it checked.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from sparkgate_dev import ServerProcess, kill_engines, local_test_settings, user_files
from sparkgate_dev.browser import chromium, launched

pytestmark = pytest.mark.spark

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
ACCESS = """
admins: [carol]
rules:
  - {users: ["*"], allow: [sql, code, streams, jobs]}
"""
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"


class Dashboard:
    """The web suite's server, and how to reach it as each user."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.url = server.url

    def api(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(user, PASSWORDS[user]), timeout=60)

    def submit(self, user: str, query: str, **body: Any) -> dict[str, Any]:
        with self.api(user) as client:
            response = client.post("/v1/queries", json={"query": query, **body})
            response.raise_for_status()
            result: dict[str, Any] = response.json()
            return result

    def open_session(self, user: str) -> int:
        """An interactive session of ``user``, idle and ready for statements."""
        with self.api(user) as client:
            response = client.post("/v1/sessions", json={"kind": "interactive"})
            response.raise_for_status()
            session_id: int = response.json()["id"]
            deadline = time.monotonic() + 240
            while client.get(f"/v1/sessions/{session_id}").json()["state"] != "idle":
                if time.monotonic() > deadline:
                    raise AssertionError(f"session {session_id} of {user} never became idle")
                time.sleep(0.2)
        return session_id

    def query(self, user: str, query_id: int, wait: float = 0) -> dict[str, Any]:
        with self.api(user) as client:
            response = client.get(f"/v1/queries/{query_id}", params={"wait": wait})
            response.raise_for_status()
            result: dict[str, Any] = response.json()
            return result

    def wait(self, user: str, query_id: int, timeout: float = 240) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            query = self.query(user, query_id, wait=min(30.0, timeout))
            if query["state"] in {"success", "failed", "cancelled"}:
                return query
            if time.monotonic() > deadline:
                raise AssertionError(f"query {query_id} still {query['state']} after {timeout} s")


@pytest.fixture(scope="session")
def dashboard(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Dashboard]:
    home = tmp_path_factory.mktemp("web-home")
    users = user_files(home, PASSWORDS, ACCESS)
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **users,
        # Every user's sessions on the one shared engine (each its own SparkSession): the
        # suite needs no JVM per user.
        engine_share_level="server",
    )
    server = ServerProcess(settings).start()
    try:
        server.wait_engines_running()
        yield Dashboard(server)
    finally:
        server.stop()
        kill_engines(settings, signal.SIGKILL)


# Session-wide, for the web suite (the last of the run): Playwright's sync API keeps an event
# loop running in this thread while a browser is open, and asyncio.run() refuses to start
# beside it, so a browser must not outlive the tests that use it elsewhere in the run.
@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    path = chromium()
    if path is None:
        pytest.skip(
            "Debian's chromium is not installed (scripts/install --test installs it with "
            "apt-get when run as root); the dashboard's browser tests need it"
        )
    with launched(path) as started:
        yield started


# Runs in each page before its own scripts (Playwright's init script is not the page's, so the
# policy does not block it): every blocked load or inline piece is also told on the console.
_CSP_WATCH = """
document.addEventListener("securitypolicyviolation", function (event) {
  console.error("[csp] " + event.effectiveDirective + " blocked " +
    (event.blockedURI || "inline") + " at " + event.sourceFile + ":" + event.lineNumber);
});
"""
_CSP_SIGNS = ("[csp]", "Content Security Policy", "evalDisallowed")


def watch_csp(page: Any, violations: list[str]) -> None:
    """Record on ``violations`` each breach of the Content-Security-Policy seen in ``page``:
    Chromium's own console message ("Refused to ...") and the page's violation event, and
    htmx refusing to evaluate an expression."""
    page.add_init_script(_CSP_WATCH)

    def seen(message: Any) -> None:
        if any(sign in message.text for sign in _CSP_SIGNS):
            violations.append(f"{page.url}: {message.text}")

    page.on("console", seen)


@pytest.fixture
def csp_violations() -> list[str]:
    """The breaches of the Content-Security-Policy seen in this test's signed-in pages."""
    return []


@pytest.fixture
def login(
    dashboard: Dashboard, browser: Any, csp_violations: list[str]
) -> Iterator[Callable[..., Any]]:
    """``login("alice")``: a page signed in as that user, in a context of its own, watched for
    breaches of the Content-Security-Policy (none may happen; checked after the test)."""
    contexts: list[Any] = []

    def sign_in(user: str, *, width: int = 1280, height: int = 900) -> Any:
        context = browser.new_context(
            base_url=dashboard.url, viewport={"width": width, "height": height}
        )
        contexts.append(context)
        page = context.new_page()
        watch_csp(page, csp_violations)
        page.goto("/ui/login")
        page.get_by_label("User name").fill(user)
        page.get_by_label("Password or access token").fill(PASSWORDS[user])
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/queries")
        return page

    yield sign_in
    for context in contexts:
        context.close()
    assert not csp_violations, "the dashboard broke its Content-Security-Policy"


@pytest.fixture
def screenshot(request: pytest.FixtureRequest) -> Callable[[Any, str], None]:
    """Save a screenshot of a page as ``build/screenshots/<test>-<name>.png``."""

    def save(page: Any, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOTS / f"{request.node.name}-{name}.png", full_page=True)

    return save
