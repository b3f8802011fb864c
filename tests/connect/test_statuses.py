"""An engine's Spark Connect error as the door hands it on: every text in it without the plan
Spark appended (the status's message, the ErrorInfo's parameters and stack trace, the whole
error FetchErrorDetails answers), the rest as the engine sent it."""

from __future__ import annotations

import json

from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from pyspark.sql.connect.proto import base_pb2

from sparkgate.connect.statuses import error_details_without_plan, status_without_plan

MESSAGE = "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column `ssn` cannot be resolved. SQLSTATE: 42703"
PLAN = (
    "'Project ['ssn]\n"
    "+- Project [concat(substr(name#38, 1, 1), ***) AS name#42, region#39]\n"
    "   +- Filter (region#39 = EU)\n"
    "      +- Relation spark_catalog.hr.salaries[name#38,region#39,ssn#41] parquet"
)
WITH_PLAN = f"{MESSAGE}; line 1 pos 7;\n{PLAN}"
FRAME = "\tat a.B.c(B.java:1)"
SIGNS = ("#3", "#4", "Filter", "Relation", "substr", "+- ")


def _clean(text: str) -> bool:
    return not any(sign in text for sign in SIGNS)


def test_a_status_keeps_its_class_and_parameters_and_loses_the_plan() -> None:
    info = error_details_pb2.ErrorInfo(
        reason="org.apache.spark.sql.catalyst.ExtendedAnalysisException",
        domain="org.apache.spark",
        metadata={
            "errorClass": "UNRESOLVED_COLUMN.WITH_SUGGESTION",
            "sqlState": "42703",
            "errorId": "5f0c",
            "messageParameters": json.dumps({"objectName": "`ssn`", "treeNode": PLAN}),
            "stackTrace": f"org.apache.spark.sql.AnalysisException: {WITH_PLAN}\n{FRAME}",
        },
    )
    detail = any_pb2.Any()
    detail.Pack(info)
    status = status_pb2.Status(code=13, message=WITH_PLAN, details=[detail])

    shown = status_pb2.Status.FromString(status_without_plan(status.SerializeToString()))
    assert shown.message == MESSAGE
    assert shown.details[0].Unpack(got := error_details_pb2.ErrorInfo())
    assert got.reason == info.reason
    assert got.metadata["errorClass"] == "UNRESOLVED_COLUMN.WITH_SUGGESTION"
    assert got.metadata["errorId"] == "5f0c"
    assert json.loads(got.metadata["messageParameters"])["objectName"] == "`ssn`"
    assert all(_clean(value) for value in got.metadata.values()), got.metadata
    assert FRAME in got.metadata["stackTrace"]


def test_fetched_error_details_lose_the_plan_in_every_cause() -> None:
    Error = base_pb2.FetchErrorDetailsResponse.Error
    throwable = base_pb2.FetchErrorDetailsResponse.SparkThrowable(
        error_class="UNRESOLVED_COLUMN.WITH_SUGGESTION",
        message_parameters={"objectName": "`ssn`", "plan": PLAN},
        query_contexts=[
            base_pb2.FetchErrorDetailsResponse.QueryContext(
                fragment="ssn", summary="== SQL ==\nSELECT ssn FROM hr.salaries"
            )
        ],
    )
    response = base_pb2.FetchErrorDetailsResponse(
        root_error_idx=0,
        errors=[
            Error(
                error_type_hierarchy=["org.apache.spark.sql.AnalysisException"],
                message=WITH_PLAN,
                cause_idx=1,
                spark_throwable=throwable,
            ),
            Error(error_type_hierarchy=["java.lang.IllegalStateException"], message=PLAN),
        ],
    )
    shown = base_pb2.FetchErrorDetailsResponse.FromString(
        error_details_without_plan(response.SerializeToString())
    )
    root, cause = shown.errors
    assert root.message == MESSAGE and root.cause_idx == 1
    assert _clean(cause.message)
    assert dict(root.spark_throwable.message_parameters)["objectName"] == "`ssn`"
    assert all(_clean(v) for v in root.spark_throwable.message_parameters.values())
    assert root.spark_throwable.query_contexts[0].fragment == "ssn"
    assert (
        root.spark_throwable.query_contexts[0].summary == "== SQL ==\nSELECT ssn FROM hr.salaries"
    )
