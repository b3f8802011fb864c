"""Run: one claimed statement run on its session's worker thread, as its session's user, by
the executor of its kind, with its Spark jobs tagged so that a cancel finds them; then handed
to ``reporting``.

Apart from the claim (the loop's thread) and the report (which may wait out a store outage)
because this is the part that holds Spark: everything set here (job tag, scheduler pool,
current user, the session's files) is a property of the thread it runs on.
"""

from __future__ import annotations

import logging

from sparkgate import logs
from sparkgate.engine import artifacts
from sparkgate.engine.authz.touched import Touched
from sparkgate.engine.execution import Execution
from sparkgate.engine.executors import EXECUTORS
from sparkgate.engine.pools import Pools
from sparkgate.engine.reporting import Reporter
from sparkgate.engine.shared import Shared
from sparkgate.runtime import hooks, identity, statement_thread
from sparkgate.runtime.contract import ExecResult, ExecutionContext
from sparkgate.statement_cost import StatementCost
from sparkgate.states import StatementKind

log = logging.getLogger("sparkgate.engine")


class StatementRunner:
    def __init__(self, shared: Shared, reporter: Reporter) -> None:
        self._shared = shared
        self._reporter = reporter
        self._pools = Pools(shared.store)

    def execute(self, execution: Execution) -> None:
        statement = execution.statement
        # This thread works for one statement: every record it logs (Spark's Python side
        # included) names the statement, its session and the session's owner.
        with logs.bound(
            query_id=statement.id,
            session_id=statement.session_id,
            user=execution.session.record.owner,
        ):
            self._run_statement(execution)

    def _run_statement(self, execution: Execution) -> None:
        shared = self._shared
        statement = execution.statement
        assert shared.spark is not None
        jsc = shared.spark.sparkContext._jsc
        # Its Spark jobs carry its tag (a cancel finds them) and its session's FAIR pool, and
        # Spark's current user is the session's user (``anonymous`` without authentication,
        # the name its plans are checked as: identity.bind), as Spark Thrift Server makes it
        # the connected user; else it would be the engine's OS user, and a table the
        # statement creates would record that as its owner. (SQL's current_user() is the SQL
        # extension's, authz NameUser, either way.) All are JVM thread-locals, set on the
        # statement's thread every time, as the thread may have run another's statement.
        jvm_thread = statement_thread.of(shared.spark)
        pool, weight = self._pools.of(statement.id, statement.session_id)
        jvm_thread.begin(
            jsc,
            execution.tag,
            f"sparkgate statement {statement.id}",
            pool,
            execution.session.record.owner or identity.ANONYMOUS,
            weight,
        )
        # Every job this statement starts (SQL, DataFrames, its code's RDDs) sees the files
        # its session added, and only those; what its code adds is the session's own.
        artifacts.bind(execution.session.spark)
        ctx = ExecutionContext(
            execution.session,
            statement,
            shared.settings,
            shared.store,
            shared.engine_id,
            execution.cancelled,
            shared.streams,
        )
        try:
            executor = EXECUTORS.get(statement.kind)
            if executor is None:
                raise ValueError(f"this engine cannot run {statement.kind.value} statements")
            result = executor(ctx)
            hooks.finish(ctx, result)  # e.g. commit a two-phase table: may still fail
            outcome: ExecResult | BaseException = result
        except BaseException as exc:
            outcome = exc
            hooks.fail(ctx, exc)  # e.g. abort a two-phase table
        finally:
            # Taken whatever the outcome, so that the thread's next statement starts clean:
            # what its plans touched (a line of JSON), what its tasks cost, and its
            # session's context after it (result reuse; "" when the session turned it off).
            touched, cost, context = jvm_thread.end(
                jsc, execution.tag, execution.session.spark._jsparkSession
            ).split("\n", 2)
        execution.context_after = context or None
        if shared.authz is not None:
            self._record_touched(execution, outcome, touched)
        self._record_cost(execution, cost)
        self._reporter.report(execution, outcome)

    def _record_cost(self, execution: Execution, cost_json: str) -> None:
        """What its Spark tasks cost, recorded with its end whatever the outcome (a failed
        or cancelled query's tasks ran too)."""
        try:
            if self._shared.store.statement_costs.available():
                execution.cost = StatementCost.from_json(cost_json)
        except Exception:
            log.exception("reading what statement %s cost failed", execution.statement.id)

    def _record_touched(
        self, execution: Execution, outcome: ExecResult | BaseException, touched_json: str
    ) -> None:
        """Who touched what: the tables and views a statement read and wrote, from the checks
        of its plans (with table rules or without: the extension records either way), are
        recorded with its end whatever the outcome: its access history (each privilege used
        or refused, with the columns read and the masks and filter applied:
        ``store.audit``), and the tables (``store.statement_tables``, for the catalog's
        recent queries); a statement that succeeded also says them in its record. The
        catalog's own reads (a preview, as the user) are in the history, not among the
        recent queries: they would crowd those out."""
        shared = self._shared
        try:
            found = Touched.parse(touched_json)
            session = execution.session.record
            execution.uses = found.events(
                user=session.owner, door=session.attributes.origin, query_id=execution.statement.id
            )
            execution.reusable = found.reusable
            execution.locations = found.locations
            execution.readers = found.readers
            touched = found.tables
            if execution.statement.kind is StatementKind.CATALOG or not any(touched.values()):
                return
            if shared.store.statement_tables.available():
                execution.touched = touched
            if isinstance(outcome, ExecResult):
                outcome.output["tables"] = touched
        except Exception:
            log.exception("recording what statement %s touched failed", execution.statement.id)
