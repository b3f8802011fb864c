"""The password file: ``user:bcrypt-hash`` lines, as ``htpasswd -B`` writes them.

Re-read when it changes (another inode, modification time or size; and, while it was written
too recently for its timestamp to tell two writes apart, on every read), so users are added,
changed and removed without a restart. ``$2a$``, ``$2b$`` and ``$2y$`` hashes all verify
(``$2y$`` is PHP's and Apache's name for what bcrypt calls ``$2b$``).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from pathlib import Path

import bcrypt

from sparkgate.auth.principal import Identity
from sparkgate.errors import ConfigurationError

# A hash to compare against for unknown users, so that an unknown name costs as much time as a
# wrong password and the two cannot be told apart.
_DUMMY_HASH = bcrypt.hashpw(b"sparkgate-no-such-user", bcrypt.gensalt(rounds=10))

# A file modified this recently may be rewritten in place within the same timestamp tick (the
# kernel's clock for file times is coarse) at the same size (bcrypt hashes are all 60
# characters): its stamp cannot tell, so it is read again until it is older than this.
_RACY_NS = 2_000_000_000


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
        self._stamp: tuple[int, int, int] | None = None  # (inode, mtime_ns, size) when read
        self._racy = False  # read while recent enough that a rewrite could keep the stamp
        self._digest: bytes | None = None  # of the content parsed, so a touch parses nothing
        self._users: dict[str, str] = {}

    def users(self) -> dict[str, str]:
        """The file's users and hashes, re-read when the file changed."""
        return dict(self._current())

    def hash_of(self, name: str) -> str | None:
        """The user's hash as the file holds it now (None: not a user): what a credential
        verified against it stays valid for."""
        return self._current().get(name)

    def _current(self) -> dict[str, str]:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return {}
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if stamp != self._stamp or self._racy:
                raw = self.path.read_bytes()
                digest = hashlib.sha256(raw).digest()
                if digest != self._digest:
                    self._users = parse(raw.decode(), str(self.path))
                    self._digest = digest
                self._stamp = stamp
                self._racy = time.time_ns() - stat.st_mtime_ns < _RACY_NS
            return self._users

    def verify(self, name: str, password: str) -> Identity | None:
        hashed = self.hash_of(name)
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
