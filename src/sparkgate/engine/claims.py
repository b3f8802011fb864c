"""Claim: take a session's next waiting statement. One transaction moves the statement to
``running`` and its session to ``busy`` (both compare-and-set, so a cancel or a session's end
that came first wins), and the statement goes to its session's worker thread.

Apart from running it because the claim is the loop's, on the loop's thread, and must stay
quick; the statement then runs on its session's thread for as long as it takes.
"""

from __future__ import annotations

import dataclasses

from sparkgate.engine.execution import Execution
from sparkgate.engine.shared import Shared
from sparkgate.states import SessionState, StatementState
from sparkgate.store.records import StatementRecord


class _ClaimRefused(Exception):
    pass


def session_running(shared: Shared, session_id: int) -> bool:
    with shared.lock:
        return any(e.session.record.id == session_id for e in shared.running.values())


def claim(shared: Shared, session_id: int, waiting: StatementRecord, *, tick: int) -> bool:
    now = shared.clock()
    statement_id = waiting.id
    session = shared.sessions[session_id]
    try:
        with shared.store.db.begin() as conn:
            claimed = shared.store.transitions.statement(
                statement_id,
                StatementState.RUNNING,
                now=now,
                expected=[StatementState.WAITING],
                conn=conn,
            )
            if not claimed.applied:
                return False  # cancelled before it started
            busy = shared.store.transitions.session(
                session_id,
                SessionState.BUSY,
                now=now,
                expected=[SessionState.IDLE],
                conn=conn,
                last_activity_at=now,
            )
            if not busy.applied:
                raise _ClaimRefused  # the session ended meanwhile: undo the claim
    except _ClaimRefused:
        return False
    # What the claim wrote, without reading it back.
    statement = dataclasses.replace(
        waiting,
        state=StatementState.RUNNING,
        started_at=waiting.started_at or now,
        updated_at=now,
        version=waiting.version + 1,
    )
    execution = Execution(
        statement, session, tag=f"sparkgate-statement-{statement_id}", claimed_in=tick
    )
    with shared.lock:
        shared.running[statement_id] = execution
    shared.workers[session_id].submit(execution)
    return True


def reap_executions(shared: Shared) -> None:
    with shared.lock:
        for statement_id in [s for s, e in shared.running.items() if e.done]:
            del shared.running[statement_id]
