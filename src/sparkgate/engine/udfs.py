"""Python UDFs for SQL: the modules named in ``udf_modules`` are imported once per engine, and
each one's ``register(spark)`` is called in every session the engine opens.

    # mycompany/udfs.py, on the engines' Python path (and the executors')
    def normalize(text: str) -> str: ...
    def register(spark):
        spark.udf.register("normalize", normalize, "string")

    SPARKGATE_UDF_MODULES='["mycompany.udfs"]' sparkgate server
    -- then, in any session or stream job: SELECT normalize(name) FROM people
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sparkgate.errors import ConfigurationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def register_udfs(spark: SparkSession, modules: Iterable[str]) -> None:
    """Call ``register(spark)`` of every module; a module that cannot be imported, or has no
    ``register``, is a configuration error that names it."""
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            raise ConfigurationError(
                f"UDF module '{name}' (udf_modules) cannot be imported: {exc}. It must be on "
                "the engines' Python path.",
                module=name,
            ) from exc
        register = getattr(module, "register", None)
        if not callable(register):
            raise ConfigurationError(
                f"UDF module '{name}' (udf_modules) has no register(spark) function.",
                module=name,
            )
        register(spark)
