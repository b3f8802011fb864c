"""``GET /version``: the Livy version sparkgate speaks, in Livy's shape."""

from __future__ import annotations

from fastapi import APIRouter

from sparkgate import __version__
from sparkgate.livy.bodies import LivyVersion
from sparkgate.livy.views import LIVY_VERSION

router = APIRouter(tags=["livy"])


@router.get("/version", response_model=LivyVersion)
def version() -> LivyVersion:
    """``{"version": "0.9.0-incubating", ...}``: clients check it to choose the API they use
    (the ``livy`` package treats anything below 0.5 as legacy)."""
    return LivyVersion(
        version=LIVY_VERSION,
        commit=None,
        user=None,
        url=None,
        branch=None,
        date=None,
        server=f"sparkgate {__version__}",
    )
