"""A small Python client for sparkgate's native API.

with Client("http://127.0.0.1:8998") as sg:
    query = sg.submit("SELECT 1 AS one")
    done = sg.wait(query["id"])
    page = sg.result(query["id"])

Several nodes (``Client("http://a:8998,http://b:8998")`` or a list, and ``--server`` /
``SPARKGATE_SERVER`` in the CLI the same way): calls go to one node until it cannot answer,
then to the next, as libpq's multi-host URLs do. A node that cannot answer is one that refuses
the connection, or answers 503 (it cannot reach the store: nothing was done); a request that
reached a node which died before answering is sent again elsewhere only when that is safe:
reads, deletes and cancels, and submits (queries and sessions), which carry an
``Idempotency-Key`` (a fresh one per submit, the same on each of its retries), so that the
node that answers a retry answers the query the first attempt made, if it was made, instead
of running it twice. Other POSTs (stream jobs, deploys, job runs) are not sent twice.
``patience`` seconds (0 by default) go on trying when every node failed, honouring
``Retry-After``.

Credentials, first found wins: ``token=`` or ``user=``/``password=``; ``SPARKGATE_TOKEN``;
``SPARKGATE_USER`` with ``SPARKGATE_PASSWORD``; the token ``sparkgate login`` stored for the
server. A token is sent as ``Authorization: Bearer``, a user and password as Basic.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from sparkgate import credentials

DEFAULT_SERVER = "http://127.0.0.1:8998"
FINAL_STATES = frozenset({"success", "failed", "cancelled"})
# Requests that may be sent twice with the effect of once (RFC 9110's idempotent methods).
_IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
PERSONAL_TOKEN_PREFIX = "sgp_"


class ClientError(Exception):
    """An error answer from the server (or no answer at all)."""

    def __init__(self, status: int, code: str, message: str, body: Any = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body


class BearerAuth(httpx.Auth):
    def __init__(self, token: str) -> None:
        self.personal = token.startswith(PERSONAL_TOKEN_PREFIX)
        self._header = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request


class Client:
    def __init__(
        self,
        server: str | Sequence[str] = DEFAULT_SERVER,
        *,
        timeout: float = 30.0,
        user: str | None = None,
        password: str | None = None,
        token: str | None = None,
        transport: httpx.BaseTransport | None = None,
        patience: float = 0.0,
    ) -> None:
        self.servers = servers_of(server)
        self.server = self.servers[0]  # the node calls go to, until it cannot answer
        self.patience = patience
        key = ",".join(self.servers)  # what `sparkgate login --server` stored the token under
        auth, self.auth_source, self.auth_user = _credentials(key, user, password, token)
        # The server refuses to create tokens with a token: callers ask for a password then.
        self.uses_personal_token = isinstance(auth, BearerAuth) and auth.personal
        self._http = httpx.Client(timeout=timeout, auth=auth, transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        timeout: float | httpx.Timeout | None = None,
        idempotent: bool | None = None,
        headers: Mapping[str, str] | None = None,
        content: Iterator[bytes] | None = None,
    ) -> dict[str, Any]:
        """The one way every call goes: ``method path`` with its query ``params`` and JSON
        body, to the current node or, when it cannot answer, the next ones; the JSON object
        the server answered, or a ``ClientError``. ``timeout`` replaces the client's own for
        calls the server holds (long polls, waits); ``idempotent`` marks a POST that may be
        sent twice (a cancel, a submit with its Idempotency-Key in ``headers``), where the
        method alone would say no."""
        safe = method in _IDEMPOTENT if idempotent is None else idempotent
        # params=None and json=None are httpx's own defaults (no query, no body), but its
        # timeout=None means no timeout at all: so a timeout is only passed when one is set.
        options: dict[str, Any] = {"params": params, "json": json, "headers": headers}
        if content is not None:  # a streamed body: read once, so never sent twice
            options["content"] = content
            safe = False
        if timeout is not None:
            options["timeout"] = timeout
        deadline = time.monotonic() + self.patience
        last: ClientError | None = None
        while True:
            start = self.servers.index(self.server)
            pause = 0.5
            for server in self.servers[start:] + self.servers[:start]:
                try:
                    body = self._send(server, method, path, safe=safe, **options)
                except _NodeCannotAnswer as exc:
                    last, pause = exc.error, exc.retry_after or pause
                    continue
                self.server = server
                # Every endpoint answers an object; the body is not checked at run time, so a
                # reply that is not one still reaches the caller as it came.
                result: dict[str, Any] = body
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                assert last is not None  # there is at least one server, and every one failed
                raise last
            time.sleep(min(pause, remaining))

    def _send(self, server: str, method: str, path: str, *, safe: bool, **options: Any) -> Any:
        """One request to one node: its decoded JSON answer (None when it is not JSON), a
        ``ClientError``, or ``_NodeCannotAnswer`` when another node may take the request."""
        try:
            response = self._http.request(method, server + path, **options)
        except httpx.TransportError as exc:
            unreachable = ClientError(0, "UNREACHABLE", f"cannot reach {server}: {exc}")
            # Refused or never connected: the request was not sent, so any node may take it.
            if safe or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                raise _NodeCannotAnswer(unreachable) from exc
            raise unreachable from exc
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_error:
            error = body.get("error", {}) if isinstance(body, dict) else {}
            failure = ClientError(
                response.status_code,
                error.get("code", f"HTTP_{response.status_code}"),
                error.get("message", response.text),
                body,
            )
            # 503: the node did nothing (its store is out of reach, or it is going away);
            # a load balancer's 502 and 504 say nothing of whether the request was taken.
            if response.status_code == 503 or (safe and response.status_code in {502, 504}):
                raise _NodeCannotAnswer(failure, _retry_after(response))
            raise failure
        return body

    # sessions
    def create_session(
        self,
        kind: str = "interactive",
        *,
        name: str | None = None,
        conf: dict[str, str] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Start a session; sent with ``idempotency_key`` (a fresh one if none is given), so
        that a retry after a lost answer answers the session made, not a second one."""
        body = {"kind": kind, "conf": conf or {}, **_given(name=name)}
        headers = _idempotency(idempotency_key)
        return self._call("POST", "/v1/sessions", json=body, headers=headers, idempotent=True)

    def session(self, session_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/sessions/{session_id}")

    def sessions(
        self,
        *,
        state: list[str] | None = None,
        offset: int = 0,
        limit: int = 100,
        after: str | None = None,
        total: bool | None = None,
        one_off: bool = False,
    ) -> dict[str, Any]:
        """A page of sessions, oldest first; the next one is ``sessions(after=page["next"])``
        (``next`` is None on the last page). ``one_off``: one-off queries' sessions too."""
        params = _paging(
            offset, limit, after, total, state=state or None, one_off="true" if one_off else None
        )
        return self._call("GET", "/v1/sessions", params=params)

    def kill_session(self, session_id: int) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/sessions/{session_id}")

    def wait_session(
        self, session_id: int, states: set[str], timeout: float = 300
    ) -> dict[str, Any]:
        """Poll until the session is in one of ``states`` (sessions have no long poll)."""
        deadline = time.monotonic() + timeout
        while True:
            session = self.session(session_id)
            if session["state"] in states or time.monotonic() > deadline:
                return session
            time.sleep(0.2)

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
    ) -> dict[str, Any]:
        """Queue a query in a session, or (no session) as a one-off query; ``isolation``
        ``"engine"`` (or driver settings in ``conf``) gives a one-off query its own engine.
        With ``wait``, the answer comes when the query is final (or ``wait`` seconds pass):
        the whole query, and its first result page as ``page`` (``limit`` rows) if it
        succeeded. Sent with ``idempotency_key`` (a fresh one if none is given): a retry, on
        this node or another, after an answer was lost, answers the query made, not a second
        one."""
        body = {
            "query": query,
            **_given(session_id=session_id, isolation=isolation, conf=conf or None),
        }
        params = _given(wait=wait or None, limit=limit)
        # The server holds a waiting submit up to ``wait`` seconds: the read must outlast it.
        timeout = httpx.Timeout(wait + 30) if wait else None
        return self._call(
            "POST",
            "/v1/queries",
            json=body,
            params=params,
            timeout=timeout,
            headers=_idempotency(idempotency_key),
            idempotent=True,
        )

    def query(self, query_id: int, *, wait: float = 0) -> dict[str, Any]:
        params = _given(wait=wait or None)
        timeout = httpx.Timeout(self._http.timeout.read or 30.0) if not wait else wait + 30
        return self._call("GET", f"/v1/queries/{query_id}", params=params, timeout=timeout)

    def wait(self, query_id: int, timeout: float = 600, *, step: float = 30) -> dict[str, Any]:
        """Long-poll until the query is final (or ``timeout`` passes); the query."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            query = self.query(query_id, wait=max(min(step, remaining), 0.001))
            if query["state"] in FINAL_STATES or remaining <= 0:
                return query

    def queries(
        self,
        *,
        session_id: int | None = None,
        state: list[str] | None = None,
        offset: int = 0,
        limit: int = 100,
        after: str | None = None,
        total: bool | None = None,
    ) -> dict[str, Any]:
        """A page of queries, newest first; the next one is ``queries(after=page["next"])``
        (``next`` is None on the last page; ``total`` is counted for a first page only, unless
        ``total=True``)."""
        params = _paging(offset, limit, after, total, session_id=session_id, state=state or None)
        return self._call("GET", "/v1/queries", params=params)

    def result(self, query_id: int, *, offset: int = 0, limit: int = 1000) -> dict[str, Any]:
        return self._call(
            "GET", f"/v1/queries/{query_id}/result", params={"offset": offset, "limit": limit}
        )

    def rows(self, query_id: int, *, page: int = 10_000) -> Iterator[list[Any]]:
        """Every row of a result, fetched a page at a time."""
        offset = 0
        while True:
            chunk = self.result(query_id, offset=offset, limit=page)
            yield from chunk["rows"]
            offset += len(chunk["rows"])
            if not chunk["rows"] or offset >= chunk["total"]:
                return

    def cancel(self, query_id: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/queries/{query_id}/cancel", idempotent=True)

    # stream jobs
    def create_stream(
        self,
        name: str,
        sql: str,
        *,
        conf: dict[str, str] | None = None,
        checkpoint_root: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "name": name,
            "sql": sql,
            "conf": conf or {},
            **_given(checkpoint_root=checkpoint_root),
        }
        return self._call("POST", "/v1/streams", json=body)

    def streams(
        self, *, state: list[str] | None = None, limit: int = 100, after: str | None = None
    ) -> dict[str, Any]:
        params = _paging(0, limit, after, None, state=state or None)
        return self._call("GET", "/v1/streams", params=params)

    def stream(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/streams/{name}")

    def stop_stream(self, name: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/streams/{name}/stop")

    def start_stream(self, name: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/streams/{name}/start")

    def delete_stream(self, name: str, *, keep_checkpoints: bool = False) -> dict[str, Any]:
        params = {"keep_checkpoints": "true"} if keep_checkpoints else {}
        return self._call("DELETE", f"/v1/streams/{name}", params=params)

    def wait_stream(self, name: str, states: set[str], timeout: float = 300) -> dict[str, Any]:
        """Poll until the stream job is in one of ``states`` (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.stream(name)
            if job["state"] in states or time.monotonic() > deadline:
                return job
            time.sleep(0.2)

    def session_streams(self, session_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/sessions/{session_id}/streams")

    # engines
    def engines(self, *, all: bool = False) -> dict[str, Any]:
        return self._call("GET", "/v1/engines", params={"all": all})

    def stop_engine(self, engine_id: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/engines/{engine_id}/stop")

    # deploys and jobs
    def deploy(
        self,
        manifests: list[dict[str, str]],
        *,
        template: dict[str, str] | None = None,
        definitions: list[dict[str, str]] | None = None,
        prune: bool = False,
        plan_only: bool = False,
        wait: float = 0.0,
    ) -> dict[str, Any]:
        """Deploy manifests (``{"path", "content"}`` each); the deployment with its plan."""
        body: dict[str, Any] = {
            "manifests": manifests,
            "template": template,
            "definitions": definitions or [],
            "prune": prune,
            "plan_only": plan_only,
            "wait": wait,
        }
        timeout = max(self._http.timeout.read or 30.0, wait + 30.0)
        return self._call("POST", "/v1/deployments", json=body, timeout=timeout)

    def deployment(self, deployment_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/deployments/{deployment_id}")

    def deployments(self, *, limit: int = 20, after: str | None = None) -> dict[str, Any]:
        params = _paging(0, limit, after, None)
        return self._call("GET", "/v1/deployments", params=params)

    def wait_deployment(self, deployment_id: int, timeout: float = 600) -> dict[str, Any]:
        """Poll until the deployment has ended (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            deployment = self.deployment(deployment_id)
            if deployment["state"] != "running" or time.monotonic() > deadline:
                return deployment
            time.sleep(0.3)

    def jobs(self, *, removed: bool = False) -> dict[str, Any]:
        params = {"removed": "true"} if removed else {}
        return self._call("GET", "/v1/jobs", params=params)

    def job(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{name}")

    def job_history(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{name}/history")

    def run_job(self, name: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/jobs/{name}/runs")

    def job_run(self, name: str, run_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{name}/runs/{run_id}")

    def cancel_job_run(self, name: str, run_id: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/jobs/{name}/runs/{run_id}/cancel")

    def wait_job_run(self, name: str, run_id: int, timeout: float = 600) -> dict[str, Any]:
        """Poll until the run has ended (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.job_run(name, run_id)
            if run["state"] != "running" or time.monotonic() > deadline:
                return run
            time.sleep(0.3)

    # users and access
    def whoami(self) -> dict[str, Any]:
        """Who the server takes these credentials for: user, groups, admin, rights, via."""
        return self._call("GET", "/v1/whoami")

    def create_token(
        self, name: str | None = None, expires_in: float | None = None
    ) -> dict[str, Any]:
        """A new personal access token; its secret (``token``) is in this answer only."""
        body = {"name": name, "expires_in": expires_in}
        return self._call("POST", "/v1/tokens", json=body)

    def tokens(self, owner: str | None = None) -> dict[str, Any]:
        return self._call("GET", "/v1/tokens", params=_given(owner=owner))

    def revoke_token(self, token_id: str | int) -> dict[str, Any]:
        return self._call("DELETE", f"/v1/tokens/{token_id}")

    def audit(
        self,
        user: str | None = None,
        action: str | None = None,
        outcome: str | None = None,
        offset: int = 0,
        limit: int = 100,
        since: float | None = None,
        after: str | None = None,
        obj: str | None = None,
    ) -> dict[str, Any]:
        """Audit events, newest first (admins only); ``action`` matches a prefix, ``since`` is
        epoch seconds, ``obj`` a table (``hr.salaries``); the next page is
        ``audit(..., after=page["next"])``."""
        filters = {
            "user": user,
            "action": action,
            "outcome": outcome,
            "since": since,
            "object": obj,
        }
        return self._call("GET", "/v1/audit", params=_paging(offset, limit, after, None, **filters))

    def explain_access(self, user: str, privilege: str, table: str) -> dict[str, Any]:
        """Why ``user`` may or may not use ``privilege`` on ``table`` (admins only)."""
        return self._call(
            "GET",
            "/v1/access/explain",
            params={"who": user, "privilege": privilege, "table": table},
        )

    def table_grants(self, table: str) -> dict[str, Any]:
        """A table's owner and grants (its owner and admins)."""
        return self._call("GET", f"/v1/tables/{table}/grants")

    def tables(self, schema: str | None = None, *, timeout: float = 300) -> dict[str, Any]:
        """The schemas, and in each the tables and views you may see (``schema``: one). Read
        by a query run as you, which may wait for an engine to start: hence ``timeout``."""
        return self._call("GET", "/v1/tables", params=_given(schema=schema), timeout=timeout)

    def table(self, name: str, *, timeout: float = 300) -> dict[str, Any]:
        """A table or view (``schema.table``) as you may see it: columns, owner, size, last
        change, first rows, recent queries."""
        return self._call("GET", f"/v1/tables/{quote(name, safe='')}", timeout=timeout)

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
    ) -> dict[str, Any]:
        """Load a local file into ``table`` (``schema.table``), streamed: ``format`` csv,
        parquet or json (by default from the file's extension), ``mode`` create, append or
        overwrite. The load runs as a one-off query; the answer is that query (with ``wait``,
        when it is final). ``progress`` is called with the bytes sent so far."""
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

        params = _given(
            format=format or format_of(file),
            mode=mode,
            header="true" if header else None,
            schema=schema,
            filename=file.name,
            wait=wait or None,
        )
        return self._call(
            "POST",
            f"/v1/tables/{quote(table, safe='')}/data",
            params=params,
            content=chunks(),
            headers={"content-type": "application/octet-stream", "content-length": str(size)},
            timeout=httpx.Timeout(wait + 30) if wait else None,
        )

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/healthz")


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


def _paging(
    offset: int, limit: int, after: str | None, total: bool | None, **filters: Any
) -> dict[str, Any]:
    """A list's query: paging by a cursor (``after``, the way) or an offset, not both, then
    the ``filters`` that were given (see ``_given``)."""
    params: dict[str, Any] = {"limit": limit}
    if offset:
        params["offset"] = offset
    if after is not None:
        params["after"] = after
    if total is not None:
        params["total"] = "true" if total else "false"
    return params | _given(**filters)


def _idempotency(key: str | None) -> dict[str, str]:
    """The header naming one submit: the same on each of its retries, new for the next."""
    return {"Idempotency-Key": key or str(uuid.uuid4())}


def _given(**fields: Any) -> dict[str, Any]:
    """The fields that are not None, in order. An optional field or filter the caller did not
    set is left out of the request, not sent as null, so the server applies its own default;
    callers pass ``x or None`` where an empty value also means "not set"."""
    return {key: value for key, value in fields.items() if value is not None}


def servers_of(server: str | Sequence[str]) -> list[str]:
    """The node URLs of ``"http://a:8998,http://b:8998"`` or of a list, without trailing /."""
    urls = credentials.node_urls(server if isinstance(server, str) else ",".join(server))
    if not urls:
        raise ValueError("Client: no server URL given.")
    return urls


class _NodeCannotAnswer(Exception):
    """This node cannot take the request, and another may: its error, and how long it asked
    to be left alone (``Retry-After``)."""

    def __init__(self, error: ClientError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return min(float(response.headers.get("retry-after", "")), 30.0)
    except ValueError:
        return None  # absent, or an HTTP date: the default pause


def _credentials(
    server: str, user: str | None, password: str | None, token: str | None
) -> tuple[httpx.Auth | None, str | None, str | None]:
    """The auth to send, where it came from, and the user it names (when known)."""
    if token is not None and (user is not None or password is not None):
        raise ValueError("Client: pass token= or user= and password=, not both.")
    if token is not None:
        return BearerAuth(token), "argument", None
    if user is not None or password is not None:
        password = password if password is not None else os.environ.get("SPARKGATE_PASSWORD")
        if user is None or password is None:
            raise ValueError("Client: user= needs password= (or SPARKGATE_PASSWORD), and back.")
        return httpx.BasicAuth(user, password), "argument", user
    env_token = os.environ.get("SPARKGATE_TOKEN")
    if env_token:
        return BearerAuth(env_token), "SPARKGATE_TOKEN", None
    env_user, env_password = os.environ.get("SPARKGATE_USER"), os.environ.get("SPARKGATE_PASSWORD")
    if env_user and env_password:
        return httpx.BasicAuth(env_user, env_password), "SPARKGATE_USER", env_user
    stored = credentials.load(server)
    if stored is not None:
        return BearerAuth(stored.token), f"stored ({credentials.path()})", stored.user
    return None, None, None
