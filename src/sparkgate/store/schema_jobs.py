"""The tables of deployed jobs (manifests and deploy): each job and its versions, deployments
and every decision they made, and the runs of batch jobs. Part of ``schema``, which names every
table.
"""

from __future__ import annotations

import sqlalchemy as sa

from sparkgate.store.schema_metadata import Json, Time, metadata

# One row per job name ever deployed. A pruned job keeps its row (``removed``), so that its
# versions continue from the highest if the name is declared again: no state is ever reused.
jobs = sa.Table(
    "jobs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("mode", sa.String(16), nullable=False),  # streaming | batch
    sa.Column("owner", sa.String(255), nullable=True),  # who deployed it first
    sa.Column("version", sa.Integer, nullable=False),  # the current version (1, 2, ...)
    sa.Column("manifest", Json, nullable=False),  # as deployed: template merged, kebab-case keys
    # What it runs ([{"kind", "code"}]): the stream job's script, or a batch run's statements
    # (the shared definitions it uses are known only at deploy time, so they are kept here).
    sa.Column("steps", Json, nullable=False),
    # What the deploy decision compares (jobs.fingerprint): a changed query needs a new version
    # and clean state; changed run config a restart from the saved state; changed supervision
    # (description, retry) neither.
    sa.Column("query_fingerprint", sa.String(64), nullable=False),
    sa.Column("config_fingerprint", sa.String(64), nullable=False),
    sa.Column("supervision_fingerprint", sa.String(64), nullable=False),
    sa.Column("query_id", sa.String(36), nullable=False),  # a UUID, new with each version
    sa.Column("query_created_at", Time, nullable=False),  # when the current version was made
    sa.Column("started_before", sa.Boolean, nullable=False, default=False),  # ran in this version
    sa.Column("removed", sa.Boolean, nullable=False, default=False),  # pruned
    sa.Column("created_at", Time, nullable=False),
    sa.Column("updated_at", Time, nullable=False),
    sa.UniqueConstraint("name"),
)

job_versions = sa.Table(
    "job_versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("version", sa.Integer, nullable=False),
    sa.Column("manifest", Json, nullable=False),  # the manifest the version was made from
    sa.Column("query_id", sa.String(36), nullable=False),
    sa.Column("created_at", Time, nullable=False),
    sa.UniqueConstraint("name", "version"),
)

deployments = sa.Table(
    "deployments",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("owner", sa.String(255), nullable=True),
    sa.Column("plan_only", sa.Boolean, nullable=False, default=False),
    sa.Column("prune", sa.Boolean, nullable=False, default=False),
    sa.Column("node_id", sa.String(255), nullable=True),  # the node that runs it
    sa.Column("lease_owner", sa.String(255), nullable=True),  # its hold on the deploy lease
    sa.Column("files", Json, nullable=False),  # {"manifests": [...], "template", "definitions"}
    sa.Column("error", Json, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.Index(None, "state"),
)

# Every decision of every deploy (plans included): what was decided for a job, why, and how
# carrying it out went.
job_decisions = sa.Table(
    "job_decisions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("deployment_id", sa.Integer, sa.ForeignKey("deployments.id"), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),  # the order of the plan
    sa.Column("job", sa.String(128), nullable=False),
    sa.Column("from_version", sa.Integer, nullable=True),
    sa.Column("to_version", sa.Integer, nullable=True),
    sa.Column("action", sa.String(32), nullable=False),  # jobs.plan.ActionKind
    sa.Column("reason", sa.Text, nullable=False),
    # planned | in_progress | done | failed | skipped (the deployment ended before it) |
    # plan-only (a --plan: nothing was to be done)
    sa.Column("outcome", sa.String(16), nullable=False),
    sa.Column("note", sa.Text, nullable=True),  # what was done: "running", "stopped", ...
    sa.Column("error", Json, nullable=True),
    sa.Column("started_at", Time, nullable=True),
    sa.Column("finished_at", Time, nullable=True),
    sa.UniqueConstraint("deployment_id", "seq"),
    sa.Index(None, "job"),
)

# Runs of batch jobs: a session runs the steps one after the other (sources, then the atomic
# write of the target table); the ``job-runs`` duty submits each step when the one before it
# succeeded, and settles the run.
job_runs = sa.Table(
    "job_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("job", sa.String(128), nullable=False),
    sa.Column("job_version", sa.Integer, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("session_id", sa.Integer, nullable=True),
    sa.Column("steps", Json, nullable=False),  # [{"kind": "sql" | "pyspark", "code"}]
    sa.Column("step", sa.Integer, nullable=False, default=0),  # steps submitted so far
    sa.Column("statement_id", sa.Integer, nullable=True),  # the step submitted last
    sa.Column("error", Json, nullable=True),
    sa.Column("version", sa.Integer, nullable=False, default=1),
    sa.Column("created_at", Time, nullable=False),
    sa.Column("finished_at", Time, nullable=True),
    sa.Column("updated_at", Time, nullable=False),
    sa.Index(None, "job"),
    sa.Index(None, "state"),
)
