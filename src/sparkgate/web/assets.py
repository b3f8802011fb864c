"""Styles made at run time: the code highlighting's colours come from Pygments' own style."""

from __future__ import annotations

from functools import cache

from fastapi import APIRouter
from fastapi.responses import Response

from sparkgate.web.templating import pygments_css

router = APIRouter()


@cache
def _highlight_css() -> str:
    return pygments_css()


@router.get("/ui/highlight.css", include_in_schema=False)
def highlight_css() -> Response:
    return Response(
        _highlight_css(),
        media_type="text/css",
        headers={"Cache-Control": "public, max-age=3600"},
    )
