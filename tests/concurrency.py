"""Starting several calls at the same instant, for tests of racing writers."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def race(*calls: Callable[[], Any]) -> list[Any]:
    """Run each call on its own thread, released together; their results, in order."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)
    errors: list[BaseException] = []

    def run(index: int, call: Callable[[], Any]) -> None:
        barrier.wait()
        try:
            results[index] = call()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
