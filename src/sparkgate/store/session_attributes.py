"""What the doors and the service note on a session beside its columns, each a declared field.

Stored as one JSON object (the ``attributes`` column), so a release before this one reads and
writes the same rows: a key it does not know is left alone, and a key this release does not
know is ignored when read. The store also filters by two of them in SQL (``created_by``,
``isolation``: ``store.sessions``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class SessionAttributes:
    door: str | None = None
    """The door that opened it: ``rest``, ``cli``, ``dashboard``, ``livy``, ``hive2``,
    ``connect`` (None on sessions of earlier releases and internal ones: see ``origin``)."""
    hive2_protocol: int | None = None
    """The HiveServer2 protocol version its client spoke."""
    idle_timeout: float | None = None
    """Seconds idle before the reaper ends it, when not the server's own setting."""
    isolation: str | None = None
    """A one-off query's: ``session`` (a session of a shared engine) or ``engine``."""
    created_by: str | None = None
    """Who opened it for its owner (Livy's ``proxyUser``)."""
    conf_deny: tuple[str, ...] | None = None
    """A batch file's: the denied-settings patterns in force when it was submitted (the engine
    alone reads the file, and checks its SETs with them)."""
    groups: tuple[str, ...] | None = None
    """The groups its owner signed in with (LDAP's, a JWT's): the table rules match them."""
    connect_session: str | None = None
    """A Spark Connect client's session id."""
    livy: Mapping[str, Any] | None = None
    """The fields of a Livy request, kept as given to be shown back (``livy.models``)."""
    stream_job: str | None = None
    stream_job_id: int | None = None
    revision: int | None = None
    """A stream job's session: its job and the job's definition it runs."""
    tags: Mapping[str, str] | None = None
    """Tags every query of the session carries (``sparkgate.tags``)."""
    job: str | None = None
    job_run: int | None = None
    job_version: int | None = None
    """A manifest job run's session."""

    @property
    def origin(self) -> str:
        """The door its statements came through, as the access history names it: a stream
        job's and a manifest job's sessions are ``stream`` and ``job``; a session that says
        none is a Livy one if it has Livy's fields, else one of the native API's."""
        if self.stream_job is not None:
            return "stream"
        if self.job is not None:
            return "job"
        if self.door is not None:
            return self.door
        return "livy" if self.livy is not None else "rest"

    @classmethod
    def stored(cls, data: Mapping[str, Any] | None) -> SessionAttributes:
        """The attributes a row keeps (keys a later release added are left out)."""
        if not data:
            return _NONE
        values = {k: v for k, v in data.items() if k in _FIELDS and v is not None}
        for name in ("conf_deny", "groups"):
            if name in values:
                values[name] = tuple(str(v) for v in values[name])
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        """The JSON the column keeps: the fields that are set."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


_NONE = SessionAttributes()
_FIELDS = frozenset(f.name for f in fields(SessionAttributes))
