"""A stored result as a file: read whole in its logical order, written a batch at a time in
each format, and read back by pyarrow's readers (the end-to-end test compares them with the
JSON pages on a real server)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from sparkgate import result_formats
from sparkgate.result_formats import ResultFormat, encode
from sparkgate.results import ResultWriter, delete, open_whole

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _batch(start: int, count: int) -> pa.RecordBatch:
    ids = list(range(start, start + count))
    return pa.RecordBatch.from_arrays(
        [pa.array(ids), pa.array([f"n{i}" for i in ids])], schema=SCHEMA
    )


def _stored(directory: Path) -> str:
    """30 rows in three batches that arrived as 20-29, 0-9, 10-19."""
    writer = ResultWriter(directory, SCHEMA)
    for start in (20, 0, 10):
        writer.write(_batch(start, 10))
    return writer.commit(order=[1, 2, 0]).path


def _read(fmt: ResultFormat, data: bytes) -> pa.Table:
    if fmt is ResultFormat.CSV:
        return pa_csv.read_csv(io.BytesIO(data))
    if fmt is ResultFormat.JSONL:
        return pa.Table.from_pylist([json.loads(line) for line in data.splitlines()], SCHEMA)
    if fmt is ResultFormat.PARQUET:
        return pq.read_table(io.BytesIO(data))
    return pa.ipc.open_file(data).read_all()


@pytest.mark.parametrize("fmt", list(ResultFormat))
def test_a_result_is_written_whole_in_its_logical_order(tmp_path: Path, fmt: ResultFormat) -> None:
    whole = open_whole(_stored(tmp_path / "1"))
    assert whole.total == 30
    chunks = list(encode(fmt, whole.schema, whole.batches()))
    table = _read(fmt, b"".join(chunks))
    assert table.column("id").to_pylist() == list(range(30))
    assert table.column("name").to_pylist() == [f"n{i}" for i in range(30)]
    if fmt is not ResultFormat.PARQUET:  # (Parquet: a chunk per row group, below)
        assert len(chunks) > 1  # written as it goes, not at the end


@pytest.mark.parametrize("fmt", list(ResultFormat))
def test_no_rows_is_a_file_with_the_columns(fmt: ResultFormat) -> None:
    data = b"".join(encode(fmt, SCHEMA, []))
    if fmt is ResultFormat.JSONL:
        assert data == b""
        return
    table = _read(fmt, data)
    assert table.num_rows == 0 and table.column_names == ["id", "name"]


def test_parquet_row_groups_gather_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(result_formats, "PARQUET_ROW_GROUP_ROWS", 20)
    whole = open_whole(_stored(tmp_path / "2"))
    chunks = list(encode(ResultFormat.PARQUET, whole.schema, whole.batches()))
    assert len(chunks) == 2  # the first group as soon as it is full; the last and the footer
    data = b"".join(chunks)
    groups = pq.ParquetFile(io.BytesIO(data)).metadata
    assert [groups.row_group(i).num_rows for i in range(groups.num_row_groups)] == [20, 10]


def test_a_result_deleted_while_it_streams_reads_to_its_end(tmp_path: Path) -> None:
    path = _stored(tmp_path / "3")
    whole = open_whole(path)
    delete(path)
    assert sum(b.num_rows for b in whole.batches()) == 30
    with pytest.raises(FileNotFoundError):
        open_whole(path)
