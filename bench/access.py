"""What data access control costs a statement: the engine's check (sparkgate.engine.authz) on
``SELECT 1`` and on a 10-table join, with no ``tables:`` section against a 100-rule file, in
one Spark driver, the two interleaved round by round.

    scripts/bench access [--rounds 300]

One PySpark driver (local[2]) with sparkgate's SQL extension and its real policy (the Decider,
over a SQLite store), as an engine runs them. Each round times, for each case, ``spark.sql(q)``
(parse, analysis and the check: where the extension works) and, for ``SELECT 1``, the
``collect()`` too. The user's table rule is the last of the 100 (every rule is tried); a third
column has the policy's answers forgotten before every statement (the cost of the first
statement on a table in a second, when the extension asks the policy through py4j). The
driver's heap after a garbage collection is reported with the rules off and on.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sparkgate.auth.access import Access
from sparkgate.engine.authz.build import EXTENSION_CLASS, ensure_jar
from sparkgate.engine.authz.decider import Decider, install
from sparkgate.runtime.identity import bind
from sparkgate.store import Store

TABLES = 10


def rules(count: int) -> str:
    """``count`` table rules; bench's own is the last."""
    lines = ["tables:"]
    for n in range(count - 1):
        lines.append(f"  - {{user: other{n}, schema: s{n}, table: 't.*', privileges: [SELECT]}}")
    lines.append("  - {user: bench, schema: default, privileges: [SELECT]}")
    return "\n".join(lines) + "\n"


class Switch(Decider):
    """The real policy, with its ``tables:`` section switched on and off between phases."""

    on = False

    def active(self) -> bool:
        return self.on and super().active()


def heap_mb(spark: Any) -> float:
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    for _ in range(3):
        spark.sparkContext._jvm.java.lang.System.gc()
        time.sleep(0.2)
    return float(runtime.totalMemory() - runtime.freeMemory()) / 2**20


def report(
    rounds: int,
    cases: list[str],
    phases: tuple[str, ...],
    times: dict[tuple[str, str], list[float]],
) -> None:
    print(f"\n{rounds} rounds, interleaved; p50 / p95 in ms, and p50 added over no rules\n")
    print(f"| case | {' | '.join(phases)} | added p50 ({phases[1]}) | added p50 (cold) |")
    print("|---|" + "---|" * (len(phases) + 2))
    for name in cases:
        cells = []
        p50s = []
        for phase in phases:
            samples = sorted(times[(name, phase)])
            p50 = statistics.median(samples)
            p95 = samples[int(len(samples) * 0.95) - 1]
            p50s.append(p50)
            cells.append(f"{p50:.2f} / {p95:.2f}")
        added = f"{p50s[1] - p50s[0]:+.2f} | {p50s[2] - p50s[0]:+.2f}"
        print(f"| {name} | {' | '.join(cells)} | {added} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--rules", type=int, default=100)
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    scratch = Path(tempfile.mkdtemp(prefix="sparkgate-bench-access-"))
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .config("spark.sql.extensions", EXTENSION_CLASS)
        .config("spark.driver.extraClassPath", str(ensure_jar()))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    store = Store.open(f"sqlite:///{scratch / 'store.db'}")
    store.migrate()
    access_file = scratch / "access.yaml"
    access_file.write_text(rules(args.rules))
    decider = Switch(Access(access_file, []), store)
    install(spark, decider)
    for n in range(TABLES):
        spark.sql(f"CREATE TABLE t{n} USING parquet AS SELECT id, id % 7 AS k FROM range(100)")
    user = spark.newSession()
    bind(user, "bench")
    join = "SELECT count(*) FROM t0 " + " ".join(
        f"JOIN t{n} ON t0.id = t{n}.id" for n in range(1, TABLES)
    )
    jvm: Any = spark.sparkContext._jvm
    authz = jvm.java.lang.Class.forName("sparkgate.authz.Authz$")
    module = authz.getField("MODULE$").get(None)

    cases: dict[str, Callable[[], object]] = {
        "SELECT 1: sql + collect": lambda: user.sql("SELECT 1").collect(),
        "SELECT 1: sql (analysis)": lambda: user.sql("SELECT 1"),
        f"{TABLES}-table join: sql (analysis)": lambda: user.sql(join),
    }
    phases = ("no tables: section", f"{args.rules} rules", f"{args.rules} rules, cold")
    times: dict[tuple[str, str], list[float]] = {(c, p): [] for c in cases for p in phases}
    for case in cases.values():  # warm every path once
        for _ in range(20):
            case()
    decider.on = False
    module.invalidate()
    heap_off = heap_mb(spark)
    for _ in range(args.rounds):
        for phase in phases:
            decider.on = phase != phases[0]
            module.recheckActive()
            for name, case in cases.items():
                if phase == phases[2]:
                    module.invalidate()
                    decider.on = True
                started = time.perf_counter()
                case()
                times[(name, phase)].append((time.perf_counter() - started) * 1000)
    decider.on = True
    heap_on = heap_mb(spark)

    report(args.rounds, list(cases), phases, times)
    print(f"\ndriver heap after GC: {heap_off:.0f} MB rules off, {heap_on:.0f} MB rules on")
    spark.stop()
    store.close()
    sys.exit(0)


if __name__ == "__main__":
    main()
