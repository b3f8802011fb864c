"""What a launcher does: start the process for an engine record, somewhere."""

from __future__ import annotations

from typing import Protocol

from sparkgate.store.records import EngineRecord


class Launcher(Protocol):
    def launch(self, engine: EngineRecord) -> None:
        """Start the engine's driver process. It registers itself in the store once up;
        a process that never does is reaped after the start timeout."""
