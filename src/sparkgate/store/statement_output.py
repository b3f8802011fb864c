"""A statement's output: what it printed and how sparkgate ran it, kept as JSON in its record.

Each key is declared here with what it holds and who writes it. It is a ``TypedDict``, not a
model: at run time it is the JSON object as stored, so a key written by another release (or by
an executor's hook) is read back and served as it was, and nothing is converted on the way in
or out. The API serves it as a free-form object (``Query.output``), as it always has.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class CtasFacts(TypedDict):
    """How a CTAS ran (``ctas``): ``path`` always; ``plain`` with its ``reason``; ``atomic``
    with the write and, once committed, its ``outcome`` (``created``, ``exists``,
    ``replaced``), where the table now is and how long the commit took."""

    path: str
    reason: NotRequired[str]
    operation: NotRequired[str]
    table: NotRequired[str]
    transaction_id: NotRequired[int]
    outcome: NotRequired[str]
    location: NotRequired[str]
    previous_location: NotRequired[str | None]
    previous_kept_until: NotRequired[float]
    warnings: NotRequired[list[str]]
    commit_ms: NotRequired[float]


class LoadFacts(TypedDict):
    """What a load wrote (``load``): the table, how, from what, and its columns as
    ``[name, type]`` pairs."""

    table: str
    mode: str
    format: str
    bytes: int
    columns: list[list[str]]


class StatementOutput(TypedDict, total=False):
    """The keys a statement's output may hold; any may be absent."""

    # A pyspark statement's result as Jupyter's mime bundle ({"text/plain": ...}), as Livy
    # serves it: its mime types are the user's code's to choose.
    data: dict[str, Any]
    # A batch file's log, written while it runs.
    stdout: str
    stderr: str
    ctas: CtasFacts
    load: LoadFacts
    # A catalog ``describe`` statement's table (runtime/described_table.DescribedTable).
    table: dict[str, Any]
    # The tables its checked plans read and wrote: {"read": [...], "written": [...]}.
    tables: dict[str, list[str]]
    # A ``START STREAM`` statement's streaming query.
    stream_query_id: int
