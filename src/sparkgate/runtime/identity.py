"""Whose table rules a Spark session's plans meet (the engine's SQL extension reads it:
sparkgate.engine.authz): the session's sparkgate user, kept in its conf so that the session's
clones (a stream's batches, a cache's plans) carry it along. Users cannot set it (a denied
setting, and refused by the extension in SQL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

USER_KEY = "sparkgate.user"
SYSTEM_USER = "@system"  # the engine's own work: never checked
ANONYMOUS = "anonymous"  # a session without authentication


def bind(spark: SparkSession, user: str | None) -> None:
    spark.conf.set(USER_KEY, user or ANONYMOUS)


@contextmanager
def as_engine(spark: SparkSession) -> Iterator[None]:
    """sparkgate's own steps of a user's statement (writing a checked, analyzed plan to the
    place sparkgate chose): unchecked, then the session is the user's again. A session runs
    one statement at a time, so nothing of the user's runs meanwhile."""
    user = spark.conf.get(USER_KEY, None)
    spark.conf.set(USER_KEY, SYSTEM_USER)
    try:
        yield
    finally:
        if user is None:
            spark.conf.unset(USER_KEY)
        else:
            spark.conf.set(USER_KEY, user)
