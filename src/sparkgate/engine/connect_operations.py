"""Spark Connect operations: the queries this engine's Spark Connect service runs for clients
that sparkgate's nodes relay. Their service recorded for the nodes, their Spark jobs cancelled
when a node relays a cancel, and their queries ended when the service dropped them with no
client left to hear the end.

Apart from the statement loop because these queries are not claimed or run by it: Spark's
Connect service runs them, the nodes record their ends, and the engine only steps in for
what only it can see (its Spark jobs, and what its service still holds).
"""

from __future__ import annotations

import logging
import time

from sparkgate.engine.cancels import CANCEL_REPEAT
from sparkgate.engine.shared import Shared
from sparkgate.recorded import ConnectOperationGone
from sparkgate.states import StatementState
from sparkgate.store.outage import is_unreachable

log = logging.getLogger("sparkgate.engine")

# A Connect operation whose query still runs is ended once its operation has been missing
# from Spark's Connect service this long (the node that relayed its end records it first).
_CONNECT_GONE_GRACE = 10.0
# How often the engine compares them (one store read).
_CONNECT_CHECK_EVERY = 5.0
# How long the engine keeps cancelling a cancelled Connect operation's Spark jobs.
_CONNECT_CANCEL_FOR = 10.0


class ConnectOperations:
    def __init__(self, shared: Shared) -> None:
        self._shared = shared
        self._checked = 0.0
        self._missing: dict[str, float] = {}  # operation id -> first seen missing

    def record_service(self) -> None:
        """Where this engine's Spark Connect service listens, and its secret, for the nodes
        (before the engine says running, so that a node placing a session on it finds it)."""
        shared = self._shared
        if shared.connect_secret is None:
            return
        from sparkgate.engine.pod import pod_address
        from sparkgate.engine.spark import LOOPBACK, connect_port

        assert shared.spark is not None
        try:
            url = f"{pod_address() or LOOPBACK}:{connect_port(shared.spark)}"
            shared.store.connect.set_endpoint(shared.engine_id, url, shared.connect_secret)
        except Exception:
            # The engine serves the other doors; the Connect door says this one has no service.
            log.exception("engine %s: Spark's Connect service is not available", shared.engine_id)
            shared.connect_secret = None

    def cancel_jobs(self, statement: str) -> None:
        """A Spark Connect operation of this engine was cancelled. Spark's interrupt ends the
        operation at once but misses a Spark job its thread submits afterwards (it was still
        planning): that job would run on unseen, holding the cores. Cancel the operation's
        jobs by their tag, as the statement loop does for its own, for a while."""
        shared = self._shared
        try:
            operation = shared.store.connect.operation_of(int(statement))
            if operation is None or shared.spark is None:
                return
            from sparkgate.engine.spark import connect_job_tag

            tag = connect_job_tag(
                shared.spark, operation.owner, operation.client_session, operation.operation_id
            )
            deadline = time.monotonic() + _CONNECT_CANCEL_FOR
            while time.monotonic() < deadline and not shared.exiting.is_set():
                shared.spark.sparkContext.cancelJobsWithTag(tag)
                shared.stop_now.wait(CANCEL_REPEAT)
        except Exception:
            log.exception("cancelling the jobs of Connect query %s failed", statement)

    def record_costs(self) -> None:
        """What the Connect operations that ended since the last beat cost (their Spark
        tasks' metrics, summed by the engine's listener as they ended) and what their plans
        read and wrote (the access history, the tables in their records, the catalog's
        recent queries), with their queries: the node that relays an operation's end records
        the end, only the engine these."""
        shared = self._shared
        if shared.connect_secret is None or shared.spark is None:
            return
        from sparkgate.engine.spark import connect_costs

        store = shared.store
        costs = store.statement_costs.available()
        for ended in connect_costs(shared.spark):
            statement_id = store.connect.statement_of_client(
                ended.user, ended.session, ended.operation
            )
            if statement_id is None:  # not one sparkgate relayed (none is), or forgotten
                continue
            now = shared.clock()
            try:
                with store.db.begin() as conn:
                    if costs and ended.cost is not None:
                        store.statement_costs.add(statement_id, ended.cost, now=now, conn=conn)
                    if ended.touched is not None:
                        tables = ended.touched.tables
                        uses = ended.touched.events(
                            user=ended.user, door="connect", query_id=statement_id
                        )
                        store.audit.add_uses(uses, now=now, conn=conn)
                        if any(tables.values()):
                            store.statement_tables.add(statement_id, tables, now=now, conn=conn)
                            # What it wrote has new versions: a result kept for reuse that
                            # read them is never served again.
                            if tables.get("written") and store.reuse.available():
                                store.reuse.bump(tables["written"], now=now, conn=conn)
                            store.statements.merge_output(
                                statement_id, {"tables": tables}, conn=conn
                            )
            except Exception:
                log.exception("recording Connect query %s's cost and tables failed", statement_id)

    def end_gone_operations(self) -> None:
        """End the queries of Spark Connect operations this engine's Connect service no longer
        holds. A node records an operation's end as it relays it; when no node sees the end
        (its client left and never reattached, or its node died and the client did not come
        back), Spark drops the operation after its detach timeout and only this engine can
        tell: the query must not stay running."""
        shared = self._shared
        now = shared.clock()
        if shared.connect_secret is None or shared.spark is None:
            return
        if now - self._checked < _CONNECT_CHECK_EVERY:
            return
        self._checked = now
        from sparkgate.engine.spark import connect_operations

        try:
            unfinished = shared.store.connect.unfinished_of_engine(shared.engine_id)
            held = connect_operations(shared.spark) if unfinished else set()
        except Exception as exc:
            if not is_unreachable(exc):
                log.exception("checking Connect operations failed")
            return
        missing = {op: query for op, query in unfinished.items() if op not in held}
        first_seen = {op: self._missing.get(op, now) for op in missing}
        self._missing = first_seen
        error = ConnectOperationGone(
            "The operation ended in the engine with no client to receive its "
            "outcome (its client left and did not reattach, or its node stopped); its "
            "result is gone. Run it again."
        ).recorded()
        for op, since in list(first_seen.items()):
            if now - since < _CONNECT_GONE_GRACE:
                continue
            statement_id = missing[op]
            for to, expected in (
                (StatementState.FAILED, StatementState.RUNNING),
                (StatementState.CANCELLED, StatementState.CANCELLING),
            ):
                moved = shared.store.transitions.statement(
                    statement_id, to, now=now, expected=[expected], error=error
                )
                if moved.applied:
                    log.warning("query %s: Connect operation %s is gone", statement_id, op)
                    break
            self._missing.pop(op, None)
