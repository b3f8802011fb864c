"""Whole results to download, end to end: ``GET /v1/queries/{id}/result?format=...`` on a real
server with authentication on, every format read back by an independent reader (pyarrow's CSV
reader, ``json``, pyarrow's Parquet and IPC readers) and compared with the rows of the JSON
pages; the rights of reading a result; the node's memory while a large result streams; the
CLI's ``--output`` and ``--tag``.

One server and one (shared) engine for the module; the large result is made once.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from sparkgate_dev import ServerProcess, kill_engines, local_test_settings, user_files

pytestmark = pytest.mark.spark

PASSWORDS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
ACCESS = """
admins: [carol]
rules:
  - {users: ["*"], allow: [sql, code]}
"""

# Every kind of value the formats render differently: text that CSV must quote, an empty
# string beside NULL, exact decimals, dates, timestamps, binary, arrays, maps and structs.
TYPED = """
SELECT * FROM VALUES
  (1, 'plain', CAST(1.50 AS DECIMAL(10, 2)), DATE'2024-01-02',
   TIMESTAMP'2024-01-02 03:04:05.123456', X'00FF10', array(1, 2, 3), map('a', 1),
   named_struct('x', 1, 'y', 'z'), true, 2.5D, 9007199254740993L),
  (2, 'comma, "quote"' || char(10) || 'newline', CAST(-0.01 AS DECIMAL(10, 2)),
   DATE'1970-01-01', TIMESTAMP'1999-12-31 23:59:59', X'', array(), map(),
   named_struct('x', NULL, 'y', NULL), false, -1.0E-10D, -1L),
  (3, '', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (NULL, 'NULL', NULL, NULL, NULL, NULL, array(NULL), NULL, NULL, NULL, NULL, NULL)
AS t(i, s, d, dt, ts, b, arr, m, st, bo, f, big)
ORDER BY i NULLS LAST
"""

BIG_ROWS = 3_000_000
# In 30 partitions: the engine's driver (768 MB in tests) takes a partition's Arrow batches at
# a time, and two partitions of 1.5 million rows would not fit.
BIG = (
    f"SELECT id, concat('name-', id) AS name, id * 1.5D AS x, repeat('x', 60) AS pad "
    f"FROM range(0, {BIG_ROWS}, 1, 30)"
)


class Env:
    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.url = server.url

    def api(self, user: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(user, PASSWORDS[user]), timeout=120)

    def run(self, user: str, query: str, **body: Any) -> dict[str, Any]:
        """Submit and wait: the final query."""
        with self.api(user) as api:
            answer = api.post("/v1/queries", json={"query": query, **body})
            assert answer.status_code == 201, answer.text
            query_id = answer.json()["id"]
            deadline = time.monotonic() + 300
            while True:
                found: dict[str, Any] = api.get(
                    f"/v1/queries/{query_id}", params={"wait": 30}
                ).json()
                if found["state"] in {"success", "failed", "cancelled"}:
                    return found
                assert time.monotonic() < deadline, found

    def pages(self, user: str, query_id: int) -> tuple[list[str], list[list[Any]]]:
        """The column names and every row, as the JSON pages give them."""
        rows: list[list[Any]] = []
        with self.api(user) as api:
            while True:
                page = api.get(
                    f"/v1/queries/{query_id}/result", params={"offset": len(rows), "limit": 1000}
                ).json()
                rows.extend(page["rows"])
                if len(rows) >= page["total"] or not page["rows"]:
                    return [c["name"] for c in page["schema"]], rows

    def download(self, user: str, query_id: int, fmt: str) -> httpx.Response:
        with self.api(user) as api:
            return api.get(f"/v1/queries/{query_id}/result", params={"format": fmt})

    def cli(self, user: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "SPARKGATE_USER": user,
            "SPARKGATE_PASSWORD": PASSWORDS[user],
            "SPARKGATE_SERVER": self.url,
        }
        return subprocess.run(
            [sys.executable, "-m", "sparkgate.cli.main", *args, "--server", self.url],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
            stdin=subprocess.DEVNULL,
        )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[Env]:
    home = tmp_path_factory.mktemp("downloads-home")
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        **user_files(home, PASSWORDS, ACCESS),
        warm_engines=0,
        engine_share_level="server",  # every user's sessions on the one shared engine
    )
    server = ServerProcess(settings).start()
    try:
        server.wait_engines_running()
        yield Env(server)
    finally:
        server.stop()
        kill_engines(settings, signal.SIGKILL)


@pytest.fixture(scope="module")
def typed(env: Env) -> dict[str, Any]:
    query = env.run("bob", TYPED)
    assert query["state"] == "success", query["error"]
    return query


def rss_bytes(pid: int) -> int:
    """A process's resident memory (VmRSS), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for process {pid}")


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace(" ", "T").replace("Z", "+00:00"))


