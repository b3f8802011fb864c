"""The calls on engines: list them, and stop one."""

from __future__ import annotations

from typing import Any

from sparkgate.client.transport import Transport


class EngineCalls(Transport):
    """Engines."""

    def engines(self, *, all: bool = False) -> dict[str, Any]:
        return self._call("GET", "/v1/engines", params={"all": all})

    def stop_engine(self, engine_id: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/engines/{engine_id}/stop")
