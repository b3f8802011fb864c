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
The checks the schema cannot make are in ``jobs.manifest_checks``, and the YAML reading that
knows where each key is in ``jobs.yaml_lines``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sparkgate.errors import InvalidRequest
from sparkgate.errors.jobs import ManifestError
from sparkgate.jobs.files import SourceFile
from sparkgate.jobs.manifest_checks import check_fields
from sparkgate.jobs.yaml_lines import KeyLines, parse_yaml
from sparkgate.sql.durations import format_duration, parse_duration
from sparkgate.tags import checked as checked_tags

NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,62}")
MANIFEST_SUFFIXES = (".yaml", ".yml")
TEMPLATE_FORBIDDEN = ("name", "sql", "code")


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
    # What each run's queries carry (sparkgate.tags): usage sums by them.
    tags: dict[str, str] = Field(default_factory=dict)
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

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: dict[str, str]) -> dict[str, str]:
        try:
            return checked_tags(value)
        except InvalidRequest as exc:
            raise ValueError(exc.message.removeprefix("tags: ")) from exc

    @field_validator("properties", "sink_options", "tags", mode="before")
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


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """``override`` on top of ``base``; mappings merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _unique(errors: list[ManifestError]) -> list[ManifestError]:
    """Each error once (a bad default is found in every manifest), in file and line order."""
    seen: dict[ManifestError, None] = dict.fromkeys(errors)
    return sorted(seen, key=lambda e: (e.file, e.line or 0, e.field or ""))
