"""The calls on what runs on the cluster beyond one query: stream jobs, engines, deploys
and the jobs they declare, and job runs.
"""

from __future__ import annotations

import time
from typing import Any

from sparkgate.client._params import given, paging
from sparkgate.client.transport import Transport


class JobCalls(Transport):
    """Stream jobs, engines, deployments, jobs and their runs."""

    # stream jobs
    def create_stream(
        self,
        name: str,
        sql: str,
        *,
        conf: dict[str, str] | None = None,
        checkpoint_root: str | None = None,
    ) -> dict[str, Any]:
        body = {
            "name": name,
            "sql": sql,
            "conf": conf or {},
            **given(checkpoint_root=checkpoint_root),
        }
        return self._call("POST", "/v1/streams", json=body)

    def streams(
        self, *, state: list[str] | None = None, limit: int = 100, after: str | None = None
    ) -> dict[str, Any]:
        params = paging(0, limit, after, None, state=state or None)
        return self._call("GET", "/v1/streams", params=params)

    def stream(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/streams/{name}")

    def stop_stream(self, name: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/streams/{name}/stop")

    def start_stream(self, name: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/streams/{name}/start")

    def delete_stream(self, name: str, *, keep_checkpoints: bool = False) -> dict[str, Any]:
        params = {"keep_checkpoints": "true"} if keep_checkpoints else {}
        return self._call("DELETE", f"/v1/streams/{name}", params=params)

    def wait_stream(self, name: str, states: set[str], timeout: float = 300) -> dict[str, Any]:
        """Poll until the stream job is in one of ``states`` (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.stream(name)
            if job["state"] in states or time.monotonic() > deadline:
                return job
            time.sleep(0.2)

    def session_streams(self, session_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/sessions/{session_id}/streams")

    # engines
    def engines(self, *, all: bool = False) -> dict[str, Any]:
        return self._call("GET", "/v1/engines", params={"all": all})

    def stop_engine(self, engine_id: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/engines/{engine_id}/stop")

    # deploys and jobs
    def deploy(
        self,
        manifests: list[dict[str, str]],
        *,
        template: dict[str, str] | None = None,
        definitions: list[dict[str, str]] | None = None,
        prune: bool = False,
        plan_only: bool = False,
        wait: float = 0.0,
    ) -> dict[str, Any]:
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
        return self._call("POST", "/v1/deployments", json=body, timeout=timeout)

    def deployment(self, deployment_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/deployments/{deployment_id}")

    def deployments(self, *, limit: int = 20, after: str | None = None) -> dict[str, Any]:
        params = paging(0, limit, after, None)
        return self._call("GET", "/v1/deployments", params=params)

    def wait_deployment(self, deployment_id: int, timeout: float = 600) -> dict[str, Any]:
        """Poll until the deployment has ended (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            deployment = self.deployment(deployment_id)
            if deployment["state"] != "running" or time.monotonic() > deadline:
                return deployment
            time.sleep(0.3)

    def jobs(self, *, removed: bool = False) -> dict[str, Any]:
        params = {"removed": "true"} if removed else {}
        return self._call("GET", "/v1/jobs", params=params)

    def job(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{name}")

    def job_history(self, name: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{name}/history")

    def run_job(self, name: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/jobs/{name}/runs")

    def job_run(self, name: str, run_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{name}/runs/{run_id}")

    def cancel_job_run(self, name: str, run_id: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/jobs/{name}/runs/{run_id}/cancel")

    def wait_job_run(self, name: str, run_id: int, timeout: float = 600) -> dict[str, Any]:
        """Poll until the run has ended (or ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        while True:
            run = self.job_run(name, run_id)
            if run["state"] != "running" or time.monotonic() > deadline:
                return run
            time.sleep(0.3)
