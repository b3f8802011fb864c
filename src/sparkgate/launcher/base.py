"""What a launcher does: start the process for an engine record, somewhere."""

from __future__ import annotations

from typing import Protocol

from sparkgate.store.records import EngineRecord


class Launcher(Protocol):
    """Starts an engine's driver somewhere: a process on this node (local, YARN client mode)
    or a pod (Kubernetes). Nothing assumes the engine is the node's child: it is judged alive
    by its heartbeats in the store, and stopped through the store (it obeys ``stopping``) or
    the cluster manager."""

    def launch(self, engine: EngineRecord) -> None:
        """Start the engine's driver. It registers itself in the store once up; one that
        never does is reaped after the start timeout."""
