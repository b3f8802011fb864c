"""Loading files: the table names a load accepts, its request's round trip, the uploads a dead
node left behind, and the node streaming a body to disk against its limit (no Spark)."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from sparkgate.errors import FileEmpty, InvalidRequest, PayloadTooLarge
from sparkgate.http.limits import BodyLimit
from sparkgate.service.loads import Loads, PendingLoad
from sparkgate.settings import Settings
from sparkgate.store.table_access import TableName
from sparkgate.tables.uploads import (
    ORPHAN_AGE,
    LoadFormat,
    LoadMode,
    LoadRequest,
    new_upload_path,
    parse_table_name,
    quoted,
    remove_orphans,
)


@pytest.mark.parametrize(
    ("text", "schema", "table"),
    [
        ("orders", "default", "orders"),
        ("Sales.Orders", "sales", "orders"),
        ("`my db`.`odd``name`", "my db", "odd`name"),
        (" sales.orders ", "sales", "orders"),
    ],
)
def test_table_names(text: str, schema: str, table: str) -> None:
    name = parse_table_name(text)
    assert (name.catalog, name.schema, name.table) == ("spark_catalog", schema, table)


def test_names_are_quoted_for_the_sql_the_engine_writes() -> None:
    assert quoted(parse_table_name("`my db`.`odd``name`")) == "`my db`.`odd``name`"


@pytest.mark.parametrize(
    "text", ["", "a.b.c", "x;DROP TABLE y", "a b", "1abc", "a.`b", "`a`.", "a.b--"]
)
def test_what_is_not_a_table_name_is_refused(text: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_table_name(text)
    assert refused.value.params["field"] == "name"


def test_a_request_survives_its_trip_through_the_store() -> None:
    request = LoadRequest(
        path="/u/upload-1.csv",
        table="`a`.`b`",
        format=LoadFormat.CSV,
        mode=LoadMode.APPEND,
        header=True,
        schema="a INT",
        size=10,
        filename="b.csv",
    )
    assert LoadRequest.from_json(request.to_json()) == request


def test_only_old_upload_files_are_removed(tmp_path: Path) -> None:
    old = new_upload_path(tmp_path, LoadFormat.CSV)
    fresh = new_upload_path(tmp_path, LoadFormat.JSON)
    other = tmp_path / "keep.csv"
    for path in (old, fresh, other):
        path.write_text("x")
    long_ago = 1_000_000.0
    os.utime(old, (long_ago, long_ago))
    os.utime(other, (long_ago, long_ago))
    assert remove_orphans(tmp_path, now=long_ago + ORPHAN_AGE + 1) == [old.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, "keep.csv"])


def _pending(tmp_path: Path) -> PendingLoad:
    return PendingLoad(
        TableName.of("spark_catalog", "a", "b"),
        LoadFormat.CSV,
        LoadMode.CREATE,
        False,
        None,
        None,
        new_upload_path(tmp_path, LoadFormat.CSV),
    )


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def test_a_body_is_streamed_to_disk_and_refused_past_the_limit(tmp_path: Path) -> None:
    loads = Loads(Settings(home=tmp_path, load_max_bytes=10), None, None)  # type: ignore[arg-type]
    pending = _pending(tmp_path)
    assert asyncio.run(loads.receive(pending, _chunks(b"abc", b"def"))) == 6
    assert pending.path.read_bytes() == b"abcdef"
    for body, declared, error in [
        (_chunks(b"123456", b"789012"), None, PayloadTooLarge),  # found too large
        (_chunks(b"1"), 11, PayloadTooLarge),  # said too large: nothing read
        (_chunks(), None, FileEmpty),
    ]:
        pending = _pending(tmp_path)
        with pytest.raises(error):
            asyncio.run(loads.receive(pending, body, declared))
        assert not pending.path.exists()


def test_the_body_limit_leaves_streamed_routes_to_their_own_limit() -> None:
    async def echo(request: Request) -> PlainTextResponse:
        return PlainTextResponse(str(len(await request.body())))

    app = Starlette(
        routes=[
            Route("/v1/tables/{name}/data", echo, methods=["POST"]),
            Route("/v1/queries", echo, methods=["POST"]),
        ]
    )
    limited = BodyLimit(app, limit=4, exempt=re.compile(r"^/v1/tables/[^/]+/data$"))

    async def post(path: str) -> httpx.Response:
        transport = httpx.ASGITransport(app=limited)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            return await http.post(path, content=b"0123456789")

    assert asyncio.run(post("/v1/tables/t/data")).text == "10"
    assert asyncio.run(post("/v1/queries")).status_code == 413
