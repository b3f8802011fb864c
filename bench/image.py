"""The container image: what building it costs, how large it is, and a node and engine in it.

    scripts/bench image [--reuse-base] [--tag localhost/sparkgate:bench]

1. Builds the base from Debian's packages (``scripts/image --base-only --rebuild-base``:
   debootstrap, updates, ``podman import``; ``--reuse-base`` keeps the one there and says so),
   then the image on it (``scripts/image``), timed apart. A new base leaves podman no layer
   to reuse, so the image's time is a whole build; pip's downloads come from
   ~/.cache/sparkgate-image/pip once a build has filled it (the first one fetches pyspark's
   456 MB from PyPI too).
2. The image's size, as podman counts it (uncompressed).
3. A node from the image with podman (host network; a SQLite store and the home in a directory
   mounted at the same path, so the settings' paths mean the same inside; the local launcher,
   so the node starts its engine in the same container): from ``podman run`` to the answer
   of ``SELECT 1`` through the REST API, then a small aggregation checked for its rows.

Minutes of building on a 2-core machine: a bench, not part of the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

from sparkgate.client import Client
from sparkgate_dev import eventually, free_port, local_test_settings

ROOT = Path(__file__).resolve().parent.parent
PODMAN = str(ROOT / "deploy" / "image" / "podman")
IMAGE_UID = 185  # the image's user (deploy/image/Containerfile)
AGGREGATE = "SELECT count(*) AS n, sum(id) AS total FROM range(1000)"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reuse-base", action="store_true")
    parser.add_argument("--tag", default="localhost/sparkgate:bench")
    args = parser.parse_args()
    console = Console()

    base_note = "reused" if args.reuse_base else "debootstrap + updates + import"
    base_s = 0.0
    if not args.reuse_base:
        console.print("building the base...")
        base_s = timed_build(["--base-only", "--rebuild-base"])
    console.print(f"building {args.tag}...")
    image_s = timed_build(["--tag", args.tag])
    size_mb = image_size(args.tag) / 1e6
    console.print("starting a node from the image...")
    first_s, aggregate_s = first_answers(console, args.tag)

    table = Table(title="sparkgate's image")
    for column in ("measure", "value", "note"):
        table.add_column(column)
    table.add_row("base build, s", f"{base_s:.0f}" if base_s else "-", base_note)
    image_note = "layers reused where unchanged" if args.reuse_base else "whole: venv, jar"
    table.add_row("image build, s", f"{image_s:.0f}", image_note)
    table.add_row("image, MB", f"{size_mb:.0f}", "uncompressed, base included")
    table.add_row("first answer, s", f"{first_s:.1f}", "podman run to SELECT 1's rows")
    table.add_row("small aggregate, s", f"{aggregate_s:.2f}", AGGREGATE)
    console.print(table)


def timed_build(options: list[str]) -> float:
    """Run ``scripts/image`` with ``options``; its wall time. Its output goes to a log shown
    only if it fails."""
    with tempfile.TemporaryFile() as log:
        started = time.monotonic()
        done = subprocess.run(
            ["nice", "-n", "10", str(ROOT / "scripts" / "image"), *options],
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
        elapsed = time.monotonic() - started
        if done.returncode != 0:
            log.seek(0)
            sys.exit(f"scripts/image {' '.join(options)} failed:\n{log.read().decode()[-4000:]}")
    return elapsed


def image_size(tag: str) -> int:
    done = subprocess.run(
        [PODMAN, "image", "inspect", "--format", "{{.Size}}", tag],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout.strip())


def first_answers(console: Console, tag: str) -> tuple[float, float]:
    """Seconds from ``podman run`` to SELECT 1's answer, and a small aggregate's."""
    with tempfile.TemporaryDirectory(prefix="sparkgate-image-bench-") as tmp:
        # The container runs as the image's user: the mounted directory must be its.
        os.chown(tmp, IMAGE_UID, 0)
        settings = local_test_settings(
            Path(tmp) / "home", metastore_uri=None, metastore_port=free_port()
        )
        started = time.monotonic()
        with (
            node_container(tag, Path(tmp), settings.to_env(), settings.port) as url,
            Client(url, timeout=60) as client,
        ):
            eventually(lambda: healthy(url), timeout=300, interval=0.5, what="the node")
            first = answer(client, "SELECT 1")
            first_s = time.monotonic() - started
            assert first == [[1]], first
            console.print(f"SELECT 1 answered {first_s:.1f} s after podman run")
            started = time.monotonic()
            rows = answer(client, AGGREGATE)
            aggregate_s = time.monotonic() - started
            assert rows == [[1000, 499500]], rows
    return first_s, aggregate_s


@contextlib.contextmanager
def node_container(tag: str, mount: Path, env: dict[str, str], port: int) -> Iterator[str]:
    """A node (``entrypoint serve``) in a container of ``tag``; its URL. Stopped afterwards
    (the engine it started goes with the container); its log printed if it failed."""
    name = f"sparkgate-image-bench-{port}"
    command = [PODMAN, "run", "--detach", "--rm", "--name", name, "--network=host"]
    command += ["--volume", f"{mount}:{mount}"]
    for key, value in env.items():
        command += ["--env", f"{key}={value}"]
    subprocess.run([*command, tag, "serve", "--port", str(port)], check=True, capture_output=True)
    try:
        yield f"http://127.0.0.1:{port}"
    except BaseException:
        logs = subprocess.run([PODMAN, "logs", name], capture_output=True, text=True, check=False)
        print(logs.stdout[-4000:], logs.stderr[-4000:], file=sys.stderr)
        raise
    finally:
        subprocess.run([PODMAN, "stop", "--time", "30", name], capture_output=True, check=False)
        subprocess.run([PODMAN, "rm", "--force", name], capture_output=True, check=False)


def healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def answer(client: Client, sql: str) -> list[list[object]]:
    """``sql``'s rows, submitted and waited for through the REST API."""
    submitted = client.submit(sql)
    done = client.wait(submitted.id, timeout=600)
    assert done.state == "success", done
    return [list(row) for row in client.rows(submitted.id)]


if __name__ == "__main__":
    main()
