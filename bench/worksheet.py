"""The SQL worksheet's time from Run to the first rows shown, against the REST long poll alone.

    scripts/bench worksheet [--runs 30] [--chromium /usr/bin/chromium]

A server with authentication on and a warm shared engine. In Debian's Chromium, signed in, the
worksheet (``/ui/sql``) runs ``SELECT 1`` once to open its session; then ``--runs`` times: from
the Run button's click to the frame that paints the grid's first row (measured in the page,
``performance.now()``). Interleaved with those, in the same server and session kind, the same
query through the API alone: ``POST /v1/queries?wait=30`` from Python (httpx) to its answer
holding the first page. The difference is what the page adds: the script split, the session
check, the grid's drawing.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, median, percentile
from sparkgate.auth.passwords import PasswordFile
from sparkgate_dev.browser import launched

USER, PASSWORD = "analyst", "worksheet-bench"
TRIVIAL = "SELECT 1"

# Runs in the page: click Run, resolve at the frame after the grid's first cell appears.
_TIMED_RUN = """
() => new Promise((resolve) => {
  const panels = document.getElementById("ws-panels");
  const started = performance.now();
  const seen = new MutationObserver(() => {
    if (!panels.querySelector('[data-testid="result-grid"] tbody td')) return;
    seen.disconnect();
    requestAnimationFrame(() => resolve(performance.now() - started));
  });
  seen.observe(panels, { childList: true, subtree: true });
  document.getElementById("ws-run").click();
})
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    console = Console(width=120)
    with tempfile.TemporaryDirectory(prefix="sparkgate-worksheet-") as tmp:
        passwords = Path(tmp) / "passwords"
        PasswordFile(passwords).set(USER, PASSWORD)
        settings: dict[str, Any] = {
            "catalog": "in-memory",
            "auth": "password",
            "auth_password_file": passwords,
            "engine_share_level": "server",
        }
        with bench_server(console, **settings) as server:
            browser_ms, rest_ms = measure(server.url, args.runs, args.chromium, console)
    table = Table(title=f"warm {TRIVIAL}: Run to first rows shown, ms")
    for column in ("measure", "n", "p50", "p95", "max"):
        table.add_column(column)
    for name, values in (
        ("worksheet in Chromium (click Run -> first row painted)", browser_ms),
        ("REST long poll alone (POST ?wait=30 from httpx)", rest_ms),
    ):
        table.add_row(
            name,
            str(len(values)),
            f"{median(values):.1f}",
            f"{percentile(values, 0.95):.1f}",
            f"{max(values):.1f}",
        )
    console.print(table)


def measure(
    url: str, runs: int, chromium: str, console: Console
) -> tuple[list[float], list[float]]:
    browser_ms: list[float] = []
    rest_ms: list[float] = []
    with (
        httpx.Client(base_url=url, auth=(USER, PASSWORD), timeout=120) as api,
        launched(chromium) as browser,
    ):
        session_id = api.post("/v1/sessions", json={"kind": "interactive"}).json()["id"]
        rest = {"query": TRIVIAL, "session_id": session_id}
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}/ui/login")
        page.get_by_label("User name").fill(USER)
        page.get_by_label("Password or access token").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/queries")
        page.goto(f"{url}/ui/sql")
        page.get_by_role("textbox", name="SQL editor").focus()
        page.keyboard.insert_text(TRIVIAL)
        console.print("warming the worksheet's session and the REST one...")
        page.evaluate(_TIMED_RUN)  # opens the worksheet's session; its first query waits
        _rest_once(api, rest)
        for _ in range(runs):
            page.wait_for_selector('#worksheet[data-busy="false"]')
            browser_ms.append(float(page.evaluate(_TIMED_RUN)))
            rest_ms.append(_rest_once(api, rest))
    return browser_ms, rest_ms


def _rest_once(api: httpx.Client, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = api.post("/v1/queries", params={"wait": 30}, json=body)
    elapsed = (time.perf_counter() - started) * 1000
    answer.raise_for_status()
    assert answer.json()["page"]["rows"] == [[1]], answer.text
    return elapsed


if __name__ == "__main__":
    main()
