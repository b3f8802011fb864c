"""Batch files: a ``.py`` PySpark script run as ``spark-submit file.py args`` would run it, or a
``.sql`` script run statement by statement. The statement's code is the command line,
``path arg...`` (shell quoting), so ``sparkgate queries list`` shows what ran.

A ``.py`` script runs as ``__main__`` with ``sys.argv == [path, *args]``; inside it
``SparkSession.builder.getOrCreate()`` returns the engine's session (a batch has an engine of
its own), and ``spark.stop()`` is left to the engine, which stops when the batch ends. It
succeeds when it returns or calls ``sys.exit(0)``; an exception or another exit status fails
the batch.

A ``.sql`` script's statements run in order; the last one's rows are the batch's result
(pageable through /v1), the others' first rows are printed to the log, as ``spark-sql -f`` does.

What the file prints (stdout and stderr, the tail of it) is the batch's log, written to the
store every second while it runs.
"""

from __future__ import annotations

import builtins
import dataclasses
import shlex
import socket
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sparkgate.auth.access import AccessRules
from sparkgate.auth.sql import sql_needs
from sparkgate.engine.sql_handlers import SQL_HANDLERS, run_sql
from sparkgate.engine.sql_script import SqlPiece, shift_error, split_sql
from sparkgate.engine.user_code import (
    Capture,
    StatementInterrupted,
    capturing,
    clean_text,
    interruptible,
)
from sparkgate.errors import DeniedSetting
from sparkgate.recorded import (
    BatchExited,
    BatchFileMissing,
    BatchFileUnreadable,
    BatchFileUnsupported,
    RecordedError,
    SqlScriptEmpty,
)
from sparkgate.runtime.contract import ExecResult, ExecutionContext
from sparkgate.runtime.error_text import shown_text, shown_traceback
from sparkgate.runtime.failures import DescribedError, recorded_failure
from sparkgate.store.records import ResultInfo
from sparkgate.store.statement_output import StatementOutput

LOG_FLUSH_INTERVAL = 1.0
PREVIEW_ROWS = 20  # rows of a script's intermediate queries printed to the log

LOCAL_SCHEMES = frozenset({"file", "local"})


def parse_command(code: str) -> tuple[str, list[str]]:
    """``"job.py --day 1"`` -> ``("job.py", ["--day", "1"])`` (shell quoting, ``shlex``)."""
    parts = shlex.split(code)
    if not parts:
        raise DescribedError(BatchFileMissing("No file to run.").recorded())
    return parts[0], parts[1:]


def local_path(path: str) -> Path | None:
    """The local file a ``file:``, ``local:`` or plain path names; None for other schemes."""
    parsed = urlparse(path)
    if len(parsed.scheme) <= 1:  # no scheme (or a drive letter)
        return Path(path)
    if parsed.scheme in LOCAL_SCHEMES:
        return Path(parsed.path)
    return None


def read_source(spark: Any, path: str) -> str:
    """The file's text: local paths directly, other Hadoop paths (hdfs://, s3a://) via Spark."""
    local = local_path(path)
    try:
        if local is not None:
            return local.read_text(encoding="utf-8")
        rows = spark.read.text(path, wholetext=True).collect()
        return "".join(row[0] for row in rows)
    except Exception as exc:
        host = socket.gethostname()
        unreadable = BatchFileUnreadable(
            f"The batch file {path} cannot be read by the engine on {host}: "
            f"{recorded_failure(exc).message}",
            path=path,
        )
        raise DescribedError(unreadable.recorded()) from exc


# -- the log ----------------------------------------------------------------------------------


class LogWriter:
    """Writes a capture to the statement's output while the file runs, when it changed."""

    def __init__(self, ctx: ExecutionContext, capture: Capture) -> None:
        self.ctx = ctx
        self.capture = capture
        self._written = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"batch-log-{ctx.statement.id}", daemon=True
        )

    def output(self) -> StatementOutput:
        return {
            "stdout": clean_text(self.capture.stdout.getvalue()),
            "stderr": clean_text(self.capture.stderr.getvalue()),
        }

    def flush(self) -> None:
        version = self.capture.version
        if version == self._written:
            return
        try:
            self.ctx.store.statements.merge_output(self.ctx.statement.id, self.output())
            self._written = version
        except Exception:
            # A log write failing must not fail the batch; the next flush tries again.
            print("sparkgate: writing the batch log failed", file=sys.__stderr__)

    def _loop(self) -> None:
        while not self._stop.wait(LOG_FLUSH_INTERVAL):
            self.flush()

    def __enter__(self) -> LogWriter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.flush()


# -- running --------------------------------------------------------------------------------


def run_file(ctx: ExecutionContext) -> ExecResult:
    """The executor of ``file`` statements (Livy batches)."""
    path, args = parse_command(ctx.statement.code)
    capture = Capture(ctx.settings.batch_log_max_chars, keep="tail")
    with (
        LogWriter(ctx, capture) as log,
        capturing(capture, warn_on_stop=False),
        interruptible(ctx.cancelled),
    ):
        source = read_source(ctx.session.spark, path)
        suffix = Path(urlparse(path).path or path).suffix.lower()
        result: ResultInfo | None = None
        if suffix == ".py":
            run_python_script(path, source, args)
        elif suffix == ".sql":
            result = run_sql_script(ctx, source, path)
        else:
            unsupported = BatchFileUnsupported(
                f"{path}: only .py (PySpark) and .sql files run as batches."
            )
            raise DescribedError(unsupported.recorded())
    return ExecResult(result=result, output=log.output())


