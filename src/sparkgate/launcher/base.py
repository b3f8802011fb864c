"""What a launcher does: start the process for an engine record, somewhere, and end it."""

from __future__ import annotations

from typing import Protocol

from sparkgate.store.records import EngineRecord


class Launcher(Protocol):
    """Starts an engine's driver somewhere: a process on this node (local, YARN client mode)
    or a pod (Kubernetes). Nothing assumes the engine is the node's child: it is judged alive
    by its heartbeats in the store, and stopped through the store (it obeys ``stopping``);
    :meth:`kill` is for one that does not answer there.

    Logs: :meth:`launch` records the file the driver's output goes to as the engine record's
    ``log_path``: a file on the node that launched it, or (Kubernetes) ``k8s://<namespace>/
    <pod>``, the pod whose log it is."""

    def launch(self, engine: EngineRecord) -> None:
        """Start the engine's driver. It registers itself in the store once up; one that
        never does is reaped after the start timeout."""

    def alive(self, engine: EngineRecord) -> bool | None:
        """Whether the engine's driver still runs, as far as this machine can see; None when
        it cannot tell from here (no process recorded yet, a process on another host, a pod):
        then the store's heartbeats and states are all there is to judge by."""

    def log(self, engine: EngineRecord, *, tail: int | None = None) -> str:
        """The engine driver's output, its last ``tail`` lines (all: None); empty when it
        cannot be read from here."""

    def kill(self, engine: EngineRecord) -> bool:
        """Force-stop the engine's driver, without waiting for it to finish its work. True if
        something was killed; False if nothing was (already gone, or out of this machine's
        reach). Idempotent, and never raises for an engine it cannot reach: an engine that
        still runs learns it was given up on at its next heartbeat, and exits."""
