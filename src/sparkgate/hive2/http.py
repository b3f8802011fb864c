"""HiveServer2's HTTP transport: each POST to ``/cliservice`` carries one Thrift call.

``jdbc:hive2://host:8998/default;transportMode=http;httpPath=cliservice``. The request is
authenticated like every other route (Basic: a password or a personal access token), by the
router's dependency in ``app.py``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from sparkgate.errors import InvalidRequest
from sparkgate.hive2.door import Door
from sparkgate.hive2.wire import MalformedMessage
from sparkgate.http.deps import UserDep

router = APIRouter(tags=["hiveserver2"])

THRIFT = "application/x-thrift"


# PyHive's own HTTP transport (and SQLAlchemy's hive+http://) posts to "/cliservice/": served
# too, since Thrift's HTTP client does not follow the redirect FastAPI would answer with.
@router.post("/cliservice/", response_class=Response, include_in_schema=False)
@router.post(
    "/cliservice",
    response_class=Response,
    responses={
        200: {
            "description": "The Thrift reply.",
            "content": {THRIFT: {"schema": {"type": "string", "format": "binary"}}},
        },
        422: {"description": "The body is not a HiveServer2 Thrift call."},
    },
    # The body is read raw (one Thrift message, whatever its Content-Type), so FastAPI cannot
    # see it: described here.
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                media: {"schema": {"type": "string", "format": "binary"}}
                for media in (THRIFT, "application/octet-stream")
            },
        }
    },
)
async def cliservice(request: Request, user: UserDep) -> Response:
    door: Door = request.app.state.hive2
    try:
        reply = await door.answer(await request.body(), user)
    except MalformedMessage as exc:
        raise InvalidRequest(f"Not a HiveServer2 Thrift call: {exc}") from exc
    return Response(content=reply, media_type=THRIFT)
