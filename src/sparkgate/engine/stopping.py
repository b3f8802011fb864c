"""Stop? — the question the engine loop asks before each pass: a signal, a stop request, the
store's verdict on this engine, or nothing left to serve.

Apart from the loop because several threads answer it (signal handlers on the main thread, the
hint listener, the heartbeat reading the engine's row) and all of them end in the same few
flags of ``Shared``: ``stop`` (graceful), ``stop_now``, and the exit's reason.

Signals: the first SIGTERM stops taking work and exits once running statements finish; a
second one cancels them and exits now.
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from sparkgate.engine.shared import Shared
from sparkgate.states import TERMINAL_ENGINE_STATES, EngineKind, EngineState

log = logging.getLogger("sparkgate.engine")


class Stopping:
    def __init__(self, shared: Shared) -> None:
        self._shared = shared
        self._engine_changed = threading.Event()

    def install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        shared = self._shared

        def on_term(_signum: int, _frame: Any) -> None:
            if shared.stop.is_set():
                shared.stop_now.set()
            shared.stop.set()
            shared.wake.set()  # no lock in a signal handler: a stop needs no read

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)

    def request(self, *, now: bool = False) -> None:
        self._shared.stop.set()
        if now:
            self._shared.stop_now.set()
        self._shared.wake_for()

    def engine_changed(self) -> None:
        """A hint said this engine's row changed: the loop reads it after its pass."""
        self._engine_changed.set()

    def follow_engine_state(self) -> None:
        """Act at once on a hinted change of this engine's row (the heartbeat would see it
        within its interval anyway)."""
        if not self._engine_changed.is_set():
            return
        self._engine_changed.clear()
        shared = self._shared
        self.obey(shared.store.engines.get(shared.engine_id).state)

    def obey(self, state: EngineState | None) -> None:
        """What the store says of this engine: STOPPING, finish and exit; another final state
        (lost, failed), it was given up on: exit at once. Our own final state says nothing."""
        shared = self._shared
        if shared.exiting.is_set():
            return
        if state is EngineState.STOPPING:
            shared.stop.set()
            shared.wake_for()
        elif state in TERMINAL_ENGINE_STATES:
            assert state is not None
            log.error("engine declared %s by the store; exiting now", state.value)
            shared.exit_reason = f"declared {state.value}"
            shared.stop_now.set()
            shared.wake_for()

    def should_exit(self, last_busy: float) -> bool:
        shared = self._shared
        if shared.stop_now.is_set():
            return True
        with shared.lock:
            running = bool(shared.running)
        if shared.stop.is_set():
            return not running
        assert shared.record is not None
        dedicated = shared.record.kind is EngineKind.DEDICATED
        if dedicated and shared.served_session and not shared.sessions and not running:
            shared.exit_reason = "its session ended"  # a dedicated engine lives for one session
            return True
        idle_for = shared.clock() - last_busy
        if not shared.sessions and not running and idle_for > shared.settings.engine_idle_timeout:
            shared.exit_reason = f"idle for {idle_for:.0f}s"
            return True
        return False
