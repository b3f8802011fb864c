"""The liveness answer (``GET /healthz``): the one body no resource owns."""

from __future__ import annotations

from typing import Literal

from pydantic import TypeAdapter

from sparkgate.schemas.common import Body

StoreDialect = Literal["sqlite", "postgresql"]
# The store names its dialect as text: checked where it becomes the field.
STORES: TypeAdapter[StoreDialect] = TypeAdapter(StoreDialect)


class Health(Body):
    status: Literal["ok"]
    version: str
    node: str
    store: StoreDialect
