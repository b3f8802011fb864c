"""The checks of a manifest that its schema (``jobs.manifest.Manifest``) cannot make: one of
``sql`` or ``code``, each what it must be (one query; PySpark code that sets ``output``), the
target a table name, each source one definition statement, and the sink options and
partitioning a job may set.

Apart from the schema because they read SQL and Python (the SQL lexer and parser, ``ast``),
and run on the merged values even when the schema failed, so every problem is reported at once.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from typing import Any

from sparkgate.jobs.definitions import check_definition
from sparkgate.sql.errors import SqlError
from sparkgate.sql.lexer import Kind, lex
from sparkgate.sql.parser import parse
from sparkgate.sql.script import split_script
from sparkgate.sql.statements import PassThrough

# Set by sparkgate, not by a manifest: checkpoints live under <checkpoints>/<name>/<version>.
_RESERVED_SINK_OPTIONS = ("checkpointlocation",)
_QUERY_STARTS = ("SELECT", "WITH", "FROM", "VALUES", "TABLE", "(")


def check_fields(values: Mapping[str, Any]) -> Iterator[tuple[tuple[str, ...], str]]:
    """What the schema cannot say, on the merged manifest (values of the wrong type are left
    to the schema): (field path, problem) for each problem."""
    sql, code = values.get("sql"), values.get("code")
    if sql is not None and code is not None:
        yield ("code",), "give exactly one of 'sql' (a query) or 'code' (PySpark code), not both"
    elif sql is None and code is None:
        yield ("sql",), "required: 'sql' (a query) or 'code' (PySpark code that sets 'output')"
    if isinstance(sql, str):
        problem = check_query(sql)
        if problem is not None:
            yield ("sql",), problem
    if isinstance(code, str):
        problem = check_code(code)
        if problem is not None:
            yield ("code",), problem
    target = values.get("target-table")
    if isinstance(target, str) and target:
        problem = check_table_name(target)
        if problem is not None:
            yield ("target-table",), problem
    properties = values.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    inference = str(properties.get("spark.sql.streaming.schemaInference", "false"))
    sources = values.get("sources")
    for index, source in enumerate([sources] if isinstance(sources, str) else sources or []):
        if isinstance(source, str):
            problem = check_source_statement(source, inference.lower() == "true")
            if problem is not None:
                yield ("sources", str(index)), problem
    partitioned = values.get("partitioned-by")
    if values.get("mode") == "batch" and partitioned:
        yield (
            ("partitioned-by",),
            "batch jobs write their table with one atomic replace, which Spark cannot do for a "
            "partitioned table; leave partitioned-by out of batch jobs",
        )
    elif isinstance(partitioned, list):
        for index, column in enumerate(partitioned):
            if isinstance(column, str) and not column.strip():
                yield ("partitioned-by", str(index)), "a column name cannot be empty"
    options = values.get("sink-options")
    for key in options if isinstance(options, Mapping) else {}:
        if str(key).lower() in _RESERVED_SINK_OPTIONS:
            yield (
                ("sink-options", str(key)),
                "sparkgate keeps a job's checkpoints under <checkpoints>/<name>/<version>; "
                "a manifest cannot move them",
            )
        elif str(key).lower().startswith("retry."):
            yield (
                ("sink-options", str(key)),
                "set the restart policy with 'retry' (max-attempts, ...)",
            )
    for key in properties:
        if not str(key).strip():
            yield ("properties",), "a property name cannot be empty"


def check_source_statement(text: str, schema_inference: bool) -> str | None:
    """Why ``text`` is not one definition statement, or None."""
    try:
        count = len(split_script(text))
    except SqlError as exc:
        return f"{exc.message} (line {exc.line}, position {exc.position})"
    if count != 1:
        return f"holds {count or 'no'} statements; give one statement per item of 'sources'"
    return check_definition(text, schema_inference=schema_inference).problem


def check_query(sql: str) -> str | None:
    """Why ``sql`` is not one query (whose rows go to the target), or None."""
    try:
        statements = split_script(sql)
    except SqlError as exc:
        return f"{exc.message} (line {exc.line}, position {exc.position} of the query)"
    if len(statements) != 1:
        return (
            f"is {len(statements) or 'no'} statements; it is one query whose rows go to the "
            "target table (CREATE STREAM and views belong in 'sources')"
        )
    text = statements[0].text
    try:
        if not isinstance(parse(text), PassThrough):
            return "is a CREATE/SAVE/STOP STREAM statement; put sources in 'sources'"
        first = lex(text)[0]
    except SqlError as exc:
        return f"{exc.message} (line {exc.line}, position {exc.position} of the query)"
    word = first.value.upper() if first.kind in (Kind.WORD, Kind.PUNCT) else ""
    if word not in _QUERY_STARTS:
        return (
            f"starts with {first.value!r}: it is a query (SELECT ..., WITH ..., FROM ..., "
            "VALUES ...) whose rows go to the target table"
        )
    return None


def check_code(code: str) -> str | None:
    """Why ``code`` is not PySpark code that sets ``output``, or None."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"invalid Python: {exc.msg} (line {exc.lineno} of the code)"
    if not any(_assigns_output(node) for node in ast.walk(tree)):
        return "the code must assign the DataFrame to write to a variable named 'output'"
    return None


def _assigns_output(node: ast.AST) -> bool:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
    return any(isinstance(n, ast.Name) and n.id == "output" for t in targets for n in ast.walk(t))


def check_table_name(name: str) -> str | None:
    """Why ``name`` is not a table name (``t``, ``db.t``, ``catalog.db.t``), or None."""
    try:
        lexemes = lex(name)
    except SqlError:
        lexemes = []
    names = lexemes[0::2]
    dots = lexemes[1::2]
    well_formed = (
        1 <= len(names) <= 3
        and len(lexemes) % 2 == 1
        and all(n.is_name for n in names)
        and all(d.kind is Kind.PUNCT and d.value == "." for d in dots)
    )
    if not well_formed:
        return f"'{name}' is not a table name: table, db.table or catalog.db.table"
    return None
