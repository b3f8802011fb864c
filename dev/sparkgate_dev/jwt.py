"""A stand-in identity provider for tests and benchmarks: an RSA key pair, its public JWKS, and
RS256 tokens signed with it.

Example::

    issuer = JwtIssuer(kid="k1")
    issuer.write_jwks(tmp_path / "jwks.json")
    token = issuer.token("alice", groups=["analysts"], audience="sparkgate")
    forged = JwtIssuer(kid="k1").token("alice")  # same kid, another key: must not verify
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jwt as pyjwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


class JwtIssuer:
    def __init__(self, *, kid: str | None = None, key_size: int = 2048) -> None:
        self.kid = kid or uuid.uuid4().hex[:16]
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=key_size)

    def jwk(self) -> dict[str, Any]:
        """The public key as a JWK, with this issuer's ``kid``."""
        data = RSAAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        return {**data, "kid": self.kid, "use": "sig", "alg": "RS256"}

    def jwks(self, *others: JwtIssuer) -> dict[str, Any]:
        """The public JWKS: this issuer's key, then those of ``others`` (for rotation)."""
        return {"keys": [self.jwk(), *(other.jwk() for other in others)]}

    def write_jwks(self, path: Path, *others: JwtIssuer) -> Path:
        """Write the public JWKS atomically (a reader never sees half a file)."""
        staging = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        staging.write_text(json.dumps(self.jwks(*others)), encoding="utf-8")
        staging.replace(path)
        return path

    def public_pem(self) -> bytes:
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def token(
        self,
        sub: str,
        *,
        groups: Iterable[str] | None = None,
        expires_in: float = 300,
        issuer: str | None = None,
        audience: str | list[str] | None = None,
        kid: str | None = None,
        include_kid: bool = True,
        not_before: float | None = None,
        now: float | None = None,
        **claims: Any,
    ) -> str:
        """An RS256 token for ``sub``, expiring ``expires_in`` seconds after ``now`` (default:
        the current time). ``kid`` overrides the header's key id (``include_kid=False`` leaves it
        out); ``not_before`` is an absolute time; ``claims`` are added as they are (``exp=None``
        drops ``exp``)."""
        issued = time.time() if now is None else now
        payload: dict[str, Any] = {"sub": sub, "iat": int(issued), "exp": int(issued + expires_in)}
        if groups is not None:
            payload["groups"] = list(groups)
        if issuer is not None:
            payload["iss"] = issuer
        if audience is not None:
            payload["aud"] = audience
        if not_before is not None:
            payload["nbf"] = int(not_before)
        payload.update(claims)
        payload = {name: value for name, value in payload.items() if value is not None}
        headers = {"kid": kid or self.kid} if include_kid else None
        return pyjwt.encode(payload, self.private_key, algorithm="RS256", headers=headers)

    def forged(self, sub: str, **kwargs: Any) -> str:
        """A token naming this issuer's ``kid`` but signed by a different key."""
        return JwtIssuer(kid=self.kid).token(sub, **kwargs)
