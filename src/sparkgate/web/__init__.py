"""The web dashboard at ``/ui``: server-rendered pages (Jinja2) made live with htmx.

Every page and fragment is a route behind ``get_user`` (the API's authentication) that calls
the native API's route functions, so the dashboard shows each user what the API would, and
nothing more. Scripts, styles and charts are files of this package (``static/``), served by
the node itself: the dashboard works with no network beyond the server, and its pages hold
no inline script or style, so they run under a strict Content-Security-Policy
(``templating.CONTENT_SECURITY_POLICY``).
"""

from __future__ import annotations

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from sparkgate.http.errors import register_error_page
from sparkgate.web import jobs, login, queries, sessions, streams, tables, usage, worksheet
from sparkgate.web.assets import router as assets_router

PAGES = (
    queries.router,
    sessions.router,
    streams.router,
    jobs.router,
    tables.router,
    usage.router,
    worksheet.router,
)


def install(app: FastAPI) -> None:
    """Mount the dashboard. Every page depends on ``page_user``, which is ``get_user``."""
    app.mount("/ui/static", StaticFiles(packages=[("sparkgate.web", "static")]), name="ui-static")
    app.include_router(assets_router)
    app.include_router(login.router)
    for router in PAGES:
        app.include_router(router, dependencies=[Depends(login.page_user)])
    register_error_page("/ui", login.error_page)
