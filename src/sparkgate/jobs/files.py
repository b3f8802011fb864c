"""The files a deploy reads, and a problem found in one of them (file, field, line).

The CLI reads the files and sends their text; the server checks them. Every problem names
where it is, so all of them can be listed at once and fixed in one go.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceFile:
    """A file as the user named it, and its text: ``SourceFile("jobs/clicks.yaml", "...")``."""

    path: str
    content: str


@dataclass(frozen=True)
class ManifestError:
    """A problem in a manifest, the template or a definitions file."""

    file: str
    field: str | None  # "retry.max-attempts", "sources.0", "statement 3"; None: the file
    line: int | None  # 1-based; None when the problem has no place (a missing field)
    message: str

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        what = f" {self.field}:" if self.field else ""
        return f"{where}:{what} {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "field": self.field, "line": self.line, "message": self.message}