def _csv_cell_matches(cell: str | None, value: Any, kind: str) -> bool:
    """Whether a CSV cell says what a JSON page's value says: the same text, except numbers,
    booleans and timestamps written as CSV writes them and nested values as JSON text."""
    if value is None or cell is None:
        return value is None and cell is None
    if kind.startswith("timestamp"):
        return _moment(cell) == _moment(value)
    if isinstance(value, bool):
        return cell == str(value).lower()
    if isinstance(value, float):
        return float(cell) == value
    if isinstance(value, int):
        return int(cell) == value
    if isinstance(value, (list, dict)):
        return bool(json.loads(cell) == value)
    return bool(cell == value)


def test_every_format_holds_the_rows_of_the_json_pages(env: Env, typed: dict[str, Any]) -> None:
    query_id = typed["id"]
    names, rows = env.pages("bob", query_id)
    kinds = [c["type"] for c in typed["result"]["schema"]]
    assert len(rows) == 4 and names[0] == "i"

    answer = env.download("bob", query_id, "csv")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/csv")
    disposition = answer.headers["content-disposition"]
    assert disposition == f'attachment; filename="query-{query_id}.csv"'
    assert answer.headers["result-rows"] == "4"
    # Read back by pyarrow's own CSV reader, every column as text: an unquoted empty cell is
    # NULL, a quoted one the empty string.
    read = pa_csv.read_csv(
        io.BytesIO(answer.content),
        convert_options=pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in names},
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    assert read.column_names == names
    cells = [list(row.values()) for row in read.to_pylist()]
    assert len(cells) == len(rows)
    for got, want in zip(cells, rows, strict=True):
        for cell, value, kind, name in zip(got, want, kinds, names, strict=True):
            assert _csv_cell_matches(cell, value, kind), (name, cell, value)
    assert cells[1][1] == 'comma, "quote"\nnewline' and cells[2][1] == "" and cells[3][1] == "NULL"
    assert base64.b64decode(cells[0][5]) == b"\x00\xff\x10"

    answer = env.download("bob", query_id, "jsonl")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/x-ndjson"
    assert f'filename="query-{query_id}.jsonl"' in answer.headers["content-disposition"]
    lines = [json.loads(line) for line in answer.text.splitlines()]
    assert lines == [dict(zip(names, row, strict=True)) for row in rows]

    arrow = env.download("bob", query_id, "arrow")
    assert arrow.status_code == 200, arrow.text
    assert arrow.headers["content-type"] == "application/vnd.apache.arrow.file"
    assert f'filename="query-{query_id}.arrow"' in arrow.headers["content-disposition"]
    arrow_table = pa.ipc.open_file(arrow.content).read_all()

    parquet = env.download("bob", query_id, "parquet")
    assert parquet.status_code == 200, parquet.text
    assert parquet.headers["content-type"] == "application/vnd.apache.parquet"
    assert f'filename="query-{query_id}.parquet"' in parquet.headers["content-disposition"]
    parquet_table = pq.read_table(io.BytesIO(parquet.content))

    # Types kept: Spark's own, as Arrow types, in both; values equal to the pages' rows.
    expected = pa.schema(
        [
            ("i", pa.int32()),
            ("s", pa.string()),
            ("d", pa.decimal128(10, 2)),
            ("dt", pa.date32()),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("b", pa.binary()),
            ("arr", pa.list_(pa.int32())),
            ("m", pa.map_(pa.string(), pa.int32())),
            ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
            ("bo", pa.bool_()),
            ("f", pa.float64()),
            ("big", pa.int64()),
        ]
    )
    for table in (arrow_table, parquet_table):
        assert [f.name for f in table.schema] == names
        for got, want in zip(table.schema, expected, strict=True):
            if pa.types.is_map(want.type):  # Spark names a map's entries its own way
                assert pa.types.is_map(got.type), got
                assert (got.type.key_type, got.type.item_type) == (pa.string(), pa.int32())
            else:
                assert got.type == want.type, (got, want)
        as_pages = [[_page_value(v) for v in row.values()] for row in table.to_pylist()]
        assert as_pages == rows
    # Parquet keeps the types Arrow has (list and map field names aside).
    assert [f.type for f in parquet_table.schema] == [f.type for f in arrow_table.schema]


