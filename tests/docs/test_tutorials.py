"""The tutorials under docs/tutorials/ run, command by command, against a real server.

The convention the pages follow, and that this module relies on:

- Every ```bash and ```python fenced block of a tutorial RUNS, in page order, in one shell
  state per page: the page's bash blocks are concatenated into one ``bash -euo pipefail``
  script run in a fresh temporary working directory; a python block runs with .venv's python
  in that directory, after the bash before it (and before the bash after it). Files the reader
  writes are written by the bash blocks themselves (``cat > access.yaml <<'EOF'``), so they
  run too. Output shown to the reader goes in ```text blocks, which are not run; so do blocks
  of any other language (```yaml, ```sql, ...).
- A block preceded by a line ``<!-- not run: <reason> -->`` (blank lines between them allowed)
  is not run. The reason must not be empty; each such block is reported as a skipped test
  with its reason (``-ra`` lists them).
- The blocks get the environment a reader has after following the pages with ``scripts/serve``
  running: ``SPARKGATE_SERVER`` (the server's URL), ``SPARKGATE_HOME`` (its home),
  ``SPARKGATE_USER`` and ``SPARKGATE_PASSWORD`` (its admin, as the first-hour tutorial makes
  it), ``PATH`` with .venv/bin first, ``SPARKGATE_REPO`` (the checkout), a ``HOME`` of their own
  whose ``.curlrc`` signs curl in as that admin (a reader's server without sign-in needs none).

One server serves the whole module, started with what the first-hour tutorial turns on
(password sign-in, its password file and access file in the home, carol its admin), so the
pages run against the same server in any order. It differs from a reader's in what only costs
time: ``warm_engines=0`` and ``engine_share_level=server`` (one shared engine for every user
instead of one per user; no answer a tutorial shows depends on it), fast duty intervals, Spark
on ``local[2]``. Stream jobs get the one streaming engine they need. The Kubernetes page's steps
that need a cluster are not run (tests/kube does them against a local control plane); its CLI
steps run against this server, which checks the commands, not the pods.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from sparkgate.catalog.metastore import stop_metastore
from sparkgate_dev import ServerProcess, kill_engines, local_test_settings, user_files

REPO = Path(__file__).resolve().parents[2]
TUTORIALS = REPO / "docs" / "tutorials"
PAGES = ["first-query", "first-hour", "streaming", "manifests", "kubernetes"]

# The admin the first-hour tutorial makes (its `sparkgate users add carol` and `admins:`).
ADMIN, ADMIN_PASSWORD = "carol", "carol-pw-1"
FIRST_ACCESS_FILE = f"admins: [{ADMIN}]\n"

PAGE_TIMEOUT = 600.0
NOT_RUN = re.compile(r"^<!--\s*not run:(?P<reason>.*?)-->\s*$")
FENCE = re.compile(r"^```(?P<lang>[A-Za-z0-9_+-]*)\s*$")
RUN_LANGUAGES = frozenset({"bash", "python"})
BLOCK_MARK = "@@tutorial-block"


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block of a page."""

    page: str
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    not_run: str | None  # the reason given, when the page says not to run it

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES and self.not_run is None

    @property
    def where(self) -> str:
        return f"docs/tutorials/{self.page}.md:{self.line}"


def blocks(page: str) -> list[Block]:
    """Every fenced block of a tutorial page, in page order."""
    lines = (TUTORIALS / f"{page}.md").read_text().splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        fence = FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].rstrip() != "```":
            body.append(lines[index])
            index += 1
        index += 1  # the closing fence
        before = start - 1
        while before >= 0 and not lines[before].strip():
            before -= 1
        marker = NOT_RUN.match(lines[before].strip()) if before >= 0 else None
        reason = marker.group("reason").strip() if marker else None
        found.append(Block(page, start + 1, fence.group("lang"), "\n".join(body) + "\n", reason))
    return found


def script(page_blocks: list[Block], python: str) -> str:
    """One bash script of a page's blocks that run: each announced by a marker line (so its
    output can be told apart), python ones fed to ``python`` through a quoted here-document."""
    parts = ["set -euo pipefail"]
    for number, block in enumerate(page_blocks):
        if not block.runs:
            continue
        parts.append(f"printf '\\n{BLOCK_MARK} {number}@@\\n'")
        if block.language == "bash":
            parts.append(block.text)
        else:
            assert "__TUTORIAL_PYTHON__" not in block.text, block.where
            parts.append(f"{shlex.quote(python)} - <<'__TUTORIAL_PYTHON__'\n{block.text}")
            parts.append("__TUTORIAL_PYTHON__")
    return "\n".join(parts) + "\n"


def outputs(output: str) -> dict[int, str]:
    """What each block printed, by its number in the page, from the script's output."""
    found: dict[int, str] = {}
    current: int | None = None
    for line in output.splitlines():
        mark = re.fullmatch(rf"{BLOCK_MARK} (\d+)@@", line)
        if mark:
            current = int(mark.group(1))
            found[current] = ""
        elif current is not None:
            found[current] += line + "\n"
    return found


