"""The MetaData every table of the store is declared in, with its naming convention (so that
indexes and constraints have the names the migrations give them), and what the tables share:
the column types for JSON and for times, and the largest id an integer column holds.

Times are epoch seconds as floats: portable across SQLite and PostgreSQL, cheap to compare, and
trivial to render as ISO 8601 or Livy's epoch milliseconds.

Apart from ``schema`` because every module of tables (``schema_sessions``, ``schema_streams``,
...) declares its tables in this metadata, and ``schema`` imports them all.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# The largest id (or count) an integer column holds: SQLite INTEGER, PostgreSQL BIGINT. Every
# door refuses larger numbers before they reach the store, which would fail on them.
ID_MAX = 2**63 - 1

Json = sa.JSON().with_variant(JSONB(), "postgresql")
Time = sa.Float(precision=53)
