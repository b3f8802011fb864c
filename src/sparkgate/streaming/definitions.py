"""From parsed SQL to what a streaming query is: its sink, options, trigger and retry policy,
checked before anything starts. Pure: no Spark here.

    spec = query_spec(parse("SAVE STREAM v TO parquet OPTIONS ('path'='/out')"), RetryPolicy())
    spec.format == "parquet"; spec.options == {"path": "/out"}

Checks are made where sparkgate knows the sink (Spark's built-in ones); a sink format it does
not know (a connector on the classpath) is left to Spark to judge when the query starts.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from sparkgate.recorded import ErrorCode
from sparkgate.settings import Settings
from sparkgate.sql.durations import COMPACT_HELP, parse_duration
from sparkgate.sql.errors import SqlError
from sparkgate.sql.statements import CreateStream, Option, OutputMode, SaveStream
from sparkgate.stream_spec import QuerySpec, RetryPolicy

FILE_FORMATS = frozenset({"parquet", "json", "csv", "orc", "text", "xml"})
_ALL_MODES = frozenset(OutputMode)


@dataclass(frozen=True)
class Sink:
    """What sparkgate knows about a built-in sink."""

    modes: frozenset[OutputMode]
    partitioning: bool
    needs_path: bool = False


SINKS: dict[str, Sink] = {
    **{fmt: Sink(frozenset({OutputMode.APPEND}), True, needs_path=True) for fmt in FILE_FORMATS},
    "table": Sink(frozenset({OutputMode.APPEND}), True),
    "console": Sink(_ALL_MODES, False),
    "memory": Sink(_ALL_MODES, False),
    "noop": Sink(_ALL_MODES, False),
    "kafka": Sink(_ALL_MODES, False),
}

# Sources and sinks that need a connector jar, with the artifact to add through spark.jars.
CONNECTORS = {
    "kafka": "org.apache.spark:spark-sql-kafka-0-10_2.13",
    "avro": "org.apache.spark:spark-avro_2.13",
    "delta": "io.delta:delta-spark_2.13",
    "iceberg": "org.apache.iceberg:iceberg-spark-runtime-4.0_2.13",
}

RETRY_OPTIONS = (
    "retry.enabled",
    "retry.max.attempts",
    "retry.min.backoff",
    "retry.max.backoff",
    "retry.random.factor",
    "retry.stable.period",
)
_QUERY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")


def query_spec(save: SaveStream, defaults: RetryPolicy) -> QuerySpec:
    """Check a SAVE STREAM against what its sink can do; raises SqlError at the clause."""
    text = save.text
    name = save.name
    if not _QUERY_NAME.fullmatch(name):
        where = save.offsets.get("query_name", save.offsets.get("view", 0))
        raise SqlError.at(
            text,
            where,
            f"'{name}' cannot name a streaming query (it names its checkpoint directory): use "
            "letters, digits, '_', '-' and '.', at most 128, e.g. IDENTIFIED BY clicks_to_s3",
            code=ErrorCode.INVALID_STREAM_QUERY_NAME,
        )
    retry, options = _split_retry(save.options, defaults, text)
    checkpoint = _pop(options, "checkpointLocation")
    spec = QuerySpec(
        name=name,
        view=save.view,
        format=save.provider,
        table=save.table,
        output_mode=save.output_mode,
        trigger=save.trigger,
        partition_by=save.partitioned_on,
        options={o.key: o.value for o in options},
        checkpoint_location=checkpoint.value if checkpoint else None,
        retry=retry,
        sql=text,
    )
    _check_sink(save, spec)
    return spec


def _check_sink(save: SaveStream, spec: QuerySpec) -> None:
    sink = SINKS.get(save.provider)
    if sink is None:
        return
    label = f"the {save.provider} sink" if save.provider != "table" else "a table sink"
    if save.output_mode is not None and save.output_mode not in sink.modes:
        others = sorted(fmt for fmt, s in SINKS.items() if save.output_mode in s.modes)
        raise SqlError.at(
            save.text,
            save.offsets["output_mode"],
            f"{label} writes OUTPUT MODE "
            f"{', '.join(sorted(m.value.upper() for m in sink.modes))} only, not "
            f"{save.output_mode.value.upper()}; for {save.output_mode.value.upper()} use one of "
            f"{', '.join(others)}",
            code=ErrorCode.STREAM_SINK_OUTPUT_MODE_UNSUPPORTED,
        )
    if save.partitioned_on and not sink.partitioning:
        raise SqlError.at(
            save.text,
            save.offsets["partitioned_on"],
            f"{label} does not partition its output: remove PARTITIONED ON, or write to a "
            "file format (parquet, json, csv, orc, text) or a table",
            code=ErrorCode.STREAM_SINK_PARTITIONING_UNSUPPORTED,
        )
    if sink.needs_path and "path" not in {k.lower() for k in spec.options}:
        raise SqlError.at(
            save.text,
            save.offsets["provider"],
            f"{label} needs a 'path' option: ... TO {save.provider} OPTIONS ('path'='/data/out')",
            code=ErrorCode.STREAM_SINK_PATH_REQUIRED,
        )
    if spec.checkpoint_location and not spec.resumable:
        option = save.option("checkpointLocation")
        raise SqlError.at(
            save.text,
            option.offset if option else save.offsets["provider"],
            "Spark's memory sink resumes from a checkpoint in OUTPUT MODE COMPLETE only; drop "
            "'checkpointLocation' (a restart then starts over) or use OUTPUT MODE COMPLETE",
            code=ErrorCode.STREAM_SINK_NOT_RESUMABLE,
        )


def check_source(create: CreateStream, *, schema_inference: bool = False) -> None:
    """Check a CREATE STREAM's source before Spark sees it; raises SqlError."""
    provider = create.provider
    if provider is None or provider not in FILE_FORMATS:
        return
    where = create.offsets["provider"]
    if create.option("path") is None:
        raise SqlError.at(
            create.text,
            where,
            f"a {provider} stream reads the files in a directory: give it with OPTIONS "
            "('path'='/data/in')",
            code=ErrorCode.STREAM_SOURCE_PATH_REQUIRED,
        )
    needs_schema = provider != "text" and not schema_inference
    if needs_schema and create.columns is None and create.option("schema") is None:
        raise SqlError.at(
            create.text,
            where,
            f"a {provider} stream needs its columns, as Spark does not infer a streaming "
            f"source's schema: CREATE STREAM {create.name} (id BIGINT, name STRING) USING "
            f"{provider} OPTIONS (...), or a 'schema' option",
            code=ErrorCode.STREAM_SOURCE_SCHEMA_REQUIRED,
        )


