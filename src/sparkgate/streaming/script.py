"""Checking a stream job's script before it is stored: every statement parses, every source
and sink is one that can work, and no two queries share a name (or a checkpoint). Pure.

    script = check_script("CREATE STREAM r USING rate; SAVE STREAM r TO console", RetryPolicy())
    [q.spec.name for q in script.queries] == ["r"]

Errors carry the script's line and position and the statement's number.

A script may also have Python steps (a deployed ``code`` job's: its PySpark code defines the
DataFrame that a later SAVE STREAM writes). It is then a list of steps, SQL or PySpark, run in
order in the job's session; its SQL steps, joined, are what is checked and shown as ``sql``:

    sql, stored = script_of([Step(SQL, "CREATE STREAM r USING rate"),
                             Step(PYSPARK, "spark.table('r').createTempView('v')"),
                             Step(SQL, "SAVE STREAM v TO console")])
"""

from __future__ import annotations

from dataclasses import dataclass

from sparkgate.recorded import ErrorCode
from sparkgate.sql.errors import SqlError
from sparkgate.sql.parser import parse
from sparkgate.sql.script import ScriptStatement, split_script
from sparkgate.sql.statements import CreateStream, SaveStream, StopStream
from sparkgate.states import StatementKind
from sparkgate.stream_spec import QuerySpec, RetryPolicy
from sparkgate.streaming.definitions import check_source, query_spec


@dataclass(frozen=True)
class Step:
    """One statement of a stream job's script: SQL, or PySpark code run in the session's
    Python namespace (``spark`` defined), as a ``pyspark`` statement."""

    kind: StatementKind
    code: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "code": self.code}

    @classmethod
    def from_json(cls, data: dict[str, str]) -> Step:
        return cls(StatementKind(data["kind"]), data["code"])


def script_of(steps: list[Step]) -> tuple[str, list[dict[str, str]] | None]:
    """The SQL of ``steps`` (joined statements), and the steps to store: None when every step
    is SQL (the script is then its SQL). Raises SqlError if a SQL step is not one statement."""
    sql_steps = [s for s in steps if s.kind is StatementKind.SQL]
    for step in sql_steps:
        if len(split_script(step.code)) != 1:
            raise SqlError(
                "A SQL step of a stream job's script is exactly one statement.",
                line=1,
                position=1,
                code=ErrorCode.INVALID_STREAM_SCRIPT,
            )
    sql = ";\n".join(s.code for s in sql_steps)
    if len(sql_steps) == len(steps):
        return sql, None
    return sql, [s.to_json() for s in steps]


def launch_steps(sql: str, steps: list[dict[str, str]] | None) -> list[Step]:
    """What a launch of the job runs, one statement per step, in order."""
    if steps is not None:
        return [Step.from_json(s) for s in steps]
    return [Step(StatementKind.SQL, s.text) for s in split_script(sql)]


@dataclass(frozen=True)
class ScriptQuery:
    statement: ScriptStatement
    spec: QuerySpec


@dataclass(frozen=True)
class StreamScript:
    statements: list[ScriptStatement]
    queries: list[ScriptQuery]


def check_script(
    sql: str, defaults: RetryPolicy, *, schema_inference: bool = False
) -> StreamScript:
    """The script's statements and the queries it starts; raises SqlError."""
    statements = split_script(sql)
    if not statements:
        raise SqlError(
            "The script is empty: a stream job runs CREATE STREAM, views and SAVE STREAM "
            "statements, separated by semicolons.",
            line=1,
            position=1,
            code=ErrorCode.STREAM_SCRIPT_EMPTY,
        )
    queries: list[ScriptQuery] = []
    for statement in statements:
        try:
            parsed = parse(statement.text)
            if isinstance(parsed, CreateStream):
                check_source(parsed, schema_inference=schema_inference)
            elif isinstance(parsed, StopStream):
                raise SqlError.at(
                    statement.text,
                    0,
                    "STOP STREAM has no place in a stream job's script; stop the job instead "
                    "(POST /v1/streams/{name}/stop)",
                    code=ErrorCode.INVALID_STREAM_SCRIPT,
                )
            elif isinstance(parsed, SaveStream):
                spec = query_spec(parsed, defaults)
                _check_unique(queries, statement, spec)
                queries.append(ScriptQuery(statement, spec))
        except SqlError as exc:
            raise exc.shifted(
                statement.line, statement.position, statement=statement.number
            ) from None
    if not queries:
        raise SqlError(
            "The script starts no streaming query: a stream job needs at least one SAVE STREAM.",
            line=statements[-1].line,
            position=statements[-1].position,
            code=ErrorCode.STREAM_SCRIPT_WITHOUT_QUERY,
        )
    return StreamScript(statements, queries)


def _check_unique(earlier: list[ScriptQuery], statement: ScriptStatement, spec: QuerySpec) -> None:
    for other in earlier:
        where = f"statement {other.statement.number} (line {other.statement.line})"
        here = f"statement {statement.number} (line {statement.line})"
        if other.spec.name == spec.name:
            raise SqlError(
                f"Two streaming queries would both be named '{spec.name}': {where} and {here}. "
                "Query names must be unique within a stream job; name them apart with "
                f"IDENTIFIED BY, e.g. ... IDENTIFIED BY {spec.name}_{spec.format}.",
                line=1,
                position=1,
                code=ErrorCode.STREAM_QUERY_NAME_CLASH,
                name=spec.name,
            )
        if spec.checkpoint_location and other.spec.checkpoint_location == spec.checkpoint_location:
            raise SqlError(
                f"{where} and {here} give the same checkpointLocation "
                f"'{spec.checkpoint_location}'; every query needs a checkpoint of its own.",
                line=1,
                position=1,
                code=ErrorCode.STREAM_CHECKPOINT_SHARED,
            )
