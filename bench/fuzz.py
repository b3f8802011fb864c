"""Schemathesis over the whole HTTP API, long: what no one thought of, as a plain user.

    scripts/bench fuzz [--runs 4] [--max-examples 100] [--checks all-server]

Starts one sparkgate server with password authentication, a plain user held to one session
(batch sessions start an engine each) and an admin, then runs Schemathesis against its
``/openapi.json`` several times with fresh seeds: every phase (examples, coverage, fuzzing,
stateful), valid and invalid data. Prints one table: per run its seed, the requests the server
logged, the 5xx among them, the failures Schemathesis reported by kind, and the tracebacks the
server logged. The tests run the same with a fixed seed and few examples
(``tests/e2e/test_api_contract.py``).
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from bench.harness import bench_server
from sparkgate.auth.passwords import PasswordFile
from sparkgate_dev import FUZZ_CHECKS, fuzz_api

USER = ("fuzz", "fuzz-pass-1")
ACCESS = "admins: [carol]\nlimits: {sessions_per_user: 1, running_queries_per_user: 2}\n"
_REQUEST = re.compile(r'uvicorn\.access .*"[A-Z]+ [^"]* HTTP/[\d.]+" (\d{3})')


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--checks", default=FUZZ_CHECKS, help="Schemathesis checks, or 'all'")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    console = Console(width=140)

    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-fuzz-") as tmp:
        files = Path(tmp)
        passwords = PasswordFile(files / "passwords")
        passwords.set(*USER)
        passwords.set("carol", "carol-pass-1")
        (files / "access.yaml").write_text(ACCESS)
        table = Table(title=f"Schemathesis against sparkgate ({args.checks})")
        for column in ("run", "seed", "requests", "5xx", "failures", "tracebacks"):
            table.add_column(column, justify="right" if column != "failures" else "left")
        with bench_server(
            console,
            wait_engines=False,
            auth="password",
            auth_password_file=files / "passwords",
            access_file=files / "access.yaml",
        ) as server:
            reports = Path("bench/results/fuzz")
            reports.mkdir(parents=True, exist_ok=True)
            for number in range(1, args.runs + 1):
                seed = random.randrange(2**32)
                start = server.log_path.stat().st_size
                console.print(f"run {number}: seed {seed}...")
                run = fuzz_api(
                    server.url,
                    USER,
                    reports / f"run-{number}",
                    checks=args.checks,
                    max_examples=args.max_examples,
                    seed=seed,
                    workers=args.workers,
                )
                (reports / f"run-{number}.txt").write_text(run.output)
                with server.log_path.open(errors="replace") as log:
                    log.seek(start)
                    logged = log.read()
                statuses = [int(s) for s in _REQUEST.findall(logged)]
                table.add_row(
                    str(number),
                    str(seed),
                    str(len(statuses)),
                    str(sum(1 for s in statuses if s >= 500)),
                    ", ".join(f"{k}: {n}" for k, n in run.failures.items()) or "none",
                    str(logged.count("Traceback")),
                )
            healthy = httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200
        console.print(table)
        console.print(f"server healthy after the runs: {healthy}; outputs in {reports}/")


if __name__ == "__main__":
    main()
