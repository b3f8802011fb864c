"""Livy's request bodies (field names as Livy spells them), and what they become here.

Resource fields become the Spark properties spark-submit would get (``driverMemory`` is
``spark.driver.memory``, ...), so a session asking for them gets an engine started with them;
every field as given is kept in the session's ``attributes["livy"]`` and shown back
(``KeptFields``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sparkgate.http.params import INT32_MAX  # Livy types these numbers as a Java Int
from sparkgate.livy.states import DEFAULT_SESSION_KIND, LivySessionKind
from sparkgate.store.records import SessionRecord

# Livy request field -> the Spark property spark-submit sets from it (Livy does the same).
_PROPERTIES = {
    "driverMemory": "spark.driver.memory",
    "driverCores": "spark.driver.cores",
    "executorMemory": "spark.executor.memory",
    "executorCores": "spark.executor.cores",
    "numExecutors": "spark.executor.instances",
    "queue": "spark.yarn.queue",
}
_LIST_PROPERTIES = {
    "jars": "spark.jars",
    "pyFiles": "spark.submit.pyFiles",
    "files": "spark.files",
    "archives": "spark.archives",
}


def _text(value: Any) -> Any:
    # Livy (Jackson) takes 4 for "4" and true for "true" in string fields; so do we.
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    return value


class CreateBody(BaseModel):
    # Livy refuses unknown fields (400 "Unrecognized field"): a typo such as "driverMemroy"
    # must not be ignored silently.
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, max_length=255)
    proxyUser: str | None = None
    conf: dict[str, str] = Field(default_factory=dict)
    driverMemory: str | None = None
    driverCores: int | None = Field(default=None, ge=1, le=INT32_MAX)
    executorMemory: str | None = None
    executorCores: int | None = Field(default=None, ge=1, le=INT32_MAX)
    numExecutors: int | None = Field(default=None, ge=1, le=INT32_MAX)
    queue: str | None = None
    jars: list[str] | None = None
    pyFiles: list[str] | None = None
    files: list[str] | None = None
    archives: list[str] | None = None

    @field_validator("conf", mode="before")
    @classmethod
    def _conf_values(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: _text(v) for k, v in value.items()}
        return value

    @field_validator("driverMemory", "executorMemory", "queue", "name", mode="before")
    @classmethod
    def _scalar_text(cls, value: Any) -> Any:
        return _text(value)

    def spark_conf(self) -> dict[str, str]:
        """``conf`` plus the properties the resource fields stand for (the fields win)."""
        conf = dict(self.conf)
        for field, key in _PROPERTIES.items():
            value = getattr(self, field)
            if value is not None:
                conf[key] = str(value)
        for field, key in _LIST_PROPERTIES.items():
            values = getattr(self, field)
            if values:
                conf[key] = ",".join([v for v in [conf.get(key)] if v] + values)
        return conf

    def livy_attributes(self) -> dict[str, Any]:
        """The fields as given (unset ones left out: they show as null)."""
        return self.model_dump(exclude_none=True, exclude={"name", "proxyUser", "conf"})


class CreateSession(CreateBody):
    """``POST /sessions``: ``{"kind": "pyspark", "conf": {...}, "driverMemory": "2g", ...}``."""

    kind: str | None = None
    heartbeatTimeoutInSecond: int | None = Field(default=None, ge=0, le=INT32_MAX)
    ttl: str | None = None
    idleTimeout: str | None = None


class CreateBatch(CreateBody):
    """``POST /batches``: ``{"file": "/jobs/etl.py", "args": ["--day", "2024-01-01"]}``."""

    file: str = Field(min_length=1)
    className: str | None = None
    args: list[str] = Field(default_factory=list)

    @field_validator("args", mode="before")
    @classmethod
    def _args_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [_text(v) for v in value]
        return value


class CreateStatement(BaseModel):
    """``POST /sessions/{id}/statements``: ``{"code": "1 + 1", "kind": "pyspark"}``."""

    model_config = ConfigDict(extra="forbid")

    code: str
    kind: str | None = None


class KeptFields(BaseModel):
    """What a session's view shows of the fields kept in its ``attributes["livy"]``
    (``livy_attributes``, plus its canonical ``kind``); null (the kind: shared) for a session
    made through /v1. The rest kept (``idleTimeout``, a batch's ``file``) is not shown."""

    model_config = ConfigDict(extra="ignore")

    # Sessions made through /v1 have none: they take statements of either kind.
    kind: LivySessionKind = DEFAULT_SESSION_KIND
    ttl: str | None = None
    driverMemory: str | None = None
    driverCores: int | None = None
    executorMemory: str | None = None
    executorCores: int | None = None
    archives: list[str] | None = None
    files: list[str] | None = None
    heartbeatTimeoutInSecond: int | None = None
    jars: list[str] | None = None
    numExecutors: int | None = None
    pyFiles: list[str] | None = None
    queue: str | None = None

    @classmethod
    def of(cls, session: SessionRecord) -> KeptFields:
        kept = session.attributes.livy
        return cls.model_validate(dict(kept) if kept is not None else {})
