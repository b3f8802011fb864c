"""Idempotent submits in the service, on a real store (SQLite and PostgreSQL): a repeat
answers what the first request made, another body is refused, keys are per user, racing
repeats make one query, and keys are forgotten after their lifetime."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkgate.auth.principal import Principal
from sparkgate.duties.results import expire_idempotency_keys
from sparkgate.errors import IdempotencyKeyInvalid, IdempotencyKeyReused, SparkgateError
from sparkgate.service import Service
from sparkgate.service.idempotency import fingerprint, parse_key
from sparkgate.settings import Settings
from sparkgate.states import SessionKind, StatementState
from sparkgate.store import Store
from sparkgate.store.records import Window
from tests.concurrency import race
from tests.conftest import NOW, force_state, make_service

ALL = frozenset({"sql", "code", "streams", "jobs"})
ALICE = Principal("alice", rights=ALL)
BOB = Principal("bob", rights=ALL)


def _queries(store: Store) -> int:
    return len(store.statements.list_page(window=Window(limit=1000)).items)


def test_a_repeat_answers_the_first_query_as_it_is_now(service: Service, store: Store) -> None:
    first, replayed = service.queries.submit("SELECT 1", user=ALICE, key="k-1")
    assert not replayed and first.state is StatementState.WAITING
    force_state(store, "statements", first.id, "running")
    again, replayed = service.queries.submit("SELECT 1", user=ALICE, key="k-1")
    assert replayed and again.id == first.id and again.session_id == first.session_id
    assert again.state is StatementState.RUNNING  # what a read answers now
    # Defaults applied first: the same request, written out.
    same, replayed = service.queries.submit(
        "SELECT 1", user=ALICE, isolation="session", conf={}, key='"k-1"'
    )
    assert replayed and same.id == first.id
    assert _queries(store) == 1
    # Audited once: the repeat made nothing.
    submits = [e for e in store.audit.list_page().items if e.action == "query.submit"]
    assert len(submits) == 1


def test_a_key_names_one_request(service: Service, store: Store) -> None:
    session, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE, key="k-s")
    first, _ = service.queries.submit("SELECT 1", user=ALICE, session_id=session.id, key="k-q")
    for other in (
        lambda: service.queries.submit("SELECT 2", user=ALICE, session_id=session.id, key="k-q"),
        lambda: service.queries.submit("SELECT 1", user=ALICE, key="k-q"),  # no session
        lambda: service.queries.submit(
            "SELECT 1", user=ALICE, session_id=session.id, conf={"a": "b"}, key="k-q"
        ),
        lambda: service.queries.submit("SELECT 1", user=ALICE, key="k-s"),  # a session's key
        lambda: service.sessions.create(SessionKind.BATCH, user=ALICE, key="k-s"),
    ):
        with pytest.raises(IdempotencyKeyReused) as refused:
            other()
        assert refused.value.code == "IDEMPOTENCY_KEY_REUSED"
    assert "first used for" in str(refused.value)
    assert _queries(store) == 1
    again, replayed = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE, key="k-s")
    assert replayed and again.id == session.id
    repeat, replayed = service.queries.submit(
        "SELECT 1", user=ALICE, session_id=session.id, key="k-q"
    )
    assert replayed and repeat.id == first.id


def test_a_repeat_is_answered_though_its_session_ended_since(
    service: Service, store: Store
) -> None:
    # A statement in a session is made before its key is looked up (one read less for every
    # first request): a repeat that would now be refused still answers what the first made.
    session, _ = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)
    first, _ = service.queries.submit("SELECT 1", user=ALICE, session_id=session.id, key="k")
    service.sessions.kill(session.id, user=ALICE)
    again, replayed = service.queries.submit("SELECT 1", user=ALICE, session_id=session.id, key="k")
    assert replayed and again.id == first.id
    with pytest.raises(SparkgateError):  # without the key, the refusal
        service.queries.submit("SELECT 1", user=ALICE, session_id=session.id, key="other")
    assert _queries(store) == 1


def test_keys_are_per_user(service: Service, store: Store) -> None:
    mine, _ = service.queries.submit("SELECT 1", user=ALICE, key="shared-key")
    theirs, replayed = service.queries.submit("SELECT 1", user=BOB, key="shared-key")
    assert not replayed and theirs.id != mine.id
    assert service.queries.get(theirs.id, user=BOB).owner == "bob"


def test_no_key_or_a_bad_one(service: Service, store: Store) -> None:
    a, replayed_a = service.queries.submit("SELECT 1", user=ALICE, key=None)
    b, replayed_b = service.queries.submit("SELECT 1", user=ALICE, key=None)
    assert a.id != b.id and not replayed_a and not replayed_b  # no key: two queries
    for bad in ("", "  ", '""', "x" * 256, "caf\u00e9", "tab\there", "new\nline"):
        with pytest.raises(IdempotencyKeyInvalid) as refused:
            service.queries.submit("SELECT 1", user=ALICE, key=bad)
        assert refused.value.code == "IDEMPOTENCY_KEY_INVALID"
        assert refused.value.params["field"] == "Idempotency-Key"
    assert _queries(store) == 2  # refused before anything was made
    assert parse_key("a b") == "a b" and parse_key("x" * 255) == "x" * 255
    assert fingerprint("query", a=1, b=2) == fingerprint("query", b=2, a=1)


@pytest.mark.parametrize("with_session", [False, True])
def test_racing_repeats_make_one_query_and_all_answer_it(
    service: Service, store: Store, with_session: bool
) -> None:
    session_id = None
    if with_session:
        session_id = service.sessions.create(SessionKind.INTERACTIVE, user=ALICE)[0].id
    before = _queries(store)
    answers = race(
        *[
            lambda: service.queries.submit(
                "SELECT 1", user=ALICE, session_id=session_id, key="race"
            )
            for _ in range(4)
        ]
    )
    assert len({statement.id for statement, _ in answers}) == 1
    assert sorted(replayed for _, replayed in answers) == [False, True, True, True]
    assert _queries(store) == before + 1
    sessions = store.sessions.list_page().items
    assert len(sessions) == 1  # a one-off query's session, or the one it was sent to


def test_a_key_past_its_lifetime_is_forgotten(service: Service, store: Store) -> None:
    first, _ = service.queries.submit("SELECT 1", user=ALICE, key="old")
    ttl = service.settings.idempotency_key_ttl
    service.sessions.clock = lambda: NOW + ttl + 1
    # Past its lifetime the key names nothing, even before the cleanup ran: a new request.
    second, replayed = service.queries.submit("SELECT 2", user=ALICE, key="old")
    assert not replayed and second.id != first.id
    again, replayed = service.queries.submit("SELECT 2", user=ALICE, key="old")
    assert replayed and again.id == second.id
    # The results duty forgets keys once their lifetime is over, not before.
    assert expire_idempotency_keys(store, service.settings, now=NOW + ttl + 1) == 0
    assert expire_idempotency_keys(store, service.settings, now=NOW + 2 * ttl + 2) == 1
    assert store.idempotency.find("alice", "old", since=0) is None


def test_a_node_on_a_schema_without_keys_ignores_them(tmp_path: Path) -> None:
    """A node pinned to a schema before 0009 (the chaos rig's release before) takes keyed
    submits as that release did: the header is ignored, not a failure on a missing table."""
    store = Store.open(f"sqlite:///{tmp_path / 'old.db'}")
    try:
        store.migrate("0008_connect")
        old_release = make_service(store, Settings(home=tmp_path))
        assert not old_release.sessions.keys.enabled
        a, _ = old_release.queries.submit("SELECT 1", user=ALICE, key="k")
        b, replayed = old_release.queries.submit("SELECT 1", user=ALICE, key="k")
        assert a.id != b.id and not replayed
        with pytest.raises(IdempotencyKeyInvalid):  # a bad header is still refused
            old_release.queries.submit("SELECT 1", user=ALICE, key="")
    finally:
        store.close()
