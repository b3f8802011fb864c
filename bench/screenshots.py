"""The README's dashboard pictures, made from a real run.

    scripts/bench screenshots [--out docs/images]

Starts a sparkgate server with authentication on (users alice and bob) and real engines, has
both users run a few queries (one fails, one is cancelled, one is still running), alice make a
small shop schema that both then read and alice run a stream job, then photographs the queries
page, the stream's page, a table's catalog page, and the SQL worksheet with a result and with a
chart of it, in Debian's Chromium.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright
from rich.console import Console

from bench.harness import bench_server
from sparkgate.auth.passwords import PasswordFile

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
STREAM = "clicks_per_window"
SCRIPT = """
CREATE STREAM clicks USING rate OPTIONS ('rowsPerSecond'='40');
CREATE TEMPORARY VIEW per_window AS
  SELECT window(timestamp, '2 seconds') AS w, count(*) AS clicks
  FROM clicks WATERMARK timestamp DELAY OF INTERVAL 1 SECOND
  GROUP BY window(timestamp, '2 seconds');
SAVE STREAM per_window TO noop IDENTIFIED BY per_window OUTPUT MODE UPDATE TRIGGER 1 second
"""
QUERIES = [
    ("alice", "SELECT id, id * 2 AS twice FROM range(1000)"),
    ("bob", "SELECT count(*) AS n, sum(id) AS total FROM range(1000000)"),
    ("alice", "SELECT customer, sum(amount)\nFROM orders GROUP BY customer"),
    ("bob", "SELECT current_date() AS today, version() AS spark"),
    ("alice", "SELECT id % 10 AS bucket, count(*) FROM range(100000) GROUP BY 1 ORDER BY 1"),
]
LONG = "SELECT sum(id % 7) FROM range(100000000000)"
# The catalog page's table: made and written by alice, read by both.
CATALOG = [
    ("alice", "CREATE SCHEMA shop"),
    (
        "alice",
        "CREATE TABLE shop.orders (id BIGINT COMMENT 'order number', customer STRING,"
        " amount DECIMAL(10,2), placed DATE COMMENT 'day the order was placed') USING parquet",
    ),
    (
        "alice",
        "INSERT INTO shop.orders SELECT id, concat('customer-', id % 7),"
        " CAST(id * 3.5 AS DECIMAL(10,2)), date_add(DATE'2026-01-01', CAST(id % 90 AS INT))"
        " FROM range(500)",
    ),
    ("alice", "CREATE VIEW shop.big_orders AS SELECT * FROM shop.orders WHERE amount > 1000"),
    ("bob", "SELECT customer, sum(amount) AS total FROM shop.orders GROUP BY customer"),
    (
        "alice",
        "CREATE TABLE shop.customers USING parquet AS SELECT DISTINCT customer FROM shop.orders",
    ),
    ("bob", "SELECT count(*) FROM shop.big_orders"),
]


def _client(url: str, user: str) -> httpx.Client:
    return httpx.Client(base_url=url, auth=(user, USERS[user]), timeout=120)


def _session(client: httpx.Client) -> int:
    session_id: int = client.post("/v1/sessions", json={"kind": "interactive"}).json()["id"]
    while client.get(f"/v1/sessions/{session_id}").json()["state"] != "idle":
        time.sleep(0.3)
    return session_id


def _finish(client: httpx.Client, query_id: int) -> None:
    while client.get(f"/v1/queries/{query_id}", params={"wait": 30}).json()["state"] in (
        "waiting",
        "running",
        "cancelling",
    ):
        pass


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    console = Console(width=120)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sparkgate-shots-") as tmp:
        passwords = Path(tmp) / "passwords"
        for user, password in USERS.items():
            PasswordFile(passwords).set(user, password)
        settings: dict[str, Any] = {
            "catalog": "in-memory",
            "auth": "password",
            "auth_password_file": passwords,
            "engine_share_level": "server",
            "admins": ["alice"],
        }
        with bench_server(console, **settings) as server:
            clients = {user: _client(server.url, user) for user in USERS}
            sessions = {user: _session(client) for user, client in clients.items()}
            for user, sql in [*CATALOG, *QUERIES]:
                client = clients[user]
                query = client.post(
                    "/v1/queries", json={"query": sql, "session_id": sessions[user]}
                ).json()
                _finish(client, query["id"])
            cancelled = (
                clients["bob"]
                .post("/v1/queries", json={"query": LONG, "session_id": sessions["bob"]})
                .json()
            )
            time.sleep(3)
            clients["bob"].post(f"/v1/queries/{cancelled['id']}/cancel")
            _finish(clients["bob"], cancelled["id"])
            clients["alice"].post("/v1/streams", json={"name": STREAM, "sql": SCRIPT})
            running = (
                clients["bob"]
                .post("/v1/queries", json={"query": LONG, "session_id": sessions["bob"]})
                .json()
            )
            console.print("letting the stream run for 40 s...")
            time.sleep(40)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(
                    executable_path=args.chromium, args=["--no-sandbox"]
                )
                page = browser.new_page(viewport={"width": 1280, "height": 720})
                page.goto(f"{server.url}/ui/login")
                page.get_by_label("User name").fill("alice")
                page.get_by_label("Password or access token").fill(USERS["alice"])
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url("**/ui/queries")
                page.screenshot(path=args.out / "dashboard-queries.png")
                page.set_viewport_size({"width": 1280, "height": 1100})
                page.goto(f"{server.url}/ui/streams/{STREAM}")
                page.wait_for_timeout(2000)
                page.screenshot(path=args.out / "dashboard-stream.png")
                # The running query holds both cores: the table's first rows would wait.
                clients["bob"].post(f"/v1/queries/{running['id']}/cancel")
                _finish(clients["bob"], running["id"])
                page.goto(f"{server.url}/ui/tables/shop.orders")
                page.wait_for_selector("#preview tbody tr")
                page.screenshot(path=args.out / "dashboard-catalog.png", full_page=True)
                _worksheet(page, server.url, args.out)
                browser.close()
            clients["alice"].post(f"/v1/streams/{STREAM}/stop")
            for client in clients.values():
                client.close()
    console.print(
        f"saved {args.out}/dashboard-queries.png, dashboard-stream.png, dashboard-catalog.png,"
        " dashboard-worksheet.png and dashboard-worksheet-chart.png"
    )


WORKSHEET = """SELECT date_trunc('week', placed) AS week, customer, sum(amount) AS total
FROM shop.orders
WHERE customer IN ('customer-1', 'customer-2', 'customer-3')
GROUP BY 1, 2
ORDER BY 1, 2"""


def _worksheet(page: Any, url: str, out: Path) -> None:
    """The worksheet with a result, then the result's line chart: a week's total per customer."""
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{url}/ui/sql")
    page.get_by_role("textbox", name="SQL editor").focus()
    page.keyboard.insert_text(WORKSHEET)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector('[data-testid="result-grid"] tbody td', timeout=120_000)
    page.wait_for_selector('#worksheet[data-busy="false"]')
    page.screenshot(path=out / "dashboard-worksheet.png", full_page=True)
    page.get_by_text("Chart", exact=True).click()
    page.get_by_test_id("chart-type").select_option("line")
    page.get_by_test_id("chart-series").select_option(label="customer (string)")
    page.wait_for_selector('[data-testid="chart"] canvas')
    page.get_by_test_id("chart").scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    page.screenshot(path=out / "dashboard-worksheet-chart.png", full_page=True)


if __name__ == "__main__":
    main()
