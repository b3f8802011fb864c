"""A stored result as a file to download: CSV, JSON lines, Parquet or Arrow, written a record
batch at a time so that a result of any size streams in the memory of a batch or two.

``encode(format, schema, batches)`` yields the file's bytes as each batch is written; the
route sends them as they come. Values read the same as in the JSON pages where a format has
no type of its own for them: JSON lines renders every value as the pages do
(``results.to_json_value``), CSV renders binary as base64 and arrays, maps and structs as
JSON text; Parquet and Arrow keep the stored Arrow types.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from sparkgate.results import batch_to_rows, to_json_value


class ResultFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"
    PARQUET = "parquet"
    ARROW = "arrow"


@dataclass(frozen=True)
class FileKind:
    media_type: str
    extension: str


FILE_KINDS = {
    ResultFormat.CSV: FileKind("text/csv; charset=utf-8", "csv"),
    ResultFormat.JSONL: FileKind("application/x-ndjson", "jsonl"),
    ResultFormat.PARQUET: FileKind("application/vnd.apache.parquet", "parquet"),
    # The IPC file format (a footer indexing the batches), as ``.arrow`` files conventionally
    # are: readable with random access by pyarrow, Polars, DuckDB.
    ResultFormat.ARROW: FileKind("application/vnd.apache.arrow.file", "arrow"),
}

# Parquet row groups of up to this many rows or Arrow bytes: a stored batch (Spark's 10,000
# rows) is too small a row group to read well, and the writer holds a group's rows and their
# encodings (dictionaries) until it is written: 64K rows of four columns cost ~30 MB of RSS
# while written, 128K ~80 MB (measured, 3 million rows).
PARQUET_ROW_GROUP_ROWS = 64 * 1024
PARQUET_ROW_GROUP_BYTES = 16 << 20


def encode(
    format: ResultFormat, schema: pa.Schema, batches: Iterable[pa.RecordBatch]
) -> Iterator[bytes]:
    """The bytes of ``batches`` (all of ``schema``) as a ``format`` file, a chunk per batch
    (per row group for Parquet); an empty result is a file with the columns and no rows."""
    writers = {
        ResultFormat.CSV: _csv,
        ResultFormat.JSONL: _jsonl,
        ResultFormat.PARQUET: _parquet,
        ResultFormat.ARROW: _arrow,
    }
    for chunk in writers[format](schema, batches):
        if chunk:
            yield chunk


class _Chunks:
    """A write-only file object that keeps what was written until it is taken: the sink of
    Arrow's writers, emptied after each batch."""

    closed = False

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._position = 0

    def write(self, data: bytes | memoryview) -> int:
        part = bytes(data)
        self._parts.append(part)
        self._position += len(part)
        return len(part)

    def take(self) -> bytes:
        taken = b"".join(self._parts)
        self._parts.clear()
        return taken

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False


def _arrow(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    sink = _Chunks()
    with pa.ipc.new_file(pa.PythonFile(sink, mode="w"), schema) as writer:
        yield sink.take()
        for batch in batches:
            writer.write_batch(batch)
            yield sink.take()
    yield sink.take()  # the footer


def _parquet(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    sink = _Chunks()
    with pq.ParquetWriter(pa.PythonFile(sink, mode="w"), schema) as writer:
        group: list[pa.RecordBatch] = []
        rows = size = 0
        for batch in batches:
            group.append(batch)
            rows += batch.num_rows
            size += batch.nbytes
            if rows >= PARQUET_ROW_GROUP_ROWS or size >= PARQUET_ROW_GROUP_BYTES:
                writer.write_table(pa.Table.from_batches(group, schema), row_group_size=rows)
                group, rows, size = [], 0, 0
                yield sink.take()
        if group:
            writer.write_table(pa.Table.from_batches(group, schema), row_group_size=rows)
    yield sink.take()  # the last group and the footer


def _jsonl(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    names = schema.names
    compact = (",", ":")
    for batch in batches:
        lines = [
            json.dumps(dict(zip(names, row, strict=True)), ensure_ascii=False, separators=compact)
            for row in batch_to_rows(batch)
        ]
        yield ("\n".join(lines) + "\n").encode() if lines else b""


def _csv(schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> Iterator[bytes]:
    textual = [i for i, field in enumerate(schema) if not _csv_writes(field.type)]
    fields = [pa.field(f.name, pa.string()) if i in textual else f for i, f in enumerate(schema)]
    csv_schema = pa.schema(fields)
    sink = _Chunks()
    with pa_csv.CSVWriter(pa.PythonFile(sink, mode="w"), csv_schema) as writer:
        yield sink.take()  # the header, even for no rows
        for batch in batches:
            if textual:
                columns = [_as_text(c) if i in textual else c for i, c in enumerate(batch.columns)]
                writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=csv_schema))
            else:
                writer.write_batch(batch)
            yield sink.take()
    yield sink.take()


def _csv_writes(kind: pa.DataType) -> bool:
    """Whether Arrow's CSV writer renders ``kind`` as text a reader takes back: not binary
    (written raw) nor nested types (refused)."""
    return not (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or pa.types.is_nested(kind)
        or pa.types.is_duration(kind)
    )


def _as_text(column: pa.Array) -> pa.Array:
    """A column as the JSON pages render its values, as text (base64 for binary, JSON for
    arrays, maps and structs)."""
    texts: list[str | None] = []
    for value in column.to_pylist():
        rendered = to_json_value(value)
        if rendered is None or isinstance(rendered, str):
            texts.append(rendered)
        else:
            texts.append(json.dumps(rendered, ensure_ascii=False))
    return pa.array(texts, pa.string())
