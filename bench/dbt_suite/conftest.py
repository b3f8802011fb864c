"""The dbt adapter conformance suite: dbt-tests-adapter's base classes against one HiveServer2
server (Spark Thrift Server or sparkgate), through dbt-spark's ``thrift`` method (PyHive).

bench/dbt_conformance.py starts the server and sets the environment this profile reads:
DBT_CONFORMANCE_PORT (required), DBT_CONFORMANCE_HOST (127.0.0.1), DBT_CONFORMANCE_USER (dbt),
and, for a server with authentication, DBT_CONFORMANCE_AUTH (PyHive's auth, e.g. LDAP or CUSTOM)
and DBT_CONFORMANCE_PASSWORD.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

pytest_plugins = ["dbt.tests.fixtures.project"]


@pytest.fixture(scope="class")
def dbt_profile_target() -> dict[str, Any]:
    """dbt-spark's ``apache_spark`` test profile, pointed at the server under test (the
    project fixture adds the test's unique schema)."""
    target: dict[str, Any] = {
        "type": "spark",
        "method": "thrift",
        "host": os.environ.get("DBT_CONFORMANCE_HOST", "127.0.0.1"),
        "port": int(os.environ["DBT_CONFORMANCE_PORT"]),
        "user": os.environ.get("DBT_CONFORMANCE_USER", "dbt"),
        "connect_retries": 3,
        "connect_timeout": 10,
        "retry_all": True,
    }
    if os.environ.get("DBT_CONFORMANCE_AUTH"):
        target["auth"] = os.environ["DBT_CONFORMANCE_AUTH"]
    if os.environ.get("DBT_CONFORMANCE_PASSWORD"):
        target["password"] = os.environ["DBT_CONFORMANCE_PASSWORD"]
    return target
