"""What a catalog ``describe`` statement leaves in its output's ``table``: written by the
engine (``engine/catalog_browse``), read by the service (``service/catalog``).

It is JSON in the statement's record, so a field that is not known (a view's files, a preview
that ran) is left out, as the releases before wrote it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sparkgate.schemas.errors import RecordedError
from sparkgate.store.statement_output import StatementOutput


class DescribedColumn(BaseModel):
    name: str
    type: str  # Spark's simple string: ``int``, ``decimal(10,2)``
    nullable: bool | None = None  # None: from DESCRIBE, which does not say
    comment: str | None = None


class FilesFound(BaseModel):
    """A table's files as the engine counted them (``TableFiles.scala``), or why it could
    not (``error``, the rest None)."""

    bytes: int | None = None
    files: int | None = None
    modified: int | None = None  # the newest file's modification, epoch ms
    complete: bool = True  # False: more files than the engine counts
    error: RecordedError | None = None


class DescribedTable(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    # "schema" shadows a BaseModel attribute: the field has another name and the key as alias.
    schema_name: str | None = Field(None, alias="schema")
    table: str | None = None
    kind: str = "table"  # or "view"
    owner: str | None = None  # as Spark's catalog recorded it
    provider: str | None = None
    location: str | None = None
    created_at: str | None = None  # DESCRIBE's ISO time
    comment: str | None = None
    view_text: str | None = None
    columns: list[DescribedColumn] = []
    preview_error: RecordedError | None = None
    files: FilesFound | None = None  # None: a view, or a table with no location

    def to_output(self) -> dict[str, Any]:
        """As the statement's output keeps it."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def of_output(cls, output: StatementOutput | None) -> DescribedTable:
        """From a ``describe`` statement's output (an empty description if it has none)."""
        return cls.model_validate((output or {}).get("table") or {})
