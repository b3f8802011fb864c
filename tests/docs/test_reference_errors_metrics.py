"""The error-code and metrics reference pages, from the code (no server): every error code has
a SQLSTATE and a meaning, and the statuses shown are the ones the doors decide; every metric
a node exports is listed with its help."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from prometheus_client.metrics_core import Metric

from sparkgate import error_catalog
from sparkgate.error_catalog import ERRORS, sql_state
from sparkgate.errors import InvalidRequest
from sparkgate.recorded import ErrorCode, RecordedError
from sparkgate.reference import errors as errors_page
from sparkgate.reference import metrics as metrics_page


@pytest.fixture(scope="module")
def errors_md() -> str:
    return errors_page.page()


def _row(page: str, code: str) -> list[str]:
    """The cells of ``code``'s row in the error tables."""
    [line] = [line for line in page.splitlines() if line.startswith(f"| `{code}` |")]
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_every_code_has_one_entry_and_every_entry_names_a_code() -> None:
    assert set(ERRORS) == set(ErrorCode)
    assert all(isinstance(code, ErrorCode) for code in ERRORS)


def test_every_sqlstate_is_five_characters_and_every_meaning_a_sentence() -> None:
    for code, entry in ERRORS.items():
        assert re.fullmatch(r"[0-9A-Z]{5}", entry.sqlstate), code
        assert entry.meaning[:1].isupper() or entry.meaning.startswith("sparkgate"), code
        assert entry.meaning.endswith("."), code


def test_sparks_sqlstate_wins_over_sparkgates_and_a_foreign_code_has_none() -> None:
    spark = RecordedError("DIVIDE_BY_ZERO", "Division by zero.", {"sql_state": "22012"})
    assert sql_state(spark) == "22012"
    assert sql_state(RecordedError(ErrorCode.CANCELLED, "Query 3 was cancelled.")) == "57014"
    assert sql_state(RecordedError("ZeroDivisionError", "division by zero")) is None
    assert sql_state(None) is None
    # The ones Spark names alike keep Spark's SQLSTATE.
    assert ERRORS[ErrorCode.PARSE_SYNTAX_ERROR].sqlstate == "42601"
    assert ERRORS[ErrorCode.INSUFFICIENT_PRIVILEGE].sqlstate == "42501"


def test_the_page_lists_every_code_with_its_sqlstate_and_meaning(errors_md: str) -> None:
    assert errors_md.startswith("# Error codes\n")
    for code, entry in ERRORS.items():
        cells = _row(errors_md, code.value)
        assert cells[1] == f"`{entry.sqlstate}`" and cells[4] == entry.meaning


def test_the_statuses_are_the_ones_the_doors_answer(errors_md: str) -> None:
    # (code, HTTP, gRPC): by class, by a code given to SqlError, by Starlette, recorded only.
    expected = [
        ("SESSION_NOT_FOUND", "404", "NOT_FOUND"),
        ("UNAUTHENTICATED", "401", "UNAUTHENTICATED"),
        ("ACCESS_DENIED", "403", "PERMISSION_DENIED"),
        ("LIMIT_EXCEEDED", "429", "RESOURCE_EXHAUSTED"),
        ("STREAM_JOB_ACTIVE", "409", "FAILED_PRECONDITION"),
        ("STORE_UNAVAILABLE", "503", "UNAVAILABLE"),
        ("STREAM_SINK_PATH_REQUIRED", "422", "INVALID_ARGUMENT"),
        ("METHOD_NOT_ALLOWED", "405", "—"),
        ("CANCELLED", "—", "—"),
        ("INVALID_HANDLE", "—", "—"),
    ]
    for code, http, grpc in expected:
        assert _row(errors_md, code)[2:4] == [http, grpc], code


def test_the_page_shows_each_doors_error_shape(errors_md: str) -> None:
    for shape in ('{"error": {"code"', '{"msg":', "sqlState", "ErrorInfo", "`57014`"):
        assert shape in errors_md


def test_a_code_without_an_entry_stops_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    fewer = {k: v for k, v in ERRORS.items() if k != ErrorCode.JOB_REMOVED}
    monkeypatch.setattr(errors_page, "ERRORS", fewer)
    with pytest.raises(RuntimeError, match="JOB_REMOVED"):
        errors_page.page()


def test_an_error_raised_with_a_code_given_is_found_with_its_class() -> None:
    found = errors_page.carriers()
    assert any(issubclass(cls, InvalidRequest) for cls in found[ErrorCode.STREAM_SCRIPT_EMPTY])
    assert error_catalog.entry("DIVIDE_BY_ZERO") is None


def test_every_metric_is_listed_with_its_type_labels_and_help() -> None:
    page = metrics_page.page()
    found = {m.exported: m for m in metrics_page.metrics()}
    for name in (
        "sparkgate_sessions",
        "sparkgate_queries_finished_total",
        "sparkgate_query_duration_seconds",
        "sparkgate_stream_restarts_total",
        "sparkgate_query_executor_cpu_seconds_total",
        "sparkgate_http_request_duration_seconds",
        "sparkgate_auth_failures_total",
        "process_cpu_seconds_total",
    ):
        assert f"| `{name}` | {found[name].type} |" in page, name
        assert found[name].help
    assert found["sparkgate_sessions"].labels == ("scope", "kind", "state")
    http = found["sparkgate_http_request_duration_seconds"]
    assert http.type == "histogram" and http.labels == ("method", "route", "status", "node")


def test_a_metric_without_help_stops_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    collected = metrics_page._collected

    def with_a_silent_one() -> Iterator[Metric]:
        yield from collected()
        yield Metric("sparkgate_silent", "", "gauge")

    monkeypatch.setattr(metrics_page, "_collected", with_a_silent_one)
    with pytest.raises(RuntimeError, match="sparkgate_silent"):
        metrics_page.page()
