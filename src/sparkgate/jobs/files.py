"""The files a deploy reads. The CLI reads them and sends their text; the server checks them,
and names every problem it finds where it is (``errors.jobs.ManifestError``: file, field,
line), so all of them can be listed at once and fixed in one go.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SourceFile:
    """A file as the user named it, and its text: ``SourceFile("jobs/clicks.yaml", "...")``."""

    path: str
    content: str
