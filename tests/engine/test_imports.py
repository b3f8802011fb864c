"""The engine's imports have no cycle: the runtime (the contract) is at the bottom, the registry
at the top.

Each check runs in a fresh interpreter, so what is already imported in this one hides nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

CAPABILITIES = (
    "sparkgate.tables",
    "sparkgate.streaming",
    "sparkgate.engine.python_runner",
    "sparkgate.engine.batch_files",
    "sparkgate.engine.catalog_calls",
    "sparkgate.engine.sql_handlers",
)

# Modules that build on the contract: none of them may need the registry.
HANDLERS = (
    "sparkgate.tables.handler",
    "sparkgate.tables.twophase",
    "sparkgate.streaming.handlers",
    "sparkgate.engine.python_runner",
    "sparkgate.engine.batch_files",
    "sparkgate.engine.catalog_calls",
    "sparkgate.engine.sql_handlers",
    "sparkgate.runtime.hooks",
)


def imported_after(module: str) -> set[str]:
    """The modules a fresh interpreter holds after ``import module``."""
    code = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


RUNTIME = (
    "sparkgate.runtime.contract",
    "sparkgate.runtime.hooks",
    "sparkgate.runtime.session",
    "sparkgate.runtime.failures",
    "sparkgate.runtime.collect",
)


@pytest.mark.parametrize("module", RUNTIME)
def test_runtime_imports_no_capability(module: str) -> None:
    """The bottom layer needs nothing above it: no capability, and nothing of engine/."""
    loaded = imported_after(module)
    found = {m for m in loaded if any(m == c or m.startswith(c + ".") for c in CAPABILITIES)}
    assert found == set()
    assert {m for m in loaded if m.startswith("sparkgate.engine")} == set()


@pytest.mark.parametrize("module", HANDLERS)
def test_handler_does_not_import_the_registry(module: str) -> None:
    loaded = imported_after(module)
    assert module in loaded
    assert "sparkgate.engine.executors" not in loaded


def test_registry_imports_first() -> None:
    """Imported before anything else, the registry loads every capability without a cycle."""
    loaded = imported_after("sparkgate.engine.executors")
    assert {"sparkgate.tables.handler", "sparkgate.streaming.handlers"} <= loaded
