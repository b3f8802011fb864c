"""How a streaming query's failure is described (Spark's text, trimmed for the API)."""

from __future__ import annotations

from sparkgate.streaming.runner import describe_stream_failure


def test_a_failure_keeps_its_condition_and_loses_the_query_dump() -> None:
    text = (
        "[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback ...\n"
        "ValueError: bad row 30 SQLSTATE: 38000\n"
        "=== Streaming Query ===\n"
        "Identifier: checked [id = 1, runId = 2]\nCurrent Committed Offsets: {...}"
    )
    error = describe_stream_failure(text, None).to_json()
    assert error["code"] == "PYTHON_EXCEPTION"
    assert error["message"].startswith("An exception was thrown")
    assert "bad row 30" in error["message"] and "Streaming Query" not in error["message"]
    assert describe_stream_failure(text, "TASK_FAILED").to_json()["code"] == "TASK_FAILED"


def test_a_failure_without_a_condition_or_text() -> None:
    assert describe_stream_failure("boom", None).to_json() == {
        "code": "STREAM_FAILED",
        "message": "boom",
    }
    assert describe_stream_failure(None, None).to_json()["message"] == "The streaming query failed."
    long = describe_stream_failure("x" * 10_000, None).to_json()["message"]
    assert len(long) < 4100 and "\n...\n" in long
