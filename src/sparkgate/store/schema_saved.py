"""Saved queries: SQL a user keeps under a name, private or shared with one of their groups.
Part of ``schema``, which names every table.

Groups are not the store's: they come with each request's credentials (the access file, LDAP,
a JWT), so a query is shared with a group by its name, and who sees it is decided per request.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Json, Time, metadata

saved_queries = sa.Table(
    "saved_queries",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("owner", sa.String(255), nullable=False),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("sql", sa.Text, nullable=False),
    sa.Column("description", sa.Text, nullable=True),
    sa.Column("group_name", sa.String(255), nullable=True),  # NULL: private to its owner
    sa.Column("tags", Json, nullable=True),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("updated_at", Time, nullable=False),
    # A name is its owner's: two users may each have "daily revenue".
    sa.UniqueConstraint("owner", "name"),
    # The two halves of a user's list (their own, their groups'), newest change first.
    sa.Index(None, "owner", "updated_at"),
    sa.Index(None, "group_name", "updated_at"),
)
