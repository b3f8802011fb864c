"""The calls on deploys and the jobs they declare: deploy manifests, read deployments, jobs
and their history, and start, read, cancel and wait for a job's runs.
"""

from __future__ import annotations

from typing import Any

from sparkgate.client._params import paging, poll
from sparkgate.client.transport import Transport
from sparkgate.schemas.jobs import (
    Deployment,
    DeploymentList,
    JobDetail,
    JobHistory,
    JobList,
    JobRun,
)


class JobCalls(Transport):
    """Deployments, jobs and their runs."""

    def deploy(
        self,
        manifests: list[dict[str, str]],
        *,
        template: dict[str, str] | None = None,
        definitions: list[dict[str, str]] | None = None,
        prune: bool = False,
        plan_only: bool = False,
        wait: float = 0.0,
    ) -> Deployment:
        """Deploy manifests (``{"path", "content"}`` each); the deployment with its plan."""
        body: dict[str, Any] = {
            "manifests": manifests,
            "template": template,
            "definitions": definitions or [],
            "prune": prune,
            "plan_only": plan_only,
            "wait": wait,
        }
        timeout = max(self._http.timeout.read or 30.0, wait + 30.0)
        answer = self._call("POST", "/v1/deployments", json=body, timeout=timeout)
        return Deployment.read(answer)

    def deployment(self, deployment_id: int) -> Deployment:
        return Deployment.read(self._call("GET", f"/v1/deployments/{deployment_id}"))

    def deployments(self, *, limit: int = 20, after: str | None = None) -> DeploymentList:
        params = paging(0, limit, after, None)
        return DeploymentList.read(self._call("GET", "/v1/deployments", params=params))

    def wait_deployment(self, deployment_id: int, timeout: float = 600) -> Deployment:
        """Poll until the deployment has ended (or ``timeout`` passes)."""
        return poll(lambda: self.deployment(deployment_id), _ended, timeout, 0.3)

    def jobs(self, *, removed: bool = False) -> JobList:
        params = {"removed": "true"} if removed else {}
        return JobList.read(self._call("GET", "/v1/jobs", params=params))

    def job(self, name: str) -> JobDetail:
        return JobDetail.read(self._call("GET", f"/v1/jobs/{name}"))

    def job_history(self, name: str) -> JobHistory:
        return JobHistory.read(self._call("GET", f"/v1/jobs/{name}/history"))

    def run_job(self, name: str) -> JobRun:
        return JobRun.read(self._call("POST", f"/v1/jobs/{name}/runs"))

    def job_run(self, name: str, run_id: int) -> JobRun:
        return JobRun.read(self._call("GET", f"/v1/jobs/{name}/runs/{run_id}"))

    def cancel_job_run(self, name: str, run_id: int) -> JobRun:
        return JobRun.read(self._call("POST", f"/v1/jobs/{name}/runs/{run_id}/cancel"))

    def wait_job_run(self, name: str, run_id: int, timeout: float = 600) -> JobRun:
        """Poll until the run has ended (or ``timeout`` passes)."""
        return poll(lambda: self.job_run(name, run_id), _ended, timeout, 0.3)


def _ended(answer: Deployment | JobRun) -> bool:
    """A deployment's or a run's: no longer running."""
    return answer.state != "running"
