"""Where two-phase table writes put their data, and removing it again.

Staging and versions live beside the table, in its database's directory, so that making data
visible is a rename within one filesystem (never a copy) and a crash leaves nothing outside
the places the store records.

    staging_table_name("20261122t101500_3f9a2c") -> "sparkgate_staging_20261122t101500_3f9a2c"
    version_dir_name("sales", "20261122t101500_3f9a2c")
    -> "sales-sparkgate-20261122t101500-3f9a2c"

A version directory's name has hyphens, which no session-catalog table name may have, so it
can never be another table's default location; neither name starts with ``_`` or ``.``,
which Spark and Hadoop treat as hidden.

The protocol needs a filesystem it can rename in and list directly (``file:`` paths, which
also covers a shared mount); other schemes fall back to Spark's plain behaviour.
"""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from urllib.parse import unquote, urlparse


def new_token(now: float) -> str:
    """Unique, and sorting by time: ``20261122t101500_3f9a2c`` (lower case: Hive's names)."""
    return f"{time.strftime('%Y%m%dt%H%M%S', time.gmtime(now))}_{uuid.uuid4().hex[:6]}"


STAGING_PREFIX = "sparkgate_staging_"


def staging_table_name(token: str) -> str:
    return f"{STAGING_PREFIX}{token}".lower()


def version_dir_name(table: str, token: str) -> str:
    return f"{table}-sparkgate-{token.replace('_', '-')}".lower()


def child(location: str, name: str) -> str:
    """``child("file:/w/db.db", "t") -> "file:/w/db.db/t"``"""
    return f"{location.rstrip('/')}/{name}"


def local_path(location: str) -> Path | None:
    """The local path of a ``file:`` location (or a bare absolute path); None for others."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file") and parsed.netloc in ("", "localhost"):
        path = unquote(parsed.path)
        return Path(path) if path.startswith("/") else None
    return None


def is_local(location: str | None) -> bool:
    return location is not None and local_path(location) is not None


def occupied(location: str) -> bool:
    """True if something is at ``location`` (Spark refuses to put a managed table on a
    non-empty directory)."""
    path = local_path(location)
    if path is None or not path.exists():
        return False
    return not path.is_dir() or any(path.iterdir())


def remove(location: str) -> bool:
    """Remove the directory (or file) at a local location; True once nothing is there."""
    path = local_path(location)
    if path is None:
        return False
    if len(path.parts) < 3:  # never "/" or "/x", whatever a record says
        raise ValueError(f"refusing to remove {path}")
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
    # Spark writes checksum companions beside some outputs (".name.crc").
    path.with_name(f".{path.name}.crc").unlink(missing_ok=True)
    return not path.exists()
