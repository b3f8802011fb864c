"""The calls on the catalog: the tables and views you may see, one described, and loading a
local file into a table (streamed, so the file is never held in memory whole).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import httpx

from sparkgate.client._params import given
from sparkgate.client.transport import Transport
from sparkgate.schemas.queries import Submitted, read_submitted
from sparkgate.schemas.tables import CatalogListing, TableDetail


class TableCalls(Transport):
    """The catalog, and loads into it."""

    def tables(self, schema: str | None = None, *, timeout: float = 300) -> CatalogListing:
        """The schemas, and in each the tables and views you may see (``schema``: one). Read
        by a query run as you, which may wait for an engine to start: hence ``timeout``."""
        params = given(schema=schema)
        return CatalogListing.read(self._call("GET", "/v1/tables", params=params, timeout=timeout))

    def table(self, name: str, *, timeout: float = 300) -> TableDetail:
        """A table or view (``schema.table``) as you may see it: columns, owner, size, last
        change, first rows, recent queries."""
        path = f"/v1/tables/{quote(name, safe='')}"
        return TableDetail.read(self._call("GET", path, timeout=timeout))

    def load(
        self,
        path: str | os.PathLike[str],
        table: str,
        *,
        format: str | None = None,
        mode: str = "create",
        header: bool = False,
        schema: str | None = None,
        wait: float = 0,
        progress: Callable[[int], None] | None = None,
        chunk_bytes: int = 1 << 20,
        tags: dict[str, str] | None = None,
    ) -> Submitted:
        """Load a local file into ``table`` (``schema.table``), streamed: ``format`` csv,
        parquet or json (by default from the file's extension), ``mode`` create, append or
        overwrite. The load runs as a one-off query; the answer is that query (with ``wait``,
        when it is final). ``progress`` is called with the bytes sent so far; ``tags`` are
        kept with the load's query."""
        file = Path(path)
        size = file.stat().st_size

        def chunks() -> Iterator[bytes]:
            sent = 0
            with file.open("rb") as body:
                while chunk := body.read(chunk_bytes):
                    yield chunk
                    sent += len(chunk)
                    if progress is not None:
                        progress(sent)

        params = given(
            format=format or format_of(file),
            mode=mode,
            header="true" if header else None,
            schema=schema,
            filename=file.name,
            tag=[f"{key}={value}" for key, value in (tags or {}).items()] or None,
            wait=wait or None,
        )
        answer = self._call(
            "POST",
            f"/v1/tables/{quote(table, safe='')}/data",
            params=params,
            content=chunks(),
            headers={"content-type": "application/octet-stream", "content-length": str(size)},
            timeout=httpx.Timeout(wait + 30) if wait else None,
        )
        return read_submitted(answer)


_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}
_FORMATS.update({".jsonl": "json", ".ndjson": "json"})


def format_of(path: Path) -> str:
    """A file's load format by its extension; ValueError when it says none."""
    found = _FORMATS.get(path.suffix.lower())
    if found is None:
        raise ValueError(
            f"cannot tell the format of {path.name} from its extension: give one of "
            "csv, parquet, json"
        )
    return found
