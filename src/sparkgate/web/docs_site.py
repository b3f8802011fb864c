"""The documentation site at ``/docs/``: the MkDocs site ``scripts/install`` builds from
``docs/`` into ``site/`` beside this module, served as static files.

No sign-in: it is the public documentation of this version, the same for everyone, and holds
nothing of the node's (the reference pages are made from the code, not from this server's
settings or data). It fetches nothing from elsewhere either (the site is built with no remote
font, script or style), so its Content-Security-Policy allows only this origin, and of inline
code only the few scripts the theme writes into its pages, by their hashes. When the site is
not built, ``/docs/`` answers 404 saying how to build it.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import MutableHeaders
from starlette.types import Message, Receive, Scope, Send

SITE = Path(__file__).parent / "site"

# A <script> without src (and not JSON data, which the policy does not govern): what the theme
# inlines (its storage helpers, the colour scheme read before the first paint).
_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?P<attrs>[^>]*)>(?P<code>.*?)</script>", re.S)

_NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Documentation not built · sparkgate</title>
</head><body>
<h1>The documentation is not built</h1>
<p>This server has no documentation site. Build it where sparkgate is installed with
<code>scripts/docs build</code> (or <code>scripts/install</code>), and reload this page.</p>
</body></html>
"""

router = APIRouter()


@router.get("/docs", include_in_schema=False)
def docs_root() -> RedirectResponse:
    # Relative: right behind a proxy that serves the node under a path of its own too.
    return RedirectResponse("docs/", status_code=307)


def install(app: FastAPI, site: Path = SITE) -> None:
    app.include_router(router)
    app.mount("/docs", DocsSite(site), name="docs")


class DocsSite:
    """The site's files (``index.html`` for a directory, the site's ``404.html`` for an
    unknown page), each answer with the site's policy."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        index = self.directory / "index.html"
        built = index.is_file()
        policy = content_security_policy(self.directory, index.stat().st_mtime_ns if built else 0)

        async def send_with_policy(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = policy
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "same-origin"
            await send(message)

        if not built:
            await HTMLResponse(_NOT_BUILT, status_code=404)(scope, receive, send_with_policy)
            return
        await _files(self.directory)(scope, receive, send_with_policy)


@cache
def _files(directory: Path) -> StaticFiles:
    # A rebuild replaces the directory under the same path: the files are looked up by path at
    # each request, so one StaticFiles serves every build.
    return StaticFiles(directory=directory, html=True)


@cache
def content_security_policy(directory: Path, built_at: int) -> str:
    """The policy for the site as built at ``built_at`` (the time of its ``index.html``: a new
    build is read again)."""
    scripts = " ".join(f"'{h}'" for h in sorted(inline_script_hashes(directory.rglob("*.html"))))
    return "; ".join(
        [
            "default-src 'self'",
            f"script-src 'self' {scripts}".rstrip(),
            "style-src 'self'",
            # The theme's icons are data: URIs in its stylesheet.
            "img-src 'self' data:",
            "font-src 'self'",
            # The search runs in a worker, loaded from the site, fetching its index from it.
            "worker-src 'self'",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


def inline_script_hashes(pages: Iterable[Path]) -> set[str]:
    """The CSP hashes (``sha256-...``) of every inline script of ``pages``."""
    found: set[str] = set()
    for page in pages:
        for match in _INLINE_SCRIPT.finditer(page.read_text(encoding="utf-8", errors="replace")):
            if "application/json" in match["attrs"]:
                continue
            digest = hashlib.sha256(match["code"].encode()).digest()
            found.add("sha256-" + base64.b64encode(digest).decode())
    return found
