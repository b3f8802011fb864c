"""Manifests: YAML in, a checked job out, or every problem with its file, field and line."""

from __future__ import annotations

import textwrap

import pytest

from sparkgate.errors.jobs import ManifestError
from sparkgate.jobs.files import SourceFile
from sparkgate.jobs.manifest import Manifest, deep_merge, load_manifests

TEMPLATE = SourceFile(
    "template.yaml",
    textwrap.dedent(
        """\
        trigger: 1s
        properties:
          spark.sql.shuffle.partitions: 4
          spark.sql.session.timeZone: UTC
        retry:
          max-attempts: 5
        metadata-columns: true
        """
    ),
)


def manifest(text: str, path: str = "jobs/clicks.yaml") -> SourceFile:
    return SourceFile(path, textwrap.dedent(text))


CLICKS = manifest(
    """\
    name: clicks
    description: Clicks, by page
    target-table: analytics.clicks
    sources:
      - CREATE STREAM raw USING rate OPTIONS ('rowsPerSecond'='5')
    sql: |
      SELECT value AS page FROM raw
    properties:
      spark.sql.shuffle.partitions: 2
    retry:
      min-backoff: 500ms
    """
)


def errors_of(*files: SourceFile, template: SourceFile | None = None) -> list[ManifestError]:
    loaded = load_manifests(list(files), template)
    assert not loaded.manifests or loaded.errors, "errors and manifests together"
    return loaded.errors


def only_error(*files: SourceFile, template: SourceFile | None = None) -> ManifestError:
    [error] = errors_of(*files, template=template)
    return error


def test_a_manifest_merged_over_the_template() -> None:
    loaded = load_manifests([CLICKS], TEMPLATE)
    assert loaded.ok, loaded.errors
    [one] = loaded.manifests
    job = one.manifest
    assert (job.name, job.mode, job.target_table) == ("clicks", "streaming", "analytics.clicks")
    # mappings merge key by key, the manifest wins; numbers become Spark's strings
    assert job.properties == {
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
    }
    assert job.trigger == "1s" and job.output_mode == "append" and job.metadata_columns
    assert job.retry.options() == {"retry.max.attempts": "5", "retry.min.backoff": "500ms"}
    assert one.file == "jobs/clicks.yaml"
    assert one.lines.line(("sql",)) == 6 and one.lines.line(("trigger",)) == 1  # template's


def test_the_stored_form_has_every_field_in_kebab_case() -> None:
    [one] = load_manifests([CLICKS]).manifests
    stored = one.manifest.to_json()
    assert stored["target-table"] == "analytics.clicks" and stored["output-mode"] == "append"
    assert stored["retry"]["min-backoff"] == "500ms" and stored["metadata-columns"] is True
    assert Manifest.model_validate(stored) == one.manifest  # it reads back as the same job


def test_durations_are_normalised() -> None:
    [one] = load_manifests(
        [
            manifest(
                "name: a\ntarget-table: t\nsql: SELECT 1\ntrigger: 60s\nretry: {max-backoff: 1m}"
            )
        ]
    ).manifests
    assert one.manifest.trigger == "1min" and one.manifest.retry.max_backoff == "1min"


def test_every_problem_is_reported_with_its_file_field_and_line() -> None:
    broken = manifest(
        """\
        name: broken job
        target-table: t
        sql: SELECT 1; SELECT 2
        trigger: 5 fortnights
        retry: {max-attempts: -1, nope: 2}
        output-mode: sometimes
        extra: 1
        """,
        "jobs/broken.yaml",
    )
    found = {(e.file, e.field, e.line) for e in errors_of(broken, CLICKS)}
    assert found == {
        ("jobs/broken.yaml", "name", 1),
        ("jobs/broken.yaml", "sql", 3),
        ("jobs/broken.yaml", "trigger", 4),
        ("jobs/broken.yaml", "retry.max-attempts", 5),
        ("jobs/broken.yaml", "retry.nope", 5),
        ("jobs/broken.yaml", "output-mode", 6),
        ("jobs/broken.yaml", "extra", 7),
    }
    messages = {e.field: e.message for e in errors_of(broken)}
    assert "not a safe job name" in messages["name"]
    assert "is 2 statements" in messages["sql"]
    assert "'5 fortnights' is not a duration" in messages["trigger"]
    assert messages["extra"] == "unknown field"


