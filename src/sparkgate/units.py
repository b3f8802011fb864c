"""Figures as people read them, the same in the CLI and the dashboard."""

from __future__ import annotations

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def byte_size(count: int | float) -> str:
    """``512 B``, ``1.5 KiB``, ``20.0 MiB``: powers of 1024, as Spark's UI shows sizes."""
    if count < 1024:
        return f"{int(count)} B"
    value = float(count)
    for unit in _UNITS:
        value /= 1024
        if value < 1024 or unit == _UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")
