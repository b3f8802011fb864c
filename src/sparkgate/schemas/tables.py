"""The catalog: the schemas with the tables and views you may see, and one table described
(its first rows are a result page, as a query's are).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparkgate.schemas.common import Body, Timestamp
from sparkgate.schemas.errors import RecordedError
from sparkgate.schemas.queries import ResultPage
from sparkgate.states import StatementState

TableKind = Literal["table", "view"]
Access = Literal["read", "write"]


class CatalogEntry(Body):
    # "schema" shadows a BaseModel attribute: the field has another name and the key as alias.
    schema_name: str = Field(alias="schema")
    name: str
    kind: TableKind


class CatalogSchema(Body):
    name: str
    tables: list[CatalogEntry] = Field(description="Those you may see; empty if none.")


class CatalogListing(Body):
    """``GET /v1/tables``: the schemas, and in each the tables and views you may see."""

    schemas: list[CatalogSchema]
    query_id: int = Field(description="The catalog query (kind `catalog`) that listed them.")


class TableColumn(Body):
    name: str
    type: str = Field(description="Spark's type, as you read the column (a mask may change it).")
    nullable: bool | None
    comment: str | None


class TableUse(Body):
    """A query that read or wrote the table."""

    id: int
    user: str | None
    access: Access
    at: Timestamp = Field(description="When the query ended.")
    state: StatementState


class TableDetail(Body):
    """``GET /v1/tables/{name}``: a table or view as you may see it."""

    name: str = Field(description="schema.table")
    full_name: str = Field(description="catalog.schema.table")
    schema_name: str = Field(alias="schema")
    table: str
    kind: TableKind
    owner: str | None = Field(
        description="As sparkgate recorded it (table rules), else as Spark's catalog did."
    )
    columns: list[TableColumn] = Field(description="As you see them: hidden columns left out.")
    provider: str | None
    location: str | None
    created_at: Timestamp | None
    comment: str | None
    view_text: str | None
    size_bytes: int | None = Field(description="Of its files; null for a view.")
    files: int | None
    files_complete: bool | None = Field(description="False: more files than were counted.")
    last_change: Timestamp | None = Field(description="Its newest file's modification time.")
    preview: ResultPage | None = Field(description="Its first rows, as you read them.")
    preview_error: RecordedError | None = Field(description="Why there is no preview.")
    recent_queries: list[TableUse] = Field(description="Newest first; yours (admins: all).")
    query_id: int = Field(description="The catalog query (kind `catalog`) that described it.")
