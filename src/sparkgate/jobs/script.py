"""What a job runs, generated from its manifest. Pure.

A streaming job runs as the stream job of the same name, whose script is:

0. a ``pyspark`` step that moves the target table aside (``<table>__v<N>``) when this version
   has no batch yet and the table holds an earlier query's output (``jobs.steps.new_lineage``:
   Spark's file sink would otherwise skip every batch the earlier query's log already has);
1. the shared definitions it uses, then its ``sources``;
2. ``code`` jobs only: the code (a ``pyspark`` step), then a step that checks ``output`` and
   registers it as the temporary view ``__sparkgate_code_output``;
3. ``CREATE OR REPLACE TEMPORARY VIEW __sparkgate_output AS SELECT q.*, <metadata columns>
   FROM (<sql>) q`` (or ``FROM __sparkgate_code_output q``);
4. ``SAVE STREAM __sparkgate_output TO TABLE <target> IDENTIFIED BY <name> [TRIGGER ...]
   OUTPUT MODE ... [PARTITIONED ON (...)] [OPTIONS (<sink options>, <retry.*>)]``.

A batch job's run is 1 and 2, then ``CREATE OR REPLACE TABLE <target> AS SELECT q.*,
<metadata columns> FROM (<sql>) q``: sparkgate's atomic CTAS, so readers see the old table or
the new one, whole, never a part.

Metadata columns (``metadata-columns: true``, the default): ``__create_timestamp`` (when the
row was made: ``current_timestamp()``, once per micro-batch or batch run), ``__query_name``,
``__query_description``, ``__query_id`` (a UUID, new with each version), ``__query_version``
and ``__query_create_timestamp`` (when the version was made). The values are Spark SQL string
literals with backslash escapes (Spark's default rules: ``'it\\'s'``), since Spark reads
``'a''b'`` as two adjacent literals, not as a quote; when a job sets
``spark.sql.parser.escapedStringLiterals=true`` (backslashes taken literally) they are hex
literals instead: ``CAST(X'6974277320' AS STRING)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparkgate.jobs.definitions import Definition
from sparkgate.jobs.manifest import Manifest
from sparkgate.sql.parser import quote_name
from sparkgate.sql.script import split_script
from sparkgate.states import StatementKind
from sparkgate.streaming.script import Step

OUTPUT_VIEW = "__sparkgate_output"
CODE_VIEW = "__sparkgate_code_output"
ESCAPED_LITERALS = "spark.sql.parser.escapedStringLiterals"

_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


@dataclass(frozen=True)
class Metadata:
    """The values of a version's metadata columns."""

    name: str
    description: str
    query_id: str
    version: int
    created_at: float  # epoch seconds


@dataclass(frozen=True)
class JobStep:
    """A step of a job's script, and the manifest field (or definition) it comes from, so a
    problem found in it can be reported there."""

    kind: StatementKind
    code: str
    origin: str  # "sources.0", "sql", "code", "sink-options", "definition tables.sql:3", ...

    @property
    def step(self) -> Step:
        return Step(self.kind, self.code)


def sql_string(value: str, *, raw_literals: bool = False) -> str:
    """``value`` as a Spark SQL string literal. Spark unescapes backslash sequences in string
    literals (unless ``spark.sql.parser.escapedStringLiterals``): ``'it\\'s'`` is "it's".
    With ``raw_literals`` (that setting on) a hex literal cast to a string says it exactly."""
    if raw_literals:
        return f"CAST(X'{value.encode().hex().upper()}' AS STRING)"
    return "'" + "".join(_ESCAPES.get(c, c) for c in value) + "'"


def metadata_select(metadata: Metadata, *, raw_literals: bool = False) -> list[str]:
    """The metadata columns, as SELECT list items."""

    def text(value: str) -> str:
        return sql_string(value, raw_literals=raw_literals)

    micros = round(metadata.created_at * 1_000_000)
    return [
        "current_timestamp() AS `__create_timestamp`",
        f"{text(metadata.name)} AS `__query_name`",
        f"{text(metadata.description)} AS `__query_description`",
        f"{text(metadata.query_id)} AS `__query_id`",
        f"CAST({metadata.version} AS INT) AS `__query_version`",
        f"timestamp_micros({micros}) AS `__query_create_timestamp`",
    ]


