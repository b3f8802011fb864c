"""Loading a file into a table: the node's half (``POST /v1/tables/{name}/data``).

Everything that can be refused is refused before a byte is read (the name, the format, the
``sql`` right, the user's query limit); the body is then streamed into a file of the uploads
directory, never held in memory, and counted against ``load_max_bytes``; the load is queued as
a one-off ``load`` statement, which an engine runs as the uploader (``tables.loader``). Whatever
fails before the statement is queued removes the file: a refused or broken upload leaves
nothing behind.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sparkgate import logs
from sparkgate.auth.principal import Principal
from sparkgate.auth.users import Users
from sparkgate.errors import FileEmpty, InvalidRequest, PayloadTooLarge
from sparkgate.service.queries import Queries
from sparkgate.settings import Settings
from sparkgate.states import StatementKind
from sparkgate.store.records import StatementRecord
from sparkgate.store.table_access import TableName
from sparkgate.tables.uploads import (
    LoadFormat,
    LoadMode,
    LoadRequest,
    new_upload_path,
    parse_table_name,
    quoted,
)
from sparkgate.tags import checked as checked_tags

log = logging.getLogger("sparkgate.service.loads")

_SCHEMA_MAX_CHARS = 65_536


@dataclass(frozen=True)
class PendingLoad:
    """A load checked and about to receive its file."""

    table: TableName
    format: LoadFormat
    mode: LoadMode
    header: bool
    schema: str | None
    filename: str | None
    path: Path
    tags: dict[str, str] = field(default_factory=dict)


class Loads:
    def __init__(self, settings: Settings, users: Users, queries: Queries) -> None:
        self.settings = settings
        self.users = users
        self.queries = queries

    def prepare(
        self,
        *,
        user: Principal,
        table: str,
        format: LoadFormat,
        mode: LoadMode,
        header: bool,
        schema: str | None,
        filename: str | None,
        tags: Mapping[str, str] | None = None,
    ) -> PendingLoad:
        """The checks a load passes before its file is read; ``tags`` are kept with the
        load's query."""
        name = parse_table_name(table)
        kept_tags = checked_tags(tags)
        if schema is not None and not schema.strip():
            schema = None
        if schema is not None and len(schema) > _SCHEMA_MAX_CHARS:
            raise InvalidRequest("schema: longer than 65536 characters.", field="schema")
        if schema is not None and format is LoadFormat.PARQUET:
            raise InvalidRequest(
                "schema: a Parquet file carries its own schema; give a schema for CSV or JSON.",
                field="schema",
            )
        self.users.require_statement(user, StatementKind.LOAD, "", target=f"table:{name.dotted}")
        self.users.check_query_limit(user)
        return PendingLoad(
            name,
            format,
            mode,
            header,
            schema,
            (filename or "").strip()[:255] or None,
            new_upload_path(self.settings.resolved_uploads_dir, format),
            kept_tags,
        )

    async def receive(
        self, pending: PendingLoad, body: AsyncIterator[bytes], declared: int | None = None
    ) -> int:
        """Stream ``body`` into the load's file; its size. Too large (``declared`` so, or
        found so), empty or cut short: the file is removed and the error raised."""
        limit = self.settings.load_max_bytes
        if declared is not None and declared > limit:
            raise PayloadTooLarge(limit, "SPARKGATE_LOAD_MAX_BYTES")
        size = 0
        try:
            with pending.path.open("wb") as file:
                async for chunk in body:
                    size += len(chunk)
                    if size > limit:
                        raise PayloadTooLarge(limit, "SPARKGATE_LOAD_MAX_BYTES")
                    file.write(chunk)
            if size == 0:
                raise FileEmpty()
        except BaseException:
            pending.path.unlink(missing_ok=True)
            raise
        return size

    def submit(self, pending: PendingLoad, size: int, *, user: Principal) -> StatementRecord:
        """Queue the load as a one-off statement of ``user``."""
        request = LoadRequest(
            path=str(pending.path),
            table=quoted(pending.table),
            format=pending.format,
            mode=pending.mode,
            header=pending.header,
            schema=pending.schema,
            size=size,
            filename=pending.filename,
        )
        try:
            statement, _ = self.queries.submit(
                request.to_json(), user=user, kind=StatementKind.LOAD, tags=pending.tags or None
            )
        except BaseException:
            pending.path.unlink(missing_ok=True)
            raise
        with logs.bound(query_id=statement.id):
            log.info(
                "load of %d bytes into %s (%s, %s) queued",
                size,
                pending.table.dotted,
                pending.format.value,
                pending.mode.value,
            )
        return statement
