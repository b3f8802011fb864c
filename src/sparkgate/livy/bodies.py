"""The Livy API's JSON answers as pydantic models, keys as Livy spells them (``views.py``).

Closed like the native ones (``sparkgate.schemas``): FastAPI checks every answer against
its model. Every field Livy shows is here, typed as Livy types it, even those sparkgate always
leaves null (``appInfo``'s URLs, ``/version``'s build facts).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sparkgate.livy.states import (
    LivyBatchState,
    LivySessionKind,
    LivySessionState,
    LivyStatementState,
)


class Body(BaseModel):
    # By name too: the views build ``from`` as ``from_`` (a keyword); answers keep the alias.
    model_config = ConfigDict(extra="forbid", validate_by_name=True)


class LivyError(Body):
    """Every error of the Livy API: ``{"msg": "..."}``."""

    msg: str


class LivyVersion(Body):
    version: str
    commit: str | None
    user: str | None
    url: str | None
    branch: str | None
    date: str | None
    server: str = Field(description="Not Livy's: `sparkgate <version>`.")


class LivyAppInfo(Body):
    driverLogUrl: str | None
    sparkUiUrl: str | None
    executorLogUrls: str | None


class LivySession(Body):
    id: int
    name: str | None
    appId: str | None
    owner: str | None
    proxyUser: str | None
    state: LivySessionState
    kind: LivySessionKind
    appInfo: LivyAppInfo
    log: list[str] = Field(description="The last lines of the session's log.")
    # The resource fields the session was created with (null when not given).
    ttl: str | None
    driverMemory: str | None
    driverCores: int | None
    executorMemory: str | None
    executorCores: int | None
    archives: list[str] | None
    files: list[str] | None
    heartbeatTimeoutInSecond: int | None
    jars: list[str] | None
    numExecutors: int | None
    pyFiles: list[str] | None
    queue: str | None
    conf: dict[str, str]


class LivyBatch(Body):
    id: int
    name: str | None
    owner: str | None
    proxyUser: str | None
    state: LivyBatchState
    appId: str | None
    appInfo: LivyAppInfo
    log: list[str]


# "from" is a Python keyword: the field has another name and the key as alias.
From = Annotated[int, Field(alias="from")]


class LivySessionList(Body):
    from_: From
    total: int
    sessions: list[LivySession]


class LivyBatchList(Body):
    from_: From
    total: int
    sessions: list[LivyBatch]


class LivySessionStateAnswer(Body):
    id: int
    state: LivySessionState


class LivyBatchStateAnswer(Body):
    id: int
    state: LivyBatchState


class LivyLog(Body):
    id: int
    from_: From
    total: int
    log: list[str]


class LivyOutputOk(Body):
    status: Literal["ok"]
    execution_count: int
    data: dict[str, Any] = Field(
        description="By mimetype: `text/plain`, `application/json` ({schema, data} for SQL)."
    )


class LivyOutputError(Body):
    status: Literal["error"]
    execution_count: int
    ename: str
    evalue: str
    traceback: list[str]


class LivyStatementLink(Body):
    query_id: int = Field(description="The same statement in the native API: /v1/queries/{id}.")


class LivyStatement(Body):
    id: int
    code: str
    state: LivyStatementState
    output: Annotated[LivyOutputOk | LivyOutputError, Field(discriminator="status")] | None
    progress: float
    started: int = Field(description="Epoch milliseconds; 0: not yet.")
    completed: int = Field(description="Epoch milliseconds; 0: not yet.")
    sparkgate: LivyStatementLink


class LivyStatementList(Body):
    total_statements: int
    statements: list[LivyStatement]


class LivyDeleted(Body):
    msg: Literal["deleted"]


class LivyCancelled(Body):
    msg: Literal["canceled"]
