"""The import graph of the whole package: layers only downward, no door imports another, and
no circle between modules.

Read from the source (every ``import``, inside functions and ``TYPE_CHECKING`` blocks too): an
arrow that runs back up is a dependency however it is written. A new package must be placed in
``LAYERS`` before this test passes, which is the moment to decide where it belongs.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import sparkgate
import sparkgate_dev

SRC = Path(sparkgate.__file__).parent
# The rigs (test servers, the chaos suite, the standalone cluster): outside the package, on top.
DEV = Path(sparkgate_dev.__file__).parent

# Bottom to top; a module may import its own layer's and the ones below.
LAYERS: list[set[str]] = [
    # what everything uses
    {
        "sparkgate",
        "errors",
        "recorded",
        "error_catalog",
        "states",
        "stream_spec",
        "statement_cost",
        "pricing",
        "sql",
        "settings",
        "processes",
        "procfs",
        "credentials",
        "units",
        "tags",
        "doors",
        "logs",
    },
    {"results", "result_formats", "store"},
    # each resource as every door shows it, built from the store's records
    {"schemas"},
    {"auth", "metrics", "catalog", "enginelink"},
    # the engine side: what a statement handler is given, the capabilities, the engine
    {"runtime"},
    {"tables", "streaming"},
    {"jobs"},
    {"engine"},
    {"launcher", "duties"},
    # the application layer, the node that holds it, what the HTTP doors share
    {"service"},
    {"node"},
    {"http"},
    # the doors
    {"api", "livy", "hive2", "connect", "web", "client"},
    # wiring, and what drives a server from outside
    {"server"},
    {"cli"},
    # the documentation's reference pages, read from everything below
    {"reference"},
]
DOORS = {"api", "livy", "hive2", "connect", "web", "client"}
RANK = {name: rank for rank, layer in enumerate(LAYERS) for name in layer}


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = ["sparkgate", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The sparkgate modules ``name`` imports (a ``from package import module`` names the
    module; ``from module import thing`` the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    resolved = set()
    for imported in found:
        target = imported
        while target not in MODULES and "." in target:
            target = target.rpartition(".")[0]
        if target in MODULES and target.startswith("sparkgate") and target != name:
            resolved.add(target)
    return resolved


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "sparkgate"


def test_every_package_has_a_layer() -> None:
    assert {_group(m) for m in MODULES} - RANK.keys() == set()


def test_no_import_runs_back_up() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if RANK.get(_group(target), 0) > RANK.get(_group(module), 0)
    )
    assert upward == []


def test_no_door_imports_another() -> None:
    across = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if _group(module) in DOORS and _group(target) in DOORS and _group(target) != _group(module)
    )
    assert across == []


def test_no_circle() -> None:
    """No strongly connected set of modules (Tarjan's algorithm), whatever their layers."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in GRAPH[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == module:
                    break
            if len(members) > 1:
                circles.append(sorted(members))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    assert circles == []


def test_the_graph_is_read() -> None:
    """The checks above see real arrows (a parser that found none would pass them all)."""
    assert "sparkgate.http.deps" in GRAPH["sparkgate.api.routes.queries"]
    assert "sparkgate.store" in GRAPH["sparkgate.service.sessions"]
    arrows: defaultdict[str, set[str]] = defaultdict(set)
    for module, targets in GRAPH.items():
        arrows[_group(module)].update(_group(t) for t in targets)
    assert "service" in arrows["hive2"] and "service" in arrows["web"]


def _absolute_imports(path: Path) -> set[str]:
    """Every module ``path`` names in an absolute import (``from a.b import c``: ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module)
    return found


def test_nothing_in_the_package_imports_the_rigs() -> None:
    """The rigs depend on sparkgate, never the reverse: the wheel ships without them."""
    reaching = sorted(
        f"{module} -> {imported}"
        for module, path in MODULES.items()
        for imported in _absolute_imports(path)
        if imported.partition(".")[0] == "sparkgate_dev"
    )
    assert reaching == []


def test_the_rigs_import_only_modules_the_package_has() -> None:
    used = {
        imported
        for path in DEV.rglob("*.py")
        for imported in _absolute_imports(path)
        if imported.partition(".")[0] == "sparkgate"
    }
    assert "sparkgate.client" in used and "sparkgate.processes" in used  # the arrows are read
    assert used - MODULES.keys() == set()
