"""What jobs read from: definition statements, shared (``--definitions FILE...``) or a job's own
(its manifest's ``sources``). Pure.

A definition is a CREATE statement that runs in a job's session before its query, every time
the job starts: ``CREATE STREAM`` (a streaming source), ``CREATE TEMPORARY VIEW``, or a catalog
object made only if missing (``CREATE TABLE IF NOT EXISTS``, ``CREATE DATABASE IF NOT
EXISTS``, ``CREATE OR REPLACE VIEW``). Anything that would change the catalog on every start
(``CREATE TABLE`` without ``IF NOT EXISTS`` fails the second time; ``CREATE OR REPLACE TABLE``
would replace the table, and its data) is refused before anything runs.

A job runs, and is compared by, only the shared definitions it uses: those whose name appears
in its query, code, sources or target table, and what those use in turn. Editing a definition
one job reads restarts that job, not every job.

    defs, errors = read_definitions([SourceFile("tables.sql", "CREATE STREAM clicks ...;")])
    used_definitions(defs, ["SELECT page FROM clicks"])  # [Definition(name="clicks", ...)]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sparkgate.errors.jobs import ManifestError
from sparkgate.jobs.files import SourceFile
from sparkgate.sql.errors import SqlError
from sparkgate.sql.lexer import Lexeme, lex
from sparkgate.sql.parser import parse
from sparkgate.sql.script import split_script
from sparkgate.sql.statements import CreateStream, PassThrough
from sparkgate.streaming.definitions import check_source

_WORDS = re.compile(r"`((?:[^`]|``)+)`|([A-Za-z_][A-Za-z0-9_]*)")
_CATALOG_KINDS = ("TABLE", "VIEW", "DATABASE", "SCHEMA", "NAMESPACE", "FUNCTION")
_HELP = (
    "definitions are CREATE STREAM, CREATE TEMPORARY VIEW, CREATE TABLE IF NOT EXISTS, "
    "CREATE DATABASE IF NOT EXISTS or CREATE OR REPLACE VIEW statements"
)


@dataclass(frozen=True)
class Definition:
    text: str  # the statement, as written
    kind: str  # stream, table, view, database, schema, namespace, function
    name: str  # the name it defines, lower-cased (the last part of a qualified name)
    file: str | None = None  # a shared definition's file (None: a manifest's source)
    line: int = 1  # where it starts in its file


@dataclass(frozen=True)
class Checked:
    definition: Definition | None
    problem: str | None  # why it cannot be a definition


def check_definition(text: str, *, schema_inference: bool = False) -> Checked:
    """Whether ``text`` (one statement) can run before every start of a job, and what it
    defines. ``schema_inference``: the job lets Spark infer streaming file sources' schemas."""
    try:
        statement = parse(text)
        if isinstance(statement, CreateStream):
            check_source(statement, schema_inference=schema_inference)
            return Checked(Definition(text, "stream", statement.name.lower()), None)
        if not isinstance(statement, PassThrough):
            return Checked(None, f"SAVE STREAM and STOP STREAM are not definitions; {_HELP}")
        lexemes = lex(text)
    except SqlError as exc:
        return Checked(None, f"{exc.message} (line {exc.line}, position {exc.position})")
    return _catalog_definition(text, lexemes)


def _catalog_definition(text: str, lexemes: list[Lexeme]) -> Checked:
    words = [lx.value.upper() if lx.kind.value == "word" else "" for lx in lexemes]
    if not words or words[0] != "CREATE":
        return Checked(None, f"not a definition; {_HELP}")
    index = 1
    or_replace = words[index : index + 2] == ["OR", "REPLACE"]
    index += 2 if or_replace else 0
    temporary = False
    while index < len(words) and words[index] in ("GLOBAL", "TEMPORARY", "TEMP", "EXTERNAL"):
        temporary = temporary or words[index] in ("TEMPORARY", "TEMP")
        index += 1
    kind = words[index] if index < len(words) else ""
    if kind not in _CATALOG_KINDS:
        return Checked(None, f"not a definition; {_HELP}")
    index += 1
    if_not_exists = words[index : index + 3] == ["IF", "NOT", "EXISTS"]
    index += 3 if if_not_exists else 0
    if index >= len(lexemes) or not lexemes[index].is_name:
        return Checked(None, f"CREATE {kind} without a name")
    name = lexemes[index].value
    while (
        index + 2 < len(lexemes) and lexemes[index + 1].value == "." and lexemes[index + 2].is_name
    ):
        index += 2
        name = lexemes[index].value
    definition = Definition(text, kind.lower(), name.lower())
    if temporary:
        return Checked(definition, None)
    if kind in ("TABLE", "DATABASE", "SCHEMA", "NAMESPACE") and or_replace:
        return Checked(
            None,
            f"CREATE OR REPLACE {kind} would replace it (and its data) every time a job "
            f"starts; write CREATE {kind} IF NOT EXISTS",
        )
    if not (if_not_exists or or_replace):
        fix = "IF NOT EXISTS" if kind != "VIEW" else "IF NOT EXISTS (or OR REPLACE)"
        return Checked(
            None,
            f"runs every time a job starts, and CREATE {kind} fails once it exists; write "
            f"CREATE {kind} {fix}",
        )
    return Checked(definition, None)


def read_definitions(
    files: Sequence[SourceFile],
) -> tuple[list[Definition], list[ManifestError]]:
    """Every definition of the files, in order, and every problem (each at its line)."""
    definitions: list[Definition] = []
    errors: list[ManifestError] = []
    where: dict[str, str] = {}
    for source in files:
        try:
            statements = split_script(source.content)
        except SqlError as exc:
            errors.append(ManifestError(source.path, None, exc.line, exc.message))
            continue
        if not statements:
            errors.append(ManifestError(source.path, None, None, "holds no statements"))
        for statement in statements:
            label = f"statement {statement.number}"
            checked = check_definition(statement.text)
            if checked.definition is None:
                assert checked.problem is not None
                errors.append(ManifestError(source.path, label, statement.line, checked.problem))
                continue
            found = Definition(
                statement.text,
                checked.definition.kind,
                checked.definition.name,
                source.path,
                statement.line,
            )
            here = f"{source.path}:{statement.line}"
            if found.name in where:
                errors.append(
                    ManifestError(
                        source.path,
                        label,
                        statement.line,
                        f"'{found.name}' is defined twice: also at {where[found.name]}",
                    )
                )
                continue
            where[found.name] = here
            definitions.append(found)
    return definitions, errors


def words(text: str) -> set[str]:
    """The names ``text`` could mention, lower-cased (bare words and `quoted` names)."""
    found = set()
    for match in _WORDS.finditer(text):
        quoted, bare = match.groups()
        found.add((quoted.replace("``", "`") if quoted is not None else bare).lower())
    return found


def used_definitions(definitions: Sequence[Definition], texts: Iterable[str]) -> list[Definition]:
    """The definitions that ``texts`` mention, and those they mention in turn; in order."""
    mentioned: set[str] = set()
    for text in texts:
        mentioned |= words(text)
    used: set[int] = set()
    changed = True
    while changed:
        changed = False
        for index, definition in enumerate(definitions):
            if index not in used and definition.name in mentioned:
                used.add(index)
                mentioned |= words(definition.text)
                changed = True
    return [d for i, d in enumerate(definitions) if i in used]
