"""The tables of resource groups: the groups' configuration that admission reads (written
from the access file's ``resource_groups:`` by every node that loads it, the same rows from
each), and each statement's place in a group. Part of ``schema``, which names every table.

A table of places rather than a column of ``statements``: the release before, which knows no
such column, keeps reading and writing statements on the newer schema.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Time, metadata

resource_groups = sa.Table(
    "resource_groups",
    metadata,
    # Dotted from its root group, as written in the file (``analysts.${USER}``).
    sa.Column("name", sa.String(255), primary_key=True),
    sa.Column("hard_concurrency_limit", sa.Integer, nullable=False),
    sa.Column("max_queued", sa.Integer, nullable=False),
    sa.Column("scheduling_policy", sa.String(16), nullable=False),
    sa.Column("scheduling_weight", sa.Integer, nullable=False),
    # Bumped by each admission under its root group: the row lock that serialises admissions
    # of one tree across nodes (PostgreSQL; SQLite's writes are serial already).
    sa.Column("admissions", sa.BigInteger, nullable=False, default=0, server_default="0"),
)

# A statement's place in its group: ``queued`` (waiting for a turn), ``admitted`` (waiting or
# running: it holds a turn) or ``over`` (it ended; kept, for usage by group).
group_places = sa.Table(
    "group_places",
    metadata,
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), primary_key=True),
    sa.Column("session_id", sa.Integer, nullable=False),
    sa.Column("owner", sa.String(255), nullable=False),
    # Dotted from its root group, ``${USER}`` expanded (``analysts.bob``).
    sa.Column("resource_group", sa.String(255), nullable=False),
    sa.Column("state", sa.String(8), nullable=False),
    # Whether it holds a turn (admitted): kept when it ends, so that the end's one UPDATE
    # says which of its owner's counts to give back.
    sa.Column("held", sa.Boolean, nullable=False),
    sa.Column("created_at", Time, nullable=False),
    # A user's oldest queued statement in a group: one index lookup (group_counts.oldest).
    sa.Index(None, "state", "resource_group", "owner", "statement_id"),
    sa.Index(None, "session_id", "state"),
)

# How many statements each user has admitted and queued in each group, and their oldest queued
# one, kept by the transactions that move places: admission reads these few rows, never the
# queue itself, so its work does not grow with the queue's length.
group_counts = sa.Table(
    "group_counts",
    metadata,
    sa.Column("resource_group", sa.String(255), primary_key=True),
    sa.Column("owner", sa.String(255), primary_key=True),
    sa.Column("admitted", sa.Integer, nullable=False),
    sa.Column("queued", sa.Integer, nullable=False),
    sa.Column("oldest_queued", sa.Integer, nullable=True),
)
