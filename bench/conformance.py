"""What the conformance benches share: a peer's test suite run twice (against the peer and
against sparkgate) with pytest, each side's outcomes read from JUnit XML, and one table with
the tests that pass on the peer but not on sparkgate.

Used by dbt_conformance.py (dbt's adapter suite, Spark Thrift Server) and connect_parity.py
(PySpark's Spark Connect parity tests, Spark's own Connect server).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bench.harness import stop_group

ROOT = Path(__file__).resolve().parent.parent

Listening = TypeVar("Listening")


@dataclass
class Outcome:
    status: str  # passed, failed, error, skipped
    seconds: float = 0.0
    error: str = ""  # the first error line, for failures and errors


@dataclass
class SideResult:
    side: str
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    start_seconds: float = 0.0  # until the server answered
    suite_seconds: float = 0.0  # the pytest run
    total_seconds: float = 0.0  # start, suite and stop
    returncode: int | None = None


@contextlib.contextmanager
def snapshot(run_dir: Path, suite: Path | None = None) -> Iterator[tuple[Path, Path | None]]:
    """Copies, as they are now, of src/sparkgate (for the sparkgate server and its engines to
    run from, through PYTHONPATH) and of ``suite`` if given (for pytest to run): edits to the
    checkout during a run reach neither a server midway nor one side only. What was copied
    (commit and changed files in src/) is noted in the run's directory."""
    with tempfile.TemporaryDirectory(prefix="sparkgate-conformance-src-") as tmp:
        source, copied = Path(tmp) / "src", None
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / "src" / "sparkgate", source / "sparkgate", ignore=skip)
        if suite is not None:
            copied = Path(tmp) / suite.name
            shutil.copytree(suite, copied, ignore=skip)
        # read-only: --no-optional-locks keeps `status` from refreshing the index
        git = ["git", "--no-optional-locks", "-C", str(ROOT)]
        head = subprocess.run(
            [*git, "rev-parse", "HEAD"], check=False, capture_output=True, text=True
        )
        changed = subprocess.run(
            [*git, "status", "--porcelain", "--", "src"],
            check=False,
            capture_output=True,
            text=True,
        )
        (run_dir / "sparkgate-source.txt").write_text(
            f"commit {head.stdout.strip()}\nchanged in src/ (not committed):\n{changed.stdout}"
        )
        yield source, copied


