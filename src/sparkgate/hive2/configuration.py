"""What a HiveServer2 client asks of a session in OpenSession's configuration."""

from __future__ import annotations

from sparkgate.tags import SETTING as TAGS_SETTING


def session_settings(
    configuration: dict[str, str],
) -> tuple[dict[str, str], list[str], str | None]:
    """OpenSession's configuration as (Spark conf, statements to run first, proxy user).

    ``set:hiveconf:spark.*`` are Spark settings (checked against the denied ones); other
    ``set:hiveconf:`` keys are Hive client hints (fetch sizes...) with no meaning for Spark;
    ``set:hivevar:`` are variables for ``${name}``, set with SET; ``use:database`` is a USE.
    """
    conf: dict[str, str] = {}
    setup: list[str] = []
    proxy_user = None
    for key, value in configuration.items():
        if key.startswith("set:hiveconf:"):
            name = key.removeprefix("set:hiveconf:")
            if name.startswith("spark.") or name == TAGS_SETTING:
                conf[name] = value
        elif key.startswith("set:hivevar:"):
            setup.append(f"SET {key.removeprefix('set:hivevar:')}={value}")
        elif key == "hive.server2.proxy.user" and value:
            proxy_user = value
        elif key.startswith("spark.") or key == TAGS_SETTING:
            conf[key] = value
    database = configuration.get("use:database")
    if database and database.lower() != "default":
        setup.append(f"USE `{database.replace('`', '``')}`")
    return conf, setup, proxy_user
