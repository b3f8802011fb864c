"""dbt's adapter test suite as a conformance check: Spark Thrift Server vs sparkgate.

    .venv/bin/python bench/dbt_conformance.py [--only sts|sparkgate] [-k EXPR]
    .venv/bin/python bench/dbt_conformance.py --report bench/results/dbt-conformance/<run>

Runs the pytest suite in bench/dbt_suite/ (dbt-tests-adapter's base classes, subclassed the
way dbt-spark's functional tests are for its ``apache_spark`` profile: dbt-spark's thrift
method, i.e. PyHive) twice, with the same Spark (pyspark's jars, local[2], 2 shuffle
partitions, no UI, a 768m driver, a Hive catalog):
- against Spark Thrift Server started from the pyspark wheel (``spark-submit --class
  HiveThriftServer2 ... spark-internal``; Derby metastore and warehouse in a temporary
  directory, its working directory);
- against a sparkgate server (temporary home, its embedded Hive metastore, one shared engine)
  through its HiveServer2 binary Thrift door.
Then it prints one table (each test's outcome on both servers, totals) and the tests that pass
on Spark Thrift Server but not on sparkgate, with their first error line; it exits 1 if there
is any. Raw outputs (pytest logs, JUnit XML, dbt logs, server and engine logs) are kept in
bench/results/dbt-conformance/<timestamp>/.

dbt lives in a virtualenv of its own, .venv-dbt/ at the repo root (dbt pins many packages),
created on the first run and reused while its requirements stay the same. dbt-core 1.10 (1.11
and later download a parser wheel from outside the package registries at install time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from harness import ThriftServer, bench_server_with_env, spark_thrift_server, stop_group
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sparkgate.testing import free_port

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "bench" / "dbt_suite"
DBT_VENV = ROOT / ".venv-dbt"
RESULTS = ROOT / "bench" / "results" / "dbt-conformance"
# dbt-tests-adapter 1.10.x is the release line of dbt-core 1.10; later ones follow dbt-adapters.
REQUIREMENTS = [
    "dbt-core>=1.10,<1.11",
    "dbt-spark[PyHive]>=1.10,<1.11",
    "dbt-tests-adapter>=1.10,<1.11",
    "pytest>=8,<9.9",
    "pytest-timeout>=2.3",
]
STAMP = DBT_VENV / "sparkgate-requirements.json"
SIDES = ("sts", "sparkgate")
TITLES = {"sts": "Spark Thrift Server", "sparkgate": "sparkgate"}
TEST_TIMEOUT = 1200  # seconds one test may take before pytest-timeout fails it


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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=SIDES, help="run against one server only")
    parser.add_argument("-k", dest="keyword", help="pytest -k expression: a subset of tests")
    parser.add_argument(
        "--report",
        type=Path,
        help="print the table of an earlier run's directory (its JUnit XML) without running",
    )
    args = parser.parse_args()
    console = Console(width=200, record=True)
    # A plain `kill` of the bench must also stop what it started: run the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    if args.report:
        run_dir = args.report
        results = [load_side(run_dir, side) for side in SIDES if (run_dir / side).exists()]
    else:
        ensure_dbt_venv(console)
        run_dir = RESULTS / datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir.mkdir(parents=True)
        console.print(f"raw outputs in {run_dir.relative_to(ROOT)}")
        sides = [args.only] if args.only else list(SIDES)
        results = []
        with snapshot(run_dir) as (source, suite):
            for side in sides:
                result = run_side(console, side, run_dir / side, args.keyword, source, suite)
                results.append(result)
                (run_dir / side / "outcomes.json").write_text(
                    json.dumps(asdict(result), indent=1) + "\n"
                )
    gaps = report(console, results)
    console.save_text(str(run_dir / "report.txt"))
    sys.exit(1 if gaps else 0)


# -- the dbt virtualenv -----------------------------------------------------------------------


def ensure_dbt_venv(console: Console) -> None:
    """Create .venv-dbt with dbt, dbt-spark and dbt-tests-adapter, unless it is there already
    with the same requirements."""
    wanted = {"requirements": REQUIREMENTS}
    if STAMP.exists() and json.loads(STAMP.read_text()) == wanted:
        return
    console.print(f"creating {DBT_VENV.relative_to(ROOT)} (dbt and its test suite)...")
    python = shutil.which("python3") or sys.executable
    subprocess.run([python, "-m", "venv", "--clear", str(DBT_VENV)], check=True)
    pip = [str(DBT_VENV / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "--quiet", "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "install", "--quiet", *REQUIREMENTS], check=True)
    STAMP.write_text(json.dumps(wanted) + "\n")


# -- one side: a server and the suite against it ------------------------------------------------


@contextlib.contextmanager
def snapshot(run_dir: Path) -> Iterator[tuple[Path, Path]]:
    """Copies, as they are now, of src/sparkgate (for the sparkgate server and its engines to
    run from, through PYTHONPATH) and of bench/dbt_suite (for pytest to run): edits to the
    checkout during a run reach neither a server midway nor one side only. What was copied
    (commit and changed files in src/) is noted in the run's directory."""
    with tempfile.TemporaryDirectory(prefix="sparkgate-dbt-src-") as tmp:
        source, suite = Path(tmp) / "src", Path(tmp) / "dbt_suite"
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / "src" / "sparkgate", source / "sparkgate", ignore=skip)
        shutil.copytree(SUITE, suite, ignore=skip)
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
        yield source, suite


