"""Who am I, and personal access tokens: ``/v1/whoami``, ``/v1/tokens``."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from sparkgate.http.deps import ServiceDep, UserDep
from sparkgate.http.openapi import refusals
from sparkgate.http.params import Id
from sparkgate.schemas.users import NewToken, Token, TokenList, Whoami
from sparkgate.service.views import principal_view

router = APIRouter(tags=["users"])

MAX_TOKEN_LIFETIME = 10 * 365 * 86_400.0


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, max_length=255)
    # Ten years at most: a datetime beyond year 9999 cannot be shown, and such a token was
    # stored and then broke every read of the token list.
    expires_in: float | None = Field(
        default=None,
        strict=True,  # a number: not true (1 s), not "60"
        gt=0,
        le=MAX_TOKEN_LIFETIME,
        allow_inf_nan=False,
        description="Seconds until the token expires (at most ten years); none: never.",
    )


@router.get("/v1/whoami", response_model=Whoami)
def whoami(user: UserDep) -> Whoami:
    """``{"user", "groups", "admin", "rights", "via"}``: who the credentials say you are."""
    return principal_view(user)


@router.post(
    "/v1/tokens",
    status_code=201,
    response_model=NewToken,
    responses=refusals(
        {
            403: "Authentication is off (`SPARKGATE_AUTH=none`), or the request was "
            "authenticated with a token: tokens cannot make tokens."
        }
    ),
)
def create_token(body: TokenCreate, service: ServiceDep, user: UserDep) -> NewToken:
    """A personal access token: ``{"name": "laptop", "expires_in": 2592000}``. The secret is in
    this answer only (the store keeps its hash); use it as ``Authorization: Bearer <token>`` or
    as the password in Basic auth."""
    made = service.accounts.create_token(user=user, name=body.name, expires_in=body.expires_in)
    return NewToken.made(made.record, made.secret)


@router.get("/v1/tokens", response_model=TokenList)
def list_tokens(service: ServiceDep, user: UserDep, owner: str | None = None) -> TokenList:
    """Your tokens (admins: everyone's, or ``?owner=``), without their secrets."""
    return TokenList(tokens=[Token.of(r) for r in service.accounts.tokens(user=user, owner=owner)])


@router.delete("/v1/tokens/{token_id}", response_model=Token)
def revoke_token(token_id: Id, service: ServiceDep, user: UserDep) -> Token:
    """Revoke a token: it stops working at once. Revoking it again changes nothing."""
    return Token.of(service.accounts.revoke_token(token_id, user=user))
