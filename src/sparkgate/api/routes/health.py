"""Liveness and readiness."""

from __future__ import annotations

import sqlalchemy as sa
from fastapi import APIRouter

from sparkgate import __version__
from sparkgate.http.deps import NodeDep
from sparkgate.schemas.health import STORES, Health

router = APIRouter()


@router.get("/healthz", response_model=Health)
def healthz(node: NodeDep) -> Health:
    """``{"status": "ok", ...}`` when this node can read its store."""
    with node.store.db.read() as conn:
        conn.execute(sa.text("SELECT 1"))
    return Health(
        status="ok",
        version=__version__,
        node=node.node_id,
        store=STORES.validate_python(node.store.db.dialect),
    )
