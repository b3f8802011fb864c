"""Query results on the results path: written by engines, paged by any server node.

A result is a directory ``<results>/<query id>/`` holding:
- ``data.arrow``: an Arrow IPC file, record batches in the order they arrived from Spark
  (partitions finish out of order), so the engine never holds the whole result in memory;
- ``index.json``: the batches' logical order and row counts, so a reader can find the batches
  that cover rows [offset, offset + limit) without reading anything else.

The directory is written under a temporary name and renamed into place, so a reader sees a
complete result or none. Readers memory-map the file: a page costs the rows on it. A download
reads it whole a batch at a time (``open_whole``; ``result_formats.py`` writes the files).
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa

DATA_FILE = "data.arrow"
INDEX_FILE = "index.json"


@dataclass(frozen=True)
class StoredResult:
    path: str
    row_count: int
    batch_count: int


class ResultWriter:
    """Streams record batches to ``<directory>``; ``commit`` publishes them atomically."""

    def __init__(self, directory: Path, schema: pa.Schema) -> None:
        self.directory = directory
        self._tmp = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp.mkdir(parents=True)
        self._sink = pa.OSFile(str(self._tmp / DATA_FILE), "wb")
        self._writer = pa.ipc.new_file(self._sink, schema)
        self._schema = schema
        self._rows: list[int] = []

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.schema != self._schema:
            batch = batch.cast(self._schema)
        self._writer.write_batch(batch)
        self._rows.append(batch.num_rows)

    def commit(self, order: Iterable[int] | None = None) -> StoredResult:
        """Close the file; ``order`` lists physical batch numbers in logical order."""
        self._writer.close()
        self._sink.close()
        logical = list(range(len(self._rows))) if order is None else list(order)
        if sorted(logical) != list(range(len(self._rows))):
            raise ValueError(f"batch order {logical} is not a permutation of the batches")
        index = {"order": logical, "rows": [self._rows[i] for i in logical]}
        (self._tmp / INDEX_FILE).write_text(json.dumps(index))
        shutil.rmtree(self.directory, ignore_errors=True)
        os.replace(self._tmp, self.directory)
        return StoredResult(str(self.directory), sum(self._rows), len(self._rows))

    def abort(self) -> None:
        for closable in (self._writer, self._sink):
            with contextlib.suppress(Exception):
                closable.close()
        shutil.rmtree(self._tmp, ignore_errors=True)


def read_page(path: str | Path, offset: int, limit: int) -> tuple[list[list[Any]], int]:
    """Rows [offset, offset + limit) of a stored result as JSON-ready lists, and the total."""
    batches, total = read_batches(path, offset, limit)
    rows: list[list[Any]] = []
    for batch in batches:
        rows.extend(batch_to_rows(batch))
    return rows, total


def read_batches(path: str | Path, offset: int, limit: int) -> tuple[list[pa.RecordBatch], int]:
    """Rows [offset, offset + limit) of a stored result as Arrow slices, and the total.

    Only the batches that cover the range are read; the slices share the mapped file."""
    opened = _open(Path(path))
    total = sum(opened.counts)
    slices: list[pa.RecordBatch] = []
    if limit <= 0 or offset >= total:
        return slices, total
    wanted = limit
    start = 0
    for physical, count in zip(opened.order, opened.counts, strict=True):
        end = start + count
        if end > offset and wanted > 0:
            lo = max(offset - start, 0)
            take = min(count - lo, wanted)
            with opened.lock:
                slices.append(opened.reader.get_batch(physical).slice(lo, take))
            wanted -= take
        if wanted <= 0:
            break
        start = end
    return slices, total


@dataclass
class _Opened:
    stamp: tuple[int, int]  # the index file's inode and mtime: a new result is a new file
    order: list[int]
    counts: list[int]
    reader: pa.ipc.RecordBatchFileReader
    lock: threading.Lock


# Results read page by page (a HiveServer2 client fetching 1000 rows a call, a UI paging)
# would otherwise parse the file's footer on every page: the last few stay open here. A result
# is never rewritten in place; one deleted (retention) is noticed by the stat of its index.
_OPENED: OrderedDict[str, _Opened] = OrderedDict()
_OPENED_LOCK = threading.Lock()
_OPENED_MAX = 16


def _open(directory: Path) -> _Opened:
    index_path = directory / INDEX_FILE
    status = os.stat(index_path)  # FileNotFoundError once the result is gone
    stamp = (status.st_ino, status.st_mtime_ns)
    key = str(directory)
    with _OPENED_LOCK:
        cached = _OPENED.get(key)
        if cached is not None and cached.stamp == stamp:
            _OPENED.move_to_end(key)
            return cached
    index = json.loads(index_path.read_text())
    reader = pa.ipc.open_file(pa.memory_map(str(directory / DATA_FILE)))
    opened = _Opened(stamp, index["order"], index["rows"], reader, threading.Lock())
    with _OPENED_LOCK:
        _OPENED[key] = opened
        while len(_OPENED) > _OPENED_MAX:
            _OPENED.popitem(last=False)
    return opened


class WholeResult:
    """A stored result opened to be read whole, one record batch at a time in logical order
    (a download): ``schema``, ``total`` rows, then ``batches()`` once.

    Read with plain reads, not the memory map pages use: pages of a mapped file that were
    touched count in the process's resident memory until the map is closed, so streaming a
    large result through the map would grow the node's RSS by the whole file. A read batch is
    freed once written out. The file is opened here: a result deleted while it streams (by
    retention) still reads to its end."""

    def __init__(self, directory: Path) -> None:
        index = json.loads((directory / INDEX_FILE).read_text())
        self._order: list[int] = index["order"]
        self.total: int = sum(index["rows"])
        self._source = pa.OSFile(str(directory / DATA_FILE))
        try:
            self._reader = pa.ipc.open_file(self._source)
        except BaseException:
            self._source.close()
            raise
        self.schema: pa.Schema = self._reader.schema

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Every batch in logical order; the file is closed at the end (or when dropped)."""
        try:
            for physical in self._order:
                yield self._reader.get_batch(physical)
        finally:
            self.close()

    def close(self) -> None:
        self._source.close()


def open_whole(path: str | Path) -> WholeResult:
    """A stored result to read whole (FileNotFoundError once it is gone)."""
    return WholeResult(Path(path))


def delete(path: str | Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def batch_to_rows(batch: pa.RecordBatch) -> list[list[Any]]:
    columns = [_column_to_json(column) for column in batch.columns]
    return [list(row) for row in zip(*columns, strict=True)] if columns else []


_PLAIN_TYPES = (pa.types.is_integer, pa.types.is_string, pa.types.is_boolean)


def _column_to_json(column: pa.Array) -> list[Any]:
    values: list[Any] = column.to_pylist()
    if any(check(column.type) for check in _PLAIN_TYPES) or pa.types.is_large_string(column.type):
        return values  # already JSON values; skip the per-value walk
    return [to_json_value(v) for v in values]


def to_json_value(value: Any) -> Any:
    """A Python value from Arrow as JSON: exact decimals as strings, times as ISO 8601,
    binary as base64, maps with string keys as objects (else as [key, value] pairs)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            if all(isinstance(k, str) for k, _ in value):
                return {k: to_json_value(v) for k, v in value}
            return [[to_json_value(k), to_json_value(v)] for k, v in value]
        return [to_json_value(item) for item in value]
    return str(value)
