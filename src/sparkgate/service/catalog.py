"""The catalog: the schemas, tables and views a user may see, and a table's columns, owner,
size, last change, first rows and recent queries (``/v1/tables``, ``sparkgate tables``, the
dashboard's catalog page).

What a user may see is decided in an engine, never by the node reading the metastore: the
listing and a table's details are catalog statements (``engine.catalog_browse``) run as the
user in a one-off session, where the engine's access control filters SHOW TABLES, answers "not
found" for a table the user may not see, and applies masks, hidden columns and row filters to
the preview. The node adds what the store knows: the owner (``table_owners``, which the table
rules keep; else the one Spark's catalog recorded) and the queries that read or wrote the
table (``statement_tables``), those the user may see (``visibility``).
Each read is a query of the user's, listed with their others (kind ``catalog``).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter

from sparkgate.auth.principal import Principal
from sparkgate.errors import CatalogUnavailable, InvalidRequest, SchemaNotFound, TableNotFound
from sparkgate.runtime.catalog_request import CatalogRequest
from sparkgate.runtime.described_table import DescribedTable, FilesFound
from sparkgate.schemas import tables as bodies
from sparkgate.schemas.common import iso, stamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.service.queries import Queries, ResultPage
from sparkgate.service.views import result_page_view
from sparkgate.service.visibility import scope
from sparkgate.states import StatementKind, StatementState
from sparkgate.store import Store
from sparkgate.store.records import StatementRecord
from sparkgate.store.statement_tables import TableUse
from sparkgate.store.table_access import TableName
from sparkgate.tables.uploads import parse_table_name

PREVIEW_ROWS = 20  # the engine's preview (engine.catalog_browse.PREVIEW_ROWS)
RECENT_QUERIES = 20
# The engine's answers for a table or schema that is not there, or that the user may not see.
_ABSENT = frozenset({"TABLE_OR_VIEW_NOT_FOUND", "VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"})
_SCHEMA = re.compile(r"[A-Za-z0-9_]{1,255}")


@dataclass(frozen=True)
class CatalogTable:
    schema: str
    name: str
    kind: str  # "table" | "view"


@dataclass(frozen=True)
class CatalogSchema:
    name: str
    tables: list[CatalogTable]


@dataclass(frozen=True)
class CatalogListing:
    schemas: list[CatalogSchema]
    query_id: int  # the catalog statement that listed them


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool | None
    comment: str | None


@dataclass(frozen=True)
class TableFiles:
    """A table's files at its location, as the engine walked them."""

    size_bytes: int | None
    count: int | None
    last_change: float | None  # the newest file's modification, epoch seconds
    complete: bool = True  # False: more files than the engine counts (catalog_browse)


@dataclass(frozen=True)
class TableDetail:
    name: TableName
    kind: str
    columns: list[Column]
    owner: str | None
    provider: str | None
    location: str | None
    created_at: float | None
    comment: str | None
    view_text: str | None
    files: TableFiles | None  # None: a view
    preview: ResultPage | None
    preview_error: RecordedError | None
    recent: list[TableUse]
    query_id: int  # the catalog statement that described it


def schema_name(text: str) -> str:
    """A schema as ``?schema=`` names it: letters, digits and ``_``, as a Hive metastore
    allows."""
    cleaned = text.strip().strip("`")
    if not _SCHEMA.fullmatch(cleaned):
        raise InvalidRequest(
            f"schema: {text[:100]!r} is not a schema name (letters, digits and _).",
            field="schema",
        )
    return cleaned.lower()


