"""The dashboard's screenshots the documentation shows: ``python -m sparkgate_dev.screenshots
OUTDIR`` (``scripts/docs screenshots`` writes them into docs/images/).

A real server of its own (a temporary home, authentication on, one shared engine), some sample
data made through the API (a table, a few queries of which one is answered by reuse, a stream
job), then each dashboard page in Debian's chromium, saved as ``OUTDIR/<name>.png``. Everything
it started is stopped before it returns. Exits 2, saying why, without chromium.
"""

from __future__ import annotations

import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from sparkgate.catalog.metastore import stop_metastore
from sparkgate_dev import ServerProcess, eventually, kill_engines, local_test_settings, user_files
from sparkgate_dev.browser import chromium, launched

USER, PASSWORD = "alice", "alice-secret"
ACCESS = f"""
admins: [{USER}]
rules:
  - {{users: ["*"], allow: [sql, code, streams, jobs]}}
"""
TABLE = "default.trips"
STREAM = "ticks_per_window"
# A rate source counted in windows, written nowhere: a stream job with live charts, on little.
STREAM_SQL = """
CREATE STREAM ticks USING rate OPTIONS ('rowsPerSecond'='10');
CREATE TEMPORARY VIEW per_window AS
  SELECT window(timestamp, '2 seconds') AS w, count(*) AS n
  FROM ticks WATERMARK timestamp DELAY OF INTERVAL 1 SECOND
  GROUP BY window(timestamp, '2 seconds');
SAVE STREAM per_window TO noop IDENTIFIED BY counts OUTPUT MODE UPDATE TRIGGER 1 second
"""
QUERIES = (
    f"""CREATE TABLE {TABLE} USING parquet AS
    SELECT id AS trip_id,
      element_at(array('north', 'south', 'east', 'west'), CAST(id % 4 AS INT) + 1) AS zone,
      round(2 + (id % 37) * 0.85, 2) AS fare,
      date_add(DATE'2025-01-01', CAST(id % 90 AS INT)) AS day
    FROM range(20000)""",
    f"SELECT zone, count(*) AS trips, round(avg(fare), 2) AS avg_fare FROM {TABLE} "
    "GROUP BY zone ORDER BY zone",
    f"SELECT day, sum(fare) AS revenue FROM {TABLE} GROUP BY day ORDER BY day",
    f"CREATE VIEW default.zone_fares AS SELECT zone, avg(fare) AS avg_fare FROM {TABLE} "
    "GROUP BY zone",
)
# The one sent twice: the second is answered from the first's result (result reuse).
REUSED = QUERIES[1]
WORKSHEET_SQL = f"SELECT zone, max(fare) AS top_fare\nFROM {TABLE}\nGROUP BY zone"


@dataclass(frozen=True)
class Shot:
    name: str
    path: str
    ready: str  # a selector visible once the page shows what it is taken for


def take(outdir: Path, browser_path: str) -> list[Path]:
    """Start a server, make the sample data, save every screenshot into ``outdir``."""
    outdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sparkgate-screenshots-") as tmp:
        home = Path(tmp)
        settings = local_test_settings(
            home,
            auth="password",
            engine_share_level="server",
            **user_files(home, {USER: PASSWORD}, ACCESS),
        )
        server = ServerProcess(settings).start()
        try:
            server.wait_engines_running()
            with httpx.Client(base_url=server.url, auth=(USER, PASSWORD), timeout=120) as api:
                shots = _sample_data(api)
                try:
                    return _screenshots(server.url, browser_path, outdir, shots)
                finally:
                    api.post(f"/v1/streams/{STREAM}/stop")
        finally:
            server.stop()
            kill_engines(settings, signal.SIGKILL)
            stop_metastore(settings)  # the one the server's home started


def _sample_data(api: httpx.Client) -> list[Shot]:
    ran = [_run(api, sql) for sql in QUERIES]
    reused = _run(api, REUSED)
    if reused.get("reused_from") is None:
        print("note: the repeated query ran again instead of being reused", file=sys.stderr)
    created = api.post("/v1/streams", json={"name": STREAM, "sql": STREAM_SQL})
    created.raise_for_status()
    return [
        Shot("dashboard-queries", "/ui/queries", "#main h1"),
        Shot("dashboard-query", f"/ui/queries/{ran[1]['id']}", "#result-page table"),
        Shot("dashboard-worksheet", "/ui/sql", "#main h1"),
        Shot("dashboard-catalog", "/ui/tables", "#main h1"),
        Shot("dashboard-stream", f"/ui/streams/{STREAM}", "[data-metric] canvas"),
        Shot("dashboard-usage", "/ui/usage", "#main h1"),
        Shot(
            "dashboard-access-history",
            f"/ui/tables/{TABLE}",
            "[data-testid=history] tr[data-event-id]",
        ),
    ]


def _run(api: httpx.Client, sql: str) -> dict[str, Any]:
    """Submit ``sql`` and wait until it has ended; it must succeed."""
    submitted = api.post("/v1/queries", json={"query": sql})
    submitted.raise_for_status()
    query_id = submitted.json()["id"]

    def final() -> dict[str, Any] | None:
        query: dict[str, Any] = api.get(f"/v1/queries/{query_id}", params={"wait": 30}).json()
        return query if query["state"] in {"success", "failed", "cancelled"} else None

    query = eventually(final, timeout=300, interval=0, what=f"query {query_id}")
    if query["state"] != "success":
        raise RuntimeError(f"sample query {query_id} ended {query['state']}: {query['error']}")
    return query


def _screenshots(url: str, browser_path: str, outdir: Path, shots: list[Shot]) -> list[Path]:
    saved: list[Path] = []
    with launched(browser_path) as browser:
        context = browser.new_context(base_url=url, viewport={"width": 1280, "height": 800})
        page = context.new_page()
        page.goto("/ui/login")
        page.get_by_label("User name").fill(USER)
        page.get_by_label("Password or access token").fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/queries")
        for shot in shots:
            page.goto(shot.path)
            page.locator(shot.ready).first.wait_for(state="visible", timeout=180_000)
            _settle(shot, page.wait_for_timeout)
            path = outdir / f"{shot.name}.png"
            page.screenshot(path=str(path), full_page=True)
            saved.append(path)
            print(f"saved {path}", file=sys.stderr)
    return saved


def _settle(shot: Shot, wait: Callable[[float], None]) -> None:
    # A stream's charts draw a point a second: a few make a line. Other pages have loaded.
    wait(8000 if shot.name == "dashboard-stream" else 500)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m sparkgate_dev.screenshots OUTDIR", file=sys.stderr)
        return 2
    browser_path = chromium()
    if browser_path is None:
        print(
            "Debian's chromium is not installed (scripts/install --test installs it with "
            "apt-get when run as root, or set SPARKGATE_CHROMIUM): no screenshots taken",
            file=sys.stderr,
        )
        return 2
    started = time.monotonic()
    saved = take(Path(args[0]), browser_path)
    print(f"{len(saved)} screenshots in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