@dataclasses.dataclass(frozen=True)
class Served:
    """The module's server and the environment its tutorials' blocks run in."""

    server: ServerProcess
    env: dict[str, str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    home = tmp_path_factory.mktemp("tutorial-home")
    settings = local_test_settings(
        home,
        auth="password",
        **user_files(home, {ADMIN: ADMIN_PASSWORD}, access=FIRST_ACCESS_FILE),
        warm_engines=0,
        engine_share_level="server",
        stream_progress_interval=1.0,
    )
    server = ServerProcess(settings).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARKGATE_", "CURL_"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        SPARKGATE_SERVER=server.url,
        SPARKGATE_HOME=str(home),
        SPARKGATE_USER=ADMIN,
        SPARKGATE_PASSWORD=ADMIN_PASSWORD,
        SPARKGATE_REPO=str(REPO),
    )
    try:
        yield Served(server, env)
    finally:
        server.stop()
        with contextlib.suppress(Exception):
            kill_engines(settings, signal.SIGKILL)
        stop_metastore(settings)


def run_page(page: str, served: Served, workdir: Path) -> None:
    page_blocks = blocks(page)
    home = workdir / "home"
    home.mkdir()
    (home / ".curlrc").write_text(f'user = "{ADMIN}:{ADMIN_PASSWORD}"\n')
    cwd = workdir / "work"
    cwd.mkdir()
    env = {
        **served.env,
        "HOME": str(home),
        "CURL_HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
    }
    with subprocess.Popen(
        ["bash", "-euo", "pipefail", "-c", script(page_blocks, sys.executable)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,  # its own process group: a timeout ends all it started
    ) as process:
        try:
            output, _ = process.communicate(timeout=PAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            output += f"\n(timed out after {PAGE_TIMEOUT:.0f} s)"
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # anything it left behind
    if process.returncode == 0 and "timed out after" not in output:
        return
    printed = outputs(output)
    failed = max(printed) if printed else None
    if failed is None:
        pytest.fail(f"{page}: the script failed before its first block:\n{output}")
    block = page_blocks[failed]
    pytest.fail(
        f"{block.where} ({block.language}) failed (exit {process.returncode}):\n"
        f"--- the block\n{block.text}--- its output\n{printed[failed]}",
        pytrace=False,
    )


@pytest.mark.spark
@pytest.mark.parametrize("page", PAGES)
def test_the_tutorial_runs(page: str, served: Served, tmp_path: Path) -> None:
    run_page(page, served, tmp_path)


def not_run_blocks() -> list[Block]:
    return [b for page in PAGES for b in blocks(page) if b.not_run is not None]


@pytest.mark.parametrize("block", not_run_blocks(), ids=lambda b: b.where.split("/")[-1])
def test_a_block_not_run_says_why(block: Block) -> None:
    assert block.not_run, f"{block.where}: '<!-- not run: -->' without a reason"
    pytest.skip(f"not run: {block.where}: {block.not_run}")


def test_every_page_has_blocks_that_run() -> None:
    for page in PAGES:
        assert any(b.runs for b in blocks(page)), page


def cli_commands() -> set[tuple[str, ...]]:
    """Every command path of the sparkgate CLI: ("sql",), ("streams", "show"), ..."""
    from sparkgate.cli.main import app

    found: set[tuple[str, ...]] = set()

    # By attribute: typer has its own copy of click, whose Group is not click's.
    def walk(group: Any, path: tuple[str, ...]) -> None:
        for name, command in group.commands.items():
            found.add((*path, name))
            if hasattr(command, "commands"):
                walk(command, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


GLOBAL_OPTIONS_WITH_VALUE = frozenset({"--server", "--user", "--token"})
# `sparkgate` where a command starts: a line's start, after ; & | ( or ` or a keyword such as
# `until`, past VAR=value words.
COMMAND = re.compile(
    r"(?:^|[;&|(`])\s*(?:(?:until|while|if|then|do|!)\s+)?(?:\w+=\S*\s+)*"
    r"sparkgate((?:\s+[^\s;|&)]+){0,6})"
)


def used_commands(text: str) -> list[tuple[str, ...]]:
    """The command paths of every ``sparkgate ...`` call in a block of shell."""
    used: list[tuple[str, ...]] = []
    for line in text.replace("\\\n", " ").splitlines():
        for match in COMMAND.finditer(line):
            words = match.group(1).split()
            path: list[str] = []
            skip = False
            for word in words:
                if skip:
                    skip = False
                    continue
                if word in GLOBAL_OPTIONS_WITH_VALUE:
                    skip = True
                    continue
                if word.startswith("-") or not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                path.append(word)
            if path:
                used.append(tuple(path))
    return used


def test_the_blocks_use_only_the_clis_own_commands() -> None:
    known = cli_commands()
    unknown = []
    for page in PAGES:
        for block in blocks(page):
            if block.language != "bash":
                continue
            for path in used_commands(block.text):
                # the longest prefix that is a command; a first word that is none is unknown
                if (path[0],) not in known:
                    unknown.append(f"{block.where}: sparkgate {' '.join(path)}")
                elif len(path) > 1 and (path[0], path[1]) not in known:
                    groups = {c[0] for c in known if len(c) > 1}
                    if path[0] in groups:
                        unknown.append(f"{block.where}: sparkgate {' '.join(path[:2])}")
    assert not unknown, "commands the CLI does not have:\n" + "\n".join(unknown)
