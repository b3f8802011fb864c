"""Sessions and queries: a session, a query as queued or waited for, and its result pages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from sparkgate.pricing import Money
from sparkgate.schemas.common import Body, OptionalTimestamp, Paging, SparkConf, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.statement_cost import StatementCost
from sparkgate.states import SessionKind, SessionState, StatementKind, StatementState

if TYPE_CHECKING:  # the records its models are built from, for the type checker only
    from sparkgate.store.records import SessionRecord, StatementRecord, TaskCount
    from sparkgate.store.resource_groups import GroupPlace
    from sparkgate.store.reuse import Reused


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
    started_at: OptionalTimestamp
    finished_at: OptionalTimestamp
    last_activity_at: Timestamp
    error: RecordedError | None

    @classmethod
    def of(cls, session: SessionRecord) -> Session:
        return cls.model_validate(session)


class SessionList(Paging):
    sessions: list[Session]


class Column(Body):
    name: str
    type: str = Field(description="Spark's type: `bigint`, `decimal(10,2)`, `array<string>`...")


# A query's ``ResultInfo``: its columns (as the store keeps them) and row count. (Comments,
# not docstrings, on the models: a docstring is the OpenAPI schema's description.)
class QueryResult(Body):
    # "schema" shadows a BaseModel attribute: the field has another name and the key as alias
    # (which is also the attribute read from the record).
    columns: list[Column] = Field(alias="schema")
    row_count: int


class QueryAccepted(Body):
    """A query just queued (``POST /v1/queries`` without ``?wait``)."""

    id: int
    session_id: int
    state: StatementState
    resource_group: str | None = Field(
        default=None, description="The resource group it waits in (null: none)."
    )
    tags: dict[str, str] | None = Field(
        default=None, description="The tags it carries (its session's and its own)."
    )
    queue_position: int | None = Field(
        default=None,
        description="While `queued`: its turn in its resource group (1: it goes next).",
    )

    @classmethod
    def of(
        cls,
        statement: StatementRecord,
        place: GroupPlace | None = None,
        tags: dict[str, str] | None = None,
    ) -> QueryAccepted:
        return cls.model_validate(
            {
                "id": statement.id,
                "session_id": statement.session_id,
                "state": statement.state,
                "resource_group": None if place is None else place.resource_group,
                "queue_position": None if place is None else place.queue_position,
                "tags": tags,
            }
        )


class ReuseSaved(Body):
    cpu_seconds: float = Field(description="The CPU its Spark tasks used, in seconds.")
    run_seconds: float = Field(description="Its time from start to end, in seconds.")

    @classmethod
    def of(cls, reused: Reused) -> ReuseSaved:
        return cls(cpu_seconds=reused.saved_cpu_seconds, run_seconds=reused.saved_run_seconds)


class Query(Body):
    id: int
    session_id: int
    owner: str | None
    query: str
    kind: StatementKind
    state: StatementState
    progress: float
    created_at: Timestamp
    started_at: OptionalTimestamp
    finished_at: OptionalTimestamp
    error: RecordedError | None
    result: QueryResult | None
    output: dict[str, Any] | None = Field(
        description="What the statement printed and how sparkgate ran it (free-form)."
    )
    cost: StatementCost | None = Field(
        default=None,
        description="What its Spark tasks cost, once it has ended (null if it ran none), "
        "summed from Spark's task metrics, in their names and units (the peak: the largest "
        "task's); given by `GET /v1/queries/{id}`, null in lists.",
    )
    resource_group: str | None = Field(
        default=None,
        description="The resource group it waits or ran in (the access file's "
        "`resource_groups`; null: none).",
    )
    tags: dict[str, str] | None = Field(
        default=None, description="The tags it carries (its session's and its own)."
    )
    queue_position: int | None = Field(
        default=None,
        description="While `queued`: its turn in its resource group (1: it goes next), as the "
        "turns stand now (users alternate); null otherwise.",
    )
    price: Money | None = Field(
        default=None,
        description="Its cost in money at the prices set (settings `price_per_cpu_second`, "
        "`price_per_gb_read`, `price_per_gb_shuffled`); null when no price is set or it has "
        "no cost; given with `cost`.",
    )
    tasks_done: int | None = Field(
        default=None,
        description="While `running`: its Spark tasks done, as its engine last counted them "
        "(about every heartbeat; `progress` is `tasks_done / tasks_total`); null otherwise.",
    )
    tasks_total: int | None = Field(
        default=None,
        description="While `running`: its Spark tasks in all of its jobs' stages so far.",
    )
    reused_from: int | None = Field(
        default=None,
        description="The query whose result answered it, without running Spark (result "
        "reuse); null: it ran.",
    )
    reuse_saved: ReuseSaved | None = Field(
        default=None,
        description="With `reused_from`: what computing the result had cost, so what reusing "
        "it saved.",
    )

    @classmethod
    def of(
        cls,
        statement: StatementRecord,
        cost: StatementCost | None = None,
        place: GroupPlace | None = None,
        tags: dict[str, str] | None = None,
        price: Money | None = None,
        tasks: TaskCount | None = None,
        reused: Reused | None = None,
    ) -> Query:
        # ``output``: what the statement printed (a pyspark statement's {"data": ...}, a batch
        # file's log) and how sparkgate ran it (e.g. "ctas": {"path": ...}); None when neither.
        return cls.from_record(
            statement,
            query=statement.code,
            result=statement.result,
            cost=cost,
            resource_group=None if place is None else place.resource_group,
            queue_position=None if place is None else place.queue_position,
            tags=tags,
            price=price,
            tasks_done=None if tasks is None else tasks.done,
            tasks_total=None if tasks is None else tasks.total,
            reused_from=None if reused is None else reused.reused_from,
            reuse_saved=None if reused is None else ReuseSaved.of(reused),
        )


# A page of a query's result: the service's ``ResultPage``, read as it is.
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
        # The query's fields as they are (models kept, not dumped and validated again), and
        # the page as built: its rows were validated once, where it was made.
        return cls(**dict(query), page=page)


class QueryList(Paging):
    queries: list[Query]


# A submit's answer (``POST /v1/queries``, a table load): the query as queued, or (``?wait``) as
# it stands when the wait ended, with its first result page if it succeeded. The route answers
# with it and the client reads it, with ``read_submitted``.
Submitted = QueryAccepted | WaitedQuery | Query


def read_submitted(answer: object) -> Submitted:
    """A submit's answer as its model, told apart by the keys only a waited-for query has (its
    text) and only a successful one (its first page)."""
    if isinstance(answer, dict) and "page" in answer:
        return WaitedQuery.read(answer)
    if isinstance(answer, dict) and "query" in answer:
        return Query.read(answer)
    return QueryAccepted.read(answer)
