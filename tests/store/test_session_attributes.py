"""A session's attributes are declared fields kept as one JSON object, readable both ways by
the release before (which wrote and read the same keys as a dict)."""

from __future__ import annotations

from sparkgate.store.session_attributes import SessionAttributes


def test_only_the_fields_that_are_set_are_written_and_lists_read_back_as_tuples() -> None:
    made = SessionAttributes(door="hive2", hive2_protocol=0, groups=("hr", "it"), conf_deny=())
    stored = made.to_json()
    assert stored == {"door": "hive2", "hive2_protocol": 0, "conf_deny": [], "groups": ["hr", "it"]}
    assert SessionAttributes.stored(stored) == made


def test_a_row_a_later_release_wrote_reads_without_its_new_keys() -> None:
    read = SessionAttributes.stored({"created_by": "root", "queue": "etl", "isolation": None})
    assert read == SessionAttributes(created_by="root")
    assert SessionAttributes.stored(None) == SessionAttributes.stored({}) == SessionAttributes()
