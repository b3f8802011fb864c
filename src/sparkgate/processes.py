"""Whether a process of ours still runs: the one check the cluster script, the metastore and
``sparkgate stop`` make on the pids they recorded."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int | None) -> bool:
    """``pid`` runs (a zombie, exited but not yet reaped by whoever started it, does not)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it runs
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (not Linux): kill(0) is all we know
    # The state is the first field after the command name, which is in parentheses and may
    # itself hold ") ".
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