def _page_value(value: Any) -> Any:
    """A value read back from Parquet or Arrow as the JSON pages give it (their own rendering,
    reused: the pages are the reference)."""
    from sparkgate.results import to_json_value

    return to_json_value(value)


def test_a_result_of_many_batches_downloads_in_its_logical_order(env: Env) -> None:
    # Four partitions, sorted: Spark sends the batches as partitions finish, the index
    # puts them back in order.
    query = env.run(
        "bob",
        "SELECT id, -id AS neg FROM range(0, 60000, 1, 4) ORDER BY id DESC",
    )
    assert query["state"] == "success", query["error"]
    index = json.loads(
        (env.server.settings.resolved_results_dir / str(query["id"]) / "index.json").read_text()
    )
    assert len(index["order"]) > 1, index
    answer = env.download("bob", query["id"], "csv")
    assert answer.status_code == 200, answer.text
    ids = [int(row[0]) for row in list(csv.reader(io.StringIO(answer.text)))[1:]]
    assert ids == list(range(59999, -1, -1))
    arrow = pa.ipc.open_file(env.download("bob", query["id"], "arrow").content).read_all()
    assert arrow.column("id").to_pylist() == ids
    assert arrow.num_rows == 60000 and arrow.column("neg").to_pylist()[0] == -59999


def test_another_users_result_is_absent_and_bad_requests_are_refused(
    env: Env, typed: dict[str, Any]
) -> None:
    query_id = typed["id"]
    for fmt in ("csv", "parquet"):
        answer = env.download("alice", query_id, fmt)
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["code"] == "QUERY_NOT_FOUND"
    # An admin reads anyone's.
    assert env.download("carol", query_id, "jsonl").status_code == 200
    unknown = env.download("bob", query_id, "xlsx")
    assert unknown.status_code == 422, unknown.text
    assert unknown.json()["error"]["code"] == "INVALID_REQUEST"
    with env.api("bob") as api:
        paged = api.get(f"/v1/queries/{query_id}/result", params={"format": "csv", "limit": 1})
    assert paged.status_code == 422, paged.text
    assert "whole result" in paged.json()["error"]["message"]

    # A load's tags are checked before its file is read.
    with env.api("bob") as api:
        load = api.post(
            "/v1/tables/default.dl_refused/data",
            params={"format": "csv", "tag": ["team=a", "bad key=1"]},
            content=b"a\n1\n",
        )
    assert load.status_code == 422, load.text
    assert "tag 'bad key'" in load.json()["error"]["message"]

    failed = env.run("bob", "SELECT nope FROM range(1)")
    assert failed["state"] == "failed"
    answer = env.download("bob", failed["id"], "csv")
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "RESULT_NOT_AVAILABLE"

    with env.api("bob") as api:
        slow = api.post(
            "/v1/queries", json={"query": "SELECT count(*) FROM range(100000000000)"}
        ).json()
        api.post(f"/v1/queries/{slow['id']}/cancel")
    with env.api("bob") as api:
        deadline = time.monotonic() + 120
        while api.get(f"/v1/queries/{slow['id']}").json()["state"] != "cancelled":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        answer = api.get(f"/v1/queries/{slow['id']}/result", params={"format": "parquet"})
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "RESULT_NOT_AVAILABLE"