@contextmanager
def _as_main(path: str, args: list[str]) -> Iterator[None]:
    """``sys.argv`` and ``sys.path`` as Python sets them for ``python path args``. They are
    process-wide: fine here, a batch has its engine to itself."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [path, *args]
    local = local_path(path)
    if local is not None:
        sys.path.insert(0, str(local.resolve().parent))
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


def run_python_script(path: str, source: str, args: list[str]) -> None:
    local = local_path(path)
    filename = str(local) if local is not None else path
    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__file__": filename,
        "__doc__": None,
        "__package__": None,
        "__spec__": None,
        "__builtins__": builtins,
    }
    try:
        code = compile(source, filename, "exec", dont_inherit=True)
        with _as_main(path, args):
            exec(code, namespace)
    except SystemExit as exit_:
        status = exit_.code
        if status is None or status == 0:
            return
        if not isinstance(status, int):
            print(status, file=sys.stderr)  # sys.exit("message") prints it, exit status 1
        exit_status = status if isinstance(status, int) else 1
        exited = BatchExited(f"{path} exited with status {exit_status}.", exit_status=exit_status)
        raise DescribedError(exited.recorded()) from None
    except StatementInterrupted:
        raise
    except BaseException as exc:
        lines = [clean_text(line) for line in _script_traceback(exc, filename)]
        sys.stderr.write("".join(lines))  # what python would print before exiting with 1
        found = recorded_failure(exc)
        params = dict(found.params)
        params.update(ename=type(exc).__name__, evalue=clean_text(shown_text(exc)), traceback=lines)
        if isinstance(exc, SyntaxError) and exc.lineno is not None:
            params.update(line=exc.lineno, position=exc.offset)
        error = RecordedError(found.code, clean_text(found.message), params)
        raise DescribedError(error) from None


def _script_traceback(exc: BaseException, filename: str) -> list[str]:
    if isinstance(exc, SyntaxError):
        return traceback.format_exception_only(type(exc), exc)
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return shown_traceback(exc, tb)


def run_sql_script(
    ctx: ExecutionContext, source: str, path: str = "the SQL script"
) -> ResultInfo | None:
    pieces = split_sql(source)
    if not pieces:
        raise DescribedError(SqlScriptEmpty("The SQL script has no statements.").recorded())
    check_settings(ctx, path, pieces)
    result: ResultInfo | None = None
    for index, piece in enumerate(pieces, start=1):
        preview = " ".join(piece.text.split())
        preview = preview if len(preview) <= 100 else preview[:97] + "..."
        print(f"-- statement {index} of {len(pieces)} (line {piece.line}): {preview}", flush=True)
        sub = dataclasses.replace(
            ctx, statement=dataclasses.replace(ctx.statement, code=piece.text)
        )
        try:
            if index == len(pieces):
                result = run_sql(sub).result
                if result is not None:
                    print(f"{result.row_count} rows")
            else:
                _run_intermediate(sub)
        except (DescribedError, StatementInterrupted):
            raise
        except Exception as exc:
            found = recorded_failure(exc, piece.text)
            params = shift_error(found.params, piece, index)
            where = f"line {params.get('line', piece.line)}"
            if params.get("position"):
                where += f", position {params['position']}"
            message = f"Statement {index} of {len(pieces)} ({where}) failed: {found.message}"
            raise DescribedError(RecordedError(found.code, message, params)) from exc
    return result


def check_settings(ctx: ExecutionContext, path: str, pieces: list[SqlPiece]) -> None:
    """Refuse the whole script, before its first statement runs, if a ``SET`` in it gives a
    Spark setting the access rules deny its owner. Only the engine reads a batch file (it may
    be on storage the server nodes cannot reach, and it could change between a server's read
    and the engine's), so the server records the deny patterns in force at submit time in the
    session (``conf_deny``; absent for admins) and the check is made here, on the text that
    runs, with the same function as every other door's."""
    patterns = ctx.session.record.attributes.conf_deny
    if not patterns:
        return
    rules = AccessRules(conf_deny=patterns)
    for piece in pieces:
        try:
            rules.check_settings(sql_needs(piece.text).settings, where=f"{path}, line {piece.line}")
        except DeniedSetting as error:
            _audit_denied(ctx, error)
            raise DescribedError(error.recorded()) from error


def _audit_denied(ctx: ExecutionContext, error: DeniedSetting) -> None:
    """The audit event the server writes for a denied setting, written by the engine."""
    try:
        ctx.store.audit.add(
            "set " + error.params["key"],
            "denied",
            now=time.time(),
            user=ctx.session.record.owner,
            target=f"query:{ctx.statement.id}",
            detail=error.to_dict(),
        )
    except Exception:
        print("sparkgate: recording the denied setting in the audit failed", file=sys.__stderr__)


def _run_intermediate(sub: ExecutionContext) -> None:
    for handler in SQL_HANDLERS:
        if handler(sub) is not None:
            print("OK")
            return
    df = sub.session.spark.sql(sub.statement.code)
    if not df.columns:
        print("OK")
        return
    rows = df.take(PREVIEW_ROWS + 1)
    print("\t".join(df.columns))
    for row in rows[:PREVIEW_ROWS]:
        print("\t".join("NULL" if v is None else str(v) for v in row))
    more = " (more not shown)" if len(rows) > PREVIEW_ROWS else ""
    print(f"{min(len(rows), PREVIEW_ROWS)} rows{more}")
