"""Errors of manifest jobs, their runs and deployments."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparkgate.errors import Conflict, ErrorCode, InvalidRequest, NotFound


class JobNotFound(NotFound):
    code = ErrorCode.JOB_NOT_FOUND

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Job '{name}' does not exist; jobs come from manifests (sparkgate deploy PATH).",
            name=name,
        )


class DeploymentNotFound(NotFound):
    code = ErrorCode.DEPLOYMENT_NOT_FOUND

    def __init__(self, deployment_id: int) -> None:
        super().__init__(f"Deployment {deployment_id} does not exist.", deployment_id=deployment_id)


class JobRunNotFound(NotFound):
    code = ErrorCode.JOB_RUN_NOT_FOUND

    def __init__(self, run_id: int) -> None:
        super().__init__(f"Job run {run_id} does not exist.", run_id=run_id)


@dataclass(frozen=True)
class ManifestError:
    """A problem in a manifest, the template or a definitions file."""

    file: str
    field: str | None  # "retry.max-attempts", "sources.0", "statement 3"; None: the file
    line: int | None  # 1-based; None when the problem has no place (a missing field)
    message: str

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        what = f" {self.field}:" if self.field else ""
        return f"{where}:{what} {self.message}"

    def to_json(self) -> dict[str, str | int | None]:
        return {"file": self.file, "field": self.field, "line": self.line, "message": self.message}


class ManifestsInvalid(InvalidRequest):
    """Manifests, the template or definition files have problems: nothing was deployed."""

    code = ErrorCode.MANIFESTS_INVALID

    def __init__(self, errors: Sequence[ManifestError]) -> None:
        count = f"{len(errors)} problem{'s' if len(errors) != 1 else ''}"
        super().__init__(
            f"Nothing was deployed: {count} in the manifests.\n" + "\n".join(map(str, errors)),
            errors=[e.to_json() for e in errors],
        )


class DeployInProgress(Conflict):
    code = ErrorCode.DEPLOY_IN_PROGRESS

    def __init__(self, deployment_id: int | None, node_id: str | None, waited: float) -> None:
        which = f"Deployment {deployment_id}" if deployment_id is not None else "Another deploy"
        where = f" (on node {node_id})" if node_id else ""
        follow = f"/v1/deployments/{deployment_id}" if deployment_id is not None else "it"
        super().__init__(
            f"{which}{where} is still running after waiting {waited:g}s; deploys run one at a "
            f"time. Follow it (GET {follow}), or deploy again with a longer wait "
            "(--wait SECONDS).",
            deployment_id=deployment_id,
            node_id=node_id,
        )


class JobNotBatch(Conflict):
    code = ErrorCode.JOB_NOT_BATCH

    def __init__(self, name: str, mode: str) -> None:
        super().__init__(
            f"Job '{name}' is a {mode} job; only batch jobs run on request (a streaming job "
            "runs as the stream job of the same name: sparkgate streams show NAME).",
            name=name,
            mode=mode,
        )


class JobRemoved(Conflict):
    code = ErrorCode.JOB_REMOVED

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Job '{name}' was removed by a deploy with --prune; declare it again to run it.",
            name=name,
        )
