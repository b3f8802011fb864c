"""The SQL handler that runs CREATE/REPLACE TABLE ... AS SELECT two-phase (engine side).

Listed in ``engine.sql_handlers.SQL_HANDLERS``. For any other statement it returns None and
Spark runs the statement as usual. For a CTAS/RTAS it decides (``tables.plan``) between:

- staged: a ``TwoPhaseTable`` bound to the statement through a ``CtasStatusHook``: ``begin``
  now, the query written to staging here, ``commit`` / ``abort`` when the engine ends the
  statement;
- plain: Spark runs it as written (what sparkgate cannot stage);
- a refusal with Spark's error, or nothing at all (``IF NOT EXISTS`` on an existing table).

Whichever it is, the query's record says so: ``output["ctas"] = {"path": "atomic" | "plain",
...}``, shown in the native API's query JSON.
"""

from __future__ import annotations

import logging
import time

from sparkgate.runtime.contract import ExecResult, ExecutionContext, dataframe_result
from sparkgate.runtime.failures import DescribedError, recorded_failure
from sparkgate.store.statement_output import CtasFacts
from sparkgate.tables import catalog, locations
from sparkgate.tables.plan import (
    Plain,
    Refuse,
    Skip,
    StageCreate,
    StageReplace,
    column_difference,
    location_conflict,
    plan,
    resolve_target,
)
from sparkgate.tables.relocate import Shift, relocated
from sparkgate.tables.statement import CtasStatement, PassThrough, recognise
from sparkgate.tables.twophase import (
    CtasStatusHook,
    StagedCreate,
    TwoPhaseTable,
    VersionedReplace,
    WriteContext,
)

log = logging.getLogger("sparkgate.tables")

_NON_EMPTY_CTAS = "spark.sql.legacy.allowNonEmptyLocationInCTAS"


def atomic_ctas(ctx: ExecutionContext) -> ExecResult | None:
    """Run a CTAS/RTAS the sparkgate way; None for every other statement."""
    statement = recognise(ctx.statement.code)
    if isinstance(statement, PassThrough):
        return None
    spark = ctx.session.spark
    session = catalog.session_facts(spark, ctx.settings)
    target = resolve_target(statement, session)
    if isinstance(target, Plain):
        return _plain(ctx, target.reason)
    database_location = existing = None
    if session.atomic and not statement.blockers:
        # A syntax error is reported by Spark, on the user's text, before anything happens.
        catalog.check_syntax(spark, ctx.statement.code)
        database_location = catalog.database_location(spark, target.database)
        if database_location is not None:
            try:
                existing = catalog.describe(spark, target)
            except Exception as exc:
                if recorded_failure(exc).code != "INSUFFICIENT_PRIVILEGE":
                    raise
                # No privilege on the name: whether a table has it stays unsaid. Spark runs
                # the statement, and the engine's check refuses it by name, there or not.
                return _plain(ctx, "the user has no privilege on the target's name")
    decision = plan(statement, session, target, database_location, existing)
    if isinstance(decision, Plain):
        return _plain(ctx, decision.reason)
    if isinstance(decision, Refuse):
        raise catalog.spark_error(spark, decision.condition, dict(decision.parameters))
    if isinstance(decision, Skip):
        log.info("statement %s: %s exists; IF NOT EXISTS", ctx.statement.id, target.quoted)
        output: CtasFacts = {"path": "atomic", "operation": "create", "table": target.quoted}
        return _empty(ctx, {**output, "outcome": "exists"})
    write = WriteContext(
        spark,
        ctx.store,
        ctx.settings,
        ctx.statement.id,
        ctx.engine_id,
        ctx.statement.code,
        ctx.cancelled,
    )
    table: TwoPhaseTable
    if isinstance(decision, StageCreate):
        if not _claim_location(ctx, decision):
            return _plain(
                ctx,
                f"{_NON_EMPTY_CTAS}=true and the table's location is not empty: "
                "Spark writes into it",
            )
        table = StagedCreate(
            write, statement, decision.target, decision.provider, decision.database_location
        )
    else:
        why_not = _columns_differ(ctx, statement, decision)
        if why_not is not None:
            return _plain(ctx, why_not)
        table = VersionedReplace(
            write,
            statement,
            decision.target,
            decision.provider,
            decision.database_location,
            existing=decision.existing,
        )
    ctx.add_hook(CtasStatusHook(table))  # begin: the write is recorded before any data
    _note(ctx, table.record())  # so that a failure's record, too, says how it ran
    table.write()
    return _empty(ctx, table.record())  # commit follows when the engine finishes the query


def _claim_location(ctx: ExecutionContext, decision: StageCreate) -> bool:
    """Make sure the new table's directory is free; False if Spark would write into a
    non-empty one (its legacy setting), which a rename cannot do.

    Spark refuses to create a managed table on a directory that is already there; so do we.
    A version sparkgate retired from a dropped table of that name is removed early."""
    location = locations.child(decision.database_location, decision.target.name)
    if not locations.occupied(location):
        return True
    retiring = ctx.store.table_txns.retiring_at(location)
    if retiring and locations.remove(location):
        for txn in retiring:
            ctx.store.table_txns.set_retired(txn.id, now=time.time())
        log.info("removed retired version %s early: %s is created anew", location, decision.target)
        return True
    allowed = ctx.session.spark.conf.get(_NON_EMPTY_CTAS, "false") or "false"
    if allowed.strip().lower() == "true":
        return False
    refusal = location_conflict(decision.target, location)
    raise catalog.spark_error(ctx.session.spark, refusal.condition, dict(refusal.parameters))


def _columns_differ(
    ctx: ExecutionContext, statement: CtasStatement, decision: StageReplace
) -> str | None:
    spark = ctx.session.spark
    table_columns = catalog.columns_of(spark, decision.target.sql, table=True)
    try:
        query_columns = catalog.columns_of(spark, statement.query)
    except Exception as exc:
        if not hasattr(exc, "getCondition"):
            raise
        error = recorded_failure(exc, statement.query)
        shift = Shift(0, statement.query_offset)
        raise DescribedError(relocated(error, shift, statement.query, ctx.statement.code)) from exc
    return column_difference(table_columns, query_columns)


def _plain(ctx: ExecutionContext, reason: str) -> ExecResult:
    """Spark runs the statement as written; the record says why it was not staged."""
    log.info("statement %s runs plain: %s", ctx.statement.id, reason)
    output: CtasFacts = {"path": "plain", "reason": reason}
    _note(ctx, output)
    result = dataframe_result(ctx, ctx.session.spark.sql(ctx.statement.code))
    result.output["ctas"] = output
    return result


def _note(ctx: ExecutionContext, output: CtasFacts) -> None:
    ctx.store.statements.merge_output(ctx.statement.id, {"ctas": output})


def _empty(ctx: ExecutionContext, output: CtasFacts) -> ExecResult:
    """What Spark's CTAS returns (no columns, no rows), plus the record of what we did."""
    result = dataframe_result(ctx, ctx.session.spark.range(0).select())
    result.output["ctas"] = output
    return result
