"""How the client reads an answer into the API's models: keys a newer server adds are left
out, in nested models too, while the server's own validation of the same models still
refuses them (its answers must match the schema it documents)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from sparkgate.schemas.queries import Query, QueryAccepted, ResultPage, WaitedQuery, read_submitted
from sparkgate.states import StatementState

PAGE: dict[str, Any] = {
    "schema": [{"name": "one", "type": "int"}],
    "rows": [[1]],
    "offset": 0,
    "limit": 1000,
    "total": 1,
}
QUERY: dict[str, Any] = {
    "id": 7,
    "session_id": 3,
    "owner": "alice",
    "query": "SELECT 1 AS one",
    "kind": "sql",
    "state": "success",
    "progress": 1.0,
    "created_at": "2026-11-28T12:00:00.000Z",
    "started_at": "2026-11-28T12:00:00.100Z",
    "finished_at": "2026-11-28T12:00:00.200Z",
    "error": None,
    "result": {"schema": [{"name": "one", "type": "int"}], "row_count": 1},
    "output": None,
}


def test_an_answer_with_keys_this_release_lacks_is_read_without_them() -> None:
    newer = {
        **QUERY,
        "planned_by": "a newer server",
        "result": {**QUERY["result"], "bytes": 12},
        "page": {**PAGE, "schema": [{"name": "one", "type": "int", "nullable": False}]},
    }

    query = WaitedQuery.read(newer)

    assert query.state is StatementState.SUCCESS
    assert f"{query.state}" == "success"  # printed as the API writes it
    assert query.result is not None and query.result.row_count == 1
    assert [c.name for c in query.page.columns] == ["one"]
    assert query.page.rows == [[1]]
    assert "planned_by" not in query.model_dump()


def test_the_server_still_refuses_a_key_its_models_lack() -> None:
    with pytest.raises(ValidationError, match="planned_by"):
        Query.model_validate({**QUERY, "planned_by": "x"})
    with pytest.raises(ValidationError, match="nullable"):
        ResultPage.model_validate({**PAGE, "schema": [{"name": "a", "type": "int", "nullable": 1}]})


def test_a_missing_field_is_still_an_error() -> None:
    lacking = {key: value for key, value in QUERY.items() if key != "state"}
    with pytest.raises(ValidationError, match="state"):
        Query.read(lacking)


def test_a_submit_answer_is_told_apart_by_its_keys() -> None:
    queued = read_submitted({"id": 7, "session_id": 3, "state": "queued"})
    waited_failed = read_submitted({**QUERY, "state": "failed"})
    waited = read_submitted({**QUERY, "page": PAGE})

    assert type(queued) is QueryAccepted and queued.state == "queued"
    assert type(waited_failed) is Query and waited_failed.state == "failed"
    assert isinstance(waited, WaitedQuery) and waited.page.total == 1


def test_an_answer_dumps_as_the_server_sent_it() -> None:
    query = WaitedQuery.read({**QUERY, "page": PAGE})
    dumped = query.model_dump(mode="json", by_alias=True)
    assert dumped == {**QUERY, "page": PAGE, **_DEFAULTS}


# The fields ``GET /v1/queries/{id}`` fills and a submit's answer leaves null.
_DEFAULTS = {
    "cost": None,
    "resource_group": None,
    "tags": None,
    "queue_position": None,
    "price": None,
    "tasks_done": None,
    "tasks_total": None,
    "reused_from": None,
    "reuse_saved": None,
}
