"""The server serves the documentation site at /docs/, to anyone, under a policy of its own
that lets the site (its search too) work and fetch nothing from elsewhere; the dashboard links
to it.

One server for the module, with no engine and no metastore (the site needs neither): the site
it serves is the one ``scripts/install`` built into the package (src/sparkgate/web/site/).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from sparkgate.web import docs_site
from sparkgate_dev import ServerProcess, kill_engines, local_test_settings, user_files
from sparkgate_dev.browser import chromium, launched
from tests.web.conftest import watch_csp

PASSWORDS = {"alice": "alice-secret"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    if not (docs_site.SITE / "index.html").is_file():
        pytest.fail(
            f"the documentation site is not built in {docs_site.SITE}: scripts/install builds "
            "it (scripts/docs build says why it does not)"
        )
    home = tmp_path_factory.mktemp("docs-home")
    settings = local_test_settings(
        home,
        auth="password",
        catalog="in-memory",  # no metastore
        warm_engines=0,  # and no engine
        **user_files(home, PASSWORDS),
    )
    process = ServerProcess(settings).start()
    try:
        yield process
    finally:
        process.stop()
        kill_engines(settings)  # the server starts its shared engine even when none is asked


def _policy(answer: httpx.Response) -> dict[str, str]:
    header = answer.headers["content-security-policy"]
    return dict(part.strip().split(None, 1) for part in header.split(";") if part.strip())


def test_the_site_is_served_to_anyone(server: ServerProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        moved = anonymous.get("/docs")
        assert moved.status_code == 307 and moved.headers["location"] == "docs/"
        home = anonymous.get("/docs/")
        assert home.status_code == 200
        assert "<title>sparkgate</title>" in home.text
        page = anonymous.get("/docs/how-to/queries/")
        assert page.status_code == 200 and "sparkgate" in page.text
        assert anonymous.get("/docs/search/search_index.json").status_code == 200
        unknown = anonymous.get("/docs/no/such/page/")
        assert unknown.status_code == 404
        # FastAPI's own Swagger UI and ReDoc (scripts from a CDN) are off; the schema stays.
        assert anonymous.get("/redoc").status_code == 404
        assert anonymous.get("/openapi.json", auth=("alice", "alice-secret")).status_code == 200

    policy = _policy(home)
    assert policy["default-src"] == "'self'"
    # Of inline scripts, only the theme's own, by their hashes; nothing from elsewhere.
    assert "'unsafe-inline'" not in home.headers["content-security-policy"]
    assert re.fullmatch(r"'self'( 'sha256-[A-Za-z0-9+/=]+')+", policy["script-src"])
    assert not re.search(r"https?:|\*", home.headers["content-security-policy"])
    assert _policy(unknown) == policy


def test_the_dashboard_links_to_it(server: ServerProcess) -> None:
    # The sign-in page has the dashboard's navigation too.
    sign_in = httpx.get(f"{server.url}/ui/login", timeout=30)
    assert '<a href="/docs/">Docs</a>' in sign_in.text


def test_an_unbuilt_site_says_how_to_build_it(tmp_path: Path) -> None:
    app = FastAPI()
    docs_site.install(app, tmp_path / "site")

    async def ask(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://docs") as client:
            return await client.get(path)

    answer = asyncio.run(ask("/docs/"))
    assert answer.status_code == 404
    assert "scripts/docs build" in answer.text
    assert asyncio.run(ask("/docs/how-to/queries/")).status_code == 404


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # This module's own: a browser left open keeps Playwright's event loop running, which
    # later tests' asyncio.run() refuses (tests/web/conftest.py).
    path = chromium()
    if path is None:
        pytest.skip(
            "Debian's chromium is not installed (scripts/install --test installs it with "
            "apt-get when run as root); the site's browser test needs it"
        )
    with launched(path) as started:
        yield started


def test_its_search_works_in_a_browser_under_its_policy(
    server: ServerProcess, browser: Any
) -> None:
    from playwright.sync_api import expect

    violations: list[str] = []
    context = browser.new_context(base_url=server.url, viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        watch_csp(page, violations)
        page.goto("/docs/")
        page.get_by_role("textbox", name="Search").fill("DBeaver")
        # The search runs in a worker, on the index it fetches: both under the policy.
        hit = page.locator(".md-search-result__item a[href*='how-to/jdbc/']").first
        expect(hit).to_be_visible(timeout=60_000)
        hit.click()
        page.wait_for_url(re.compile(r"/docs/how-to/jdbc/"))
        expect(page.locator("article h1")).to_be_visible()
    finally:
        context.close()
    assert violations == [], "the site broke its Content-Security-Policy"
