"""Debian's chromium driven by Playwright: how the browser tests, the documentation's screenshots
and the benchmarks find it and start it (Playwright's own browser download is not used)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Browser


def chromium() -> str | None:
    """The chromium to drive (``SPARKGATE_CHROMIUM``, else Debian's), or None without one."""
    for candidate in (os.environ.get("SPARKGATE_CHROMIUM"), "chromium", "chromium-browser"):
        if candidate and (found := shutil.which(candidate)):
            return found
    return None


@contextmanager
def launched(path: str) -> Iterator[Browser]:
    """The chromium at ``path``, started headless for the block and closed after it."""
    # Playwright is a test dependency: imported when a browser is wanted, not with the rigs.
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=path,
            # Root in a container has no user namespaces for Chromium's sandbox.
            args=["--no-sandbox"] if os.geteuid() == 0 else [],
        )
        try:
            yield browser
        finally:
            browser.close()
