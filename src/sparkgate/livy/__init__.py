"""A Livy-compatible REST API (``/sessions``, ``/batches``, ``/version``), served by the same
server over the same sessions and statements as the native ``/v1`` API, so Livy clients
(``livy``, sparkmagic, Airflow's Livy operator) work by changing a URL.

    install(app)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI

from sparkgate.http.errors import register_error_body
from sparkgate.livy import batches, sessions, version
from sparkgate.livy.bodies import LivyError
from sparkgate.livy.common import livy_error_body

PREFIXES = ("/sessions", "/batches", "/version")
# Livy answers 400 to requests it refuses; the native API distinguishes 409 and 422.
STATUSES = {409: 400, 422: 400}


def install(app: FastAPI, *, dependencies: Sequence[Any] = ()) -> None:
    """Serve the Livy routes from ``app``, with Livy's error bodies (``{"msg": ...}``);
    ``dependencies`` (authentication) apply to every route."""
    for prefix in PREFIXES:
        register_error_body(prefix, livy_error_body, model=LivyError, statuses=STATUSES)
    for router in (version.router, sessions.router, batches.router):
        app.include_router(router, dependencies=list(dependencies))
