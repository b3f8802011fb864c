"""The chaos suite, full form: two nodes on PostgreSQL, engines on a standalone cluster, four
sessions and a stream job under load, and five faults one after another
(docs/explanation/failures.md). One command: scripts/bench chaos [--short]. Prints a table: per
fault, the time until sparkgate saw it, the time until everything served again, the queries run
in the phase, those that ended otherwise than they would have without the fault, and the
invariants.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sparkgate_dev.chaos import FULL, SHORT, Chaos, Rig, describe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--short", action="store_true", help="the short form the tests run")
    args = parser.parse_args()
    profile = SHORT if args.short else FULL
    console = Console()
    with tempfile.TemporaryDirectory(prefix="sparkgate-chaos-") as tmp:
        rig = Rig(Path(tmp), profile, log=console.print).start()
        try:
            reports = Chaos(rig).run()
        finally:
            stray = rig.close()
    table = Table(
        title=f"chaos suite ({profile.name}: heartbeat timeout "
        f"{profile.heartbeat_timeout:.0f}s, outage {profile.outage:.0f}s)"
    )
    columns = ("fault", "detect (s)", "recover (s)", "queries", "affected", "longest (s)")
    for column in (*columns, "invariants"):
        table.add_column(column)
    for report in reports:
        row = describe(report)
        table.add_row(*(str(v) for v in row.values()))
    console.print(table)
    for report in reports:
        for note in report.notes:
            console.print(f"[dim]{report.name}: {note}[/dim]")
    console.print(f"stray processes after stop: {stray or 'none'}")
    return 0 if all(r.passed for r in reports) and not stray else 1


if __name__ == "__main__":
    sys.exit(main())
