"""``scripts/docs build`` builds the site the server serves, and ``scripts/docs --port N`` serves
it while one writes: the commands the documentation's own pages tell a writer to run."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx

from sparkgate.web import docs_site
from sparkgate_dev import free_port, stop_group

ROOT = Path(__file__).resolve().parents[2]
# The MkDocs 2 notice the theme prints at every build is not this site's.
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}


def test_build_puts_the_site_where_the_server_serves_it() -> None:
    done = subprocess.run(
        ["scripts/docs", "build"],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    index = docs_site.SITE / "index.html"
    assert index.is_file() and "sparkgate" in index.read_text()
    assert (docs_site.SITE / "reference" / "cli" / "index.html").is_file()


def test_serve_answers_with_the_site_until_stopped() -> None:
    port = free_port()
    server = subprocess.Popen(
        ["scripts/docs", "--port", str(port)],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # mkdocs serve and its watcher: stopped as one group below
    )
    try:
        deadline = time.monotonic() + 300  # an install check and two builds, on a busy machine
        page = None
        while page is None:
            assert server.poll() is None, f"scripts/docs exited with {server.returncode}"
            assert time.monotonic() < deadline, "scripts/docs never answered"
            try:
                # Under /docs/, as the server serves it (the path of mkdocs.yml's site_url).
                page = httpx.get(f"http://127.0.0.1:{port}/docs/how-to/queries/", timeout=10)
            except httpx.TransportError:
                time.sleep(1)
        assert page.status_code == 200 and "Cancel a query" in page.text
    finally:
        stop_group(server)