def test_a_large_download_streams_in_constant_memory(env: Env) -> None:
    """3 million rows, about 280 MB of CSV: the node's memory grows by far less than that
    (holding the file whole, it grew 865 MB)."""
    query = env.run("bob", BIG)
    assert query["state"] == "success", query["error"]
    assert query["result"]["row_count"] == BIG_ROWS
    pid = env.server.process.pid  # type: ignore[union-attr]
    # The first download loads the writers' modules: done before the baseline is taken.
    with env.api("bob") as api:
        api.get(f"/v1/queries/{query['id']}/result", params={"format": "csv"}, timeout=600)
    baseline = rss_bytes(pid)
    peak = baseline
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_bytes(pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    received = lines = 0
    try:
        with (
            env.api("bob") as api,
            api.stream(
                "GET", f"/v1/queries/{query['id']}/result", params={"format": "csv"}
            ) as answer,
        ):
            assert answer.status_code == 200
            for chunk in answer.iter_bytes():
                received += len(chunk)
                lines += chunk.count(b"\n")
    finally:
        done.set()
        sampler.join()
    assert lines == BIG_ROWS + 1  # the header and every row
    assert received > 250 * 1024 * 1024, received  # what holding it whole would cost
    growth = peak - baseline
    assert growth < 64 * 1024 * 1024, f"RSS grew {growth / 2**20:.1f} MB for {received} bytes"


def test_cli_writes_results_to_files_and_tags_queries(
    env: Env, typed: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "typed.parquet"
    done = env.cli("bob", "queries", "result", str(typed["id"]), "--output", str(out))
    assert done.returncode == 0, done.stderr
    assert "4 rows" in done.stderr and str(out) in done.stderr
    names, rows = env.pages("bob", typed["id"])
    table = pq.read_table(out)
    assert table.column_names == names
    assert [[_page_value(v) for v in row.values()] for row in table.to_pylist()] == rows
    # --format beats the extension.
    as_text = tmp_path / "typed.txt"
    done = env.cli(
        "bob", "queries", "result", str(typed["id"]), "-o", str(as_text), "--format", "jsonl"
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["i"] for line in as_text.read_text().splitlines()] == [1, 2, 3, None]
    # Another's result: refused as absent, and no file left.
    other = tmp_path / "other.csv"
    done = env.cli("alice", "queries", "result", str(typed["id"]), "--output", str(other))
    assert done.returncode == 1 and "QUERY_NOT_FOUND" in done.stderr
    assert not other.exists() and not list(tmp_path.glob("*.part"))
    done = env.cli("bob", "queries", "result", str(typed["id"]), "--output", str(tmp_path / "x"))
    assert done.returncode == 1 and "--format" in done.stderr

    out = tmp_path / "range.csv"
    done = env.cli(
        "bob",
        "sql",
        "SELECT id, id * 2 AS twice FROM range(2500)",
        "--output",
        str(out),
        "--tag",
        "team=finance",
        "--tag",
        "project=churn=2",
    )
    assert done.returncode == 0, done.stderr
    assert "2,500 rows" in done.stderr and done.stdout == ""
    with out.open() as f:
        assert list(csv.reader(f)) == [["id", "twice"]] + [
            [str(i), str(2 * i)] for i in range(2500)
        ]
    query_id = int(done.stderr.rsplit("query ", 1)[1].split()[0])
    with env.api("bob") as api:
        tags = api.get(f"/v1/queries/{query_id}").json()["tags"]
    assert tags == {"team": "finance", "project": "churn=2"}

    for bad in ("team", "=finance", "bad key=1"):
        done = env.cli("bob", "sql", "SELECT 1", "--tag", bad)
        assert done.returncode == 1 and "--tag" in done.stderr, done.stderr

    data = tmp_path / "scores.csv"
    data.write_text("who,score\nann,1\nben,2\n")
    done = env.cli(
        "carol", "load", str(data), "--table", "default.dl_scores", "--header", "--tag", "src=cli"
    )
    assert done.returncode == 0, done.stderr
    load_id = int(done.stderr.rsplit("query ", 1)[1].split()[0])
    with env.api("carol") as api:
        loaded = api.get(f"/v1/queries/{load_id}").json()
    assert loaded["kind"] == "load" and loaded["tags"] == {"src": "cli"}
    done = env.cli("carol", "load", str(data), "--table", "default.dl_x", "--tag", "k")
    assert done.returncode == 1 and "KEY=VALUE" in done.stderr
