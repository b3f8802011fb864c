"""A Python UDF for the streaming end-to-end tests, registered through ``udf_modules``.

``fail_on(value, '30,31', '/tmp/flag')`` raises on the chosen values until the flag file
exists, then lets every row through: a query made to fail, fixed from outside.
"""

from __future__ import annotations

import os
from typing import Any


def fail_on(value: int, bad: str, flag: str) -> int:
    if str(value) in bad.split(",") and not os.path.exists(flag):
        raise ValueError(f"bad row {value}")
    return value


def register(spark: Any) -> None:
    spark.udf.register("fail_on", fail_on, "bigint")
