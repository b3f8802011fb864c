"""sparkgate's errors: a stable SCREAMING_SNAKE code, parameters, and a message that says what
was tried, what the state is, and what to do. Only the API layer maps them to HTTP statuses.

The codes (``ErrorCode``), the record an error leaves (``RecordedError``) and the base class
are in ``sparkgate.recorded`` (with the errors that are only ever recorded), and re-exported
here.
"""

from __future__ import annotations

import time

# "X as X" is how a module re-exports a name for mypy; PLC0414 takes it for a useless alias.
from sparkgate.recorded import ErrorCode as ErrorCode
from sparkgate.recorded import RecordedError as RecordedError
from sparkgate.recorded import SparkgateError as SparkgateError


class StoreUnavailable(SparkgateError):
    """The store could not be reached (down, restarting, the network between): nothing was
    done; the same request may be sent again."""

    code = ErrorCode.STORE_UNAVAILABLE


class NotFound(SparkgateError):
    code = ErrorCode.NOT_FOUND


class SessionNotFound(NotFound):
    code = ErrorCode.SESSION_NOT_FOUND

    def __init__(self, session_id: int) -> None:
        super().__init__(f"Session {session_id} does not exist.", session_id=session_id)


class QueryNotFound(NotFound):
    code = ErrorCode.QUERY_NOT_FOUND

    def __init__(self, query_id: int) -> None:
        super().__init__(f"Query {query_id} does not exist.", query_id=query_id)


class EngineNotFound(NotFound):
    code = ErrorCode.ENGINE_NOT_FOUND

    def __init__(self, engine_id: int) -> None:
        super().__init__(f"Engine {engine_id} does not exist.", engine_id=engine_id)


class EngineBackoff(SparkgateError):
    """Engines of this placement failed NO_EXECUTORS in a row: the next waits (engine.backoff)."""

    code = ErrorCode.ENGINE_BACKOFF

    def __init__(self, placement: str, attempt: int, next_at: float, now: float) -> None:
        when = time.strftime("%H:%M:%S UTC", time.gmtime(next_at))
        super().__init__(
            f"No engine is started for {placement} now: the cluster gave the last {attempt} "
            f"engine(s) no executor in time (NO_EXECUTORS); the next may start at {when} (in "
            f"{max(0.0, next_at - now):.0f}s). Free cores on the cluster, or try again then.",
            placement=placement,
            attempt=attempt,
            next_attempt_at=next_at,
        )


class Conflict(SparkgateError):
    """The request is valid but the object's current state refuses it."""

    code = ErrorCode.INVALID_STATE


class SessionNotActive(Conflict):
    code = ErrorCode.SESSION_NOT_ACTIVE

    def __init__(self, session_id: int, state: str) -> None:
        super().__init__(
            f"Session {session_id} is {state}; it takes no more statements. "
            "Create a new session, or submit without a session to run as a batch.",
            session_id=session_id,
            state=state,
        )


class BatchSessionUsed(Conflict):
    code = ErrorCode.BATCH_SESSION_USED

    def __init__(self, session_id: int) -> None:
        super().__init__(
            f"Session {session_id} is a batch session and already has its statement; "
            "a batch runs one statement. Use an interactive session to run several.",
            session_id=session_id,
        )


class QueryFinished(Conflict):
    code = ErrorCode.QUERY_FINISHED

    def __init__(self, query_id: int, state: str) -> None:
        super().__init__(
            f"Query {query_id} is already {state}; there is nothing to cancel.",
            query_id=query_id,
            state=state,
        )


class ResultNotReady(Conflict):
    code = ErrorCode.RESULT_NOT_AVAILABLE

    def __init__(
        self, query_id: int, state: str, *, connect: bool = False, load: bool = False
    ) -> None:
        hints = {
            "success": "it ran Python or a file and produced no rows; see its output",
            "failed": "it failed; see its error",
            "cancelled": "it was cancelled",
            "cancelling": "it is being cancelled",
        }
        if connect:
            # The door streams a Spark Connect operation's rows to its client; none are stored.
            kept = "sparkgate does not keep them"
            hints["success"] = f"its rows went to the Spark Connect client that ran it; {kept}"
            hints["running"] = f"its rows go to the Spark Connect client that runs it; {kept}"
        if load:
            hints["success"] = "it loaded a file into a table; see its output (output.load)"
        hint = hints.get(state, "wait for it to finish (GET /v1/queries/{id}?wait=30)")
        super().__init__(
            f"Query {query_id} is {state}: no result to read; {hint}.",
            query_id=query_id,
            state=state,
        )


class ResultGone(Conflict):
    code = ErrorCode.RESULT_GONE

    def __init__(self, query_id: int, path: str) -> None:
        super().__init__(
            f"Query {query_id} succeeded but its result files are missing at {path}; "
            "they were removed (result retention) or the results path is not shared "
            "with this server node.",
            query_id=query_id,
            path=path,
        )


class InvalidRequest(SparkgateError):
    code: str = ErrorCode.INVALID_REQUEST  # a SqlError may carry Spark's condition instead


class IdempotencyKeyInvalid(InvalidRequest):
    """An ``Idempotency-Key`` header no key can be (answered 400, as a missing one would be)."""

    code = ErrorCode.IDEMPOTENCY_KEY_INVALID

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"Idempotency-Key: {reason}. Send 1 to 255 printable ASCII characters, such as a "
            "UUID, the same for every retry of one request.",
            field="Idempotency-Key",
        )


