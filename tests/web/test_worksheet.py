"""The SQL worksheet (``/ui/sql``) in Chromium, against a real server and engine: completion
from the catalog as the user (bob is never offered the column hidden from him), runs in one
kept session, the result grid and its paging, cancel, errors marked where they are, the chart,
the downloads compared with ``/v1``'s rows, saved queries and history, the keyboard alone, and
the dashboard's Content-Security-Policy kept throughout.

One server for the module (its own access file: a hidden column and groups); the browser is the
web suite's.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from playwright.sync_api import expect

from sparkgate.web.worksheet import editor_built
from sparkgate_dev import ServerProcess, kill_engines, local_test_settings, user_files
from tests.web.conftest import watch_csp

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

SLOW = 120_000  # ms: the first query of a session waits for its SparkSession
DASH = "\N{EN DASH}"
WEB_SRC = Path(__file__).resolve().parents[2] / "web-src"

PASSWORDS = {"alice": "alice-ws", "bob": "bob-ws", "carol": "carol-ws", "dave": "dave-ws"}
# bob reads payroll.salaries without its ssn column; dave has no right to run SQL.
ACCESS = """
admins: [carol]
groups: {payroll: [alice], analysts: [bob]}
rules:
  - {users: [alice, bob], allow: [sql]}
tables:
  - {group: payroll, schema: payroll, privileges: [SELECT, INSERT, DELETE, UPDATE, OWNERSHIP]}
  - user: bob
    schema: payroll
    table: salaries
    privileges: [SELECT]
    columns:
      - {name: ssn, allow: false}
schemas:
  - {group: payroll, schema: payroll, owner: true}