# Summary lines of -rA (e.g. "PASSED test_x.py::T::t") repeat the verbose lines: not printed.
_VERDICT = re.compile(r"\s(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_VERDICT_PREFIXES = ("PASSED ", "FAILED ", "ERROR ", "SKIPPED ", "XFAIL ", "XPASS ")


def run_pytest(
    console: Console, command: list[str], *, cwd: Path, env: dict[str, str], log_path: Path
) -> int:
    """Run a pytest ``command``: the full log to ``log_path``, one line per test to the
    console; its whole process group is stopped if this is interrupted."""
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                if (
                    "::" in line
                    and _VERDICT.search(line)
                    and not line.startswith(_VERDICT_PREFIXES)
                ):
                    shown = re.sub(r"^\S*/(test_\w+\.py::)", r"\1", line.rstrip())
                    console.print(shown, markup=False, highlight=False)
            return process.wait()
        finally:
            if process.poll() is None:
                stop_group(process)


def run_side(
    console: Console,
    side: str,
    title: str,
    out: Path,
    server: AbstractContextManager[Listening],
    suite: Callable[[Listening], int],
) -> SideResult:
    """One side: start ``server``, run ``suite`` against what it yields (pytest, writing
    ``out``/junit.xml), stop the server; the side's outcomes and times, also saved in ``out``."""
    result = SideResult(side)
    started = time.monotonic()
    console.rule(title)
    with server as listening:
        result.start_seconds = time.monotonic() - started
        console.print(f"{title} answers after {result.start_seconds:.0f}s")
        suite_started = time.monotonic()
        result.returncode = suite(listening)
        result.suite_seconds = time.monotonic() - suite_started
    result.total_seconds = time.monotonic() - started
    result.outcomes = parse_junit(out / "junit.xml")
    console.print(
        f"{title}: suite {minutes(result.suite_seconds)}, "
        f"whole side (start, suite, stop) {minutes(result.total_seconds)}"
    )
    save_side(out, result)
    return result


# -- outcomes ---------------------------------------------------------------------------------


def parse_junit(path: Path) -> dict[str, Outcome]:
    """Each test's outcome from pytest's JUnit XML, keyed ``file.py::Class::test``."""
    if not path.exists():
        return {}
    outcomes: dict[str, Outcome] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module, _, cls = case.get("classname", "").rpartition(".")
        name = f"{module.rsplit('.', 1)[-1]}.py::{cls}::{case.get('name')}"
        seconds = float(case.get("time") or 0)
        status, error = "passed", ""
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is None:
                continue
            if tag == "skipped":
                status, error = "skipped", element.get("message", "")
            else:
                texts = [element.get("message") or "", element.text or ""]
                texts += [(case.findtext(s) or "") for s in ("system-out", "system-err")]
                status, error = ("failed" if tag == "failure" else "error"), first_error(texts)
            break
        # A teardown error after a passed test shows up as a second <error> in the same case.
        if status == "passed" and name in outcomes:
            continue
        outcomes[name] = Outcome(status, seconds, error)
    return outcomes


DBT_ERROR = re.compile(r"^\s*((Database|Runtime|Compilation|Parsing|Unhandled) Error\b.*)$")
NOISE = re.compile(r"^E\s+(assert |AssertionError$|\+|-|where |and |Traceback|File )")


def first_error(texts: list[str]) -> str:
    """The most telling line of a failure: dbt's error message (the line after its
    "Database Error in model x" heading) if dbt printed one, else pytest's first E line."""
    for text in texts:
        lines = [line.strip() for line in text.splitlines()]
        for i, line in enumerate(lines):
            match = DBT_ERROR.match(line)
            if match:
                detail = next((nxt for nxt in lines[i + 1 : i + 4] if nxt), "")
                return clean(f"{match.group(1)}: {detail}")
    for text in texts:
        for line in text.splitlines():
            if line.startswith("E ") and not NOISE.match(line):
                return clean(line[1:])
    return clean(texts[0].splitlines()[0] if texts[0] else "")


def clean(line: str) -> str:
    # dbt log lines start with a time stamp; they add nothing here
    line = re.sub(r"^\d\d:\d\d:\d\d\s+", "", line.strip())
    return line[:300]


def save_side(out: Path, result: SideResult) -> None:
    from dataclasses import asdict

    (out / "outcomes.json").write_text(json.dumps(asdict(result), indent=1) + "\n")


def load_side(run_dir: Path, side: str) -> SideResult:
    saved = run_dir / side / "outcomes.json"
    if saved.exists():
        data = json.loads(saved.read_text())
        outcomes = {k: Outcome(**v) for k, v in data.pop("outcomes").items()}
        return SideResult(**data, outcomes=outcomes)
    return SideResult(side, parse_junit(run_dir / side / "junit.xml"))


# -- the report -------------------------------------------------------------------------------

STYLE = {"passed": "green", "failed": "red", "error": "red", "skipped": "dim", "-": "dim"}


def report(
    console: Console,
    results: list[SideResult],
    *,
    titles: dict[str, str],
    peer: str,
    title: str,
    every_test: bool = True,
) -> list[str]:
    """Print the table (each test's outcome on both sides unless ``every_test`` is off, then
    the totals); return the tests that pass on ``peer`` but not on sparkgate."""
    names = sorted({name for result in results for name in result.outcomes})
    table = Table(title=title)
    table.add_column("test", no_wrap=True)
    for result in results:
        table.add_column(titles[result.side], no_wrap=True, min_width=len(titles[result.side]))
    if every_test:
        for name in names:
            cells = []
            for result in results:
                outcome = result.outcomes.get(name)
                status = outcome.status if outcome else "-"
                cells.append(f"[{STYLE[status]}]{status}[/]")
            table.add_row(escape(name), *cells)
        table.add_section()
    for status in ("passed", "failed", "error", "skipped"):
        counts = [sum(o.status == status for o in r.outcomes.values()) for r in results]
        table.add_row(f"total {status}", *(str(count) for count in counts))
    table.add_row("suite time", *(minutes(r.suite_seconds) for r in results))
    table.add_row("whole side (start, suite, stop)", *(minutes(r.total_seconds) for r in results))
    console.print(table)

    by_side = {result.side: result for result in results}
    if peer not in by_side or "sparkgate" not in by_side:
        return []
    theirs, gate = by_side[peer].outcomes, by_side["sparkgate"].outcomes
    gaps = [
        name
        for name in names
        if name in theirs
        and theirs[name].status == "passed"
        and name in gate
        and gate[name].status in ("failed", "error")
    ]
    if gaps:
        console.print(
            f"\n[bold red]{len(gaps)} test(s) pass on {titles[peer]} but not on sparkgate:[/]"
        )
        for name in gaps:
            console.print(f"- {name} ({gate[name].status})", markup=False)
            console.print(f"    {gate[name].error}", markup=False, highlight=False)
    else:
        console.print(f"\n[bold green]no test passes on {titles[peer]} and fails on sparkgate[/]")
    other = [n for n in names if n in theirs and n in gate and theirs[n].status != "passed"]
    failing = [n for n in other if theirs[n].status in ("failed", "error")]
    if failing:
        console.print(f"\n{len(failing)} test(s) fail on {titles[peer]} too (not gaps):")
        for name in failing:
            console.print(f"- {name} (sparkgate: {gate[name].status})", markup=False)
            console.print(f"    {theirs[name].error}", markup=False, highlight=False)
    return gaps


def keep_logs(home: Path, out: Path) -> None:
    """Copy every log of a sparkgate home (server, engines, metastore) into ``out``."""
    logs = out / "sparkgate-logs"
    for path in home.rglob("*.log"):
        target = logs / path.relative_to(home)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s" if seconds else "-"
