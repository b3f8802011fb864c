"""Signing in to the dashboard, and who the dashboard's user is.

A login checks the name and password (or a personal access token) through the users layer,
like any API call, then makes a personal access token for this browser and sets it as an
HttpOnly, SameSite=Strict cookie. The API reads that cookie as a Bearer token
(``api.deps.dashboard_credentials``): every page and fragment goes through the same
``get_user`` and the same access checks as ``/v1``. Signing out revokes the token, so a copied
cookie stops working at once; tokens made this way are listed (and revocable) with the user's
other tokens.
"""

from __future__ import annotations

import asyncio
import base64
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from sparkgate.auth import tokens
from sparkgate.auth.principal import Principal
from sparkgate.errors import Unauthenticated
from sparkgate.http.deps import DASHBOARD_COOKIE, NodeDep, UserDep
from sparkgate.recorded import RecordedError
from sparkgate.web.templating import from_htmx, render

router = APIRouter(include_in_schema=False)

HOME = "/ui/queries"
_FORM_MAX = 8192


def page_user(request: Request, user: UserDep) -> Principal:
    """The signed-in user of a dashboard request (``get_user``: a 401 becomes the login
    page), kept for the page's header."""
    request.state.ui_user = user
    return user


def error_page(request: Request, status: int, error: RecordedError) -> Response:
    """Errors under /ui as pages: a 401 sends the browser to sign in and come back."""
    if status == 401:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        login = f"/ui/login?next={quote(target, safe='')}"
        if from_htmx(request):
            # A fragment's poll: htmx follows HX-Redirect with a full page load.
            return Response(status_code=401, headers={"HX-Redirect": login})
        return RedirectResponse(login, status_code=303)
    if from_htmx(request):
        return render(request, "_error.html", status=status, error=error)
    return render(request, "error.html", status=status, error=error, status_code=status)


@router.get("/ui/login")
def login_form(request: Request, node: NodeDep, next: str = HOME) -> Response:
    if not node.users.enabled:
        return RedirectResponse(_local(next), status_code=303)
    return render(request, "login.html", next=_local(next), error=None, name="")


@router.post("/ui/login")
async def login(request: Request, node: NodeDep) -> Response:
    """Sign in with a name and password, or a personal access token (with or without the
    name). Wrong credentials show the form again, with one message for every cause."""
    body = await request.body()
    form = {k: v[0] for k, v in parse_qs(body[:_FORM_MAX].decode("utf-8", "replace")).items()}
    name, secret = form.get("name", "").strip(), form.get("password", "")
    target = _local(form.get("next", HOME))
    if not node.users.enabled:
        return RedirectResponse(target, status_code=303)
    address = request.client.host if request.client is not None else None
    if not name and tokens.looks_like_token(secret):
        header = f"Bearer {secret}"
    else:
        header = "Basic " + base64.b64encode(f"{name}:{secret}".encode()).decode()
    try:
        user = await node.users.authenticate_later(header, address=address)
    except Unauthenticated:
        return render(
            request,
            "login.html",
            status=401,
            next=target,
            name=name,
            error="Wrong user name, password or token.",
        )
    ttl = node.settings.dashboard_session_ttl
    accounts = node.service.accounts
    cookie = await asyncio.to_thread(accounts.sign_in, user=user, secret=secret, ttl=ttl)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        DASHBOARD_COOKIE,
        cookie,
        max_age=int(ttl),
        path="/",
        httponly=True,
        samesite="strict",
        secure=node.settings.ssl_certfile is not None,
    )
    return response


@router.post("/ui/logout")
def logout(request: Request, node: NodeDep) -> Response:
    """Sign out: a token made at sign-in is revoked (not only forgotten by this browser); a
    token the user signed in with stays theirs."""
    node.service.accounts.sign_out(request.cookies.get(DASHBOARD_COOKIE, ""))
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie(DASHBOARD_COOKIE, path="/")
    return response


def _local(target: str) -> str:
    """Only a dashboard path: a login link must not send people to another site."""
    if target.startswith("/ui/") and not target.startswith("//") and "\\" not in target:
        return target
    return HOME
