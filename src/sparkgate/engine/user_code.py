"""Running users' Python inside an engine, beside other sessions' statements.

An engine runs the statements of many sessions at once, each on its own thread of one Python
process. What Python keeps per process is therefore made per thread here:

- Output: ``sys.stdout`` and ``sys.stderr`` are replaced, once, by routers that write to the
  current thread's ``Capture`` when it has one and to the real stream otherwise (so the engine's
  own log lines stay in the engine log, and two sessions never see each other's prints).
- Cancelling: Spark jobs are interrupted through the statement's job tag (the engine does that);
  Python code that is not waiting for Spark (a loop) gets ``StatementInterrupted`` raised in its
  thread if it is still running a moment later.
- The SparkContext serves every session of the engine: ``spark.stop()`` or ``sc.stop()`` from a
  statement is ignored with a warning instead of ending the engine under everyone's feet.

Threads that user code starts itself are not captured (what they print goes to the engine
log) and are not interrupted.

    capture = Capture(limit=1_000_000)
    with capturing(capture), interruptible(cancelled):
        exec(code, namespace)
    capture.stdout.getvalue()
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Literal

_local = threading.local()
_install_lock = threading.Lock()

# How long a cancelled statement may take to stop by itself (its Spark job interrupted by the
# engine) before an exception is raised in its thread, and how often that is repeated.
INTERRUPT_GRACE = 1.0
_INTERRUPT_REPEAT = 1.0


class StatementInterrupted(BaseException):
    """Raised in a statement's thread to stop Python code after the statement was cancelled.

    A BaseException, like KeyboardInterrupt, so that ``except Exception`` does not swallow it.
    """


class OutputBuffer:
    """A text stream kept in memory and bounded: the first ``limit`` characters (``head``) or
    the last ones (``tail``, for logs, where the end says how things went)."""

    encoding = "utf-8"
    errors = "strict"
    closed = False

    def __init__(self, limit: int, keep: Literal["head", "tail"] = "head", name: str = "") -> None:
        self.limit = max(limit, 0)
        self.keep = keep
        self.name = name
        self._chunks: deque[str] = deque()
        self._size = 0
        self._dropped = 0
        self._lock = threading.Lock()
        self.version = 0  # bumped on every write, so a reader can tell that something changed

    def write(self, text: Any) -> int:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        elif not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if not text:
            return 0
        with self._lock:
            self.version += 1
            if self.keep == "head":
                room = self.limit - self._size
                kept = text[: max(room, 0)]
                self._dropped += len(text) - len(kept)
                if kept:
                    self._chunks.append(kept)
                    self._size += len(kept)
            else:
                self._chunks.append(text)
                self._size += len(text)
                while self._size > self.limit and self._chunks:
                    excess = self._size - self.limit
                    first = self._chunks[0]
                    if len(first) <= excess:
                        self._chunks.popleft()
                        cut = len(first)
                    else:
                        self._chunks[0] = first[excess:]
                        cut = excess
                    self._size -= cut
                    self._dropped += cut
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def getvalue(self) -> str:
        with self._lock:
            text = "".join(self._chunks)
            dropped = self._dropped
        if not dropped:
            return text
        if self.keep == "head":
            return f"{text}\n[... {dropped} more characters were not kept]\n"
        return f"[... {dropped} earlier characters were not kept]\n{text}"

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    def fileno(self) -> int:
        import io

        raise io.UnsupportedOperation("captured output has no file descriptor")

    @property
    def buffer(self) -> _BinaryView:
        return _BinaryView(self)


class _BinaryView:
    """``sys.stdout.buffer`` for code that writes bytes."""

    def __init__(self, text: OutputBuffer) -> None:
        self._text = text

    def write(self, data: bytes) -> int:
        self._text.write(bytes(data).decode("utf-8", "replace"))
        return len(data)

    def flush(self) -> None:
        pass


def clean_text(text: str) -> str:
    """Text any JSON store takes: no NUL (PostgreSQL's jsonb refuses it), no lone surrogates."""
    if "\x00" in text:
        text = text.replace("\x00", "\\x00")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class Capture:
    """What one statement writes to stdout and stderr."""

    def __init__(self, limit: int, keep: Literal["head", "tail"] = "head") -> None:
        self.stdout = OutputBuffer(limit, keep, "<stdout>")
        self.stderr = OutputBuffer(limit, keep, "<stderr>")

    @property
    def version(self) -> int:
        return self.stdout.version + self.stderr.version


class _Router:
    """Stands in for sys.stdout / sys.stderr: the current thread's capture, or the real stream."""

    def __init__(self, which: Literal["stdout", "stderr"], real: Any) -> None:
        self._which = which
        self._real = real

    def _target(self) -> Any:
        capture: Capture | None = getattr(_local, "capture", None)
        if capture is None:
            return self._real
        return capture.stdout if self._which == "stdout" else capture.stderr

    def write(self, text: Any) -> Any:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._target(), name)


