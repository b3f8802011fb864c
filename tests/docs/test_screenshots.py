"""``python -m sparkgate_dev.screenshots OUTDIR`` takes every screenshot the documentation
shows (docs/images/ is where ``scripts/docs screenshots`` puts them), each a real image.

A real server with an engine, sample data and a stream job, and Debian's chromium: a few
minutes on two cores.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from sparkgate_dev.browser import chromium

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

NAMES = (
    "dashboard-queries",
    "dashboard-query",
    "dashboard-worksheet",
    "dashboard-catalog",
    "dashboard-stream",
    "dashboard-usage",
    "dashboard-access-history",
)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_every_screenshot_is_taken(tmp_path: Path) -> None:
    if chromium() is None:
        pytest.skip(
            "Debian's chromium is not installed (scripts/install --test installs it with "
            "apt-get when run as root); the screenshots are taken in it"
        )
    done = subprocess.run(
        [sys.executable, "-m", "sparkgate_dev.screenshots", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    assert sorted(p.stem for p in tmp_path.glob("*.png")) == sorted(NAMES)
    for name in NAMES:
        data = (tmp_path / f"{name}.png").read_bytes()
        assert data.startswith(PNG_SIGNATURE), name
        # The header's size (IHDR: width, height): a page, not an empty frame.
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 1000 and height >= 500, (name, width, height)
        assert len(data) > 10_000, (name, len(data))
