"""The store's tables, in SQLAlchemy Core. Migrations (``store/migrations``) create them.

Declared by resource, a module each: ``schema_sessions`` (engines, sessions, statements,
leases, idempotency keys), ``schema_streams``, ``schema_jobs``, ``schema_users`` (tokens, the
audit log), ``schema_connect``, ``schema_catalog`` (two-phase writes, table owners and
grants, the tables statements used), ``schema_costs`` (what statements cost),
``schema_queues`` (resource groups), ``schema_saved`` (saved queries) and ``schema_reuse``
(result reuse); all in one ``metadata`` (``schema_metadata``, with the column types they
share).

This module imports every one of them, so that ``metadata`` holds every table once it is
imported (Alembic's environment and the test that compares the models with the migrations read
it from here), and it names them all: the store's modules import their tables from here.
"""

from __future__ import annotations

from sparkgate.store.schema_catalog import (
    statement_tables,
    table_grants,
    table_owners,
    table_transactions,
)
from sparkgate.store.schema_connect import connect_operations, connect_sessions, engine_connect
from sparkgate.store.schema_costs import statement_costs, statement_tags, stream_costs
from sparkgate.store.schema_jobs import deployments, job_decisions, job_runs, job_versions, jobs
from sparkgate.store.schema_metadata import ID_MAX, Json, Time, metadata
from sparkgate.store.schema_queues import group_counts, group_places, resource_groups
from sparkgate.store.schema_reuse import (
    reusable_results,
    reuse_contexts,
    statement_reuse,
    table_versions,
)
from sparkgate.store.schema_saved import saved_queries
from sparkgate.store.schema_sessions import (
    engine_policies,
    engines,
    idempotency_keys,
    leases,
    sessions,
    statement_progress,
    statements,
)
from sparkgate.store.schema_streams import (
    stream_jobs,
    stream_progress,
    stream_queries,
    stream_restarts,
)
from sparkgate.store.schema_users import audit_events, tokens

__all__ = [
    "ID_MAX",
    "Json",
    "Time",
    "audit_events",
    "connect_operations",
    "connect_sessions",
    "deployments",
    "engine_connect",
    "engine_policies",
    "engines",
    "group_counts",
    "group_places",
    "idempotency_keys",
    "job_decisions",
    "job_runs",
    "job_versions",
    "jobs",
    "leases",
    "metadata",
    "resource_groups",
    "reusable_results",
    "reuse_contexts",
    "saved_queries",
    "sessions",
    "statement_costs",
    "statement_progress",
    "statement_reuse",
    "statement_tables",
    "statement_tags",
    "statements",
    "stream_costs",
    "stream_jobs",
    "stream_progress",
    "stream_queries",
    "stream_restarts",
    "table_grants",
    "table_owners",
    "table_transactions",
    "table_versions",
    "tokens",
]