def run_side(
    console: Console, side: str, out: Path, keyword: str | None, source: Path, suite: Path
) -> SideResult:
    out.mkdir(parents=True)
    result = SideResult(side)
    started = time.monotonic()
    console.rule(f"{TITLES[side]}")
    if side == "sts":
        server = spark_thrift_server(console, catalog="hive", log_dir=out)
    else:
        server = sparkgate_server(console, out, source)
    with server as listening:
        port = listening.port
        result.start_seconds = time.monotonic() - started
        console.print(f"{TITLES[side]} listening on {port} after {result.start_seconds:.0f}s")
        suite_started = time.monotonic()
        result.returncode = run_suite(console, port, out, keyword, suite)
        result.suite_seconds = time.monotonic() - suite_started
    result.total_seconds = time.monotonic() - started
    result.outcomes = parse_junit(out / "junit.xml")
    console.print(
        f"{TITLES[side]}: suite {minutes(result.suite_seconds)}, "
        f"whole side (start, suite, stop) {minutes(result.total_seconds)}"
    )
    return result


def run_suite(console: Console, port: int, out: Path, keyword: str | None, suite: Path) -> int:
    """pytest over ``suite`` (a copy of bench/dbt_suite) in .venv-dbt, against the HiveServer2
    server on ``port``; the full log goes to pytest.log, one line per test to the console."""
    command = [
        str(DBT_VENV / "bin" / "python"),
        "-m",
        "pytest",
        str(suite),
        "-v",
        "-rA",
        "--color=no",
        f"--rootdir={out}",  # dbt's per-test logs go to <rootdir>/logs
        f"--junitxml={out / 'junit.xml'}",
        "-o",
        "junit_logging=all",
        f"--timeout={TEST_TIMEOUT}",
    ]
    if keyword:
        command += ["-k", keyword]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SPARKGATE_", "DBT_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(
        {
            "DBT_CONFORMANCE_PORT": str(port),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DO_NOT_TRACK": "1",
            "HOME": str(out),  # dbt's ~/.dbt, not the user's
        }
    )
    verdict = re.compile(r"\s(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
    with open(out / "pytest.log", "w") as log:
        process = subprocess.Popen(
            command,
            cwd=suite,
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
                if "::" in line and verdict.search(line) and not line.startswith(verdict_prefixes):
                    shown = re.sub(r"^\S*/(test_\w+\.py::)", r"\1", line.rstrip())
                    console.print(shown, markup=False, highlight=False)
            return process.wait()
        finally:
            if process.poll() is None:
                stop_group(process)


# Summary lines of -rA (e.g. "PASSED test_x.py::T::t") repeat the verbose lines: not printed.
verdict_prefixes = ("PASSED ", "FAILED ", "ERROR ", "SKIPPED ", "XFAIL ", "XPASS ")


@contextlib.contextmanager
def sparkgate_server(console: Console, out: Path, source: Path) -> Iterator[ThriftServer]:
    """A sparkgate server run from ``source`` (see snapshot) in a temporary home
    (SQLite store, its embedded Hive metastore, one shared engine, started before the suite),
    with its binary Thrift door on a free port; its server, engine and metastore logs are kept
    in ``out``."""
    env = {"PYTHONPATH": str(source)}
    with bench_server_with_env(console, env, thrift_port=free_port()) as server:
        try:
            assert server.process is not None
            yield ThriftServer(server.process.pid, server.settings.thrift_port)
        finally:
            logs = out / "sparkgate-logs"
            for path in server.home.rglob("*.log"):
                target = logs / path.relative_to(server.home)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)


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


def load_side(run_dir: Path, side: str) -> SideResult:
    saved = run_dir / side / "outcomes.json"
    if saved.exists():
        data = json.loads(saved.read_text())
        outcomes = {k: Outcome(**v) for k, v in data.pop("outcomes").items()}
        return SideResult(**data, outcomes=outcomes)
    return SideResult(side, parse_junit(run_dir / side / "junit.xml"))


# -- the report -------------------------------------------------------------------------------

STYLE = {"passed": "green", "failed": "red", "error": "red", "skipped": "dim", "-": "dim"}


def report(console: Console, results: list[SideResult]) -> list[str]:
    """Print the table; return the tests that pass on STS but not on sparkgate."""
    names = sorted({name for result in results for name in result.outcomes})
    table = Table(title="dbt adapter suite (dbt-spark, thrift): Spark Thrift Server vs sparkgate")
    table.add_column("test", no_wrap=True)
    for result in results:
        table.add_column(TITLES[result.side], no_wrap=True, min_width=len(TITLES[result.side]))
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
    if "sts" not in by_side or "sparkgate" not in by_side:
        return []
    sts, gate = by_side["sts"].outcomes, by_side["sparkgate"].outcomes
    gaps = [
        name
        for name in names
        if name in sts
        and sts[name].status == "passed"
        and name in gate
        and gate[name].status in ("failed", "error")
    ]
    if gaps:
        console.print(f"\n[bold red]{len(gaps)} test(s) pass on STS but not on sparkgate:[/]")
        for name in gaps:
            console.print(f"- {name} ({gate[name].status})", markup=False)
            console.print(f"    {gate[name].error}", markup=False, highlight=False)
    else:
        console.print("\n[bold green]no test passes on STS and fails on sparkgate[/]")
    other = [n for n in names if n in sts and n in gate and sts[n].status != "passed"]
    failing = [n for n in other if sts[n].status in ("failed", "error")]
    if failing:
        console.print(f"\n{len(failing)} test(s) fail on STS too (not gaps):")
        for name in failing:
            console.print(f"- {name} (sparkgate: {gate[name].status})", markup=False)
            console.print(f"    {sts[name].error}", markup=False, highlight=False)
    return gaps


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s" if seconds else "-"


if __name__ == "__main__":
    main()
