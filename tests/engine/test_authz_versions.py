"""The extension keeps a decision about a table a second, and only for that very table: one
dropped and made again under the same name, in this engine or another, is asked about afresh
(a grant on the old table must not open the new one)."""

from __future__ import annotations

import json
import time
from typing import Any

from pyspark.java_gateway import ensure_callback_server_started

from sparkgate.engine.authz.decider import _authz

# Hive's metastore keeps creation times in seconds: the extension trusts a table's version
# once the table is two seconds old (Authz.SettledMillis).
SETTLED_S = 2.1


class Answers:
    """The policy, as the JVM asks it: what ``privileges`` says now, counted."""

    class Java:
        implements = ["sparkgate.authz.Decider"]

    def __init__(self) -> None:
        self.privileges = ["SELECT"]
        self.asked = 0

    def active(self) -> bool:
        return True

    def decide(self, user: str, catalog: str, schema: str, table: str) -> str:
        self.asked += 1
        return json.dumps(
            {"privileges": self.privileges, "hidden": [], "masks": {}, "filter": None}
        )


def _privileges(module: Any, spark: Any, name: str) -> tuple[str, list[str]]:
    session = spark._jsparkSession
    table = (
        session.sessionState()
        .catalog()
        .getTableMetadata(session.sessionState().sqlParser().parseTableIdentifier(name))
    )
    obj = module.objOf(session, table)
    decision = module.decision("alice", obj)
    held = decision.privileges().mkString(",")
    return obj.version(), sorted(held.split(",")) if held else []


def test_a_kept_decision_never_answers_for_a_new_table_of_the_same_name(spark: Any) -> None:
    gateway = spark.sparkContext._gateway
    ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    module = _authz(spark)
    answers = Answers()
    module.install(answers)
    try:
        spark.sql("DROP TABLE IF EXISTS default.versions_t")
        spark.sql("CREATE TABLE default.versions_t (x INT) USING parquet")
        version, _ = _privileges(module, spark, "default.versions_t")
        assert version == "", "a table made a moment ago has no version to keep a decision by"
        time.sleep(SETTLED_S)
        old_version, privileges = _privileges(module, spark, "default.versions_t")
        assert old_version and privileges == ["SELECT"]

        # Dropped and made again at once: the store now grants alice nothing on it.
        answers.privileges = []
        spark.sql("DROP TABLE default.versions_t")
        spark.sql("CREATE TABLE default.versions_t (x INT) USING parquet")
        asked = answers.asked
        assert _privileges(module, spark, "default.versions_t") == ("", [])
        assert answers.asked == asked + 1

        time.sleep(SETTLED_S)
        new_version, privileges = _privileges(module, spark, "default.versions_t")
        assert new_version and new_version != old_version
        assert privileges == []
    finally:
        module.install(None)
        spark.sql("DROP TABLE IF EXISTS default.versions_t")
