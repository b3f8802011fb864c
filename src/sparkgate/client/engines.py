"""The calls on engines: list them, and stop one."""

from __future__ import annotations

from sparkgate.client.transport import Transport
from sparkgate.schemas.engines import Engine, EngineList


class EngineCalls(Transport):
    """Engines."""

    def engines(self, *, all: bool = False) -> EngineList:
        return EngineList.read(self._call("GET", "/v1/engines", params={"all": all}))

    def stop_engine(self, engine_id: int) -> Engine:
        return Engine.read(self._call("POST", f"/v1/engines/{engine_id}/stop"))
