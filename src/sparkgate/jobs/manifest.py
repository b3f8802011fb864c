"""Job manifests: one YAML file per job, defaults from a template, checked before anything runs.

    name: clicks-per-minute            # unique; a letter, then letters, digits, '-' and '_'
    description: Clicks per minute, by page
    target-table: analytics.clicks_per_minute
    mode: streaming                    # or batch
    sources:                           # run before the query, in order
      - CREATE STREAM clicks (page STRING, ts TIMESTAMP) USING json OPTIONS ('path'='/data/clicks')
    sql: |
      SELECT page, window(ts, '1 minute') AS minute, count(*) AS clicks
      FROM clicks WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY page, window(ts, '1 minute')
    trigger: 10s
    output-mode: append
    partitioned-by: [page]
    properties: {spark.sql.shuffle.partitions: 4}
    sink-options: {}
    retry: {max-attempts: 10, min-backoff: 1s, max-backoff: 5min}
    metadata-columns: true

Instead of ``sql``, ``code`` is PySpark code, run with ``spark`` defined after the sources,
which must assign the DataFrame to write to a variable named ``output`` (a streaming DataFrame
for a streaming job).

The template is a manifest without ``name``, ``sql`` or ``code``: its fields are defaults,
merged under every manifest (mappings key by key, anything else replaced). Every problem in
every file is reported at once, each naming the file, the field and the line (a problem in a
default is reported at the template's line), and nothing is deployed while any remains.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sparkgate.jobs.definitions import check_definition
from sparkgate.jobs.files import ManifestError, SourceFile
from sparkgate.sql.durations import format_duration, parse_duration
from sparkgate.sql.errors import SqlError
from sparkgate.sql.lexer import Kind, lex
from sparkgate.sql.parser import parse
from sparkgate.sql.script import split_script
from sparkgate.sql.statements import PassThrough

NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
MANIFEST_SUFFIXES = (".yaml", ".yml")
TEMPLATE_FORBIDDEN = ("name", "sql", "code")
# Set by sparkgate, not by a manifest: checkpoints live under <checkpoints>/<name>/<version>.
_RESERVED_SINK_OPTIONS = ("checkpointlocation",)
_QUERY_STARTS = ("SELECT", "WITH", "FROM", "VALUES", "TABLE", "(")


class Retry(BaseModel):
    """The query's restart policy; None: the server's default (``SPARKGATE_STREAM_RETRY_*``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    enabled: bool | None = None
    max_attempts: int | None = Field(default=None, alias="max-attempts", ge=0)
    min_backoff: str | None = Field(default=None, alias="min-backoff")
    max_backoff: str | None = Field(default=None, alias="max-backoff")
    random_factor: float | None = Field(default=None, alias="random-factor", ge=0)
    stable_period: str | None = Field(default=None, alias="stable-period")

    @field_validator("min_backoff", "max_backoff", "stable_period", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if value is None:
            return None
        return format_duration(parse_duration(str(value)))  # ValueError says what is accepted

    def options(self) -> dict[str, str]:
        """As SAVE STREAM options (``retry.max.attempts`` ...), only those given."""
        values = {
            "retry.enabled": None if self.enabled is None else str(self.enabled).lower(),
            "retry.max.attempts": None if self.max_attempts is None else str(self.max_attempts),
            "retry.min.backoff": self.min_backoff,
            "retry.max.backoff": self.max_backoff,
            "retry.random.factor": None if self.random_factor is None else str(self.random_factor),
            "retry.stable.period": self.stable_period,
        }
        return {k: v for k, v in values.items() if v is not None}


class Manifest(BaseModel):
    """One job, as declared (the template merged in)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str
    description: str = ""
    target_table: str = Field(alias="target-table", min_length=1)
    sql: str | None = None
    code: str | None = None
    mode: Literal["streaming", "batch"] = "streaming"
    sources: list[str] = Field(default_factory=list)
    properties: dict[str, str] = Field(default_factory=dict)
    trigger: str | None = None
    output_mode: Literal["append", "complete", "update"] = Field(
        default="append", alias="output-mode"
    )
    partitioned_by: list[str] = Field(default_factory=list, alias="partitioned-by")
    sink_options: dict[str, str] = Field(default_factory=dict, alias="sink-options")
    retry: Retry = Field(default_factory=Retry)
    metadata_columns: bool = Field(default=True, alias="metadata-columns")

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not NAME_PATTERN.fullmatch(value):
            raise ValueError(
                f"'{value}' is not a safe job name: a letter, then up to 62 letters, digits, "
                "'-' or '_' (it names the job's stream job, query and checkpoint directory)"
            )
        return value

    @field_validator("properties", "sink_options", mode="before")
    @classmethod
    def _stringify(cls, value: Any) -> Any:
        """YAML reads ``4`` and ``true`` as numbers and booleans; Spark wants strings."""
        if not isinstance(value, dict):
            return value
        return {
            k: (str(v).lower() if isinstance(v, bool) else str(v))
            if isinstance(v, (str, int, float, bool))
            else v
            for k, v in value.items()
        }

    @field_validator("sources", "partitioned_by", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("trigger", mode="before")
    @classmethod
    def _trigger(cls, value: Any) -> Any:
        if value is None:
            return None
        return format_duration(parse_duration(str(value)))

    @property
    def batch(self) -> bool:
        return self.mode == "batch"

    def to_json(self) -> dict[str, Any]:
        """The manifest with every field, kebab-case, as stored and shown."""
        return self.model_dump(by_alias=True, mode="json")


@dataclass(frozen=True)
class LoadedManifest:
    file: str
    manifest: Manifest
    lines: KeyLines  # where each field is (the manifest's or the template's)


@dataclass
class LoadedManifests:
    manifests: list[LoadedManifest] = field(default_factory=list)
    errors: list[ManifestError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def load_manifests(
    files: Sequence[SourceFile], template: SourceFile | None = None
) -> LoadedManifests:
    """Read, merge under the template, and validate every manifest; collect every error."""
    loaded = LoadedManifests()
    defaults: dict[str, Any] = {}
    template_lines = KeyLines.empty()
    if template is not None:
        raw, template_lines, errors = parse_yaml(template.content, template.path)
        loaded.errors.extend(errors)
        if isinstance(raw, dict):
            defaults = raw
            for key in TEMPLATE_FORBIDDEN:
                if key in raw:
                    loaded.errors.append(
                        ManifestError(
                            template.path,
                            key,
                            template_lines.line((key,)),
                            "a template holds defaults for every job; it cannot set this field",
                        )
                    )
                    defaults = {k: v for k, v in defaults.items() if k != key}
        elif raw is not None and not errors:
            loaded.errors.append(ManifestError(template.path, None, 1, "a template is a mapping"))
    if not files:
        loaded.errors.append(ManifestError("-", None, None, "no manifests were given"))
    names: dict[str, str] = {}
    for source in files:
        one = load_manifest(source, defaults, template_lines, loaded.errors)
        if one is None:
            continue
        name = one.manifest.name
        if name in names:
            loaded.errors.append(
                ManifestError(
                    source.path,
                    "name",
                    one.lines.line(("name",)),
                    f"job '{name}' is also declared in {names[name]}",
                )
            )
            continue
        names[name] = source.path
        loaded.manifests.append(one)
    loaded.errors[:] = _unique(loaded.errors)
    return loaded


def load_manifest(
    source: SourceFile,
    defaults: Mapping[str, Any],
    template_lines: KeyLines,
    errors: list[ManifestError],
) -> LoadedManifest | None:
    """One manifest, or None with its problems added to ``errors``."""
    raw, own_lines, problems = parse_yaml(source.content, source.path)
    if problems:
        errors.extend(problems)
        return None
    if not isinstance(raw, dict):
        errors.append(ManifestError(source.path, None, 1, "a manifest is a mapping of fields"))
        return None
    lines = own_lines.over(template_lines)
    values = deep_merge(defaults, raw)
    found: list[ManifestError] = []
    manifest = None
    try:
        manifest = Manifest.model_validate(values)
    except ValidationError as exc:
        for problem in exc.errors():
            path = tuple(str(p) for p in problem["loc"])
            found.append(lines.error(path, _pydantic_message(problem), fallback=source.path))
    # The checks the schema cannot make run even when it failed: every problem at once.
    reported = {e.field for e in found}
    for path, message in check_fields(values):
        if ".".join(path) not in reported:
            found.append(lines.error(path, message, fallback=source.path))
    errors.extend(found)
    if found or manifest is None:
        return None
    return LoadedManifest(source.path, manifest, lines)


def _pydantic_message(problem: Mapping[str, Any]) -> str:
    if problem["type"] == "extra_forbidden":
        return "unknown field"
    if problem["type"] == "missing":
        return "required field is missing"
    return str(problem["msg"]).removeprefix("Value error, ")


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


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``; mappings merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


# -- YAML with lines ------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyLines:
    """Where each key path is: ``("retry", "max-attempts") -> (file, line)``."""

    places: Mapping[tuple[str, ...], tuple[str, int]]

    @classmethod
    def empty(cls) -> KeyLines:
        return cls({})

    def over(self, other: KeyLines) -> KeyLines:
        """These places, and ``other``'s for keys not here (a manifest over its template)."""
        return KeyLines({**other.places, **self.places})

    def line(self, path: tuple[str, ...]) -> int | None:
        place = self.places.get(path)
        return place[1] if place else None

    def error(self, path: tuple[str, ...], message: str, *, fallback: str) -> ManifestError:
        """An error at ``path``: where it (or its nearest parent) is written, else the
        manifest (``fallback``) without a line (a missing field)."""
        name = ".".join(path) or None
        for end in range(len(path), 0, -1):
            place = self.places.get(path[:end])
            if place is not None:
                return ManifestError(place[0], name, place[1], message)
        return ManifestError(fallback, name, None, message)


def parse_yaml(text: str, source: str) -> tuple[Any, KeyLines, list[ManifestError]]:
    """The document, where its keys are, and its problems (syntax, keys given twice)."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        duplicates = list(_duplicate_keys(root))
        if duplicates:
            errors = [
                ManifestError(source, ".".join(path), line, "this field is given twice")
                for path, line in duplicates
            ]
            return None, KeyLines.empty(), errors
        return yaml.safe_load(text), _key_lines(root, source), []
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or str(exc)
        if exc.context and exc.problem:
            problem = f"{exc.context}, {exc.problem}"
        return (
            None,
            KeyLines.empty(),
            [ManifestError(source, None, line, f"invalid YAML: {problem}")],
        )
    except yaml.YAMLError as exc:
        return None, KeyLines.empty(), [ManifestError(source, None, None, f"invalid YAML: {exc}")]


def _key_lines(root: yaml.Node | None, source: str) -> KeyLines:
    places: dict[tuple[str, ...], tuple[str, int]] = {}

    def walk(node: yaml.Node | None, prefix: tuple[str, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                path = (*prefix, str(key.value))
                places[path] = (source, key.start_mark.line + 1)
                walk(value, path)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                places[(*prefix, str(index))] = (source, item.start_mark.line + 1)
                walk(item, (*prefix, str(index)))

    walk(root, ())
    return KeyLines(places)


def _duplicate_keys(
    node: yaml.Node | None, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], int]]:
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            if name in seen:
                yield (*prefix, name), key.start_mark.line + 1
            seen.add(name)
            yield from _duplicate_keys(value, (*prefix, name))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*prefix, str(index)))


def _unique(errors: list[ManifestError]) -> list[ManifestError]:
    """Each error once (a bad default is found in every manifest), in file and line order."""
    seen: dict[ManifestError, None] = dict.fromkeys(errors)
    return sorted(seen, key=lambda e: (e.file, e.line or 0, e.field or ""))
