"""The cost of authentication per request, against no authentication in the same run.

    scripts/bench auth [--iterations 300]

Starts two sparkgate servers (no Spark needed: in-memory catalog, no engines kept): one with
SPARKGATE_AUTH=none, one with password,jwt. Times a status poll (``GET /v1/sessions?limit=1``,
one store read, what a Livy client does every 100 ms) over a kept-alive connection,
interleaved with the unauthenticated server so both see the same machine noise:
- Basic (password file), cached: bcrypt once, then the credential cache;
- Basic (password file), uncached: a server with SPARKGATE_AUTH_CACHE_TTL=0, bcrypt each time;
- Bearer personal access token: one indexed store read (never cached: revocation is instant);
- Bearer JWT (RS256, JWKS file): a signature check.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from bench.harness import bench_server, interleaved, median, percentile
from sparkgate.auth.passwords import PasswordFile
from sparkgate_dev.jwt import JwtIssuer

POLL = "/v1/sessions?limit=1"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    console = Console(width=120)
    quiet = {"catalog": "in-memory", "shared_engine": False, "warm_engines": 0}

    with tempfile.TemporaryDirectory(prefix="sparkgate-bench-auth-") as tmp:
        files = Path(tmp)
        PasswordFile(files / "passwords").set("alice", "alice-pw")  # bcrypt cost 12
        issuer = JwtIssuer()
        issuer.write_jwks(files / "jwks.json")
        auth = {
            **quiet,
            "auth": "password,jwt",
            "auth_password_file": files / "passwords",
            "auth_jwt_jwks": str(files / "jwks.json"),
        }
        with (
            bench_server(console, wait_engines=False, **quiet) as open_server,
            bench_server(console, wait_engines=False, **auth) as server,
            bench_server(console, wait_engines=False, **auth, auth_cache_ttl=0) as uncached,
            httpx.Client(base_url=open_server.url) as none,
            httpx.Client(base_url=server.url, auth=("alice", "alice-pw")) as basic,
            httpx.Client(base_url=uncached.url, auth=("alice", "alice-pw")) as basic_uncached,
        ):
            token = basic.post("/v1/tokens", json={"name": "bench"}).json()["token"]
            jwt = issuer.token("alice", expires_in=3600)
            cases: dict[str, Callable[[], object]] = {
                "Basic, password file (cached)": lambda: _ok(basic.get(POLL)),
                "Basic, password file (bcrypt every time)": lambda: _ok(basic_uncached.get(POLL)),
                "Bearer, personal access token": lambda: _ok(
                    basic.get(POLL, headers={"Authorization": f"Bearer {token}"})
                ),
                "Bearer, JWT (RS256)": lambda: _ok(
                    basic.get(POLL, headers={"Authorization": f"Bearer {jwt}"})
                ),
            }
            table = Table(title=f"Status poll {POLL}, ms ({args.iterations} runs, interleaved)")
            table.add_column("credentials", no_wrap=True)
            for column in ("none p50", "auth p50", "auth p95", "added p50", "ratio"):
                table.add_column(column, justify="right")
            for name, call in cases.items():
                iterations = args.iterations if "every time" not in name else args.iterations // 5
                plain, authed = interleaved(
                    lambda: _ok(none.get(POLL)), call, iterations, args.warmup // 4 or 1
                )
                p50, a50 = median(plain), median(authed)
                table.add_row(
                    name,
                    f"{p50:.2f}",
                    f"{a50:.2f}",
                    f"{percentile(authed, 0.95):.2f}",
                    f"{a50 - p50:+.2f}",
                    f"{a50 / p50:.2f}x",
                )
            console.print(table)


def _ok(response: httpx.Response) -> None:
    response.raise_for_status()


if __name__ == "__main__":
    main()