@dataclass
class Catalog:
    store: Store
    queries: Queries

    async def listing(self, *, user: Principal, schema: str | None = None) -> CatalogListing:
        """The schemas (or ``schema`` alone) and in each the tables and views ``user`` may
        see; a schema where they see nothing is listed empty."""
        wanted = schema_name(schema) if schema is not None else None
        statement = await self._run(user, CatalogRequest("browse", {"schema": wanted}))
        if statement.state is not StatementState.SUCCESS:
            if wanted is not None and _code(statement) in _ABSENT:
                raise SchemaNotFound(wanted)
            raise CatalogUnavailable(statement.id, statement.error)
        schemas: dict[str, list[CatalogTable]] = {}
        for schema_of, name, kind in await asyncio.to_thread(self._all_rows, statement):
            tables = schemas.setdefault(schema_of, [])
            if name is not None:
                tables.append(CatalogTable(schema_of, name, kind))
        return CatalogListing(
            [CatalogSchema(name, tables) for name, tables in sorted(schemas.items())],
            statement.id,
        )

    async def table(self, name: str, *, user: Principal) -> TableDetail:
        """One table or view as ``user`` may see it (``schema.table``, or ``table`` in
        ``default``); TableNotFound when it is not there or not theirs to see."""
        table = parse_table_name(name)
        request = CatalogRequest("describe", {"schema": table.schema, "table": table.table})
        statement = await self._run(user, request)
        if statement.state is not StatementState.SUCCESS:
            # One the user has no privilege on is refused by name, there or not: not found.
            if _code(statement) in _ABSENT | {"INSUFFICIENT_PRIVILEGE"}:
                raise TableNotFound(f"{table.schema}.{table.table}")
            raise CatalogUnavailable(statement.id, statement.error)
        return await asyncio.to_thread(self._detail, table, statement, user)

    # -- helpers -------------------------------------------------------------------------

    async def _run(self, user: Principal, request: CatalogRequest) -> StatementRecord:
        """Run a catalog statement as ``user`` in a one-off session; it, once ended."""
        statement, _ = await asyncio.to_thread(
            self.queries.submit, request.to_code(), user=user, kind=StatementKind.CATALOG
        )
        return await self.queries.finished(statement)

    def _all_rows(self, statement: StatementRecord) -> list[list[Any]]:
        rows: list[list[Any]] = []
        while True:
            page = self.queries.result_page(statement, len(rows), None)
            rows.extend(page.rows)
            if not page.rows or len(rows) >= page.total:
                return rows

    def _detail(self, name: TableName, statement: StatementRecord, user: Principal) -> TableDetail:
        info = DescribedTable.of_output(statement.output)
        # The engine's own spelling of the names (the catalog's), for the store's lookups.
        found = TableName.of(
            name.catalog, info.schema_name or name.schema, info.table or name.table
        )
        preview = (
            self.queries.result_page(statement, 0, PREVIEW_ROWS)
            if statement.result is not None
            else None
        )
        visible = scope(user)
        recent = self.store.statement_tables.recent(
            found.dotted, owner=visible.owner, creator=visible.creator, limit=RECENT_QUERIES
        )
        return TableDetail(
            name=found,
            kind=info.kind,
            columns=[Column(c.name, c.type, c.nullable, c.comment) for c in info.columns],
            # Who sparkgate recorded (table rules: moved by RENAME), else Spark's catalog's.
            owner=self.store.table_access.owner(found) or info.owner or None,
            provider=info.provider,
            location=info.location,
            created_at=_epoch(info.created_at),
            comment=info.comment,
            view_text=info.view_text,
            files=None if info.files is None else _files(info.files),
            preview=preview,
            preview_error=info.preview_error,
            recent=recent,
            query_id=statement.id,
        )


def _code(statement: StatementRecord) -> str | None:
    return statement.error.code if statement.error is not None else None


def _epoch(text: object) -> float | None:
    """Seconds since the epoch from DESCRIBE's ISO time (``2026-11-26T12:36:43Z``)."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


def _files(found: FilesFound) -> TableFiles:
    """What the engine found; all None when it could not read the files (``error``)."""
    modified = found.modified
    return TableFiles(
        size_bytes=found.bytes,
        count=found.files,
        last_change=None if modified is None else modified / 1000.0,
        complete=found.complete,
    )


# -- views: the JSON of /v1/tables, which the dashboard shows too -------------------------


def listing_view(listing: CatalogListing) -> bodies.CatalogListing:
    return bodies.CatalogListing(
        schemas=[
            bodies.CatalogSchema(
                name=schema.name,
                tables=[
                    bodies.CatalogEntry(
                        schema=t.schema, name=t.name, kind=_KIND.validate_python(t.kind)
                    )
                    for t in schema.tables
                ],
            )
            for schema in listing.schemas
        ],
        query_id=listing.query_id,
    )


def table_view(detail: TableDetail) -> bodies.TableDetail:
    files = detail.files
    return bodies.TableDetail(
        name=f"{detail.name.schema}.{detail.name.table}",
        full_name=detail.name.dotted,
        schema=detail.name.schema,
        table=detail.name.table,
        kind=_KIND.validate_python(detail.kind),
        owner=detail.owner,
        columns=[
            bodies.TableColumn(name=c.name, type=c.type, nullable=c.nullable, comment=c.comment)
            for c in detail.columns
        ],
        provider=detail.provider,
        location=detail.location,
        created_at=iso(detail.created_at),
        comment=detail.comment,
        view_text=detail.view_text,
        size_bytes=None if files is None else files.size_bytes,
        files=None if files is None else files.count,
        files_complete=None if files is None else files.complete,
        last_change=None if files is None else iso(files.last_change),
        preview=None if detail.preview is None else result_page_view(detail.preview),
        preview_error=detail.preview_error,
        recent_queries=[
            bodies.TableUse(
                id=use.statement_id,
                user=use.owner,
                access=_ACCESS.validate_python(use.access),
                at=stamp(use.at),
                state=use.state,
            )
            for use in detail.recent
        ],
        query_id=detail.query_id,
    )


# What the engine and the store name as text, checked where it becomes a field.
_KIND: TypeAdapter[bodies.TableKind] = TypeAdapter(bodies.TableKind)
_ACCESS: TypeAdapter[bodies.Access] = TypeAdapter(bodies.Access)
