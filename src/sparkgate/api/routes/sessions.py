"""Native sessions: ``/v1/sessions``."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.paging import ListParams
from sparkgate.http.params import REPLAYED_HEADER, Id, IdempotencyKey, created
from sparkgate.schemas.queries import Session, SessionList
from sparkgate.states import SessionKind, SessionState

router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


class SessionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["interactive", "batch"] = "interactive"
    name: str | None = Field(default=None, max_length=255)
    conf: dict[str, str] = Field(default_factory=dict)
    # Every query of the session carries them (as does a ``sparkgate.tags`` setting in conf).
    tags: dict[str, str] | None = None

    @field_validator("conf", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        # {"spark.sql.shuffle.partitions": 4} means what it says; Spark wants strings.
        if isinstance(value, dict):
            return {
                k: (str(v).lower() if isinstance(v, bool) else str(v))
                if isinstance(v, (int, float, bool))
                else v
                for k, v in value.items()
            }
        return value


@router.post(
    "",
    status_code=201,
    response_model=Session,
    responses=created("The session (or a repeat's: the session its key made, as it is now).")
    | refusals(
        {
            400: "The `Idempotency-Key` is empty, too long or not printable ASCII "
            "(`IDEMPOTENCY_KEY_INVALID`). Or: the body is not JSON text: not UTF-8 "
            "(`HTTP_ERROR`).",
            403: "Neither the `sql` nor the `code` right, or `conf` names a denied setting.",
            422: "Invalid parameters or body (`INVALID_REQUEST`), or the `Idempotency-Key` was "
            "first used for another request (`IDEMPOTENCY_KEY_REUSED`).",
            429: "The user has `sessions_per_user` active sessions.",
        }
    ),
)
def create_session(
    body: SessionCreate,
    service: ServiceDep,
    user: UserDep,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> Session:
    """Start a session: ``{"kind": "interactive", "conf": {"spark.sql.ansi.enabled": "false"}}``.
    With an ``Idempotency-Key``, a repeat answers the session the first request made, as it is
    now, with ``Idempotent-Replayed: true``."""
    session, replayed = service.sessions.create(
        SessionKind(body.kind),
        user=user,
        name=body.name,
        conf=body.conf,
        key=idempotency_key,
        tags=body.tags,
    )
    if replayed:
        response.headers[REPLAYED_HEADER] = "true"
    return Session.of(session)


@router.get("", response_model=SessionList)
def list_sessions(
    service: ServiceDep,
    user: UserDep,
    listing: ListParams,
    owner: str | None = None,
    state: Annotated[list[SessionState] | None, Query()] = None,
    kind: Annotated[list[SessionKind] | None, Query()] = None,
    one_off: bool = False,
) -> SessionList:
    """Your sessions, oldest first: ``?state=idle&state=busy&limit=100`` (admins: everyone's,
    or ``?owner=``); the next page is ``?after=<next>``. The session each one-off query
    (``POST /v1/queries`` without a session) ran in is left out unless ``?one_off=true``."""
    page = service.sessions.list_page(
        user=user,
        owner=owner,
        states=state,
        kinds=kind,
        one_off=None if one_off else False,
        window=listing.window(),
    )
    return SessionList(sessions=[Session.of(s) for s in page.items], **listing.paging(page))


@router.get("/{session_id}", response_model=Session)
def get_session(session_id: Id, service: ServiceDep, user: UserDep) -> Session:
    return Session.of(service.sessions.get(session_id, user=user))


@router.delete("/{session_id}", response_model=Session)
def kill_session(session_id: Id, service: ServiceDep, user: UserDep) -> Session:
    """End the session (``killed``); its running statement is cancelled."""
    return Session.of(service.sessions.kill(session_id, user=user))
