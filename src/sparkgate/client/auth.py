"""Which credentials the client sends, first found wins: ``token=`` or ``user=``/``password=``;
``SPARKGATE_TOKEN``; ``SPARKGATE_USER`` with ``SPARKGATE_PASSWORD``; the token ``sparkgate
login`` stored for the server. A token is sent as ``Authorization: Bearer``, a user and
password as Basic.

Apart from the transport because it is a lookup done once, when the client is made, from the
arguments, the environment and the stored tokens; the transport only sends what it returns.
"""

from __future__ import annotations

import os
from collections.abc import Generator

import httpx

from sparkgate import credentials

PERSONAL_TOKEN_PREFIX = "sgp_"


class BearerAuth(httpx.Auth):
    def __init__(self, token: str) -> None:
        self.personal = token.startswith(PERSONAL_TOKEN_PREFIX)
        self._header = f"Bearer {token}"

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self._header
        yield request


def find_auth(
    server: str, user: str | None, password: str | None, token: str | None
) -> tuple[httpx.Auth | None, str | None, str | None]:
    """The auth to send, where it came from, and the user it names (when known)."""
    if token is not None and (user is not None or password is not None):
        raise ValueError("Client: pass token= or user= and password=, not both.")
    if token is not None:
        return BearerAuth(token), "argument", None
    if user is not None or password is not None:
        password = password if password is not None else os.environ.get("SPARKGATE_PASSWORD")
        if user is None or password is None:
            raise ValueError("Client: user= needs password= (or SPARKGATE_PASSWORD), and back.")
        return httpx.BasicAuth(user, password), "argument", user
    env_token = os.environ.get("SPARKGATE_TOKEN")
    if env_token:
        return BearerAuth(env_token), "SPARKGATE_TOKEN", None
    env_user, env_password = os.environ.get("SPARKGATE_USER"), os.environ.get("SPARKGATE_PASSWORD")
    if env_user and env_password:
        return httpx.BasicAuth(env_user, env_password), "SPARKGATE_USER", env_user
    stored = credentials.load(server)
    if stored is not None:
        return BearerAuth(stored.token), f"stored ({credentials.path()})", stored.user
    return None, None, None
