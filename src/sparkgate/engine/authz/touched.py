"""What a statement's (or a Spark Connect operation's) checked plans read and wrote, as the
engine's extension reports it (``Touched.toJson`` in Authz.scala): the tables, and each use of
a privilege on one for the access history."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from sparkgate.store.audit import TableUseEvent
from sparkgate.tables.locations import STAGING_PREFIX


@dataclass(frozen=True)
class Touched:
    """What a statement's checked plans read and wrote, from the extension's JSON
    (``Touched.toJson`` in Authz.scala), sparkgate's staging tables left out: the tables
    (``tables``: ``{"read": [...], "written": [...]}``) and each use of a privilege on one,
    allowed or refused, with the columns read, masks and filter (``uses``).

    For result reuse: whether every plan checked for it was a pure read of catalog tables and
    views (``reusable``: deterministic, no user code, no temporary view, no files by path, no
    write), where each table it read keeps its files (``locations``) and whose decision each
    read used (``readers``: the user, or a view's owner for what the view reads; ``@system``
    when no table rules are in force)."""

    tables: dict[str, list[str]]
    uses: tuple[Use, ...]
    reusable: bool = False
    locations: dict[str, str] = field(default_factory=dict)
    readers: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def parse(cls, found_json: str) -> Touched:
        found: dict[str, Any] = json.loads(found_json)
        tables = {
            kind: [name for name in found.get(kind, ()) if not _staging(name)]
            for kind in ("read", "written")
        }
        uses = tuple(
            Use(
                object=str(one["object"]).lower(),
                privilege=str(one["privilege"]),
                allowed=bool(one["allowed"]),
                columns=tuple(one["columns"]) if "columns" in one else None,
                masked=tuple(one.get("masked", ())),
                filtered=bool(one.get("filtered", False)),
            )
            for one in found.get("access", ())
            if not _staging(str(one["object"]))
        )
        locations = {
            str(name).lower(): str(uri)
            for name, uri in found.get("locations", {}).items()
            if not _staging(str(name))
        }
        readers = {
            str(name).lower(): tuple(str(user) for user in users)
            for name, users in found.get("readers", {}).items()
            if not _staging(str(name))
        }
        # A staging table (a two-phase write's, short-lived) is left out of what it read:
        # a result over one could not be told stale.
        reusable = bool(found.get("reusable", False)) and not any(
            _staging(str(name)) for name in found.get("read", ())
        )
        return cls(tables, uses, reusable, locations, readers)

    def events(self, *, user: str | None, door: str, query_id: int) -> list[TableUseEvent]:
        return [
            TableUseEvent(
                user=user,
                door=door,
                query_id=query_id,
                object=use.object,
                privilege=use.privilege,
                allowed=use.allowed,
                columns=use.columns,
                masked=use.masked,
                filtered=use.filtered,
            )
            for use in self.uses
        ]


@dataclass(frozen=True)
class Use:
    object: str
    privilege: str
    allowed: bool
    columns: tuple[str, ...] | None
    masked: tuple[str, ...]
    filtered: bool


def _staging(name: str) -> bool:
    return name.rpartition(".")[2].startswith(STAGING_PREFIX)


def touched_tables(found_json: str) -> dict[str, list[str]]:
    """What a statement's checked plans read and wrote (``Touched.tables``)."""
    return Touched.parse(found_json).tables
