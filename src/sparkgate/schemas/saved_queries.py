"""Saved queries: SQL kept under a name, private to its owner or shared with a group."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from sparkgate.schemas.common import Body, Paging, Timestamp

if TYPE_CHECKING:  # the record its model is built from, for the type checker only
    from sparkgate.store.saved_queries import SavedQueryRecord


class SavedQuery(Body):
    id: int
    name: str
    sql: str
    description: str | None
    owner: str
    group: str | None = Field(description="The group it is shared with; null: private.")
    tags: dict[str, str] = Field(default_factory=dict)
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, record: SavedQueryRecord) -> SavedQuery:
        return cls.from_record(record, group=record.group_name)


class SavedQueryList(Paging):
    saved_queries: list[SavedQuery]