class IdempotencyKeyReused(InvalidRequest):
    code = ErrorCode.IDEMPOTENCY_KEY_REUSED

    def __init__(self, key: str, request: str, first_request: str) -> None:
        what = "another body" if request == first_request else f"a {first_request} request"
        super().__init__(
            f"Idempotency-Key {key!r} was first used for {what}; a key names one request. "
            "Send a new key for a new request.",
            field="Idempotency-Key",
            key=key,
        )


class StoreConflict(SparkgateError):
    """A compare-and-set lost to another writer; the caller decides whether that matters."""

    code = ErrorCode.CONCURRENT_UPDATE


class ConfigurationError(SparkgateError):
    code = ErrorCode.INVALID_CONFIGURATION


class Unauthenticated(SparkgateError):
    """No credentials, or credentials no authenticator accepts. The message is the same for an
    unknown user and a wrong password, so that names cannot be probed."""

    code = ErrorCode.UNAUTHENTICATED

    def __init__(self, message: str = "Missing or invalid credentials.") -> None:
        super().__init__(message)


class Forbidden(SparkgateError):
    """The user is known but the access rules refuse what was asked."""

    code = ErrorCode.FORBIDDEN


class NoResourceGroup(Forbidden):
    """The access file has resource groups and none of its selectors matches the query."""

    def __init__(self, user: str, source: str, query_type: str) -> None:
        super().__init__(
            f"No resource group takes this query: no selector of the access file's "
            f"resource_groups matches user {user}, source {source} and queryType {query_type}. "
            "Ask an admin to add a selector for it.",
            user=user,
            source=source,
            query_type=query_type,
        )


class MissingRight(Forbidden):
    code = ErrorCode.ACCESS_DENIED

    def __init__(self, user: str, right: str, action: str) -> None:
        super().__init__(
            f"User {user} may not {action}: the right '{right}' is missing. "
            "Ask an admin to grant it in the access file.",
            user=user,
            right=right,
        )


class DeniedSetting(Forbidden):
    code = ErrorCode.SETTING_DENIED

    def __init__(self, key: str, pattern: str, where: str | None = None) -> None:
        place = f" ({where})" if where else ""
        super().__init__(
            f"The Spark setting '{key}'{place} may not be set by users (denied by '{pattern}' "
            "in the access rules); the server's value applies.",
            key=key,
            pattern=pattern,
            **({"where": where} if where else {}),
        )


class LimitExceeded(SparkgateError):
    code = ErrorCode.LIMIT_EXCEEDED


class QueueFull(LimitExceeded):
    """A resource group's queue holds its ``maxQueued`` (store.resource_groups)."""

    def __init__(self, group: str, max_queued: int) -> None:
        super().__init__(
            f"Resource group {group} has {max_queued} queries queued, its maxQueued; "
            "try again when some have run.",
            resource_group=group,
            max_queued=max_queued,
        )


class QuotaExceeded(LimitExceeded):
    """A quota of the access file is spent (auth.quotas); its new work is refused."""

    def __init__(self, quota: str, spent: float, resets_at: float, now: float) -> None:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(resets_at))
        super().__init__(
            f"The quota {quota} is spent ({spent:.3g} s used): new work is refused until it "
            f"resets at {when} (in {max(0.0, resets_at - now) / 3600:.1f} h). Work that runs "
            "goes on.",
            quota=quota,
            spent_seconds=spent,
            resets_at=resets_at,
        )


class PayloadTooLarge(SparkgateError):
    code = ErrorCode.PAYLOAD_TOO_LARGE

    def __init__(self, limit: int, setting: str = "SPARKGATE_REQUEST_MAX_BYTES") -> None:
        super().__init__(
            f"The request body is larger than the limit of {limit} bytes ({setting}).",
            limit=limit,
        )


class FileEmpty(InvalidRequest):
    code = ErrorCode.FILE_EMPTY

    def __init__(self) -> None:
        super().__init__("The file is empty: there is nothing to load.", field="body")


class EngineLost(Conflict):
    """An engine died (it stopped heartbeating, or never started): its sessions, with what
    they had (temporary views, settings, cached data), and its running work are gone."""

    code = ErrorCode.ENGINE_LOST

    @classmethod
    def of_session(cls, session_id: int, detail: str) -> EngineLost:
        return cls(
            f"Session {session_id} ended with its engine ({detail}). Start a new session.",
            session_id=session_id,
        )


class NotSupported(InvalidRequest):
    code = ErrorCode.NOT_SUPPORTED


class EngineUnreachable(SparkgateError):
    """The engine holding a session cannot take a call now (starting, or without the
    service the call needs); the same call may be sent again."""

    code = ErrorCode.ENGINE_UNAVAILABLE


class TableNotFound(NotFound):
    """Also what a user is told of a table they may not see (the engine's check says so)."""

    code = ErrorCode.TABLE_NOT_FOUND

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Table or view {name} does not exist. List what you may see with "
            "GET /v1/tables (sparkgate tables list).",
            table=name,
        )


class SchemaNotFound(NotFound):
    code = ErrorCode.SCHEMA_NOT_FOUND

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Schema {name} does not exist. List the schemas with GET /v1/tables.", schema=name
        )


class CatalogUnavailable(SparkgateError):
    """The catalog statement run for a catalog read failed (the engine or its metastore)."""

    code = ErrorCode.CATALOG_UNAVAILABLE

    def __init__(self, query_id: int, error: RecordedError | None) -> None:
        what = error or RecordedError("UNKNOWN", "no error recorded")
        super().__init__(
            f"Reading the catalog failed in query {query_id}: [{what.code}] "
            f"{what.message}. Try again; GET /v1/queries/{query_id} has the details.",
            query_id=query_id,
        )
