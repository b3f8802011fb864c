"""The service's rules, in one place, on a real store (SQLite and PostgreSQL) with a launcher
that starts no processes: who sees what, which right each change needs, what is audited, and
the error (and its stable code) each refusal is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparkgate.auth.principal import Principal
from sparkgate.errors import (
    DeniedSetting,
    EngineNotFound,
    Forbidden,
    MissingRight,
    QueryFinished,
    QueryNotFound,
    ResultGone,
    ResultNotReady,
    SessionNotFound,
    SparkgateError,
)
from sparkgate.errors.jobs import DeploymentNotFound, JobRunNotFound, ManifestsInvalid
from sparkgate.errors.streams import StreamJobNotFound, StreamQueryNotFound, StreamQueryNotRunning
from sparkgate.service import Service
from sparkgate.settings import Settings
from sparkgate.states import (
    SessionKind,
    SessionState,
    StatementKind,
    StatementState,
    StreamQueryState,
)
from sparkgate.store import Store
from sparkgate.store.audit import TableUseEvent
from sparkgate.store.records import StatementRecord
from sparkgate.store.session_attributes import SessionAttributes
from sparkgate.store.table_access import TableName
from sparkgate.store.tokens import TokenNotFound
from sparkgate.stream_spec import QuerySpec
from tests.conftest import NOW, force_state, make_service, run_async, succeeded, write_result

ALL = frozenset({"sql", "code", "streams", "jobs"})
ALICE = Principal("alice", rights=ALL)
BOB = Principal("bob", rights=ALL)
ADMIN = Principal("root", admin=True, rights=ALL | {"admin"})
SQL_ONLY = Principal("carol", rights=frozenset({"sql"}))
STREAM = "CREATE STREAM r USING rate;\nSAVE STREAM r TO console"


def audited(store: Store, action: str) -> list[tuple[str | None, str]]:
    return [(e.user, e.outcome) for e in store.audit.list_page(action=action).items]


@pytest.fixture
def authed(store: Store, tmp_path: Path) -> Service:
    """The service with password authentication on (its users are the tests' principals)."""
    passwords = tmp_path / "passwords"
    passwords.write_text("")
    service: Service = make_service(
        store, Settings(home=tmp_path, auth="password", auth_password_file=passwords)
    )
    return service


# -- visibility ------------------------------------------------------------------------


def test_another_users_session_and_query_are_as_absent(service: Service) -> None:
    statement, _ = service.queries.submit("SELECT 1", user=ALICE)
    session_id = statement.session_id
    assert service.sessions.get(session_id, user=ALICE).owner == "alice"
    assert service.queries.get(statement.id, user=ADMIN).owner == "alice"
    with pytest.raises(SessionNotFound):
        service.sessions.get(session_id, user=BOB)
    with pytest.raises(QueryNotFound) as missing:
        service.queries.get(statement.id, user=BOB)
    with pytest.raises(QueryNotFound) as unknown:
        service.queries.get(statement.id + 1000, user=BOB)
    # The same refusal, word for word but the id, as for an id that does not exist.
    assert missing.value.code == unknown.value.code == "QUERY_NOT_FOUND"
    with pytest.raises(QueryNotFound):
        service.queries.cancel(statement.id, user=BOB)
    assert service.queries.get(statement.id, user=ALICE).state is StatementState.WAITING


def test_lists_hold_ones_own_and_admins_choose(service: Service) -> None:
    mine, _ = service.queries.submit("SELECT 1", user=ALICE)
    theirs, _ = service.queries.submit("SELECT 2", user=BOB)
    assert [q.id for q in service.queries.list_page(user=ALICE).items] == [mine.id]
    # A plain user's ?owner= names no one else's.
    assert [q.id for q in service.queries.list_page(user=ALICE, owner="bob").items] == [mine.id]
    assert {q.id for q in service.queries.list_page(user=ADMIN).items} == {mine.id, theirs.id}
    assert [q.id for q in service.queries.list_page(user=ADMIN, owner="bob").items] == [theirs.id]
    sessions = service.sessions.list_page(user=BOB).items
    assert [s.id for s in sessions] == [theirs.session_id]


def test_one_off_queries_sessions_are_told_from_other_batches(service: Service) -> None:
    """What the gateway records for a one-off query marks its session as one; a Livy batch
    (and a batch session) is not one, and the unfiltered list, Livy's, holds them all."""
    one_off, _ = service.queries.submit("SELECT 1", user=ALICE)
    livy, _ = service.sessions.create(
        SessionKind.BATCH,
        user=ALICE,
        attributes=SessionAttributes(livy={"file": "etl.py"}),
        first_statement=(StatementKind.FILE, "etl.py"),
    )
    interactive, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    others = service.sessions.list_page(user=ALICE, one_off=False).items
    assert [s.id for s in others] == [livy.id, interactive.id]
    alone = service.sessions.list_page(user=ALICE, one_off=True).items
    assert [s.id for s in alone] == [one_off.session_id]
    everything = service.sessions.list_page(user=ALICE, kinds=[SessionKind.BATCH]).items
    assert [s.id for s in everything] == [one_off.session_id, livy.id]


def test_an_impersonator_sees_what_it_made_by_id_and_in_lists(
    service: Service, store: Store
) -> None:
    session, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    proxy = Principal("proxy", rights=ALL, impersonator=True)
    # Made by "proxy" for alice (Livy's proxyUser): proxy opens it by id and lists it; bob
    # does neither.
    force_state(store, "sessions", session.id, "idle", attributes={"created_by": "proxy"})
    statement, _ = service.queries.submit("SELECT 1", user=ALICE, session_id=session.id)
    own, _ = service.queries.submit("SELECT 2", user=proxy)
    assert service.sessions.get(session.id, user=proxy).id == session.id
    assert service.queries.get(statement.id, user=proxy).id == statement.id
    listed = [s.id for s in service.sessions.list_page(user=proxy).items]
    assert listed == [session.id, own.session_id]
    queries = [q.id for q in service.queries.list_page(user=proxy).items]
    assert queries == [own.id, statement.id]
    assert [s.id for s in service.sessions.list_page(user=ALICE).items] == [session.id]
    for reader in (BOB, Principal("proxy", rights=ALL)):  # bob; proxy once no impersonator
        with pytest.raises(SessionNotFound):
            service.sessions.get(session.id, user=reader)
        assert session.id not in [s.id for s in service.sessions.list_page(user=reader).items]
        assert statement.id not in [q.id for q in service.queries.list_page(user=reader).items]


# The process of an engine as its launcher and the engine record it.
PROCESS = {
    "host": "spark-7.internal",
    "pid": 4242,
    "app_id": "local-1700000000000",
    "ui_url": "http://127.0.0.1:4040",
    "log_path": "/var/lib/sparkgate/logs/engine.log",
    "node_id": "node-1",
}


def test_a_user_sees_only_the_engines_of_their_sessions_and_not_where_they_run(
    service: Service, store: Store
) -> None:
    mine, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    bobs, _ = service.sessions.create(SessionKind.INTERACTIVE, user=BOB)
    theirs, _ = service.queries.submit("SELECT 1", user=BOB, isolation="engine")
    shared = mine.engine_id
    dedicated = store.sessions.get(theirs.session_id).engine_id
    assert shared is not None and dedicated is not None
    assert bobs.engine_id == shared != dedicated  # alice's and bob's sessions share one
    for engine_id in (shared, dedicated):
        force_state(store, "engines", engine_id, "running", **PROCESS)
    every = service.engines.list_all(user=ADMIN)
    assert [e.id for e in every] == [shared, dedicated]
    assert all(
        (e.host, e.pid, e.app_id) == ("spark-7.internal", 4242, PROCESS["app_id"]) for e in every
    )
    assert service.engines.get(dedicated, user=ADMIN).log_path == PROCESS["log_path"]
    # alice: the engine her session is on (bob's too), and nothing of its process.
    [seen] = service.engines.list_all(user=ALICE)
    assert seen.id == shared and seen.state.value == "running"
    assert (seen.host, seen.pid, seen.app_id, seen.ui_url, seen.log_path, seen.node_id) == (
        (None,) * 6
    )
    assert service.engines.get(shared, user=ALICE) == seen
    assert service.engines.of_sessions([mine], user=ALICE) == {shared: seen}
    assert service.engines.of_sessions([mine], user=ADMIN)[shared].app_id == PROCESS["app_id"]
    # bob's own engine is absent to her: the refusal of an id that does not exist.
    with pytest.raises(EngineNotFound) as hidden:
        service.engines.get(dedicated, user=ALICE)
    with pytest.raises(EngineNotFound) as unknown:
        service.engines.get(dedicated + 1000, user=ALICE)
    assert hidden.value.code == unknown.value.code == "ENGINE_NOT_FOUND"
    assert hidden.value.message == f"Engine {dedicated} does not exist."
    assert service.engines.get(dedicated, user=BOB).pid is None
    # Stopping and the Spark UI stay an admin's, refused alike whether the engine is hers.
    for engine_id in (shared, dedicated, dedicated + 1000):
        with pytest.raises(MissingRight):
            service.engines.stop(engine_id, user=ALICE)
        with pytest.raises(MissingRight):
            service.engines.ui(engine_id, user=ALICE)
    # Her session ended and its engine stopped, she still finds the engine it ran on.
    service.sessions.kill(mine.id, user=ALICE)
    assert [e.id for e in service.engines.list_all(user=ALICE)] == [shared]
    force_state(store, "engines", shared, "stopped")
    assert service.engines.list_all(user=ALICE) == []
    assert [e.id for e in service.engines.list_all(user=ALICE, live_only=False)] == [shared]
    assert service.engines.get(shared, user=ALICE).host is None


def test_an_impersonator_sees_the_engines_of_what_it_made(service: Service, store: Store) -> None:
    theirs, _ = service.queries.submit("SELECT 1", user=ALICE, isolation="engine")
    engine_id = store.sessions.get(theirs.session_id).engine_id
    assert engine_id is not None
    force_state(store, "sessions", theirs.session_id, "idle", attributes={"created_by": "proxy"})
    proxy = Principal("proxy", rights=ALL, impersonator=True)
    assert [e.id for e in service.engines.list_all(user=proxy)] == [engine_id]
    assert service.engines.get(engine_id, user=proxy).id == engine_id
    # Once no impersonator, it sees none of them.
    assert service.engines.list_all(user=Principal("proxy", rights=ALL)) == []
    with pytest.raises(EngineNotFound):
        service.engines.get(engine_id, user=Principal("proxy", rights=ALL))


# -- queries: waits and results ----------------------------------------------------------


def test_a_result_page_and_the_one_answer_for_a_missing_result(
    service: Service, store: Store, tmp_path: Path
) -> None:
    statement, _ = service.queries.submit("SELECT n", user=ALICE)
    with pytest.raises(ResultNotReady) as waiting:
        service.queries.result_page(statement)
    assert waiting.value.code == "RESULT_NOT_AVAILABLE"
    result = write_result(tmp_path / "results" / str(statement.id), 5)
    succeeded(store, statement, result)
    done = service.queries.get(statement.id, user=ALICE)
    page = service.queries.result_page(done, offset=1, limit=2)
    assert (page.rows, page.total, page.offset, page.limit) == ([[1], [2]], 5, 1, 2)
    batches, total = service.queries.result_batches(done, 3, 10)
    assert sum(b.num_rows for b in batches) >= 2 and total == 5
    shutil.rmtree(result["path"])
    with pytest.raises(ResultGone) as gone:
        service.queries.result_page(done)
    with pytest.raises(ResultGone):
        service.queries.result_batches(done, 0, 10)
    assert gone.value.code == "RESULT_GONE" and result["path"] in gone.value.message


def test_a_query_that_succeeded_without_rows_has_no_result(service: Service, store: Store) -> None:
    statement, _ = service.queries.submit("SELECT 1", user=ALICE)
    succeeded(store, statement, None)
    with pytest.raises(ResultNotReady):
        service.queries.result_page(service.queries.get(statement.id, user=ALICE))


def test_wait_answers_as_it_is_after_the_timeout_and_at_once_when_final(
    service: Service, store: Store
) -> None:
    statement, _ = service.queries.submit("SELECT 1", user=ALICE)

    async def wait() -> tuple[StatementRecord, StatementRecord]:
        try:
            waited = await service.queries.wait(statement, 0.05)
            succeeded(store, statement, None)
            final = await service.queries.wait(waited, 30)
            return waited, await service.queries.finished(final)
        finally:
            await service.close()

    waited, final = run_async(wait())
    assert waited.state is StatementState.WAITING and waited.owner == "alice"
    assert final.state is StatementState.SUCCESS and final.owner == "alice"


def test_cancel_is_audited_and_a_final_query_refuses(service: Service, store: Store) -> None:
    statement, _ = service.queries.submit("SELECT 1", user=ALICE)
    assert service.queries.cancel(statement.id, user=ALICE).state is StatementState.CANCELLED
    with pytest.raises(QueryFinished) as finished:
        service.queries.cancel(statement.id, user=ALICE)
    assert finished.value.code == "QUERY_FINISHED"
    assert audited(store, "query.cancel") == [("alice", "failed"), ("alice", "ok")]
    assert audited(store, "query.submit") == [("alice", "ok")]


# -- sessions: rights, settings, impersonation ----------------------------------------


def test_a_session_needs_sql_or_code_and_no_denied_setting(service: Service, store: Store) -> None:
    nobody = Principal("dave", rights=frozenset({"streams"}))
    with pytest.raises(MissingRight) as denied:
        service.sessions.create(SessionKind.INTERACTIVE, user=nobody)
    assert denied.value.code == "ACCESS_DENIED"
    with pytest.raises(DeniedSetting) as setting:
        service.sessions.create(
            SessionKind.INTERACTIVE, user=ALICE, conf={"spark.driver.extraJavaOptions": "-X"}
        )
    assert setting.value.code == "SETTING_DENIED" and "spark.driver.extra*" in str(setting.value)
    with pytest.raises(DeniedSetting):
        service.queries.submit("SET spark.master=local[8]", user=ALICE)
    assert store.sessions.list_page().items == []  # nothing was recorded
    assert [e.outcome for e in store.audit.list_page().items] == ["denied"] * 3


def test_a_session_made_for_python_needs_code_when_it_is_made(
    service: Service, store: Store
) -> None:
    """A Livy pyspark session: refused to a user without ``code``, audited, with no session
    and no engine made; a sql one needs ``sql``; one of either kind, ``sql`` or ``code``."""
    code_only = Principal("erin", rights=frozenset({"code"}))
    with pytest.raises(MissingRight) as refused:
        service.sessions.create(SessionKind.INTERACTIVE, user=SQL_ONLY, runs=StatementKind.PYSPARK)
    assert refused.value.code == "ACCESS_DENIED" and refused.value.params["right"] == "code"
    assert "carol may not start a pyspark session" in refused.value.message
    with pytest.raises(MissingRight) as sql_refused:
        service.sessions.create(SessionKind.INTERACTIVE, user=code_only, runs=StatementKind.SQL)
    assert sql_refused.value.params["right"] == "sql"
    assert store.sessions.list_page().items == [] and store.engines.list_all() == []
    assert audited(store, "session.create") == [("erin", "denied"), ("carol", "denied")]
    made = [
        service.sessions.create(SessionKind.INTERACTIVE, user=user, runs=runs)[0]
        for user, runs in [
            (SQL_ONLY, StatementKind.SQL),
            (SQL_ONLY, None),
            (code_only, None),
            (code_only, StatementKind.PYSPARK),
            (ADMIN, StatementKind.PYSPARK),
        ]
    ]
    assert [s.owner for s in made] == ["carol", "carol", "erin", "erin", "root"]


def test_settings_applied_in_steps_are_all_checked_before_any_runs(
    service: Service, store: Store
) -> None:
    session, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    overlay = ["SET spark.sql.shuffle.partitions=3", "SET spark.master=local[8]"]
    with pytest.raises(DeniedSetting) as refused:
        service.sessions.check_settings(
            ALICE, sql=overlay, target=f"session:{session.id}", where="confOverlay"
        )
    assert refused.value.params == {
        "key": "spark.master",
        "pattern": "spark.master",
        "where": "confOverlay",
    }
    assert "'spark.master' (confOverlay)" in refused.value.message
    assert audited(store, "set spark.master") == [("alice", "denied")]
    with pytest.raises(DeniedSetting):  # a denied key hidden in a value is found too
        service.sessions.check_settings(ALICE, sql=["SET a=1; SET spark.jars=x.jar"])
    service.sessions.check_settings(ADMIN, conf={"spark.master": "x"}, sql=overlay)


def test_a_batch_file_carries_the_settings_its_owner_may_not_set(service: Service) -> None:
    file = (StatementKind.FILE, "/jobs/etl.sql")
    mine, _ = service.sessions.create(SessionKind.BATCH, user=ALICE, first_statement=file)
    assert "spark.master" in (mine.attributes.conf_deny or ())
    admins, _ = service.sessions.create(SessionKind.BATCH, user=ADMIN, first_statement=file)
    assert admins.attributes.conf_deny == ()


def test_a_session_placed_while_engines_back_off_errors_with_the_reason(
    service: Service, store: Store
) -> None:
    from sparkgate.states import EngineKind, EngineState

    failed = store.engines.add(EngineKind.DEDICATED, now=NOW - 5)
    error = {"code": "NO_EXECUTORS", "message": "no executor"}
    store.transitions.engine(failed.id, EngineState.FAILED, now=NOW - 5, error=error)
    statement, _ = service.queries.submit("SELECT 1", user=ALICE, isolation="engine")
    session = store.sessions.get(statement.session_id)
    assert session.state is SessionState.ERROR and session.error is not None
    assert session.error.code == "ENGINE_BACKOFF"
    assert session.error.param("next_attempt_at") == NOW + 5
    assert "the next may start at" in session.error.message
    assert store.statements.get(statement.id).state is StatementState.FAILED
    assert len(store.engines.list_all()) == 1  # nothing launched


def test_only_impersonators_act_for_others(authed: Service, store: Store) -> None:
    with pytest.raises(Forbidden) as refused:
        authed.sessions.create(SessionKind.INTERACTIVE, user=ALICE, proxy_user="bob")
    assert refused.value.code == "FORBIDDEN"
    session, _ = authed.sessions.create(SessionKind.INTERACTIVE, user=ADMIN, proxy_user="bob")
    assert session.owner == "bob" and session.attributes.created_by == "root"
    assert authed.sessions.get(session.id, user=BOB).id == session.id
    assert authed.sessions.get(session.id, user=ADMIN).id == session.id
    with pytest.raises(SessionNotFound):
        authed.sessions.get(session.id, user=ALICE)
    assert audited(store, "impersonate") == [("root", "ok"), ("alice", "denied")]


def test_kill_ends_a_session_once_and_only_its_owners(service: Service) -> None:
    session, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    with pytest.raises(SessionNotFound):
        service.sessions.kill(session.id, user=BOB)
    assert service.sessions.kill(session.id, user=ALICE).state is SessionState.KILLED
    # Again: nothing changes, nothing fails (Livy's DELETE may be repeated).
    assert service.sessions.kill(session.id, user=ALICE).state is SessionState.KILLED


# -- tokens and the audit log -------------------------------------------------------------


def test_tokens_are_their_owners_and_need_authentication(
    service: Service, authed: Service, store: Store
) -> None:
    with pytest.raises(Forbidden):  # SPARKGATE_AUTH=none: every request is anonymous
        service.accounts.create_token(user=ALICE, name="laptop", expires_in=None)
    made = authed.accounts.create_token(user=ALICE, name="laptop", expires_in=60.0)
    assert made.secret.startswith("sgp_") and made.record.owner == "alice"
    via_token = Principal("alice", rights=ALL, via="token")
    with pytest.raises(Forbidden):  # a token cannot make tokens
        authed.accounts.create_token(user=via_token, name="more", expires_in=None)
    assert authed.accounts.tokens(user=BOB) == []
    assert [t.id for t in authed.accounts.tokens(user=ADMIN)] == [made.record.id]
    with pytest.raises(TokenNotFound) as missing:
        authed.accounts.revoke_token(made.record.id, user=BOB)
    assert missing.value.code == "TOKEN_NOT_FOUND"
    assert authed.accounts.revoke_token(made.record.id, user=ALICE).revoked_at is not None
    assert audited(store, "token") == [("alice", "ok"), ("alice", "ok")]


def test_the_audit_log_is_whole_for_admins_and_a_users_own_for_them(
    service: Service, store: Store
) -> None:
    service.queries.submit("SELECT 1", user=ALICE)
    service.queries.submit("SELECT 2", user=BOB)
    events = service.accounts.audit_events(user=ADMIN, action="query.submit").items
    assert [e.user for e in events] == ["bob", "alice"]
    mine = service.accounts.audit_events(user=ALICE, action="query.submit").items
    assert [e.user for e in mine] == ["alice"]
    assert service.accounts.audit_events(user=ALICE, by="bob").items == []


def test_a_tables_owner_reads_its_whole_access_history(service: Service, store: Store) -> None:
    name = TableName.of("spark_catalog", "hr", "pay")
    store.table_access.created(name, "alice", now=1.0)
    store.audit.add_uses(
        [
            TableUseEvent("bob", "rest", 7, name.dotted, "SELECT", True, ("a",)),
            TableUseEvent("carl", "hive2", 8, name.dotted, "SELECT", False),
        ],
        now=2.0,
    )
    seen = service.accounts.audit_events(user=ALICE, obj="hr.pay").items
    assert [(e.user, e.door, e.query_id, e.outcome, e.detail) for e in seen] == [
        ("carl", "hive2", 8, "denied", {"privilege": "SELECT"}),
        ("bob", "rest", 7, "ok", {"privilege": "SELECT", "columns": ["a"]}),
    ]
    # Not the owner: only their own uses of it.
    assert [e.user for e in service.accounts.audit_events(user=BOB, obj="hr.pay").items] == ["bob"]
    assert service.accounts.audit_events(user=BOB, obj="hr.pay", door="hive2").items == []


# -- streams -----------------------------------------------------------------------------


def test_stream_jobs_need_the_right_are_audited_and_are_their_owners(
    service: Service, store: Store
) -> None:
    with pytest.raises(MissingRight):
        service.streams.create("clicks", STREAM, user=SQL_ONLY, conf={})
    assert store.stream_jobs.find("clicks") is None
    assert audited(store, "start stream jobs") == [("carol", "denied")]
    detail = service.streams.create("clicks", STREAM, user=ALICE, conf={})
    assert detail.job.owner == "alice" and detail.queries == []
    assert audited(store, "stream.create") == [("alice", "ok")]
    for call in (
        lambda: service.streams.get("clicks", user=BOB),
        lambda: service.streams.stop("clicks", user=BOB),
        lambda: service.streams.start("clicks", user=BOB),
        lambda: service.streams.delete("clicks", user=BOB),
        lambda: service.streams.progress("clicks", user=BOB),
    ):
        with pytest.raises(StreamJobNotFound):
            call()
    assert not service.streams.visible("clicks", user=BOB)
    assert service.streams.visible("clicks", user=ADMIN)
    assert [s.job.name for s in service.streams.list_page(user=BOB).items] == []
    assert [s.job.name for s in service.streams.list_page(user=ALICE).items] == ["clicks"]
    stopped = service.streams.stop("clicks", user=ALICE)
    assert stopped.job.name == "clicks"
    assert audited(store, "stream.stop") == [("alice", "ok")]


def test_a_sessions_streams_are_its_owners(service: Service) -> None:
    session, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    assert service.streams.of_session(session.id, user=ALICE) == []
    with pytest.raises(SessionNotFound):
        service.streams.of_session(session.id, user=BOB)


def test_session_streams_are_listed_and_stopped_for_who_sees_the_session(
    service: Service, store: Store
) -> None:
    session, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    other, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    force_state(store, "sessions", session.id, "idle")
    query = store.stream_queries.add_for_session(
        session.id,
        "ticks_q",
        now=NOW,
        spec=QuerySpec(name="ticks_q", view="ticks", format="noop"),
        checkpoint=None,
    )
    force_state(store, "stream_queries", query.id, "running")
    listed = service.streams.in_sessions(user=ALICE, now=NOW)
    assert [(s.session.id, s.query.name) for s in listed] == [(session.id, "ticks_q")]
    assert service.streams.in_sessions(user=BOB, now=NOW) == []
    assert [s.query.id for s in service.streams.in_sessions(user=ADMIN, owner="alice")] == [
        query.id
    ]
    stopped_only = service.streams.in_sessions(user=ALICE, states=[StreamQueryState.STOPPED])
    assert stopped_only == []
    # Another user's, or under another session's id: as absent as an id that does not exist.
    with pytest.raises(SessionNotFound):
        service.streams.in_session(session.id, query.id, user=BOB)
    with pytest.raises(SessionNotFound):
        service.streams.stop_in_session(session.id, query.id, user=BOB)
    with pytest.raises(StreamQueryNotFound):
        service.streams.session_progress(other.id, query.id, user=ALICE)
    # Stopping is STOP STREAM in the session, with the right it needs through any door.
    with pytest.raises(MissingRight):
        service.streams.stop_in_session(
            session.id, query.id, user=Principal("alice", rights=frozenset({"sql"}))
        )
    stop = service.streams.stop_in_session(session.id, query.id, user=ALICE)
    assert (stop.session_id, stop.code) == (session.id, "STOP STREAM `ticks_q`")
    assert ("alice", "ok") in audited(store, "query.submit")
    force_state(store, "stream_queries", query.id, "stopped")
    with pytest.raises(StreamQueryNotRunning):
        service.streams.stop_in_session(session.id, query.id, user=ALICE)
    # Listed for an hour after its session ended.
    force_state(store, "sessions", session.id, "killed", finished_at=NOW)
    assert len(service.streams.in_sessions(user=ALICE, now=NOW + 60)) == 1
    assert service.streams.in_sessions(user=ALICE, now=NOW + 3700) == []


# -- jobs and deploys ----------------------------------------------------------------------


def test_jobs_need_the_jobs_right(service: Service, store: Store) -> None:
    for call in (
        lambda: service.jobs.jobs(user=SQL_ONLY),
        lambda: service.jobs.job("daily", user=SQL_ONLY),
        lambda: service.jobs.history("daily", user=SQL_ONLY),
        lambda: service.jobs.run("daily", user=SQL_ONLY),
        lambda: service.jobs.runs("daily", user=SQL_ONLY),
        lambda: service.jobs.job_run("daily", 1, user=SQL_ONLY),
        lambda: service.jobs.cancel_run("daily", 1, user=SQL_ONLY),
        lambda: service.jobs.deploy([], None, [], user=SQL_ONLY),
    ):
        with pytest.raises(MissingRight) as denied:
            call()
        assert denied.value.code == "ACCESS_DENIED"
    assert {e.outcome for e in store.audit.list_page().items} == {"denied"}
    assert service.jobs.jobs(user=ALICE) == []


def test_deployments_are_their_deployers(service: Service, tmp_path: Path) -> None:
    from sparkgate.jobs.files import SourceFile

    manifest = SourceFile(
        "daily.yaml",
        "name: daily\nmode: batch\nsql: SELECT 1\ntarget-table: t\n",
    )
    try:
        planned = service.jobs.deploy([manifest], None, [], user=ALICE, plan_only=True)
    except SparkgateError as exc:  # the manifest's shape is the deployer's business
        pytest.skip(f"manifest refused: {exc}")
    deployment_id = planned.deployment.id
    assert service.jobs.deployment(deployment_id, user=ALICE).deployment.owner == "alice"
    assert service.jobs.deployment(deployment_id, user=ADMIN).deployment.id == deployment_id
    with pytest.raises(DeploymentNotFound):
        service.jobs.deployment(deployment_id, user=BOB)
    assert service.jobs.deployments(user=BOB).items == []
    assert [d.deployment.id for d in service.jobs.deployments(user=ALICE).items] == [deployment_id]
    with pytest.raises(JobRunNotFound):
        service.jobs.job_run("daily", 424242, user=ALICE)


def test_a_manifest_cannot_set_a_denied_setting_and_nothing_is_deployed(
    service: Service, store: Store
) -> None:
    from sparkgate.jobs.files import SourceFile

    head = "name: a\nmode: batch\nsql: SELECT 1\ntarget-table: ta\n"
    with pytest.raises(DeniedSetting) as refused:
        properties = SourceFile("a.yaml", head + "properties: {spark.jars: x.jar}\n")
        service.jobs.deploy([properties], None, [], user=ALICE)
    assert refused.value.params["where"] == "properties of job a (a.yaml)"
    # SQL steps cannot SET anything: sources and definitions are definitions.
    in_sources = SourceFile("a.yaml", head + "sources: ['SET spark.master=local[8]']\n")
    with pytest.raises(ManifestsInvalid, match=r"a\.yaml:\d+: sources\.0: not a definition"):
        service.jobs.deploy([in_sources], None, [], user=ALICE)
    in_definitions = SourceFile("shared.sql", "SET spark.master=local[8]")
    with pytest.raises(ManifestsInvalid, match=r"shared\.sql"):
        service.jobs.deploy([SourceFile("a.yaml", head)], None, [in_definitions], user=ALICE)
    assert store.deployments.list_page(owner=None).items == []
    assert audited(store, "set spark.jars") == [("alice", "denied")]


def test_every_refusal_has_a_stable_code() -> None:
    refusals = [
        SessionNotFound(1),
        QueryNotFound(1),
        StreamJobNotFound("x"),
        DeploymentNotFound(1),
        JobRunNotFound(1),
        ResultGone(1, "/r"),
        ResultNotReady(1, "running"),
        QueryFinished(1, "success"),
        MissingRight("bob", "sql", "run SQL"),
    ]
    codes = [r.code for r in refusals]
    assert all(c and c == c.upper() for c in codes)
    assert len(set(codes)) == len(codes)