@pytest.mark.parametrize(
    ("text", "field", "line", "says"),
    [
        ("name: a\nsql: SELECT 1\n", "target-table", None, "required field is missing"),
        ("name: a\ntarget-table: t\n", "sql", None, "'sql' (a query) or 'code'"),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\ncode: output = 1\n",
            "code",
            4,
            "exactly one of",
        ),
        ("name: a\ntarget-table: t\nsql: '  '\n", "sql", 3, "is no statements"),
        ("name: a\ntarget-table: t\nsql: INSERT INTO x SELECT 1\n", "sql", 3, "starts with"),
        (
            "name: a\ntarget-table: t\nsql: CREATE STREAM r USING rate\n",
            "sql",
            3,
            "put sources in 'sources'",
        ),
        ('name: a\ntarget-table: t\nsql: "SELECT \'x"\n', "sql", 3, "Unterminated string"),
        ("name: a\ntarget-table: t\ncode: 'x = '\n", "code", 3, "invalid Python"),
        ("name: a\ntarget-table: t\ncode: 'df = 1'\n", "code", 3, "named 'output'"),
        ("name: a\ntarget-table: a.b.c.d\nsql: SELECT 1\n", "target-table", 2, "not a table"),
        ("name: a\ntarget-table: 'x y'\nsql: SELECT 1\n", "target-table", 2, "not a table"),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\nsources: [SAVE STREAM r TO console]\n",
            "sources.0",
            4,
            "not definitions",
        ),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\nsources:\n  - CREATE TABLE x (a INT)\n",
            "sources.0",
            5,
            "IF NOT EXISTS",
        ),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\nsources: ['CREATE STREAM r USING rate; "
            "CREATE STREAM s USING rate']\n",
            "sources.0",
            4,
            "one statement per item",
        ),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\nsources: [CREATE STREAM j USING json]\n",
            "sources.0",
            4,
            "reads the files in a directory",
        ),
        (
            "name: a\nmode: batch\ntarget-table: t\nsql: SELECT 1\npartitioned-by: [x]\n",
            "partitioned-by",
            5,
            "atomic replace",
        ),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\nsink-options: {checkpointLocation: /x}\n",
            "sink-options.checkpointLocation",
            4,
            "cannot move them",
        ),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\nsink-options: {retry.enabled: false}\n",
            "sink-options.retry.enabled",
            4,
            "with 'retry'",
        ),
        ("name: a\ntarget-table: t\nsql: SELECT 1\nmode: nightly\n", "mode", 4, "'batch'"),
        (
            "name: a\ntarget-table: t\nsql: SELECT 1\nproperties: {a: {b: 1}}\n",
            "properties.a",
            4,
            "",
        ),
        ("name: a\nname: b\ntarget-table: t\nsql: SELECT 1\n", "name", 2, "given twice"),
        ("name: [a\ntarget-table: t\n", None, 2, "invalid YAML"),
        ("- name: a\n", None, 1, "a mapping of fields"),
        ("", None, 1, "a mapping of fields"),
    ],
)
def test_problems(text: str, field: str | None, line: int | None, says: str) -> None:
    error = only_error(manifest(text, "m.yaml"))
    assert (error.file, error.field, error.line) == ("m.yaml", field, line), error
    assert says in error.message, error


def test_a_bad_default_is_reported_once_at_the_template_line() -> None:
    template = SourceFile("defaults.yaml", "retry:\n  min-backoff: soon\nname: nope\n")
    other = manifest("name: other\ntarget-table: o\nsql: SELECT 2\n", "jobs/other.yaml")
    found = errors_of(CLICKS, other, template=template)
    assert [(e.file, e.field, e.line) for e in found] == [
        ("defaults.yaml", "retry.min-backoff", 2),
        ("defaults.yaml", "name", 3),
    ]
    assert "cannot set this field" in found[1].message


def test_a_template_must_be_a_mapping() -> None:
    error = only_error(CLICKS, template=SourceFile("t.yaml", "- 1\n"))
    assert (error.file, error.line, error.message) == ("t.yaml", 1, "a template is a mapping")


def test_two_manifests_for_one_job_are_refused() -> None:
    again = SourceFile("jobs/copy.yaml", CLICKS.content)
    error = only_error(CLICKS, again)
    assert (error.file, error.field, error.line) == ("jobs/copy.yaml", "name", 1)
    assert "also declared in jobs/clicks.yaml" in error.message


def test_the_code_job_contract() -> None:
    code = """\
        name: squares
        target-table: t
        code: |
          from pyspark.sql import functions as F
          for output in [spark.range(3)]:
              pass
        """
    [one] = load_manifests([manifest(code)]).manifests
    assert one.manifest.code is not None and one.manifest.sql is None


def test_single_values_where_lists_are_expected() -> None:
    text = "name: a\ntarget-table: t\nsql: SELECT 1\nsources: CREATE STREAM r USING rate\n"
    [one] = load_manifests([manifest(text + "partitioned-by: day\n")]).manifests
    assert one.manifest.sources == ["CREATE STREAM r USING rate"]
    assert one.manifest.partitioned_by == ["day"]


def test_no_manifests() -> None:
    assert only_error().message == "no manifests were given"


def test_deep_merge() -> None:
    base = {"a": 1, "m": {"x": 1, "y": 2}, "l": [1, 2]}
    assert deep_merge(base, {"m": {"y": 3}, "l": [3]}) == {"a": 1, "m": {"x": 1, "y": 3}, "l": [3]}
    assert base["m"] == {"x": 1, "y": 2}  # not changed in place
