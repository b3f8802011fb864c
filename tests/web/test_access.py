"""No page or fragment of the dashboard bypasses the API's access checks: every /ui route is
tried without credentials, with a wrong cookie, and as another user, against the real server."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.routing import APIRoute

from sparkgate import web
from sparkgate.http.deps import DASHBOARD_COOKIE, get_user
from tests.web.conftest import PASSWORDS, Dashboard

pytestmark = pytest.mark.spark

# Signing in itself, and the highlighting colours, are all that is open.
OPEN = {"/ui/login", "/ui/logout", "/ui/highlight.css"}


def _ui_routes(_dashboard: Dashboard) -> list[APIRoute]:
    """Every route the dashboard adds (``web.install`` includes exactly these routers)."""
    routers = [*web.PAGES, web.login.router, web.assets.router]
    routes = [r for router in routers for r in router.routes if isinstance(r, APIRoute)]
    assert all(r.path.startswith("/ui") for r in routes)
    assert len(routes) > 10  # the dashboard's pages are found at all
    return routes


def _needs(dependant: object, call: object) -> bool:
    deps = getattr(dependant, "dependencies", [])
    return any(d.call is call or _needs(d, call) for d in deps)


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "1", path)


def test_every_page_depends_on_get_user(dashboard: Dashboard) -> None:
    for route in _ui_routes(dashboard):
        if route.path in OPEN:
            continue
        assert _needs(route.dependant, get_user), route.path


def test_no_page_answers_without_credentials(dashboard: Dashboard) -> None:
    forger = httpx.Client(
        base_url=dashboard.url, timeout=30, cookies={DASHBOARD_COOKIE: "sgp_" + "x" * 43}
    )
    with httpx.Client(base_url=dashboard.url, timeout=30) as client, forger:
        for route in _ui_routes(dashboard):
            if route.path in OPEN:
                continue
            path = _concrete(route.path)
            for method in route.methods or ():
                answer = client.request(method, path)
                assert answer.status_code == 303, (method, path, answer.status_code)
                assert answer.headers["location"].startswith("/ui/login?next="), path
                # A fragment polled by htmx is sent to sign in with a full page load.
                fragment = client.request(method, path, headers={"HX-Request": "true"})
                assert fragment.status_code == 401, (method, path)
                assert fragment.headers["HX-Redirect"].startswith("/ui/login")
        # A cookie that is no token of ours is no way in either. (Few tries: each counts as a
        # failed login from this address, and those are answered ever later.)
        for method, path in (("GET", "/ui/queries"), ("POST", "/ui/queries/1/cancel")):
            forged = forger.request(method, path, headers={"HX-Request": "true"})
            assert forged.status_code == 401, (method, path)


def test_another_users_objects_are_absent(dashboard: Dashboard) -> None:
    session_id = dashboard.open_session("alice")
    query = dashboard.submit("alice", "SELECT 1", session_id=session_id)
    with httpx.Client(base_url=dashboard.url, timeout=30) as bob:
        signed_in = bob.post("/ui/login", data={"name": "bob", "password": PASSWORDS["bob"]})
        assert signed_in.status_code == 303 and DASHBOARD_COOKIE in bob.cookies
        htmx = {"HX-Request": "true"}
        for path in (f"/ui/queries/{query['id']}", f"/ui/queries/{query['id']}/state"):
            assert bob.get(path).status_code == 404, path
        assert bob.post(f"/ui/queries/{query['id']}/cancel", headers=htmx).status_code == 404
        assert bob.post(f"/ui/sessions/{session_id}/kill", headers=htmx).status_code == 404
        # Recycling engines is for admins.
        assert bob.post("/ui/engines/1/recycle", headers=htmx).status_code == 403
        # Without the dashboard's header a change is refused, even with a good cookie.
        assert bob.post(f"/ui/sessions/{session_id}/kill").status_code == 303
    with dashboard.api("alice") as alice:
        assert alice.get(f"/v1/sessions/{session_id}").json()["state"] in {"idle", "busy"}
        alice.delete(f"/v1/sessions/{session_id}")
