"""Loading a file into a table (``sparkgate load``, ``POST /v1/tables/{name}/data``): what the
node and the engine agree on (pure, no PySpark).

The node streams the uploaded bytes into a file of its own under ``uploads_dir`` and queues a
``load`` statement whose code is a ``LoadRequest`` as JSON; the engine that runs it reads the
file with Spark as the uploader (``tables.loader``) and deletes it. A file an upload or a load
left behind (a node or engine died) is removed by the results duty after a day.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

from sparkgate.errors import InvalidRequest
from sparkgate.store.table_access import TableName
from sparkgate.tables.plan import SESSION_CATALOG


class LoadFormat(StrEnum):
    CSV = "csv"
    PARQUET = "parquet"
    JSON = "json"  # JSON lines, one object per line, as Spark reads it


class LoadMode(StrEnum):
    CREATE = "create"  # a new table; an existing one is an error
    APPEND = "append"  # rows added to an existing table
    OVERWRITE = "overwrite"  # an existing table's rows replaced


# schema.table or table (in `default`), each part a plain identifier or a backquoted one.
_PART = r"(?:[A-Za-z_][A-Za-z0-9_]*|`(?:[^`]|``)+`)"
_NAME = re.compile(rf"^({_PART})(?:\.({_PART}))?$")
# Spark ignores files whose names start with _ or . : an upload's name never does.
_UPLOAD_NAME = re.compile(r"^upload-[0-9a-f]{32}\.(csv|parquet|json)$")
ORPHAN_AGE = 24 * 3600.0  # an upload file untouched this long is left over: removed


def parse_table_name(text: str) -> TableName:
    """``sales.orders``, ``orders`` (schema ``default``) or backquoted parts; anything else is
    refused naming the parameter."""
    found = _NAME.match(text.strip())
    if found is None:
        raise InvalidRequest(
            f"name: {text!r} is not a table name: write schema.table or table, each part a "
            "letter or _ then letters, digits or _ (or a part in backquotes).",
            field="name",
        )
    first, second = (_unquote(p) if p else None for p in found.groups())
    assert first is not None
    schema, table = ("default", first) if second is None else (first, second)
    return TableName.of(SESSION_CATALOG, schema, table)


def quoted(name: TableName) -> str:
    """``schema.table`` as SQL, each part in backquotes."""
    return f"{_quote(name.schema)}.{_quote(name.table)}"


@dataclass(frozen=True)
class LoadRequest:
    """A load, as the node queues it and the engine runs it."""

    path: str  # the uploaded file, under uploads_dir
    table: str  # schema.table, quoted as needed
    format: LoadFormat
    mode: LoadMode
    header: bool  # CSV: the first line names the columns
    schema: str | None  # "a INT, b STRING"; None: inferred (create) or the table's (else)
    size: int  # bytes uploaded
    filename: str | None = None  # the client's name for the file, shown in the query's code

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LoadRequest:
        raw = json.loads(text)
        return cls(
            path=str(raw["path"]),
            table=str(raw["table"]),
            format=LoadFormat(raw["format"]),
            mode=LoadMode(raw["mode"]),
            header=bool(raw["header"]),
            schema=raw.get("schema"),
            size=int(raw["size"]),
            filename=raw.get("filename"),
        )


def new_upload_path(root: Path, fmt: LoadFormat) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return root / f"upload-{uuid.uuid4().hex}.{fmt.value}"


def remove_orphans(root: Path, *, now: float | None = None) -> list[str]:
    """Remove upload files nobody has written or read for ``ORPHAN_AGE``: what a node that died
    while receiving, or an engine that died while loading, left behind. The names removed."""
    if not root.is_dir():
        return []
    cutoff = (time.time() if now is None else now) - ORPHAN_AGE
    removed = []
    with os.scandir(root) as entries:
        for entry in entries:
            if _UPLOAD_NAME.match(entry.name) and entry.stat().st_mtime < cutoff:
                Path(entry.path).unlink(missing_ok=True)
                removed.append(entry.name)
    return sorted(removed)


def _quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def _unquote(part: str) -> str:
    return part[1:-1].replace("``", "`") if part.startswith("`") else part