def streaming_steps(
    manifest: Manifest, definitions: Sequence[Definition], metadata: Metadata, checkpoint: str
) -> list[JobStep]:
    """The stream job's script (see the module docstring); ``checkpoint``: the query's
    checkpoint directory (``<checkpoints>/<name>/<version>/<name>``)."""
    lineage = (
        "from sparkgate.jobs.steps import new_lineage\n"
        f"new_lineage(spark, {manifest.target_table!r}, {checkpoint!r}, {metadata.version - 1})"
    )
    steps = [JobStep(StatementKind.PYSPARK, lineage, "target-table")]
    steps += _preamble(manifest, definitions)
    view = output_view(manifest, metadata)
    steps.append(JobStep(StatementKind.SQL, view, _query_origin(manifest)))
    steps.append(JobStep(StatementKind.SQL, save_stream(manifest), "target-table"))
    return steps


def batch_steps(
    manifest: Manifest, definitions: Sequence[Definition], metadata: Metadata
) -> list[JobStep]:
    """A batch run's statements: definitions and sources, then the atomic replace."""
    steps = _preamble(manifest, definitions)
    select = _select(manifest, metadata)
    options = _options(manifest.sink_options)
    ctas = f"CREATE OR REPLACE TABLE {manifest.target_table}{options} AS\n{select}"
    steps.append(JobStep(StatementKind.SQL, ctas, _query_origin(manifest)))
    return steps


def output_view(manifest: Manifest, metadata: Metadata) -> str:
    return f"CREATE OR REPLACE TEMPORARY VIEW `{OUTPUT_VIEW}` AS\n{_select(manifest, metadata)}"


def save_stream(manifest: Manifest) -> str:
    parts = [
        f"SAVE STREAM `{OUTPUT_VIEW}` TO TABLE {manifest.target_table}",
        f"IDENTIFIED BY {quote_name(manifest.name)}",
    ]
    if manifest.trigger is not None:
        parts.append(f"TRIGGER {manifest.trigger}")
    parts.append(f"OUTPUT MODE {manifest.output_mode.upper()}")
    if manifest.partitioned_by:
        columns = ", ".join(quote_name(c.strip()) for c in manifest.partitioned_by)
        parts.append(f"PARTITIONED ON ({columns})")
    text = " ".join(parts) + _options({**manifest.sink_options, **manifest.retry.options()})
    return text


def _preamble(manifest: Manifest, definitions: Sequence[Definition]) -> list[JobStep]:
    steps = [
        JobStep(StatementKind.SQL, d.text, f"definition {d.file}:{d.line}") for d in definitions
    ]
    steps += [
        JobStep(StatementKind.SQL, source, f"sources.{index}")
        for index, source in enumerate(manifest.sources)
    ]
    if manifest.code is not None:
        steps.append(JobStep(StatementKind.PYSPARK, manifest.code, "code"))
        register = register_output(streaming=not manifest.batch)
        steps.append(JobStep(StatementKind.PYSPARK, register, "code"))
    return steps


def register_output(*, streaming: bool) -> str:
    """The step after a job's code: ``output`` must be a DataFrame of the right kind; it
    becomes the temporary view the job writes from (``jobs.steps.register_output``)."""
    return (
        "from sparkgate.jobs.steps import register_output\n"
        f"register_output(globals(), {CODE_VIEW!r}, streaming={streaming})"
    )


def _select(manifest: Manifest, metadata: Metadata) -> str:
    raw = manifest.properties.get(ESCAPED_LITERALS, "false").strip().lower() == "true"
    columns = ["q.*"]
    if manifest.metadata_columns:
        columns += metadata_select(metadata, raw_literals=raw)
    source = f"`{CODE_VIEW}`" if manifest.code is not None else f"(\n{_query_text(manifest)}\n)"
    return "SELECT " + ",\n  ".join(columns) + f"\nFROM {source} q"


def _query_text(manifest: Manifest) -> str:
    """The query as written, without a trailing ';' (it goes inside parentheses, on lines of
    its own, so a trailing ``-- comment`` cannot swallow the closing one)."""
    assert manifest.sql is not None
    statements = split_script(manifest.sql)
    return statements[0].text if len(statements) == 1 else manifest.sql.strip()


def _query_origin(manifest: Manifest) -> str:
    return "sql" if manifest.sql is not None else "code"


def _options(options: dict[str, str]) -> str:
    if not options:
        return ""
    pairs = ", ".join(f"{sql_string(k)}={sql_string(v)}" for k, v in options.items())
    return f" OPTIONS ({pairs})"
