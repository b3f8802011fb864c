"""The doors a statement comes through, as the access history names them, and how the native
API's own command line says it is the one calling (its User-Agent)."""

from __future__ import annotations

from typing import Literal, get_args

DoorName = Literal["rest", "cli", "dashboard", "livy", "hive2", "connect", "stream", "job"]
DOORS: tuple[str, ...] = get_args(DoorName)

CLI_AGENT = "sparkgate-cli"
