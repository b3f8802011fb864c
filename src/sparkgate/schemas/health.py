"""The liveness answer (``GET /healthz``): the one body no resource owns."""

from __future__ import annotations

from typing import Literal

from sparkgate.schemas.common import Body


class Health(Body):
    status: Literal["ok"]
    version: str
    node: str
    store: Literal["sqlite", "postgresql"]