def connector_hint(provider: str) -> str | None:
    """How to get a source or sink that needs a connector jar, or None."""
    artifact = CONNECTORS.get(provider.lower())
    if artifact is None:
        return None
    return (
        f"The {provider} connector ({artifact}) is not on the engines' classpath. Add its jar "
        "and its dependencies to every engine through spark.jars (SPARKGATE_SPARK_CONF), or a "
        "job's conf; Maven downloads (spark.jars.packages) need network access."
    )


def retry_defaults(settings: Settings) -> RetryPolicy:
    """The server-wide defaults of the retry.* options."""
    return RetryPolicy(
        enabled=settings.stream_retry_enabled,
        max_attempts=settings.stream_retry_max_attempts,
        min_backoff=settings.stream_retry_min_backoff,
        max_backoff=settings.stream_retry_max_backoff,
        random_factor=settings.stream_retry_random_factor,
        stable_period=settings.stream_retry_stable_period,
    )


def _split_retry(
    options: tuple[Option, ...], defaults: RetryPolicy, text: str
) -> tuple[RetryPolicy, list[Option]]:
    """The retry.* options as a policy (defaults for the others), and the remaining options."""
    values = defaults.to_json()
    rest: list[Option] = []
    for option in options:
        key = option.key.lower()
        if not key.startswith("retry."):
            rest.append(option)
            continue
        if key not in RETRY_OPTIONS:
            close = difflib.get_close_matches(key, RETRY_OPTIONS, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise SqlError.at(
                text,
                option.offset,
                f"'{option.key}' is not a retry option (they are {', '.join(RETRY_OPTIONS)})"
                + hint,
                code=ErrorCode.INVALID_STREAM_OPTION,
            )
        field_name = key.removeprefix("retry.").replace(".", "_")
        try:
            values[field_name] = _retry_value(field_name, option.value)
        except ValueError as exc:
            raise SqlError.at(
                text, option.offset, f"'{option.key}': {exc}", code=ErrorCode.INVALID_STREAM_OPTION
            ) from None
    try:
        policy = RetryPolicy.from_json(values)
    except ValueError as exc:
        offset = next((o.offset for o in options if o.key.lower().startswith("retry.")), 0)
        raise SqlError.at(text, offset, str(exc), code=ErrorCode.INVALID_STREAM_OPTION) from None
    return policy, rest


def _retry_value(field_name: str, value: str) -> object:
    if field_name == "enabled":
        if value.lower() not in ("true", "false"):
            raise ValueError(f"expected true or false, not '{value}'")
        return value.lower() == "true"
    if field_name == "max_attempts":
        if not re.fullmatch(r"\d+", value):
            raise ValueError(f"expected a whole number of attempts, not '{value}'")
        return int(value)
    if field_name == "random_factor":
        try:
            factor = float(value)
        except ValueError:
            raise ValueError(f"expected a number such as 0.2, not '{value}'") from None
        if factor < 0:
            raise ValueError("expected a number of 0 or more")
        return factor
    try:
        return parse_duration(value)
    except ValueError:
        raise ValueError(f"expected {COMPACT_HELP}; got '{value}'") from None


def _pop(options: list[Option], key: str) -> Option | None:
    for index, option in enumerate(options):
        if option.key.lower() == key.lower():
            return options.pop(index)
    return None
