"""The native API's paging fields and cursors, as pure functions."""

from __future__ import annotations

import pytest

from sparkgate.errors import InvalidRequest
from sparkgate.http.paging import counted, id_after, name_after, paging
from sparkgate.store.records import Page


def test_cursors_are_what_the_pages_gave() -> None:
    assert id_after(None, 0) is None and id_after("41", 0) == 41
    assert name_after("clicks", 0) == "clicks"
    for bad in ("x", "-1", "4.5", "٣", "1" * 19):
        with pytest.raises(InvalidRequest, match="not a cursor") as raised:
            id_after(bad, 0)
        assert raised.value.params == {"field": "after"}


def test_a_cursor_or_an_offset_not_both() -> None:
    assert id_after("41", 0) == 41  # offset=0 is no offset
    with pytest.raises(InvalidRequest, match="not both"):
        id_after("41", 100)
    with pytest.raises(InvalidRequest, match="not both"):
        name_after("a", 1)


def test_counted_for_a_first_page_or_on_request() -> None:
    assert counted(None, None) is True
    assert counted(None, "41") is False
    assert counted(True, "41") is True and counted(False, None) is False


def test_paging_fields() -> None:
    first = Page([1, 2], 5, 0, 2, 2)
    assert paging(first, None) == {"next": "2", "total": 5, "offset": 0, "limit": 2}
    last = Page([5], None, 0, 2, None)
    assert paging(last, "4") == {"next": None, "total": None, "offset": None, "limit": 2}
