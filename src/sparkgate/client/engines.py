"""The calls on engines: list them, read one's log, and stop one."""

from __future__ import annotations

from sparkgate.client.transport import Transport
from sparkgate.schemas.engines import Engine, EngineList, EngineLog


class EngineCalls(Transport):
    """Engines."""

    def engines(self, *, all: bool = False) -> EngineList:
        return EngineList.read(self._call("GET", "/v1/engines", params={"all": all}))

    def engine_log(self, engine_id: int, *, tail: int | None = None) -> EngineLog:
        params = {} if tail is None else {"tail": tail}
        return EngineLog.read(self._call("GET", f"/v1/engines/{engine_id}/log", params=params))

    def stop_engine(self, engine_id: int) -> Engine:
        return Engine.read(self._call("POST", f"/v1/engines/{engine_id}/stop"))