"""


class Sheet:
    def __init__(self, server: ServerProcess) -> None:
        self.url = server.url

    def api(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(user, PASSWORDS[user]), timeout=120)

    def run(self, user: str, sql: str) -> dict[str, Any]:
        with self.api(user) as api:
            answer = api.post("/v1/queries", json={"query": sql}, params={"wait": 120})
            answer.raise_for_status()
            query: dict[str, Any] = answer.json()
            assert query["state"] == "success", query
            return query


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Sheet]:
    if not editor_built():
        pytest.skip(
            "the worksheet's editor is not built (scripts/install builds it with Node.js and "
            "npm: web-src/); its browser tests need it"
        )
    home = tmp_path_factory.mktemp("worksheet-home")
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **user_files(home, PASSWORDS, ACCESS),
        engine_share_level="server",
    )
    server = ServerProcess(settings).start()
    try:
        server.wait_engines_running()
        sheet = Sheet(server)
        sheet.run("carol", "CREATE SCHEMA IF NOT EXISTS payroll")
        sheet.run(
            "carol",
            "CREATE OR REPLACE TABLE payroll.salaries USING parquet AS "
            "SELECT * FROM VALUES ('ann', 5000, '111'), ('ben', 7000, '222') "
            "AS t(name, salary, ssn)",
        )
        yield sheet
    finally:
        server.stop()
        kill_engines(settings, signal.SIGKILL)


@pytest.fixture
def signin(sheet: Sheet, browser: Any) -> Iterator[Callable[..., Any]]:
    """``signin("bob")``: a page of the worksheet signed in as bob, watched for breaches of the
    Content-Security-Policy (none may happen)."""
    contexts: list[Any] = []
    violations: list[str] = []

    def sign_in(user: str, path: str = "/ui/sql") -> Any:
        context = browser.new_context(
            base_url=sheet.url, viewport={"width": 1280, "height": 900}, accept_downloads=True
        )
        contexts.append(context)
        page = context.new_page()
        watch_csp(page, violations)
        page.goto("/ui/login")
        page.get_by_label("User name").fill(user)
        page.get_by_label("Password or access token").fill(PASSWORDS[user])
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url("**/ui/queries")
        page.goto(path)
        return page

    yield sign_in
    for context in contexts:
        context.close()
    assert not violations, violations


def editor(page: Any) -> Any:
    return page.get_by_role("textbox", name="SQL editor")


def write(page: Any, sql: str) -> None:
    """Replace the editor's text by typing it, as a person would."""
    editor(page).focus()
    page.keyboard.press("Escape")  # a completion list left open
    page.keyboard.press("ControlOrMeta+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(sql)


def run(page: Any, sql: str) -> None:
    write(page, sql)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#worksheet")).to_have_attribute("data-busy", "false", timeout=SLOW)


def completions(page: Any) -> list[str]:
    options = page.locator(".cm-tooltip-autocomplete li .cm-completionLabel")
    expect(options.first).to_be_visible(timeout=SLOW)
    labels: list[str] = options.all_inner_texts()
    return labels


def test_complete_run_page_and_mark_errors(signin: Callable[..., Any], sheet: Sheet) -> None:
    bob = signin("bob")
    expect(bob.get_by_role("link", name="SQL", exact=True)).to_have_attribute(
        "aria-current", "page"
    )
    # Columns come from the catalog as bob sees it: never the one hidden from him.
    write(bob, "SELECT payroll.salaries.")
    bob.keyboard.press("Control+Space")
    offered = completions(bob)
    assert {"name", "salary"} <= set(offered) and "ssn" not in offered, offered
    bob.keyboard.press("Escape")
    alice = signin("alice")
    write(alice, "SELECT * FROM payroll.salaries s WHERE s.")
    alice.keyboard.press("Control+Space")
    assert "ssn" in completions(alice)
    # Spark's functions and keywords too.
    write(alice, "SELECT approx_count_dis")
    alice.keyboard.press("Control+Space")
    assert "approx_count_distinct" in completions(alice)

    # A result in the grid: names and types, NULL apart from 'NULL', numbers right-aligned.
    run(
        bob,
        "SELECT id, CASE id WHEN 0 THEN NULL WHEN 1 THEN 'NULL' ELSE concat('v', id) END AS label,"
        " id * 1.5 AS amount FROM range(250)",
    )
    grid = bob.get_by_test_id("result-grid")
    expect(grid.locator("thead th")).to_have_text(
        ["idbigint", "labelstring", re.compile(r"amountdecimal\(\d+,\d+\)")]
    )
    first, second = grid.locator("tbody tr").nth(0), grid.locator("tbody tr").nth(1)
    expect(first.locator("td").nth(1).locator(".ws-null")).to_have_count(1)
    expect(second.locator("td").nth(1)).to_have_text("NULL")
    expect(second.locator("td").nth(1).locator(".ws-null")).to_have_count(0)
    align = first.locator("td").nth(0).evaluate("td => getComputedStyle(td).textAlign")
    assert align == "right"
    count = bob.get_by_test_id("row-count")
    expect(count).to_have_text(f"250 rows, 1{DASH}100 shown")
    bob.get_by_role("button", name="Next rows →").click()
    expect(count).to_have_text(f"250 rows, 101{DASH}200 shown")
    expect(grid.locator("tbody tr").first.locator("td").first).to_have_text("100")

    # A failing second statement stops the run, and is marked at its line and column.
    run(bob, "SELECT 1;\nSELECT 2,\n  no_such_column FROM range(1)")
    expect(bob.locator("#ws-error")).to_contain_text("Statement 2")
    mark = bob.locator(".cm-lintRange-error")
    expect(mark).to_have_count(1)
    expect(mark).to_have_text("no_such_column")


def test_session_carries_views_cancel_and_keyboard(
    signin: Callable[..., Any], sheet: Sheet
) -> None:
    page = signin("bob")
    # Keyboard alone: the editor has the focus, Ctrl+Enter runs, Tab leaves the editor.
    expect(editor(page)).to_be_focused()
    page.keyboard.insert_text(
        "CREATE TEMP VIEW ws_v AS SELECT id FROM range(7);\nSELECT count(*) AS n FROM ws_v"
    )
    page.keyboard.press("Control+Enter")
    expect(page.locator("#worksheet")).to_have_attribute("data-busy", "false", timeout=SLOW)
    expect(page.locator("#ws-runs li")).to_have_count(2)
    expect(page.get_by_role("tab")).to_have_count(1)  # only the SELECT returned rows
    expect(page.get_by_test_id("result-grid").locator("tbody td")).to_have_text(["7"])
    # The next run is in the same session: the view is still there; it carries the tags.
    page.get_by_label("Tags").fill("team=sheet, report=q3")
    run(page, "SELECT max(id) AS m FROM ws_v")
    expect(page.get_by_test_id("result-grid").locator("tbody td")).to_have_text(["6"])
    query_id = page.locator(".ws-result").get_attribute("data-query-id")
    with sheet.api("bob") as api:
        tags = api.get(f"/v1/queries/{query_id}").json()["tags"]
    assert tags is not None and {"team": "sheet", "report": "q3"}.items() <= tags.items()
    # Only the selection runs when there is one.
    write(page, "SELECT 1 AS a;\nSELECT 2 AS b")
    page.keyboard.press("Shift+Home")  # the last line
    page.keyboard.press("Control+Enter")
    expect(page.locator("#worksheet")).to_have_attribute("data-busy", "false", timeout=SLOW)
    expect(page.locator("#ws-runs li")).to_have_count(1)
    expect(page.get_by_test_id("result-grid").locator("thead th")).to_have_text(["bint"])
    editor(page).focus()
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.tagName") != "BODY"

    # A long query is cancelled while it runs, with its state and elapsed time shown.
    write(page, "SELECT count(*) FROM range(1000000000) a CROSS JOIN range(1000) b")
    page.get_by_role("button", name="Run", exact=True).click()
    state = page.get_by_test_id("statement-state")
    expect(state).to_have_text("running", timeout=SLOW)
    expect(page.get_by_test_id("elapsed")).not_to_have_text("0.0 s")
    page.get_by_role("button", name="Cancel").click()
    expect(state).to_have_text("cancelled", timeout=SLOW)
    expect(page.get_by_role("button", name="Run", exact=True)).to_be_enabled()


def test_chart_and_downloads(signin: Callable[..., Any], sheet: Sheet, tmp_path: Path) -> None:
    page = signin("alice")
    run(page, "SELECT id, id % 3 AS g, id * id AS sq, concat('r', id) AS s FROM range(30)")
    query_id = page.locator(".ws-result").get_attribute("data-query-id")
    with sheet.api("alice") as api:
        rows = api.get(f"/v1/queries/{query_id}/result", params={"limit": 100}).json()["rows"]
    assert len(rows) == 30

    page.get_by_text("Chart", exact=True).click()
    page.get_by_test_id("chart-type").select_option("line")
    page.get_by_test_id("chart-x").select_option(label="id (bigint)")
    page.get_by_test_id("chart-series").select_option(label="g (bigint)")
    page.get_by_test_id("chart-y").get_by_label("sq").check()
    chart = page.get_by_test_id("chart")
    expect(chart).to_have_attribute("data-points", "30")
    series = chart.get_attribute("data-series")
    assert series is not None
    assert {line for line in series.split("\n") if line.startswith("sq")} == {
        "sq · 0",
        "sq · 1",
        "sq · 2",
    }
    canvas = chart.locator("canvas")
    expect(canvas).to_have_count(1)
    drawn = canvas.evaluate(
        "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"
    )
    assert drawn > 500
    expect(chart.locator(".u-legend")).to_contain_text("sq · 2")

    with page.expect_download() as csv_download:
        page.get_by_role("link", name="CSV").click()
    text = Path(csv_download.value.path()).read_text()
    table = list(csv.reader(io.StringIO(text)))
    assert table[0] == ["id", "g", "sq", "s"]
    assert [[int(r[0]), int(r[1]), int(r[2]), r[3]] for r in table[1:]] == rows
    with page.expect_download() as parquet_download:
        page.get_by_role("link", name="Parquet").click()
    read = pq.read_table(parquet_download.value.path())
    assert read.column_names == ["id", "g", "sq", "s"]
    assert [list(r.values()) for r in read.to_pylist()] == rows


def test_save_history_and_anothers(signin: Callable[..., Any], sheet: Sheet) -> None:
    bob = signin("bob")
    marker = "ws_history_marker"
    run(bob, f"SELECT 42 AS {marker}")
    query_id = bob.locator(".ws-result").get_attribute("data-query-id")
    bob.get_by_role("button", name="Save…").click()
    dialog = bob.get_by_role("dialog")
    expect(dialog).to_be_visible()
    bob.keyboard.press("Escape")  # Escape closes it
    expect(dialog).to_be_hidden()
    bob.get_by_role("button", name="Save…").click()
    bob.get_by_label("Name").fill("the answer")
    bob.get_by_label("Group").fill("analysts")
    bob.get_by_role("button", name="Save", exact=True).click()
    expect(dialog).to_be_hidden()
    saved = bob.get_by_test_id("saved-list").get_by_role("link", name="the answer")
    expect(saved).to_be_visible()
    saved_id = saved.locator("xpath=..").get_attribute("data-saved-id")

    # History: searchable; one click puts the text back in the editor.
    write(bob, "SELECT 0")
    bob.get_by_label("Search your queries").fill(marker)
    item = bob.get_by_test_id("history-list").locator(f'li[data-query-id="{query_id}"] a')
    expect(bob.get_by_test_id("history-list").locator("li[data-query-id]")).to_have_count(1)
    item.click()
    expect(editor(bob)).to_have_text(f"SELECT 42 AS {marker}")
    bob.goto(f"/ui/sql?saved={saved_id}")
    expect(editor(bob)).to_have_text(f"SELECT 42 AS {marker}")

    # Another user's query is absent for alice (404), as is the shared one of a group she is
    # not in; the page says so and keeps its own text.
    alice = signin("alice")
    with alice.expect_response(re.compile(rf"/v1/queries/{query_id}$")) as answer:
        alice.goto(f"/ui/sql?query={query_id}")
    assert answer.value.status == 404
    expect(alice.locator("#ws-error")).to_contain_text(f"Query {query_id}")
    expect(alice.locator("#ws-error")).to_contain_text("(404)")
    with alice.expect_response(re.compile(rf"/v1/saved-queries/{saved_id}$")) as answer:
        alice.goto(f"/ui/sql?saved={saved_id}")
    assert answer.value.status == 404
    expect(editor(alice)).not_to_contain_text(marker)


def test_without_the_sql_right(signin: Callable[..., Any]) -> None:
    page = signin("dave")
    expect(page.get_by_test_id("worksheet-refused")).to_contain_text("sql")
    expect(page.locator("#worksheet")).to_have_count(0)


def test_statements_are_split_by_the_server(sheet: Sheet) -> None:
    """The page's one call of its own: Spark's splitting, with where each statement starts."""
    with httpx.Client(base_url=sheet.url, timeout=30) as client:
        client.post("/ui/login", data={"name": "bob", "password": PASSWORDS["bob"]})
        htmx = {"HX-Request": "true"}
        split = client.post(
            "/ui/sql/statements", json={"text": "SELECT ';' AS a; -- ;\nSELECT 2"}, headers=htmx
        )
        assert split.status_code == 200
        assert [(s["text"], s["line"], s["offset"]) for s in split.json()["statements"]] == [
            ("SELECT ';' AS a", 1, 0),
            ("SELECT 2", 2, 22),
        ]
        broken = client.post("/ui/sql/statements", json={"text": "SELECT 'x"}, headers=htmx)
        assert broken.status_code == 422
        assert broken.json()["line"] == 1
        # Not without the dashboard's header: a change-shaped request from another site.
        assert client.post("/ui/sql/statements", json={"text": "SELECT 1"}).status_code in {
            303,
            401,
        }


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_scripts_own_unit_tests() -> None:
    """web-src's unit tests (node --test): the chart's data, error spans, tags."""
    done = subprocess.run(
        ["node", "--test", "test/"],
        check=False,
        cwd=WEB_SRC,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
