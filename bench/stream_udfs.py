"""The benchmark's failure injector, registered in engines through ``udf_modules``.

``fail_once(value, '100,300', dir)`` raises on each listed value the first time it sees it
(leaving a marker file in ``dir``), so a query fails at known points and gets through on the
replay. The message carries the time of the raise, to measure how fast failures are noticed.
"""

from __future__ import annotations

import os
import time
from typing import Any


def fail_once(value: int, bad: str, directory: str) -> int:
    if str(value) in bad.split(","):
        marker = os.path.join(directory, str(value))
        try:
            with open(marker, "x"):
                pass
        except FileExistsError:
            return value
        raise ValueError(f"injected failure at row {value}, raised at {time.time():.6f}")
    return value


def register(spark: Any) -> None:
    spark.udf.register("fail_once", fail_once, "bigint")
