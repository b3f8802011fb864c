"""The calls on sessions and queries: start, list and end sessions; submit, wait for,
page through, download and cancel queries. The SQL work of the client, the part most callers use.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from sparkgate.client._params import given, idempotency, paging, poll
from sparkgate.client.transport import Transport
from sparkgate.schemas.queries import (
    Query,
    QueryList,
    ResultPage,
    Session,
    SessionList,
    Submitted,
    read_submitted,
)

FINAL_STATES = frozenset({"success", "failed", "cancelled"})


class QueryCalls(Transport):
    """Sessions and queries."""

    # sessions
    def create_session(
        self,
        kind: str = "interactive",
        *,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> Session:
        """Start a session; sent with ``idempotency_key`` (a fresh one if none is given), so
        that a retry after a lost answer answers the session made, not a second one."""
        body = {"kind": kind, "conf": conf or {}, **given(name=name)}
        headers = idempotency(idempotency_key)
        answer = self._call("POST", "/v1/sessions", json=body, headers=headers, idempotent=True)
        return Session.read(answer)

    def session(self, session_id: int) -> Session:
        return Session.read(self._call("GET", f"/v1/sessions/{session_id}"))

    def sessions(
        self,
        *,
        state: list[str] | None = None,
        offset: int = 0,
        limit: int = 100,
        after: str | None = None,
        total: bool | None = None,
        one_off: bool = False,
    ) -> SessionList:
        """A page of sessions, oldest first; the next one is ``sessions(after=page.next)``
        (``next`` is None on the last page). ``one_off``: one-off queries' sessions too."""
        params = paging(
            offset, limit, after, total, state=state or None, one_off="true" if one_off else None
        )
        return SessionList.read(self._call("GET", "/v1/sessions", params=params))

    def kill_session(self, session_id: int) -> Session:
        return Session.read(self._call("DELETE", f"/v1/sessions/{session_id}"))

    def wait_session(self, session_id: int, states: set[str], timeout: float = 300) -> Session:
        """Poll until the session is in one of ``states`` (sessions have no long poll)."""
        return poll(lambda: self.session(session_id), lambda s: s.state in states, timeout, 0.2)

    # queries
    def submit(
        self,
        query: str,
        *,
        session_id: int | None = None,
        isolation: str | None = None,
        conf: dict[str, str] | None = None,
        wait: float = 0,
        limit: int | None = None,
        idempotency_key: str | None = None,
        tags: dict[str, str] | None = None,
        reuse: bool = True,
    ) -> Submitted:
        """Queue a query in a session, or (no session) as a one-off query; ``isolation``
        ``"engine"`` (or driver settings in ``conf``) gives a one-off query its own engine.
        With ``wait``, the answer comes when the query is final (or ``wait`` seconds pass):
        the whole query, and its first result page as ``page`` (``limit`` rows) if it
        succeeded. Sent with ``idempotency_key`` (a fresh one if none is given): a retry, on
        this node or another, after an answer was lost, answers the query made, not a second
        one. ``tags`` are kept with the query (usage sums by them, resource groups match
        them). ``reuse=False``: run it even if an earlier result could answer it."""
        body = {
            "query": query,
            **given(
                session_id=session_id, isolation=isolation, conf=conf or None, tags=tags or None
            ),
        }
        params = given(wait=wait or None, limit=limit, reuse=None if reuse else "false")
        # The server holds a waiting submit up to ``wait`` seconds: the read must outlast it.
        timeout = httpx.Timeout(wait + 30) if wait else None
        answer = self._call(
            "POST",
            "/v1/queries",
            json=body,
            params=params,
            timeout=timeout,
            headers=idempotency(idempotency_key),
            idempotent=True,
        )
        return read_submitted(answer)

    def query(self, query_id: int, *, wait: float = 0) -> Query:
        params = given(wait=wait or None)
        timeout = httpx.Timeout(self._http.timeout.read or 30.0) if not wait else wait + 30
        answer = self._call("GET", f"/v1/queries/{query_id}", params=params, timeout=timeout)
        return Query.read(answer)

    def wait(self, query_id: int, timeout: float = 600, *, step: float = 30) -> Query:
        """Long-poll until the query is final (or ``timeout`` passes); the query."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            query = self.query(query_id, wait=max(min(step, remaining), 0.001))
            if query.state in FINAL_STATES or remaining <= 0:
                return query

    def queries(
        self,
        *,
        session_id: int | None = None,
        state: list[str] | None = None,
        search: str | None = None,
        offset: int = 0,
        limit: int = 100,
        after: str | None = None,
        total: bool | None = None,
    ) -> QueryList:
        """A page of queries, newest first; the next one is ``queries(after=page.next)``
        (``next`` is None on the last page; ``total`` is counted for a first page only, unless
        ``total=True``); ``search``: only those whose text holds it (any case)."""
        params = paging(
            offset,
            limit,
            after,
            total,
            session_id=session_id,
            state=state or None,
            q=search or None,
        )
        return QueryList.read(self._call("GET", "/v1/queries", params=params))

    def result(self, query_id: int, *, offset: int = 0, limit: int = 1000) -> ResultPage:
        params = {"offset": offset, "limit": limit}
        return ResultPage.read(self._call("GET", f"/v1/queries/{query_id}/result", params=params))

    def rows(self, query_id: int, *, page: int = 10_000) -> Iterator[list[Any]]:
        """Every row of a result, fetched a page at a time."""
        offset = 0
        while True:
            chunk = self.result(query_id, offset=offset, limit=page)
            yield from chunk.rows
            offset += len(chunk.rows)
            if not chunk.rows or offset >= chunk.total:
                return

    def download(
        self,
        query_id: int,
        path: str | os.PathLike[str],
        *,
        format: str | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> Downloaded:
        """The whole result written to the file ``path``, as it streams (never held in
        memory): ``format`` csv, jsonl, parquet or arrow (by default from the file's
        extension). ``progress`` is called with the bytes written so far. A failed download
        leaves no file."""
        file = Path(path)
        fmt = format or download_format_of(file)
        written = 0
        partial = file.with_name(file.name + ".part")
        try:
            with (
                self._stream(f"/v1/queries/{query_id}/result", params={"format": fmt}) as answer,
                partial.open("wb") as sink,
            ):
                for chunk in answer.iter_bytes():
                    sink.write(chunk)
                    written += len(chunk)
                    if progress is not None:
                        progress(written)
                rows = answer.headers.get("result-rows")
            partial.replace(file)
        finally:
            partial.unlink(missing_ok=True)
        return Downloaded(file, fmt, written, int(rows) if rows and rows.isdigit() else None)

    def cancel(self, query_id: int) -> Query:
        return Query.read(self._call("POST", f"/v1/queries/{query_id}/cancel", idempotent=True))


@dataclass(frozen=True)
class Downloaded:
    """A result written to a file: where, in which format, its size and rows."""

    path: Path
    format: str
    bytes: int
    rows: int | None  # as the server counted them (None from a server that does not say)


_DOWNLOAD_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
_DOWNLOAD_FORMATS.update({".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow"})


def download_format_of(path: Path) -> str:
    """A download's format by the file's extension; ValueError when it says none."""
    found = _DOWNLOAD_FORMATS.get(path.suffix.lower())
    if found is None:
        raise ValueError(
            f"cannot tell a format from the name {path.name}: end it in .csv, .jsonl, .parquet "
            "or .arrow, or give the format"
        )
    return found
