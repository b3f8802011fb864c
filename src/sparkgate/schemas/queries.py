"""Sessions and queries: a session, a query as queued or waited for, and its result pages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from sparkgate.schemas.common import Body, Paging, SparkConf, Timestamp, iso, stamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.states import SessionKind, SessionState, StatementKind, StatementState
from sparkgate.store.records import ResultInfo, SessionRecord, StatementRecord


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

    @classmethod
    def of(cls, session: SessionRecord) -> Session:
        return cls(
            id=session.id,
            kind=session.kind,
            name=session.name,
            state=session.state,
            owner=session.owner,
            proxy_user=session.proxy_user,
            conf=session.conf,
            engine_id=session.engine_id,
            statement_count=session.statement_count,
            created_at=stamp(session.created_at),
            started_at=iso(session.started_at),
            finished_at=iso(session.finished_at),
            last_activity_at=stamp(session.last_activity_at),
            error=RecordedError.of(session.error),
        )


class SessionList(Paging):
    sessions: list[Session]


class Column(Body):
    name: str
    type: str = Field(description="Spark's type: `bigint`, `decimal(10,2)`, `array<string>`...")

    @classmethod
    def all(cls, schema: Sequence[Mapping[str, Any]]) -> list[Column]:
        """A result's columns as the store and the result files keep them."""
        return [cls.model_validate(column) for column in schema]


class QueryResult(Body):
    # "schema" shadows a BaseModel attribute: the field has another name and the key as alias.
    columns: list[Column] = Field(alias="schema")
    row_count: int

    @classmethod
    def of(cls, info: ResultInfo | None) -> QueryResult | None:
        if info is None:
            return None
        return cls(schema=Column.all(info.schema), row_count=info.row_count)


class QueryAccepted(Body):
    """A query just queued (``POST /v1/queries`` without ``?wait``)."""

    id: int
    session_id: int
    state: StatementState

    @classmethod
    def of(cls, statement: StatementRecord) -> QueryAccepted:
        return cls(id=statement.id, session_id=statement.session_id, state=statement.state)


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

    @classmethod
    def of(cls, statement: StatementRecord) -> Query:
        return cls(
            id=statement.id,
            session_id=statement.session_id,
            owner=statement.owner,
            query=statement.code,
            kind=statement.kind,
            state=statement.state,
            progress=statement.progress,
            created_at=stamp(statement.created_at),
            started_at=iso(statement.started_at),
            finished_at=iso(statement.finished_at),
            error=RecordedError.of(statement.error),
            result=QueryResult.of(statement.result_info),
            # What the statement printed (a pyspark statement's {"data": ...}, a batch
            # file's log) and how sparkgate ran it (e.g. "ctas": {"path": ...}); None when
            # neither.
            output=statement.output,
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

    @classmethod
    def with_page(cls, query: Query, page: ResultPage) -> WaitedQuery:
        return cls(**query.model_dump(by_alias=True), page=page)


class QueryList(Paging):
    queries: list[Query]
