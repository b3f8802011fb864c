"""Tokens that ``sparkgate login`` keeps, one per server URL.

The file is ``$XDG_CONFIG_HOME/sparkgate/credentials.json`` (``~/.config/sparkgate`` when unset):
``{"http://host:8998": {"user": "alice", "token": "sgp_...", "token_id": "..."}}``. It holds
secrets, so the directory is created 0700 and the file is always written 0600, whole, through a
temporary file and a rename.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class CredentialsError(Exception):
    """The credentials file exists but cannot be read as one."""


@dataclass(frozen=True)
class StoredCredentials:
    user: str | None
    token: str
    token_id: str | None


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if base.strip() else Path.home() / ".config"
    return root / "sparkgate"


def path() -> Path:
    return config_dir() / "credentials.json"


def node_urls(server: str) -> list[str]:
    """The node URLs in ``server`` (one, or several comma-separated), without trailing /."""
    return [part.strip().rstrip("/") for part in server.split(",") if part.strip()]


def server_key(server: str) -> str:
    """The key a server URL (or a comma-separated list of nodes) is stored under:
    ``http://h:1/`` and ``http://h:1`` are one."""
    return ",".join(node_urls(server))


def load(server: str) -> StoredCredentials | None:
    """What ``sparkgate login`` stored for ``server``; None when it stored nothing."""
    entry = _read().get(server_key(server))
    if entry is None:
        return None
    token = entry.get("token") if isinstance(entry, dict) else None
    if not isinstance(token, str) or not token:
        raise CredentialsError(
            f"{path()}: the entry for {server_key(server)} has no token; "
            f"run `sparkgate logout --server {server_key(server)}` and log in again."
        )
    user, token_id = entry.get("user"), entry.get("token_id")
    return StoredCredentials(
        user=str(user) if user is not None else None,
        token=token,
        token_id=str(token_id) if token_id is not None else None,
    )


def save(server: str, user: str | None, token: str, token_id: str | int | None) -> Path:
    """Store a token for ``server`` (replacing any other); the file it is in."""
    entries = _read()
    entries[server_key(server)] = {
        "user": user,
        "token": token,
        "token_id": str(token_id) if token_id is not None else None,
    }
    _write(entries)
    return path()


def forget(server: str) -> bool:
    """Remove what is stored for ``server``; whether there was anything."""
    entries = _read()
    if entries.pop(server_key(server), None) is None:
        return False
    _write(entries)
    return True


def _read() -> dict[str, Any]:
    file = path()
    try:
        text = file.read_text()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CredentialsError(f"cannot read {file}: {exc.strerror or exc}") from exc
    try:
        entries = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise CredentialsError(
            f"{file} is not valid JSON ({exc}); fix or delete it and log in again."
        ) from exc
    if not isinstance(entries, dict):
        raise CredentialsError(f"{file} should hold a JSON object of server URLs; delete it.")
    return entries


def _write(entries: dict[str, Any]) -> None:
    file = path()
    file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    # Created 0600 from the start (not chmod-ed after): the secret is never readable by others.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(entries, out, indent=2, sort_keys=True)
            out.write("\n")
        os.chmod(tmp, 0o600)  # O_CREAT's mode does not apply to a leftover tmp file
        os.replace(tmp, file)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
