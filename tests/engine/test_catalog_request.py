"""A catalog request as a door or the service sends it: its code is what the engine reads back."""

from __future__ import annotations

import json

import pytest

from sparkgate.runtime.catalog_request import CatalogRequest, parse_request
from sparkgate.runtime.failures import DescribedError

SENT = [
    CatalogRequest("browse", {"schema": None}),
    CatalogRequest("describe", {"schema": "sales", "table": "orders"}),
    CatalogRequest("tables", {"catalog": None, "schema": "s%", "table": "o_d"}, ("TABLE",)),
    CatalogRequest("tables", {"catalog": None, "schema": None, "table": None}, ()),
    CatalogRequest("columns", {"catalog": "spark", "schema": "%", "table": "t", "column": None}),
]


@pytest.mark.parametrize("request_", SENT, ids=lambda r: r.call)
def test_what_is_sent_is_what_the_engine_reads(request_: CatalogRequest) -> None:
    read = parse_request(request_.to_code())
    assert read.call == request_.call and read.table_types == request_.table_types
    assert {k: v for k, v in read.names.items() if v is not None} == {
        k: v for k, v in request_.names.items() if v is not None
    }


def test_unset_names_are_left_out_and_the_call_comes_first() -> None:
    code = CatalogRequest("describe", {"schema": "sales", "table": None}).to_code()
    assert code == '{"call": "describe", "schema": "sales"}'
    with_types = CatalogRequest("tables", {"schema": "x"}, ("VIEW", "TABLE")).to_code()
    assert json.loads(with_types) == {
        "call": "tables",
        "schema": "x",
        "table_types": ["VIEW", "TABLE"],
    }


def test_a_call_the_engine_does_not_know_is_refused_when_read() -> None:
    with pytest.raises(DescribedError, match="Unknown catalog call"):
        parse_request(CatalogRequest("drop_everything", {}).to_code())
