"""The calls on stream jobs: create, list, read, stop, start, delete and wait for them, and
the streaming queries started in a session.
"""

from __future__ import annotations

from sparkgate.client._params import given, paging, poll
from sparkgate.client.transport import Transport
from sparkgate.schemas.streams import (
    DeletedStreamJob,
    SessionStreams,
    StreamJobDetail,
    StreamJobList,
)


class StreamCalls(Transport):
    """Stream jobs."""

    def create_stream(
        self,
        name: str,
        sql: str,
        *,
        conf: dict[str, str] | None = None,
        checkpoint_root: str | None = None,
    ) -> StreamJobDetail:
        body = {
            "name": name,
            "sql": sql,
            "conf": conf or {},
            **given(checkpoint_root=checkpoint_root),
        }
        return StreamJobDetail.read(self._call("POST", "/v1/streams", json=body))

    def streams(
        self, *, state: list[str] | None = None, limit: int = 100, after: str | None = None
    ) -> StreamJobList:
        params = paging(0, limit, after, None, state=state or None)
        return StreamJobList.read(self._call("GET", "/v1/streams", params=params))

    def stream(self, name: str) -> StreamJobDetail:
        return StreamJobDetail.read(self._call("GET", f"/v1/streams/{name}"))

    def stop_stream(self, name: str) -> StreamJobDetail:
        return StreamJobDetail.read(self._call("POST", f"/v1/streams/{name}/stop"))

    def start_stream(self, name: str) -> StreamJobDetail:
        return StreamJobDetail.read(self._call("POST", f"/v1/streams/{name}/start"))

    def delete_stream(self, name: str, *, keep_checkpoints: bool = False) -> DeletedStreamJob:
        params = {"keep_checkpoints": "true"} if keep_checkpoints else {}
        return DeletedStreamJob.read(self._call("DELETE", f"/v1/streams/{name}", params=params))

    def wait_stream(self, name: str, states: set[str], timeout: float = 300) -> StreamJobDetail:
        """Poll until the stream job is in one of ``states`` (or ``timeout`` passes)."""
        return poll(lambda: self.stream(name), lambda job: job.state in states, timeout, 0.2)

    def session_streams(self, session_id: int) -> SessionStreams:
        return SessionStreams.read(self._call("GET", f"/v1/sessions/{session_id}/streams"))
