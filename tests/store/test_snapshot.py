"""A row read into its record: each column made into its field's type, from the field's type."""

from __future__ import annotations

from typing import Any

from sparkgate.recorded import RecordedError
from sparkgate.states import DeploymentState, StatementKind, StatementState, TableTxnState
from sparkgate.store.records import (
    DeploymentFiles,
    DeploymentRecord,
    EngineRecord,
    JobRecord,
    SessionRecord,
    StatementRecord,
    StreamJobRecord,
    TableTxnRecord,
)
from sparkgate.store.session_attributes import SessionAttributes

TIMES = {"version": 1, "created_at": 1.0, "finished_at": None, "updated_at": 2.0}
STATEMENT: dict[str, Any] = {
    **TIMES,
    "id": 7,
    "session_id": 3,
    "seq": 0,
    "kind": "sql",
    "code": "SELECT 1",
    "state": "failed",
    "error": {"code": "SQL_ERROR", "message": "no such table", "position": 14},
    "result": None,
    "output": None,
    "progress": 0.5,
    "started_at": None,
}


def test_states_errors_and_results_are_read_into_their_types() -> None:
    failed = StatementRecord.from_row(STATEMENT)
    assert failed.kind is StatementKind.SQL and failed.state is StatementState.FAILED
    assert isinstance(failed.error, RecordedError) and failed.error.code == "SQL_ERROR"
    assert failed.error.param("position") == 14
    assert failed.result is None and failed.output is None  # optional columns' NULL stays None

    result = {"schema": [{"name": "x", "type": "int"}], "row_count": 1, "path": "/r/7"}
    done = StatementRecord.from_row(
        {**STATEMENT, "state": "success", "error": None}
        | {
            "result": result,
            "output": {"data": {"text/plain": "1"}},
        }
    )
    assert done.error is None and done.result is not None
    assert done.result.row_count == 1 and done.result.schema[0].type == "int"
    assert done.output == {"data": {"text/plain": "1"}}


def test_flags_json_and_attributes_are_read_as_sqlite_and_postgresql_keep_them() -> None:
    txn = TableTxnRecord.from_row(
        {
            **TIMES,
            "id": 1,
            "statement_id": 7,
            "engine_id": None,
            "operation": "create",
            "database_name": "default",
            "table_name": "t",
            "staging_table": None,
            "staging_location": "/s",
            "target_location": "/t",
            "previous_location": None,
            "state": "committed",
            "error": None,
            "catalog_clean": 1,  # SQLite's boolean
            "staging_removed_at": None,
            "retire_after": None,
            "retired_at": None,
        }
    )
    assert txn.catalog_clean is True and txn.state is TableTxnState.COMMITTED

    deployment = DeploymentRecord.from_row(
        {
            **TIMES,
            "id": 2,
            "state": "running",
            "plan_only": 0,
            "prune": True,
            "node_id": None,
            "lease_owner": None,
            "files": None,  # NULL: no files, an empty object
            "error": None,
        }
    )
    assert deployment.state is DeploymentState.RUNNING
    assert (
        deployment.plan_only is False
        and deployment.prune is True
        and deployment.files == DeploymentFiles()
    )

    session = SessionRecord.from_row(
        {
            **TIMES,
            "id": 3,
            "kind": "interactive",
            "name": None,
            "state": "idle",
            "engine_id": None,
            "conf": None,
            "owner": "alice",
            "proxy_user": None,
            "attributes": {"door": "hive2", "groups": ["eng"], "added_later": 1},
            "error": None,
            "statement_count": 0,
            "started_at": None,
            "last_activity_at": 1.0,
        }
    )
    assert session.conf == {}
    assert session.attributes == SessionAttributes(door="hive2", groups=("eng",))


def test_a_stored_json_value_is_a_copy_and_an_absent_optional_one_stays_none() -> None:
    conf = {"spark.sql.shuffle.partitions": "2"}
    engine = EngineRecord.from_row(
        {
            **TIMES,
            "id": 4,
            "kind": "shared",
            "state": "running",
            "session_id": None,
            "conf": conf,
            "node_id": None,
            "host": None,
            "pid": None,
            "app_id": None,
            "log_path": None,
            "error": None,
            "started_at": None,
            "heartbeat_at": None,
        }
    )
    assert engine.conf == conf and engine.conf is not conf

    job = StreamJobRecord.from_row(
        {
            **TIMES,
            "id": 5,
            "name": "clicks",
            "state": "running",
            "sql": "SELECT 1",
            "conf": {},
            "checkpoint_root": None,
            "revision": 1,
            "session_id": None,
            "failures": 0,
            "restarts": 0,
            "next_restart_at": None,
            "error": None,
            "started_at": None,
            "running_since": None,
            "steps": None,
        }
    )
    assert job.steps is None  # optional: None is "the job's SQL", not an empty script

    manifest_job = JobRecord.from_row(
        {
            "id": 6,
            "name": "daily",
            "mode": "batch",
            "version": 1,
            "manifest": None,
            "steps": None,
            "query_fingerprint": "q",
            "config_fingerprint": "c",
            "supervision_fingerprint": "s",
            "query_id": "daily",
            "query_created_at": 1.0,
            "started_before": 0,
            "removed": 0,
            "created_at": 1.0,
            "updated_at": 1.0,
        }
    )
    assert manifest_job.manifest == {} and manifest_job.steps == []
    assert manifest_job.started_before is False and manifest_job.removed is False
