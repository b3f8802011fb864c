"""The error answers' JSON as pydantic models, for the OpenAPI schema of every HTTP door."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sparkgate import recorded


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecordedError(BaseModel):
    """Why something failed, as the store keeps it: a stable ``code``, a ``message``, and
    whatever else the failure says (Spark's ``sql_state``, ``line``, ``position``,
    ``traceback``, the error's parameters)."""

    model_config = ConfigDict(extra="allow")

    code: str
    message: str

    @model_validator(mode="before")
    @classmethod
    def _from_record(cls, value: Any) -> Any:
        """A store record's error (``sparkgate.recorded.RecordedError``) is answered as the
        store keeps it: code, message and its parameters as further keys."""
        return value.to_json() if isinstance(value, recorded.RecordedError) else value

    @classmethod
    def of(cls, stored: recorded.RecordedError | Mapping[str, Any] | None) -> RecordedError | None:
        """A record's ``error`` (None: it did not fail)."""
        return None if stored is None else cls.model_validate(stored)

    def param(self, name: str) -> Any:
        """One of the further keys (``position``, ``sql_state``, ...); None when it has none."""
        return (self.model_extra or {}).get(name)


class FieldProblem(_Closed):
    field: str = Field(description="Where: a query parameter, or a dotted path in the body.")
    message: str


class ErrorDetail(RecordedError):
    """``code`` is stable (``QUERY_NOT_FOUND``, ``ACCESS_DENIED``, ...); the error's parameters
    (``query_id``, ``state``, ...) are further keys."""

    fields: list[FieldProblem] = Field(
        default_factory=list, description="INVALID_REQUEST: each field at fault."
    )


class NativeError(_Closed):
    """Every error of the native API (``/v1``, ``/healthz``, ``/cliservice``)."""

    error: ErrorDetail
