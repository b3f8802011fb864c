"""Errors of the SQL sparkgate ran, reported on the statement the user wrote."""

from __future__ import annotations

from sparkgate.tables.relocate import Shift, line_and_position, relocate

USER = "CREATE TABLE t USING parquet AS\n  SELECT 10 / (id - 3) AS x FROM range(10)"
PREFIX = "CREATE TABLE `spark_catalog`.`default`.`sparkgate_staging_x`"
CLAUSES_AT = len("CREATE TABLE t")
RAN = PREFIX + USER[CLAUSES_AT:]
SHIFT = Shift(len(PREFIX), CLAUSES_AT)


def test_shift_maps_the_users_text_back() -> None:
    ran_at = RAN.index("10 / (id")
    assert SHIFT.to_user(ran_at) == USER.index("10 / (id")
    assert SHIFT.to_user(3) == CLAUSES_AT  # inside our own prefix: where the user's text resumes


def test_positions_fields_and_messages_are_moved() -> None:
    start = RAN.index("10 / (id")
    ran_line, ran_pos = line_and_position(RAN, start)
    error = {
        "code": "DIVIDE_BY_ZERO",
        "message": (
            f"Division by zero.\n== SQL (line {ran_line}, position {ran_pos}) ==\n...; "
            f"line {ran_line} pos {ran_pos - 1}; "
            "table `spark_catalog`.`default`.`sparkgate_staging_x`"
        ),
        "start_index": start,
        "stop_index": start + 12,
        "fragment": "10 / (id - 3)",
        "line": ran_line,
        "position": ran_pos,
        "parameters": {"table": "`sparkgate_staging_x`"},
    }
    names = {"`spark_catalog`.`default`.`sparkgate_staging_x`": "`spark_catalog`.`default`.`t`"}
    moved = relocate(error, SHIFT, RAN, USER, {**names, "`sparkgate_staging_x`": "`t`"})
    at = USER.index("10 / (id")
    assert (moved["start_index"], moved["stop_index"]) == (at, at + 12)
    assert (moved["line"], moved["position"]) == (2, 10)
    assert "== SQL (line 2, position 10) ==" in moved["message"]
    assert "line 2 pos 9" in moved["message"]
    assert "`spark_catalog`.`default`.`t`" in moved["message"]
    assert "sparkgate_staging" not in str(moved)
    assert moved["fragment"] == "10 / (id - 3)"


def test_line_and_position_without_an_index() -> None:
    ran_line, ran_pos = line_and_position(RAN, RAN.index("FROM"))
    moved = relocate({"line": ran_line, "position": ran_pos}, SHIFT, RAN, USER)
    assert (moved["line"], moved["position"]) == line_and_position(USER, USER.index("FROM"))


def test_errors_without_positions_are_kept() -> None:
    error = {"code": "X", "message": "nothing to move"}
    assert relocate(error, SHIFT, RAN, USER) == error
