"""The password file: ``user:bcrypt-hash`` lines, as ``htpasswd -B`` writes them.

Re-read when its modification time or size changes, so users are added and removed without a
restart. ``$2a$``, ``$2b$`` and ``$2y$`` hashes all verify (``$2y$`` is PHP's and Apache's name
for what bcrypt calls ``$2b$``).
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

import bcrypt

from sparkgate.auth.principal import Identity
from sparkgate.errors import ConfigurationError

# A hash to compare against for unknown users, so that an unknown name costs as much time as a
# wrong password and the two cannot be told apart.
_DUMMY_HASH = bcrypt.hashpw(b"sparkgate-no-such-user", bcrypt.gensalt(rounds=10))


def hash_password(password: str, *, rounds: int = 12) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=rounds)).decode()


def check_password(password: str, hashed: str) -> bool:
    candidate = hashed.encode()
    if candidate.startswith(b"$2y$"):
        candidate = b"$2b$" + candidate[4:]
    try:
        return bcrypt.checkpw(password.encode(), candidate)
    except ValueError:  # not a bcrypt hash: a line we cannot verify never matches
        return False


def parse(text: str, source: str = "password file") -> dict[str, str]:
    users: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, hashed = line.partition(":")
        if not sep or not name or not hashed.startswith(("$2a$", "$2b$", "$2y$")):
            raise ConfigurationError(
                f"{source}, line {number}: expected user:bcrypt-hash (htpasswd -B), "
                f"got {line[:40]!r}.",
                line=number,
            )
        users[name] = hashed
    return users


class PasswordFile:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._users: dict[str, str] = {}

    def users(self) -> dict[str, str]:
        """The file's users and hashes, re-read when the file changed."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        stamp = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if stamp != self._stamp:
                self._users = parse(self.path.read_text(), str(self.path))
                self._stamp = stamp
            return dict(self._users)

    def verify(self, name: str, password: str) -> Identity | None:
        hashed = self.users().get(name)
        if hashed is None:
            check_password(password, _DUMMY_HASH.decode())
            return None
        return Identity(name, via="password") if check_password(password, hashed) else None

    # -- editing (``sparkgate users``) ---------------------------------------------------

    def set(self, name: str, password: str) -> None:
        if not name or ":" in name or any(c.isspace() for c in name):
            raise ConfigurationError(f"Invalid user name {name!r}: no colons or spaces.")
        users = self.users()
        users[name] = hash_password(password)
        self._write(users)

    def remove(self, name: str) -> bool:
        users = self.users()
        if users.pop(name, None) is None:
            return False
        self._write(users)
        return True

    def _write(self, users: dict[str, str]) -> None:
        # Written whole to a temporary file and renamed: a server reading it never sees half.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".passwords-")
        with os.fdopen(fd, "w") as out:
            out.writelines(f"{name}:{hashed}\n" for name, hashed in sorted(users.items()))
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
