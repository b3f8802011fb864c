"""Sessions and queries: a session, a query as queued or waited for, and its result pages."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from sparkgate.schemas.common import Body, Paging, SparkConf, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.states import SessionKind, SessionState, StatementKind, StatementState


class Session(Body):
    id: int
    kind: SessionKind
    name: str | None
    state: SessionState
    owner: str | None
    proxy_user: str | None
    conf: SparkConf
    engine_id: int | None
    statement_count: int
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    last_activity_at: Timestamp
    error: RecordedError | None


class SessionList(Paging):
    sessions: list[Session]


class Column(Body):
    name: str
    type: str = Field(description="Spark's type: `bigint`, `decimal(10,2)`, `array<string>`...")


class QueryResult(Body):
    # "schema" shadows a BaseModel attribute: the field has another name and the key as alias.
    columns: list[Column] = Field(alias="schema")
    row_count: int


class QueryAccepted(Body):
    """A query just queued (``POST /v1/queries`` without ``?wait``)."""

    id: int
    session_id: int
    state: StatementState


class Query(Body):
    id: int
    session_id: int
    owner: str | None
    query: str
    kind: StatementKind
    state: StatementState
    progress: float
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    error: RecordedError | None
    result: QueryResult | None
    output: dict[str, Any] | None = Field(
        description="What the statement printed and how sparkgate ran it (free-form)."
    )


class ResultPage(Body):
    columns: list[Column] = Field(alias="schema")
    rows: list[list[Any]] = Field(description="Each row's values in column order, as JSON.")
    offset: int
    limit: int
    total: int


class WaitedQuery(Query):
    """A query waited for (``?wait=``) that succeeded: with its first result page."""

    page: ResultPage


class QueryList(Paging):
    queries: list[Query]
