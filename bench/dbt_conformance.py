"""dbt's adapter test suite as a conformance check: Spark Thrift Server vs sparkgate.

    .venv/bin/python -m bench.dbt_conformance [--only sts|sparkgate] [-k EXPR]
    .venv/bin/python -m bench.dbt_conformance --report bench/results/dbt-conformance/<run>

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
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path

from rich.console import Console

from bench.conformance import keep_logs, load_side, report, run_pytest, run_side, snapshot
from bench.harness import ThriftServer, bench_server_with_env, spark_thrift_server
from sparkgate_dev import free_port

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
        with snapshot(run_dir, SUITE) as (source, suite):
            assert suite is not None
            for side in sides:
                out = run_dir / side
                out.mkdir(parents=True)
                server = (
                    spark_thrift_server(console, catalog="hive", log_dir=out)
                    if side == "sts"
                    else sparkgate_server(console, out, source)
                )
                run = partial(run_suite, console, out=out, keyword=args.keyword, suite=suite)
                results.append(run_side(console, side, TITLES[side], out, server, run))
    gaps = report(
        console,
        results,
        titles=TITLES,
        peer="sts",
        title="dbt adapter suite (dbt-spark, thrift): Spark Thrift Server vs sparkgate",
    )
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


def run_suite(
    console: Console, server: ThriftServer, *, out: Path, keyword: str | None, suite: Path
) -> int:
    """pytest over ``suite`` (a copy of bench/dbt_suite) in .venv-dbt, against the HiveServer2
    ``server``; the full log goes to pytest.log, one line per test to the console."""
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
            "DBT_CONFORMANCE_PORT": str(server.port),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DO_NOT_TRACK": "1",
            "HOME": str(out),  # dbt's ~/.dbt, not the user's
        }
    )
    return run_pytest(console, command, cwd=suite, env=env, log_path=out / "pytest.log")


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
            keep_logs(server.home, out)


if __name__ == "__main__":
    main()
