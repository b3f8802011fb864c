"""PySpark's own Spark Connect parity tests: Spark's own Connect server vs sparkgate.

    scripts/bench connect_parity --spark-source DIR [--only spark|sparkgate]
                                 [--modules GLOB ...] [-k EXPR] [--timeout SECONDS]
    scripts/bench connect_parity --report bench/results/connect-parity/<run>

Runs the parity test modules of apache/spark's ``python/pyspark/sql/tests/connect/`` (every
``test_parity_*.py`` under it, or those ``--modules`` names, as globs relative to it) as
they are, with this project's pyspark Connect client, twice:
- against Spark's own Connect server from the pyspark wheel (``spark-submit --class
  SparkConnectServer``, ``local[2]``, token auth, Spark's defaults otherwise);
- against a sparkgate server (temporary home, SQLite store, its embedded Hive metastore,
  ``local[2]``, password auth with one user who has every right) through its Connect door,
  with a personal access token.
Each side gets ``SPARK_CONNECT_TESTING_REMOTE=sc://localhost:PORT/;token=...`` (the URL
PySpark's ``ReusedConnectTestCase`` connects to), and the tests run as with the pure Connect
client (``is_remote_only()``: no local JVM of their own). Then it prints
each side's totals and the tests that pass on Spark's server but not on sparkgate, with their
first error line; it exits 1 if there is any. Raw outputs (pytest logs, JUnit XML, server,
engine and peer logs, the commit tested) go to bench/results/connect-parity/<time>/.

The tests are not in the pyspark wheel or in this repository: ``--spark-source`` is a
checkout of apache/spark at the release of the pyspark in use (``git clone --depth 1 --branch
v4.3.0 https://github.com/apache/spark``). Its ``python/pyspark/sql/tests`` is found as
``pyspark.sql.tests`` of the installed pyspark (a pytest plugin adds it to the package's path),
so the tests import the installed pyspark and their own test helpers from the checkout.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path

from rich.console import Console

from bench.conformance import (
    keep_logs,
    load_side,
    report,
    run_pytest,
    run_side,
    snapshot,
)
from bench.connect import make_token, spark_connect_server
from bench.harness import bench_server_with_env
from sparkgate.auth.passwords import PasswordFile
from sparkgate_dev import free_port

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "connect-parity"
SIDES = ("spark", "sparkgate")
TITLES = {"spark": "Spark Connect server", "sparkgate": "sparkgate"}
TESTS = Path("python/pyspark/sql/tests/connect")
BENCH_USER = "bench"

# The plugin pytest loads first: the checkout's test packages become subpackages of the
# installed pyspark (which ships none), so `pyspark.sql.tests.test_udtf` is the checkout's file
# and `pyspark` itself stays the installed one. A checkout of another release brings its own
# helpers (`pyspark.testing`) as well.
PLUGIN = """\
import importlib
import importlib.util
import os
import pkgutil
import sys

import pyspark
import pyspark.sql

import pyspark.util

# The tests then run as with the pure Connect client (no local JVM of their own), as
# SPARK_SKIP_CONNECT_COMPAT_TESTS would make them, while pyspark itself imports whole.
pyspark.util._is_remote_only = True
source = os.environ["PARITY_PYSPARK_SOURCE"]
pyspark.__path__.append(source)
pyspark.sql.__path__.append(os.path.join(source, "sql"))

