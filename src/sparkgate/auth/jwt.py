"""JWT bearer tokens, verified against the identity provider's public keys (a JWKS).

The JWKS is a file (re-read when its modification time or size changes, or when a token names a
key it does not hold) or an ``https://`` URL (fetched on first use, cached, refetched after an
hour or when a token names an unknown key, at most once every ten seconds). ``http://`` is
accepted only for loopback hosts, for tests.

Only asymmetric algorithms that fit the key verify a token (RS*, PS*, ES256/384/512, EdDSA), so
neither ``alg: none`` nor an HS256 token "signed" with the public key gets through. A token that
does not verify is ``None`` (the reason is logged at debug level); a JWKS that cannot be loaded
raises :class:`~sparkgate.errors.ConfigurationError`, because an identity-provider outage is not
the caller's fault.

Example::

    authenticator = JwtAuthenticator(settings)
    identity = authenticator.verify_bearer(token)  # Identity(name, groups, via="jwt") or None
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt as pyjwt

from sparkgate.auth.principal import Identity
from sparkgate.errors import ConfigurationError
from sparkgate.settings import Settings

log = logging.getLogger("sparkgate.auth")

_RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
_EC_ALGORITHMS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}
_ASYMMETRIC_ALGORITHMS = _RSA_ALGORITHMS | frozenset(_EC_ALGORITHMS.values()) | {"EdDSA"}

# Three base64url segments; the signature may be empty (an unsigned token is still a JWT, and
# is refused as one). sparkgate's own tokens (``sgp_...``) never match.
_JWT_SHAPE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

_URL_REFRESH_INTERVAL = 10.0  # seconds between refetches for unknown kids
_URL_MAX_AGE = 3600.0  # refetch a URL JWKS this often, so that removed keys stop verifying
_FETCH_TIMEOUT = 10.0


@dataclass(frozen=True)
class _Key:
    kid: str | None
    algorithms: frozenset[str]
    key: Any  # a cryptography public key, from PyJWK


def _algorithms_for(jwk: pyjwt.PyJWK, data: dict[str, Any]) -> frozenset[str]:
    """The algorithms a key may verify: its own ``alg`` if it names one, else its family's."""
    if data.get("use", "sig") != "sig":
        return frozenset()
    if "alg" in data:
        return frozenset({jwk.algorithm_name}) & _ASYMMETRIC_ALGORITHMS
    if jwk.key_type == "RSA":
        return _RSA_ALGORITHMS
    if jwk.key_type == "EC":
        crv = data.get("crv")
        return frozenset({_EC_ALGORITHMS[crv]}) if crv in _EC_ALGORITHMS else frozenset()
    if jwk.key_type == "OKP":
        return frozenset({"EdDSA"})
    return frozenset()  # "oct": a shared secret has no place in a public key set


