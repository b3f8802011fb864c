"""Everything a deploy is given, read and checked as one: the manifests, the template and the
definition files. Pure. Either every job is valid (and known by its fingerprints), or the
problems are listed, each with its file, field and line, and nothing may be deployed.

    bundle = load_bundle([SourceFile("clicks.yaml", text)], template=None, definitions=[])
    if bundle.errors: ...  # ManifestError("clicks.yaml", "trigger", 7, "'5 secs' is not ...")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sparkgate.errors.jobs import ManifestError
from sparkgate.jobs.definitions import Definition, read_definitions, used_definitions
from sparkgate.jobs.files import SourceFile
from sparkgate.jobs.fingerprint import canonical_table, job_fingerprints
from sparkgate.jobs.manifest import LoadedManifest, Manifest, load_manifests
from sparkgate.jobs.plan import Declared
from sparkgate.jobs.script import JobStep, Metadata, batch_steps, streaming_steps
from sparkgate.recorded import ErrorCode
from sparkgate.sql.errors import SqlError
from sparkgate.sql.script import split_script
from sparkgate.states import StatementKind
from sparkgate.store.jobs import Fingerprints
from sparkgate.store.records import DeploymentFiles
from sparkgate.stream_spec import RetryPolicy
from sparkgate.streaming.script import check_script

# Where a problem found in the generated SAVE STREAM belongs, by its code.
_SAVE_STREAM_FIELDS: dict[str, str] = {
    ErrorCode.STREAM_SINK_OUTPUT_MODE_UNSUPPORTED: "output-mode",
    ErrorCode.STREAM_SINK_PARTITIONING_UNSUPPORTED: "partitioned-by",
    ErrorCode.INVALID_STREAM_OPTION: "retry",
    ErrorCode.STREAM_SINK_NOT_RESUMABLE: "sink-options",
}


@dataclass(frozen=True)
class DeclaredJob:
    """A valid job, as its manifest declares it."""

    file: str
    manifest: Manifest
    definitions: list[Definition]  # the shared definitions it uses, in order
    fingerprints: Fingerprints

    @property
    def name(self) -> str:
        return self.manifest.name

    def declared(self) -> Declared:
        """What the planner needs."""
        fp = self.fingerprints
        return Declared(self.name, self.manifest.batch, fp.query, fp.config, fp.supervision)

    def steps(self, metadata: Metadata, checkpoint: str = "") -> list[JobStep]:
        """What the job runs: the stream job's script (``checkpoint``: its query's checkpoint
        directory), or a batch run's statements."""
        if self.manifest.batch:
            return batch_steps(self.manifest, self.definitions, metadata)
        return streaming_steps(self.manifest, self.definitions, metadata, checkpoint)


@dataclass
class Bundle:
    jobs: list[DeclaredJob] = field(default_factory=list)
    errors: list[ManifestError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def load_bundle(
    manifests: Sequence[SourceFile],
    template: SourceFile | None,
    definitions: Sequence[SourceFile],
    retry: RetryPolicy,
) -> Bundle:
    """Read and check everything; ``retry``: the server's defaults of the retry options."""
    bundle = Bundle()
    shared, errors = read_definitions(definitions)
    bundle.errors.extend(errors)
    loaded = load_manifests(manifests, template)
    bundle.errors.extend(loaded.errors)
    writers: dict[str, str] = {}
    for one in loaded.manifests:
        table = canonical_table(one.manifest.target_table)
        if table in writers:
            # A table is one query's output: two file-sink streams would share (and corrupt)
            # one commit log, and two batch jobs would overwrite each other.
            message = f"{one.manifest.target_table} is also the target of job {writers[table]}"
            bundle.errors.append(one.lines.error(("target-table",), message, fallback=one.file))
        writers[table] = f"'{one.manifest.name}' ({one.file})"
        manifest = one.manifest
        texts = [manifest.sql or "", manifest.code or "", manifest.target_table, *manifest.sources]
        used = used_definitions(shared, texts)
        job = DeclaredJob(one.file, manifest, used, job_fingerprints(manifest, used))
        if not manifest.batch:
            bundle.errors.extend(_check_stream_script(one, job, retry))
        bundle.jobs.append(job)
    if bundle.errors:
        bundle.jobs = []
    return bundle


def _check_stream_script(
    one: LoadedManifest, job: DeclaredJob, retry: RetryPolicy
) -> list[ManifestError]:
    """The stream job's SQL, checked as a stream job's script is (sinks, options, names)."""
    placeholder = Metadata(job.name, job.manifest.description, "0" * 32, 1, 0.0)
    sql_steps = [s for s in job.steps(placeholder) if s.kind is StatementKind.SQL]
    script = ";\n".join(s.code for s in sql_steps)
    inference = job.manifest.properties.get("spark.sql.streaming.schemaInference", "false")
    try:
        check_script(script, retry, schema_inference=inference.lower() == "true")
    except SqlError as exc:
        return [_place(one, exc, script, sql_steps)]
    return []


def _place(one: LoadedManifest, exc: SqlError, script: str, steps: list[JobStep]) -> ManifestError:
    """A problem in the generated script, reported where it was written."""
    number = exc.params.get("statement")
    statements = split_script(script)
    if not isinstance(number, int) or not 1 <= number <= len(steps):
        return one.lines.error(("sql",), exc.message, fallback=one.file)
    step, statement = steps[number - 1], statements[number - 1]
    line = exc.line - statement.line + 1
    position = exc.position - (statement.position - 1 if line == 1 else 0)
    if step.origin.startswith("definition "):
        file, _, first = step.origin.removeprefix("definition ").rpartition(":")
        return ManifestError(file, f"statement {first}", int(first) + line - 1, exc.message)
    origin = step.origin
    if origin == "target-table":
        origin = _SAVE_STREAM_FIELDS.get(exc.code, "target-table")
        if origin == "retry" and "retry." not in exc.message:
            origin = "sink-options"
        return one.lines.error(tuple(origin.split(".")), exc.message, fallback=one.file)
    where = f"line {line}, position {position}"
    path = tuple(origin.split("."))
    return one.lines.error(path, f"{exc.message} ({where})", fallback=one.file)


def files_of(
    manifests: Sequence[SourceFile], template: SourceFile | None, definitions: Sequence[SourceFile]
) -> DeploymentFiles:
    """What a deployment records of its input: the files' names."""
    return DeploymentFiles(
        manifests=tuple(m.path for m in manifests),
        template=template.path if template is not None else None,
        definitions=tuple(d.path for d in definitions),
    )
