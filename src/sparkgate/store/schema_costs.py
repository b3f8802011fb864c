"""The tables of what queries cost: each statement's Spark task metrics, summed by its engine
when it ends, a streaming query's batch by batch, and the tags usage sums them by. Part of
``schema``, which names every table.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.statement_cost import COST_COLUMNS
from sparkgate.store.schema_metadata import Time, metadata

statement_costs = sa.Table(
    "statement_costs",
    metadata,
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), primary_key=True),
    sa.Column("at", Time, nullable=False),
    *(sa.Column(name, sa.BigInteger, nullable=False) for name in COST_COLUMNS),
    sa.Index(None, "at"),
)

# What a streaming query's micro-batches cost: its engine takes what their tasks cost since
# the last take each time it writes the query's progress, a row each time, counted for the
# statement that started the query (its owner, tags and resource group). So a stream that
# runs for weeks costs, in usage by day, what it cost each day.
stream_costs = sa.Table(
    "stream_costs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), nullable=False),
    sa.Column("stream_query_id", sa.Integer, nullable=False),
    sa.Column("at", Time, nullable=False),
    *(sa.Column(name, sa.BigInteger, nullable=False) for name in COST_COLUMNS),
    sa.Index(None, "statement_id"),
    sa.Index(None, "at"),
)

# A query's tags (``{"team": "finance"}``: its session's, then its own, which win), kept with
# it: usage sums costs by a tag's value, and resource groups' selectors match them.
statement_tags = sa.Table(
    "statement_tags",
    metadata,
    sa.Column("statement_id", sa.Integer, sa.ForeignKey("statements.id"), primary_key=True),
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
    sa.Index(None, "key", "value"),
)
