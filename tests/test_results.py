"""Results files: batches stored out of order are read back in order, a page at a time."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from sparkgate.results import ResultWriter, delete, read_page, to_json_value

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _batch(start: int, count: int) -> pa.RecordBatch:
    ids = list(range(start, start + count))
    return pa.RecordBatch.from_arrays(
        [pa.array(ids), pa.array([f"n{i}" for i in ids])], schema=SCHEMA
    )


def test_out_of_order_batches_read_back_in_order(tmp_path: Path) -> None:
    writer = ResultWriter(tmp_path / "7", SCHEMA)
    # partitions 2, 0, 1 arrive in that order; the JVM then says the logical order is 1, 2, 0
    writer.write(_batch(20, 10))
    writer.write(_batch(0, 10))
    writer.write(_batch(10, 10))
    stored = writer.commit(order=[1, 2, 0])
    assert stored.row_count == 30 and stored.batch_count == 3
    rows, total = read_page(stored.path, 0, 100)
    assert total == 30 and [r[0] for r in rows] == list(range(30))
    rows, _ = read_page(stored.path, 8, 5)  # a page across a batch boundary
    assert rows == [[i, f"n{i}"] for i in range(8, 13)]
    assert read_page(stored.path, 30, 10) == ([], 30)
    assert read_page(stored.path, 5, 0) == ([], 30)


def test_a_deleted_result_is_gone_even_after_reads(tmp_path: Path) -> None:
    """Open results are kept for the next page; a deleted one must not be served from there."""
    writer = ResultWriter(tmp_path / "9", SCHEMA)
    writer.write(_batch(0, 5))
    stored = writer.commit()
    assert read_page(stored.path, 0, 2)[0] == [[0, "n0"], [1, "n1"]]
    assert read_page(stored.path, 2, 2)[0] == [[2, "n2"], [3, "n3"]]
    delete(stored.path)
    with pytest.raises(FileNotFoundError):
        read_page(stored.path, 0, 2)


def test_result_appears_only_when_committed(tmp_path: Path) -> None:
    target = tmp_path / "8"
    writer = ResultWriter(target, SCHEMA)
    writer.write(_batch(0, 5))
    assert not target.exists()
    writer.abort()
    assert not target.exists() and not any(tmp_path.iterdir())


def test_bad_order_is_refused(tmp_path: Path) -> None:
    writer = ResultWriter(tmp_path / "9", SCHEMA)
    writer.write(_batch(0, 1))
    with pytest.raises(ValueError, match="permutation"):
        writer.commit(order=[1])


def test_empty_result(tmp_path: Path) -> None:
    stored = ResultWriter(tmp_path / "10", SCHEMA).commit()
    assert stored.row_count == 0
    assert read_page(stored.path, 0, 10) == ([], 0)


def test_values_become_json() -> None:
    values = [
        Decimal("12.30"),
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        date(2026, 1, 2),
        b"\x00\x01",
        float("nan"),
        [("a", 1), ("b", None)],
        [(1, "x")],
        {"nested": [Decimal("1.5")]},
    ]
    converted = [to_json_value(v) for v in values]
    assert converted == [
        "12.30",
        "2026-01-02T03:04:05+00:00",
        "2026-01-02",
        "AAE=",
        "nan",
        {"a": 1, "b": None},
        [[1, "x"]],
        {"nested": ["1.5"]},
    ]
    json.dumps(converted, allow_nan=False)
