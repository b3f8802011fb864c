"""What a table's files are at one moment, cheaply: how many, how large, and the latest change
of any of them or of the folders holding them (a file removed changes its folder), with the
table folder's identity (a table dropped and made again at the same place gets a new folder).

Result reuse keeps this with a result and compares it at lookup, so a table changed outside
sparkgate (another Spark writing its files, a table dropped and recreated in the metastore) is
seen without asking Spark. Only local and shared-file-system locations can be looked at; any
other (``hdfs://``, ``s3a://``) gives None, and a result reading one is not kept.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import unquote, urlparse


@dataclass(frozen=True)
class FilesState:
    count: int
    size: int
    latest_ns: int  # the latest modification, of a file or a folder, in ns since the epoch
    identity: str  # the table folder's device and inode

    @property
    def digest(self) -> str:
        return f"{self.count}:{self.size}:{self.latest_ns}:{self.identity}"


def local_path(location: str) -> str | None:
    """The path of a ``file:`` URI or a plain absolute path; None for any other scheme."""
    parsed = urlparse(location)
    if parsed.scheme in ("", "file") and parsed.path.startswith("/"):
        return unquote(parsed.path)
    return None


def files_state(location: str) -> FilesState | None:
    """The state of the files under ``location``; None when it cannot be looked at (another
    scheme, not a folder)."""
    path = local_path(location)
    if path is None:
        return None
    try:
        root = os.stat(path)
    except OSError:
        return None
    count = size = 0
    latest = root.st_mtime_ns
    pending = [path]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    info = entry.stat(follow_symlinks=False)
                    latest = max(latest, info.st_mtime_ns)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif not entry.name.startswith((".", "_")):
                        # Spark's readers skip hidden files (checksums, _SUCCESS): so do we
                        # for the counts; their changes still move ``latest``.
                        count += 1
                        size += info.st_size
        except OSError:
            return None
    return FilesState(count, size, latest, f"{root.st_dev}:{root.st_ino}")
