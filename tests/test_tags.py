"""Query tags as each door gives them (``sparkgate.tags``): parsed, checked, matched."""

from __future__ import annotations

import pytest

from sparkgate import tags
from sparkgate.errors import InvalidRequest
from sparkgate.jobs.fingerprint import job_fingerprints
from sparkgate.jobs.manifest import Manifest


def test_a_setting_and_connect_tags_read_as_tags() -> None:
    assert tags.parsed("team=finance, project=churn,hipri") == {
        "team": "finance",
        "project": "churn",
        "hipri": "",
    }
    assert tags.from_words(["team=finance", "a=b=c"]) == {"team": "finance", "a": "b=c"}
    conf, given = tags.take({"spark.sql.ansi.enabled": "true", tags.SETTING: "team=x"})
    assert conf == {"spark.sql.ansi.enabled": "true"} and given == {"team": "x"}
    assert tags.take(None) == (None, {})
    assert tags.words({"team": "finance"}) == {"team", "team=finance"}


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"no spaces": "x"}, "tag 'no spaces': a key is 1 to 64"),
        ({"": "x"}, "tag '': a key"),
        ({"k" * 65: "x"}, "a key is 1 to 64"),
        ({"team": "v" * 257}, "at most 256 characters"),
        ({f"k{i}": "" for i in range(21)}, "at most 20 tags, not 21"),
    ],
)
def test_bad_tags_are_refused_saying_which(given: dict[str, str], problem: str) -> None:
    with pytest.raises(InvalidRequest, match="tags: ") as refused:
        tags.checked(given)
    assert problem in refused.value.message


def test_a_manifests_tags_are_checked_and_count_only_when_given() -> None:
    base = {"name": "daily", "target-table": "t", "sql": "SELECT 1", "mode": "batch"}
    plain = Manifest.model_validate(base)
    tagged = Manifest.model_validate({**base, "tags": {"team": "finance"}})
    assert tagged.tags == {"team": "finance"}
    # a job declared before tags existed keeps its fingerprint; tags change only supervision
    assert job_fingerprints(plain, []).query == job_fingerprints(tagged, []).query
    assert job_fingerprints(plain, []).supervision != job_fingerprints(tagged, []).supervision
    with pytest.raises(ValueError, match="a key is 1 to 64"):
        Manifest.model_validate({**base, "tags": {"bad key": "x"}})
