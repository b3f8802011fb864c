"""Errors of stream jobs and of the streaming queries they (or a session) run."""

from __future__ import annotations

from sparkgate.errors import Conflict, ErrorCode, InvalidRequest, NotFound


class StreamJobNotFound(NotFound):
    code = ErrorCode.STREAM_JOB_NOT_FOUND

    def __init__(self, name: str) -> None:
        super().__init__(f"Stream job '{name}' does not exist.", name=name)


class StreamQueryNotFound(NotFound):
    code = ErrorCode.STREAM_QUERY_NOT_FOUND

    def __init__(self, query_id: int) -> None:
        super().__init__(f"Streaming query {query_id} does not exist.", query_id=query_id)


class StreamJobExists(Conflict):
    code = ErrorCode.STREAM_JOB_EXISTS

    def __init__(self, name: str, state: str) -> None:
        super().__init__(
            f"A stream job named '{name}' already exists ({state}); pick another name, or "
            f"delete it first (DELETE /v1/streams/{name}).",
            name=name,
            state=state,
        )


class StreamJobActive(Conflict):
    """The job runs (or is on its way to or from running) and the request needs it at rest."""

    code = ErrorCode.STREAM_JOB_ACTIVE

    def __init__(self, name: str, state: str, action: str) -> None:
        super().__init__(
            f"Stream job '{name}' is {state}; it must be stopped or failed to {action}. "
            f"Stop it first (POST /v1/streams/{name}/stop) and wait for it to be stopped.",
            name=name,
            state=state,
        )


class StreamJobBusy(Conflict):
    code = ErrorCode.STREAM_JOB_BUSY

    def __init__(self, name: str, state: str) -> None:
        super().__init__(
            f"Stream job '{name}' is {state}; wait until it is stopped, then start it.",
            name=name,
            state=state,
        )


class StreamQueryNameClash(InvalidRequest):
    """Two streaming queries of one job (or one session) would share a name."""

    code = ErrorCode.STREAM_QUERY_NAME_CLASH

    def __init__(self, name: str, first: str, second: str) -> None:
        super().__init__(
            f"Two streaming queries would both be named '{name}': {first} and {second}. "
            "Query names must be unique within a stream job (and among a session's running "
            f"queries); name them apart with IDENTIFIED BY, e.g. ... IDENTIFIED BY {name}_2.",
            name=name,
        )


class StreamJobSuperseded(Conflict):
    """A session tried to act for a stream job that another session (or nobody) runs now."""

    code = ErrorCode.STREAM_JOB_SUPERSEDED

    def __init__(self, name: str, session_id: int, state: str) -> None:
        super().__init__(
            f"Session {session_id} no longer runs stream job '{name}' (the job is {state}); "
            "its streaming queries are not started here.",
            name=name,
            session_id=session_id,
            state=state,
        )


class StreamQueryNotRunning(NotFound):
    code = ErrorCode.STREAM_QUERY_NOT_FOUND

    def __init__(self, name: str, session_id: int) -> None:
        super().__init__(
            f"No streaming query named '{name}' runs in session {session_id}; "
            f"GET /v1/sessions/{session_id}/streams lists them.",
            name=name,
            session_id=session_id,
        )