def _parse_jwks(text: str, source: str) -> tuple[_Key, ...]:
    """The usable signing keys of a JWKS document; ConfigurationError if there are none."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ConfigurationError(
            f"JWKS {source} is not valid JSON: {error}.", source=source
        ) from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ConfigurationError(
            f'JWKS {source} is not a JSON Web Key Set (expected {{"keys": [...]}}).',
            source=source,
        )
    keys: list[_Key] = []
    for data in document["keys"]:
        if not isinstance(data, dict):
            continue
        try:
            jwk = pyjwt.PyJWK(data)
        except pyjwt.PyJWTError as error:  # as PyJWKSet does: skip what cannot be a key
            log.debug("JWKS %s: skipping key %r: %s", source, data.get("kid"), error)
            continue
        algorithms = _algorithms_for(jwk, data)
        if algorithms:
            keys.append(_Key(jwk.key_id, algorithms, jwk.key))
        else:
            log.debug(
                "JWKS %s: skipping key %r (not an asymmetric signing key)", source, jwk.key_id
            )
    if not keys:
        raise ConfigurationError(
            f"JWKS {source} holds no asymmetric signing key (RSA, EC P-256/384/521 or OKP).",
            source=source,
        )
    return tuple(keys)


class _Invalid(Exception):
    """Why a token is refused; caught inside verify_bearer and logged at debug level."""


class JwtAuthenticator:
    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.time) -> None:
        source = settings.auth_jwt_jwks
        if not source:
            raise ConfigurationError(
                "JWT authentication needs a JWKS: set SPARKGATE_AUTH_JWT_JWKS to a file path or "
                "an https:// URL.",
                setting="SPARKGATE_AUTH_JWT_JWKS",
            )
        self.issuer = settings.auth_jwt_issuer
        self.audience = settings.auth_jwt_audience
        self.user_claim = settings.auth_jwt_user_claim
        self.leeway = settings.auth_jwt_leeway
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: tuple[_Key, ...] = ()
        self._loaded_at: float | None = None  # clock time of the last load, None before the first
        self._stamp: tuple[int, int] | None = None  # the file's (mtime_ns, size) when read
        self._raw: bytes | None = None  # the file's content when read
        self._failure: tuple[float, ConfigurationError] | None = None  # a URL's failed 1st fetch
        self.url: str | None = None
        self.path: Path | None = None
        if "://" in source:
            self.url = _check_url(source)
        else:
            self.path = Path(source).expanduser()
            self._refresh()  # a wrong path fails at start-up

    def verify_bearer(self, token: str) -> Identity | None:
        """The identity a valid JWT vouches for; None for an invalid token or one that is not a
        JWT at all. Raises ConfigurationError when the JWKS cannot be loaded."""
        if not _JWT_SHAPE.fullmatch(token):
            return None
        try:
            return self._verify(token)
        except _Invalid as reason:
            log.debug("JWT refused: %s", reason)
            return None

    def _verify(self, token: str) -> Identity:
        try:
            header = pyjwt.get_unverified_header(token)
        except pyjwt.PyJWTError as error:
            raise _Invalid(f"unreadable header: {error}") from None
        alg = header.get("alg")
        kid = header.get("kid")
        if not isinstance(alg, str) or alg not in _ASYMMETRIC_ALGORITHMS:
            raise _Invalid(f"algorithm {alg!r} is not allowed")
        if kid is not None and not isinstance(kid, str):
            raise _Invalid("kid is not a string")
        key = self._key_for(kid, self._current())
        if key is None and kid is not None:
            key = self._key_for(kid, self._refresh())
        if key is None:
            raise _Invalid(f"no key for kid {kid!r}")
        if alg not in key.algorithms:
            raise _Invalid(f"algorithm {alg} does not fit key {kid!r} ({sorted(key.algorithms)})")

        try:
            claims: dict[str, Any] = pyjwt.decode(
                token,
                key.key,
                algorithms=[alg],
                issuer=self.issuer,
                audience=self.audience,
                options={
                    "require": ["exp"],
                    # Times are checked below, against the injectable clock.
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                    # PyJWT refuses any token with an aud when no audience is expected.
                    "verify_aud": self.audience is not None,
                    "enforce_minimum_key_length": True,
                },
            )
        except pyjwt.PyJWTError as error:
            raise _Invalid(f"{type(error).__name__}: {error}") from None

        self._check_times(claims)
        name = claims.get(self.user_claim)
        if not isinstance(name, str) or not name:
            raise _Invalid(f"claim {self.user_claim!r} is missing or not a non-empty string")
        groups = claims.get("groups")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            groups = []
        return Identity(name=name, groups=frozenset(groups), via="jwt")

    def _check_times(self, claims: dict[str, Any]) -> None:
        now = self._clock()
        for claim in ("exp", "nbf", "iat"):
            value = claims.get(claim)
            if claim in claims and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise _Invalid(f"{claim} is not a finite number")
        if claims["exp"] <= now - self.leeway:
            raise _Invalid(f"expired {now - claims['exp']:.0f} s ago")
        if "nbf" in claims and claims["nbf"] > now + self.leeway:
            raise _Invalid(f"not valid for another {claims['nbf'] - now:.0f} s (nbf)")
        if "iat" in claims and claims["iat"] > now + self.leeway:
            raise _Invalid(f"issued {claims['iat'] - now:.0f} s in the future (iat)")

    @staticmethod
    def _key_for(kid: str | None, keys: tuple[_Key, ...]) -> _Key | None:
        if kid is None:
            return keys[0] if len(keys) == 1 else None
        return next((key for key in keys if key.kid == kid), None)

    # -- the key set ---------------------------------------------------------------------------

    def _current(self) -> tuple[_Key, ...]:
        """The keys to use now: re-read a changed file, fetch a URL the first time or when old."""
        if self.path is not None:
            if self._file_stamp() != self._stamp:
                return self._refresh()
        elif self._loaded_at is None or self._clock() - self._loaded_at >= _URL_MAX_AGE:
            return self._refresh()
        return self._keys

    def _refresh(self) -> tuple[_Key, ...]:
        """Load the key set again. A file is re-read every time (and parsed only when its bytes
        changed, since a rewrite may keep the mtime); a URL is refetched at most once every ten
        seconds, and a failed first fetch is retried no more often than that."""
        with self._lock:
            if self.path is not None:
                self._load_file()
                return self._keys
            assert self.url is not None
            now = self._clock()
            if self._failure is not None and now - self._failure[0] < _URL_REFRESH_INTERVAL:
                failure = self._failure[1]  # a fresh error: re-raising one grows its traceback
                raise ConfigurationError(failure.message, **failure.params)
            recent = self._loaded_at is not None and now - self._loaded_at < _URL_REFRESH_INTERVAL
            if recent:  # too soon, or another thread has just fetched it
                return self._keys
            try:
                self._keys = _parse_jwks(_fetch(self.url), f"at {self.url}")
            except ConfigurationError as error:
                if not self._keys:
                    self._failure = (now, error)
                    raise
                # The provider is down or serving garbage: keep verifying with the keys we have
                # rather than turning every request away.
                log.warning("%s Keeping the %d cached keys.", error.message, len(self._keys))
            self._failure = None
            self._loaded_at = now
            return self._keys

    def _load_file(self) -> None:
        assert self.path is not None
        stamp = self._file_stamp()
        if stamp is None:
            raise ConfigurationError(
                f"JWKS file {self.path} does not exist (SPARKGATE_AUTH_JWT_JWKS).",
                path=str(self.path),
            )
        try:
            raw = self.path.read_bytes()
        except OSError as error:
            raise ConfigurationError(
                f"JWKS file {self.path} cannot be read: {error.strerror}.", path=str(self.path)
            ) from None
        if raw != self._raw:
            try:
                text = raw.decode()
            except UnicodeDecodeError:
                raise ConfigurationError(
                    f"JWKS file {self.path} is not UTF-8 text.", path=str(self.path)
                ) from None
            self._keys = _parse_jwks(text, f"file {self.path}")
            self._raw = raw
        self._stamp = stamp

    def _file_stamp(self) -> tuple[int, int] | None:
        assert self.path is not None
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise ConfigurationError(
                f"JWKS file {self.path} cannot be read: {error.strerror}.", path=str(self.path)
            ) from None
        return stat.st_mtime_ns, stat.st_size


def _check_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS:
        return url
    raise ConfigurationError(
        f"SPARKGATE_AUTH_JWT_JWKS={url!r}: a JWKS URL must use https:// "
        "(http:// only for 127.0.0.1, localhost or [::1]).",
        setting="SPARKGATE_AUTH_JWT_JWKS",
    )


def _fetch(url: str) -> str:
    try:
        response = httpx.get(url, timeout=_FETCH_TIMEOUT, headers={"Accept": "application/json"})
        response.raise_for_status()
    except httpx.HTTPStatusError as error:
        raise ConfigurationError(
            f"JWKS at {url} answered HTTP {error.response.status_code}.", url=url
        ) from None
    except httpx.HTTPError as error:
        raise ConfigurationError(
            f"JWKS at {url} cannot be fetched: {type(error).__name__}: {error}.", url=url
        ) from None
    return response.text