def _ensure_routers() -> None:
    # Checked at every statement: user code may have replaced sys.stdout (and put it back).
    with _install_lock:
        if not isinstance(sys.stdout, _Router):
            sys.stdout = _Router("stdout", sys.stdout)
        if not isinstance(sys.stderr, _Router):
            sys.stderr = _Router("stderr", sys.stderr)


@contextlib.contextmanager
def capturing(capture: Capture, *, warn_on_stop: bool = True) -> Iterator[Capture]:
    """Send this thread's writes to sys.stdout / sys.stderr into ``capture``; also marks the
    thread as running user code, whose ``spark.stop()`` is ignored (see ``guard_spark_stop``)
    with a warning, or quietly (a batch script's ``spark.stop()`` at its end is normal: the
    engine stops when the batch ends)."""
    _ensure_routers()
    guard_spark_stop()
    previous = getattr(_local, "capture", None), getattr(_local, "warn_on_stop", True)
    _local.capture, _local.warn_on_stop = capture, warn_on_stop
    try:
        yield capture
    finally:
        _local.capture, _local.warn_on_stop = previous


def in_user_code() -> bool:
    return getattr(_local, "capture", None) is not None


# -- interrupting Python code -------------------------------------------------------------


def _raise_in(thread_id: int, exc_type: type[BaseException] | None) -> None:
    """Raise ``exc_type`` in the thread at its next bytecode; None clears a pending one."""
    set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    target = ctypes.c_ulong(thread_id)
    if exc_type is None:
        set_async_exc(target, None)  # NULL: forget what is pending
    else:
        set_async_exc(target, ctypes.py_object(exc_type))


@contextlib.contextmanager
def interruptible(cancelled: threading.Event, grace: float = INTERRUPT_GRACE) -> Iterator[None]:
    """Raise ``StatementInterrupted`` in this thread if ``cancelled`` is set and the block is
    still running ``grace`` seconds later; repeated every second until the block ends.

    Code blocked in a C call (``time.sleep``) sees the exception only when the call returns.
    Nothing is raised once the block has ended: the end and any raising hold one lock, and a
    raise still pending at the end is withdrawn.
    """
    thread_id = threading.get_ident()
    lock = threading.Lock()
    finished = threading.Event()

    def watch() -> None:
        while not cancelled.wait(0.25):
            if finished.is_set():
                return
        if finished.wait(grace):
            return
        while True:
            with lock:
                if finished.is_set():
                    return
                _raise_in(thread_id, StatementInterrupted)
            if finished.wait(_INTERRUPT_REPEAT):
                return

    watcher = threading.Thread(target=watch, name=f"interrupt-{thread_id}", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            finished.set()
            _raise_in(thread_id, None)


# -- the shared SparkContext ----------------------------------------------------------------

_STOP_IGNORED = (
    "sparkgate: {what}.stop() ignored: this Spark application is run by sparkgate and may "
    "serve other sessions; end your session instead (DELETE /sessions/<id>)."
)


def _guarded_stop(original: Callable[..., Any], what: str) -> Callable[..., Any]:
    @functools.wraps(original)
    def stop(self: Any, *args: Any, **kwargs: Any) -> Any:
        if in_user_code():
            if getattr(_local, "warn_on_stop", True):
                print(_STOP_IGNORED.format(what=what), file=sys.stderr)
            return None
        return original(self, *args, **kwargs)

    stop.__sparkgate_guarded__ = True  # type: ignore[attr-defined]
    return stop


def guard_spark_stop() -> None:
    """Make ``SparkSession.stop`` and ``SparkContext.stop`` no-ops on threads running user code
    (the engine itself still stops Spark at exit, from its own thread)."""
    from pyspark.core.context import SparkContext
    from pyspark.sql.session import SparkSession

    with _install_lock:
        for cls, what in ((SparkSession, "spark"), (SparkContext, "sc")):
            current = cls.stop
            if not getattr(current, "__sparkgate_guarded__", False):
                cls.stop = _guarded_stop(current, what)  # type: ignore[method-assign]
