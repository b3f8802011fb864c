"""Claim: take a session's next waiting statement. One transaction moves the statement to
``running`` and its session to ``busy`` (both compare-and-set, so a cancel or a session's end
that came first wins), and the statement goes to its session's worker thread.

Apart from running it because the claim is the loop's, on the loop's thread, and must stay
quick; the statement then runs on its session's thread for as long as it takes.

A claim whose commit goes unanswered (the store drops away during it) may have been written
with only its answer lost: the store would then say the statement runs, on an engine that is
alive and heartbeating, while nothing runs it, for ever. So such a claim is kept, and once
the store answers again it is settled by reading the statement back (``settle``): started at
the claim's time, it is this claim's, and it runs now; still waiting, it is claimed again as
any other.
"""

from __future__ import annotations

import dataclasses
import logging

from sparkgate.engine.execution import Execution
from sparkgate.engine.shared import Look, Shared, UnsettledClaim
from sparkgate.states import SessionState, StatementState
from sparkgate.store.outage import is_unreachable
from sparkgate.store.records import StatementRecord

log = logging.getLogger("sparkgate.engine")


class _ClaimRefused(Exception):
    pass


def mark_waiting_behind(shared: Shared, session_id: int) -> bool:
    """For a session with a statement waiting: whether a statement of it runs, which is then
    marked so that its end wakes the loop. The look and the mark are one step under the lock
    (see ``statement_ended``)."""
    with shared.lock:
        for execution in shared.running.values():
            if execution.session.record.id == session_id and not execution.done:
                execution.wake_after = True
                return True
    return False


def statement_ended(shared: Shared, execution: Execution) -> None:
    """On the session's thread, after its statement's end is recorded: wake the loop if a
    statement waits behind it, or the engine is stopping; else the loop sleeps on.

    No end is missed: the loop marks a running statement (``mark_waiting_behind``) and the
    worker reads the mark after its statement is ``done``, both under the lock. If the loop
    looks first, the worker sees the mark; if the worker reads first, the statement is done
    by the time the loop looks, and the loop claims the next at once."""
    with shared.lock:
        wake = execution.wake_after
    if wake or shared.stop.is_set() or shared.stop_now.is_set():
        shared.wake_for(Look.NOTHING)


def claim(
    shared: Shared,
    session_id: int,
    waiting: StatementRecord,
    *,
    tick: int,
    more_waiting: bool = False,
) -> bool:
    now = shared.clock()
    statement_id = waiting.id
    shared.unsettled_claims.pop(statement_id, None)
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
    except Exception as exc:
        if is_unreachable(exc):
            shared.unsettled_claims[statement_id] = UnsettledClaim(session_id, waiting, now)
        raise
    _start(shared, session_id, waiting, now, tick=tick, wake_after=more_waiting)
    return True


def settle(shared: Shared, *, tick: int) -> bool:
    """Run each unanswered claim that the store did write (see the module's docstring)."""
    started = False
    for statement_id, unsettled in list(shared.unsettled_claims.items()):
        found = shared.store.statements.find(statement_id)  # may raise: settled next tick
        del shared.unsettled_claims[statement_id]
        ours = (
            found is not None
            and found.state in (StatementState.RUNNING, StatementState.CANCELLING)
            and found.started_at is not None
            and abs(found.started_at - unsettled.at) < 1e-6
        )
        if not ours or unsettled.session_id not in shared.workers:
            continue  # not written (claimed again as usual), or its session has ended
        log.warning("statement %s: its claim was written though unanswered; runs now", statement_id)
        # A cancel that came meanwhile (cancelling) is passed on as to any running statement.
        _start(shared, unsettled.session_id, unsettled.waiting, unsettled.at, tick=tick)
        started = True
    return started


def _start(
    shared: Shared,
    session_id: int,
    waiting: StatementRecord,
    now: float,
    *,
    tick: int,
    wake_after: bool = False,
) -> None:
    # What the claim wrote, without reading it back.
    statement = dataclasses.replace(
        waiting,
        state=StatementState.RUNNING,
        started_at=waiting.started_at or now,
        updated_at=now,
        version=waiting.version + 1,
    )
    execution = Execution(
        statement,
        shared.sessions[session_id],
        tag=f"sparkgate-statement-{statement.id}",
        claimed_in=tick,
        wake_after=wake_after,
    )
    with shared.lock:
        shared.running[statement.id] = execution
    shared.workers[session_id].submit(execution)


def reap_executions(shared: Shared) -> None:
    with shared.lock:
        for statement_id in [s for s, e in shared.running.items() if e.done]:
            del shared.running[statement_id]
