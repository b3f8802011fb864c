"""The documentation site builds strict, has every page of its nav, and its search finds the
page each common question belongs to; no page tells the project's history.

One strict build per module into a temporary directory (a few seconds: most of it is the
reference pages, made from the code). A failure here is what ``scripts/docs build`` says too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]

# What a reader asks, and the page that answers it (the pages' assignments in the nav).
QUESTIONS = {
    "several machines": "how-to/several-machines/",
    "change a user's rights": "how-to/users-and-rights/",
    "who read this table": "how-to/auditing/",
    "cancel a query": "how-to/queries/",
    "what a query cost": "how-to/queries/",
    "DBeaver": "how-to/jdbc/",
}
_STOPWORDS = {"a", "an", "the", "this", "what", "who", "of", "to"}
# The project's history stays out of its documentation: no "issue 12", no "round 3" or "this
# round". "Round" in plain English ("the other way round") and SQL's round() are not history.
HISTORY = re.compile(
    r"\bissues?\s*#?\d+|\brounds?\s*#?\d+"
    r"|\b(?:this|that|last|next|previous|earlier|later|first|second|third|each|every) rounds?\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Built:
    site: Path
    seconds: float
    output: str


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    site = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    env.pop("SPARKGATE_DOCS_PARTIAL", None)  # every reference page, as CI builds it
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"the strict build failed:\n{output[-6000:]}"
    yield Built(site, time.monotonic() - started, output)


def _nav_pages(entries: list[Any]) -> Iterator[str]:
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        if isinstance(value, list):
            yield from _nav_pages(value)
        else:
            yield str(value)


def _search_docs(built: Built) -> list[dict[str, str]]:
    index = json.loads((built.site / "search" / "search_index.json").read_text())
    docs: list[dict[str, str]] = index["docs"]
    return docs


def _stem(word: str) -> str:
    word = word.lower().replace("\N{RIGHT SINGLE QUOTATION MARK}", "'").removesuffix("'s")
    for suffix in ("ing", "es", "s", "e"):
        if len(word) > 4 and word.endswith(suffix):
            return word.removesuffix(suffix)
    return word


def test_the_strict_build_passes(built: Built) -> None:
    assert (built.site / "index.html").is_file()
    assert (built.site / "reference" / "settings" / "index.html").is_file()


def test_the_readme_is_short_tells_no_history_and_links_only_to_what_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert HISTORY.search(readme) is None
    links = re.findall(r"\]\(((?:docs/|scripts/|deploy/)[^)#\s]+)", readme)
    assert links, "the README links into the docs"
    assert [link for link in links if not (ROOT / link).exists()] == []


def test_every_page_of_the_nav_is_built(built: Built) -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = list(_nav_pages(config["nav"]))
    assert len(pages) > 40
    missing = [
        page
        for page in pages
        if not (built.site / page.removesuffix(".md").removesuffix("index") / "index.html")
        .resolve()
        .is_file()
    ]
    assert missing == []


@pytest.mark.parametrize(("question", "page"), QUESTIONS.items())
def test_search_finds_the_page_that_answers(built: Built, question: str, page: str) -> None:
    """The search index's entries (pages and their sections) holding every word of the
    question include the page that answers it."""
    words = [_stem(w) for w in question.split() if w.lower() not in _STOPWORDS]
    found = {
        doc["location"].partition("#")[0]
        for doc in _search_docs(built)
        if all(
            word
            in " ".join([doc["title"], doc["text"]])
            .lower()
            .replace("\N{RIGHT SINGLE QUOTATION MARK}", "'")
            for word in words
        )
    }
    assert page in found, f"{question!r}: found on {sorted(found)}"
    titles = {doc["location"]: doc["title"] for doc in _search_docs(built)}
    assert titles.get(page), f"{page} has no title in the search index"


def test_no_page_tells_the_projects_history(built: Built) -> None:
    told = sorted(
        f"{doc['location']}: {match.group(0)!r}"
        for doc in _search_docs(built)
        for match in HISTORY.finditer(doc["title"] + " " + doc["text"])
    )
    assert told == []


def test_the_site_fetches_nothing_from_elsewhere(built: Built) -> None:
    """No remote font, script or stylesheet (links out are fine): the site works offline,
    under the server's policy."""
    remote = re.compile(r"<(?:script|link|img)\b[^>]*(?:src|href)=\"(?:https?:)?//", re.I)
    # The canonical address is a name, not a load.
    canonical = re.compile(r"<link rel=\"canonical\"[^>]*>")
    fetching = sorted(
        str(page.relative_to(built.site))
        for page in built.site.rglob("*.html")
        if remote.search(canonical.sub("", page.read_text()))
    )
    assert fetching == []
