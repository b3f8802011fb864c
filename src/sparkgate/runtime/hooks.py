"""Statement lifecycle hooks: code that must run when a statement's work is created, finishes,
fails or is cancelled (the seed's JobStatusHook: created / finished / failed / cancelled).

An executor adds a hook once it knows what its statement does (``ctx.add_hook(hook)`` calls
``on_created`` at once); the engine calls the rest, in the statement's thread, before it
reports the statement's final state. So ``on_finished`` may still fail the statement (a
two-phase table whose commit fails), and a statement is reported ``success`` only after its
hooks have finished.

    class Announce:
        def on_created(self) -> None: log.info("begin")
        def on_finished(self, result: ExecResult) -> None: log.info("done")
        def on_failed(self, error: BaseException) -> None: log.info("failed: %s", error)
        def on_cancelled(self) -> None: log.info("cancelled")
"""

from __future__ import annotations

import logging

from sparkgate.runtime.contract import ExecResult, ExecutionContext

log = logging.getLogger("sparkgate.engine.hooks")  # the engine runs hooks: its log's name


class StatementCancelled(Exception):
    """The statement's work completed, but it was cancelled before its hooks made it final."""

    def __init__(self, statement_id: int) -> None:
        super().__init__(f"Query {statement_id} was cancelled.")


def finish(ctx: ExecutionContext, result: ExecResult) -> None:
    """The executor succeeded: ``on_finished`` for each hook, in order.

    A cancel that arrived while the work ran still wins here, before anything is made final
    (a staged table is dropped, not published). If a hook fails, the hooks after it, and the
    failing one, get ``on_failed``; the ones already finished keep their outcome.
    """
    if ctx.hooks and ctx.cancelled.is_set():
        raise StatementCancelled(ctx.statement.id)
    while ctx.hooks:
        hook = ctx.hooks[0]
        hook.on_finished(result)
        ctx.hooks.pop(0)


def fail(ctx: ExecutionContext, error: BaseException) -> None:
    """The statement failed or was cancelled: tell every hook not yet finished."""
    cancelled = ctx.cancelled.is_set()
    while ctx.hooks:
        hook = ctx.hooks.pop(0)
        try:
            if cancelled:
                hook.on_cancelled()
            else:
                hook.on_failed(error)
        except Exception:
            log.exception("statement %s: hook %r failed", ctx.statement.id, hook)
