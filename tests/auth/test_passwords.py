"""The password file: htpasswd -B hashes, edits, and re-reading on change."""

from __future__ import annotations

import os
from pathlib import Path

import bcrypt
import pytest

from sparkgate.auth.passwords import PasswordFile, check_password, hash_password, parse
from sparkgate.errors import ConfigurationError


@pytest.mark.parametrize("prefix", [b"$2a$", b"$2b$", b"$2y$"])
def test_every_bcrypt_prefix_verifies(prefix: bytes) -> None:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4))
    variant = (prefix + hashed[4:]).decode()
    assert check_password("pw", variant)
    assert not check_password("other", variant)


def test_lines_that_are_not_bcrypt_are_refused_with_the_line() -> None:
    with pytest.raises(ConfigurationError, match="line 2"):
        parse("alice:$2b$04$abcdefghijklmnopqrstuu\nbob:{SHA}xyz\n")
    assert parse("# comment\n\nalice:$2y$04$x\n") == {"alice": "$2y$04$x"}


def test_verify_add_remove_and_reread(tmp_path: Path) -> None:
    path = tmp_path / "passwords"
    passwords = PasswordFile(path)
    assert passwords.verify("alice", "pw") is None  # no file yet
    passwords.set("alice", "pw")
    assert path.stat().st_mode & 0o777 == 0o600
    identity = passwords.verify("alice", "pw")
    assert identity is not None and identity.name == "alice" and identity.via == "password"
    assert passwords.verify("alice", "wrong") is None
    assert passwords.verify("nobody", "pw") is None
    # Another writer (htpasswd, another process): picked up without restart.
    path.write_text(path.read_text() + f"bob:{hash_password('bob-pw', rounds=4)}\n")
    assert PasswordFile(path).users().keys() == {"alice", "bob"}
    assert passwords.verify("bob", "bob-pw") is not None
    assert passwords.remove("bob") and not passwords.remove("bob")
    assert passwords.verify("bob", "bob-pw") is None


def test_a_rewrite_in_place_that_keeps_size_and_mtime_is_read(tmp_path: Path) -> None:
    path = tmp_path / "passwords"
    first, second = hash_password("one", rounds=4), hash_password("two", rounds=4)
    assert len(first) == len(second)  # bcrypt: a changed password keeps the file's size
    path.write_text(f"alice:{first}\n")
    passwords = PasswordFile(path)
    assert passwords.hash_of("alice") == first
    before = path.stat()
    with path.open("r+") as out:  # same inode, same size
        out.write(f"alice:{second}\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same timestamp tick
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_ino == before.st_ino
    assert passwords.hash_of("alice") == second
    assert passwords.verify("alice", "two") is not None and passwords.verify("alice", "one") is None


def test_names_with_colons_or_spaces_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError):
        PasswordFile(tmp_path / "p").set("a:b", "pw")