if os.environ.get("PARITY_OWN_TESTING"):
    # Tests of another release than the installed pyspark's use their own helpers
    # (pyspark.testing): the checkout's replace the installed ones, after every installed
    # module that imports from them at import time has done so.
    import pyspark.testing

    installed = os.path.dirname(pyspark.testing.__file__)
    for info in pkgutil.iter_modules([installed]):
        importlib.import_module(f"pyspark.testing.{info.name}")
    for name in list(sys.modules):
        if name == "pyspark.testing" or name.startswith("pyspark.testing."):
            del sys.modules[name]
    testing = os.path.join(source, "testing")
    spec = importlib.util.spec_from_file_location(
        "pyspark.testing",
        os.path.join(testing, "__init__.py"),
        submodule_search_locations=[testing],
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["pyspark.testing"] = module
    spec.loader.exec_module(module)
    pyspark.testing = module
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spark-source", type=Path, help="a checkout of apache/spark")
    parser.add_argument("--only", choices=SIDES, help="run against one server only")
    parser.add_argument(
        "--modules",
        nargs="+",
        default=["**/test_parity_*.py"],
        help="globs of test modules, relative to python/pyspark/sql/tests/connect",
    )
    parser.add_argument("-k", dest="keyword", help="pytest -k expression: a subset of tests")
    parser.add_argument("--timeout", type=int, default=600, help="seconds one test may take")
    parser.add_argument(
        "--report", type=Path, help="print an earlier run's table (its JUnit XML) only"
    )
    args = parser.parse_args()
    console = Console(width=200, record=True)
    # A plain `kill` of the bench must also stop what it started: run the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    if args.report:
        run_dir = args.report
        results = [load_side(run_dir, side) for side in SIDES if (run_dir / side).exists()]
    else:
        if args.spark_source is None:
            parser.error("--spark-source (a checkout of apache/spark) is required")
        source = args.spark_source.resolve()
        modules = find_modules(source, args.modules)
        run_dir = RESULTS / datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir.mkdir(parents=True)
        console.print(f"raw outputs in {run_dir.relative_to(ROOT)}")
        own_testing = not same_release(console, source, run_dir)
        console.print(f"{len(modules)} test modules")
        results = []
        with snapshot(run_dir) as (sparkgate_source, _):
            for side in [args.only] if args.only else list(SIDES):
                out = run_dir / side
                out.mkdir()
                server = (
                    peer(console, out)
                    if side == "spark"
                    else sparkgate(console, out, sparkgate_source)
                )
                suite = partial(
                    run_suite,
                    console,
                    out=out,
                    source=source,
                    modules=modules,
                    args=args,
                    own_testing=own_testing,
                )
                results.append(run_side(console, side, TITLES[side], out, server, suite))
    gaps = report(
        console,
        results,
        titles=TITLES,
        peer="spark",
        title="PySpark's Spark Connect parity tests: Spark's Connect server vs sparkgate",
        every_test=False,
    )
    console.save_text(str(run_dir / "report.txt"))
    sys.exit(1 if gaps else 0)


def find_modules(source: Path, patterns: list[str]) -> list[Path]:
    base = source / TESTS
    if not base.is_dir():
        raise SystemExit(f"{base} is not there: --spark-source must be a checkout of apache/spark")
    found = sorted({path for pattern in patterns for path in base.glob(pattern)})
    if not found:
        raise SystemExit(f"no test module under {base} matches {patterns}")
    return found


def same_release(console: Console, source: Path, run_dir: Path) -> bool:
    """Whether the checkout is of the installed pyspark's release (noted in the run's
    directory): the tests are meant for theirs, and bring their own helpers otherwise."""
    import pyspark

    namespace: dict[str, object] = {}
    version_file = source / "python" / "pyspark" / "version.py"
    exec(version_file.read_text(), namespace)  # one assignment: __version__ = "..."
    tests_version = str(namespace.get("__version__"))
    line = f"tests from apache/spark {tests_version}; pyspark installed {pyspark.__version__}"
    console.print(line if tests_version == pyspark.__version__ else f"[yellow]{line}[/]")
    (run_dir / "versions.txt").write_text(line + "\n")
    return tests_version == pyspark.__version__


@contextlib.contextmanager
def peer(console: Console, out: Path) -> Iterator[str]:
    token = secrets.token_urlsafe(24)
    with spark_connect_server(console, token, stock=True) as server:
        try:
            server.wait_listening()
            yield f"sc://localhost:{server.port}/;token={token}"
        finally:
            shutil.copyfile(server.log_path, out / "connect-server.log")


@contextlib.contextmanager
def sparkgate(console: Console, out: Path, source: Path) -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="sparkgate-parity-users-") as users:
        password = secrets.token_urlsafe(16)
        PasswordFile(Path(users) / "passwords").set(BENCH_USER, password)
        port = free_port()
        with bench_server_with_env(
            console,
            {"PYTHONPATH": str(source)},
            connect_port=port,
            auth="password",
            auth_password_file=Path(users) / "passwords",
        ) as server:
            try:
                token = make_token(server, password)
                yield f"sc://localhost:{port}/;token={token}"
            finally:
                keep_logs(server.home, out)


def run_suite(
    console: Console,
    url: str,
    *,
    out: Path,
    source: Path,
    modules: list[Path],
    args: argparse.Namespace,
    own_testing: bool,
) -> int:
    plugin_dir = out / "plugin"
    plugin_dir.mkdir()
    (plugin_dir / "parity_plugin.py").write_text(PLUGIN)
    (plugin_dir / "pytest.ini").write_text("[pytest]\n")  # not the checkout's settings
    command = [
        sys.executable,
        *("-m", "pytest"),
        *("-p", "parity_plugin"),
        *("-c", str(plugin_dir / "pytest.ini")),
        f"--rootdir={out}",
        *(str(module) for module in modules),
        "-v",
        "-rA",
        "--color=no",
        "--continue-on-collection-errors",  # a module of the checkout may not import here
        "-p",
        "no:cacheprovider",
        f"--junitxml={out / 'junit.xml'}",
        *("-o", "junit_logging=all"),
        f"--timeout={args.timeout}",
    ]
    if args.keyword:
        command += ["-k", args.keyword]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARKGATE_", "SPARK_"))}
    env.update(
        {
            "PYTHONPATH": str(plugin_dir),
            "PARITY_PYSPARK_SOURCE": str(source / "python" / "pyspark"),
            "SPARK_CONNECT_TESTING_REMOTE": url,
            "HOME": str(out),
        }
    )
    if own_testing:
        env["PARITY_OWN_TESTING"] = "1"
    return run_pytest(console, command, cwd=out, env=env, log_path=out / "pytest.log")


if __name__ == "__main__":
    main()
