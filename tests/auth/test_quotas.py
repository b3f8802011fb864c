"""The access file's ``quotas:``: who they apply to, their periods (UTC days and months), and
a broken entry refused saying what is wrong."""

from __future__ import annotations

import calendar

import pytest

from sparkgate.auth.access import parse_access
from sparkgate.errors import ConfigurationError

GROUPS = """
resource_groups:
  rootGroups:
    - {name: all, hardConcurrencyLimit: 4, maxQueued: 10,
       subGroups: [{name: low, hardConcurrencyLimit: 1, maxQueued: 10}]}
  selectors: [{group: all.low}]
"""


def test_quotas_apply_to_their_user_or_group_over_utc_periods() -> None:
    rules = parse_access(
        GROUPS
        + """
groups: {analysts: [alice]}
quotas:
  - {user: bob, per: day, executorCpuSeconds: 60}
  - {group: analysts, per: month, executorRunSeconds: 3600, onQuota: demote, demoteTo: all.low}
"""
    )
    bobs, analysts = rules.quotas
    assert bobs.applies("bob", frozenset()) and not bobs.applies("alice", frozenset())
    assert analysts.applies("carol", frozenset({"analysts"}))
    assert analysts.demote_to == "all.low" and bobs.demote_to is None
    assert bobs.name == "user bob's 60 s of executor CPU per day"
    assert analysts.name == "group analysts's 3600 s of executor run time per month"
    noon = calendar.timegm((2026, 12, 31, 12, 0, 0))
    assert bobs.period(noon) == (noon - 12 * 3600, noon + 12 * 3600)
    assert analysts.period(noon) == (
        calendar.timegm((2026, 12, 1, 0, 0, 0)),
        calendar.timegm((2027, 1, 1, 0, 0, 0)),
    )
    assert rules.members_of("analysts", "dave") == ["alice", "dave"]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("{per: day, executorCpuSeconds: 1}", "names a user or a group"),
        ("{user: a, group: b, per: day, executorCpuSeconds: 1}", "names a user or a group"),
        ("{user: a, per: day}", "executorCpuSeconds or executorRunSeconds"),
        ("{user: a, per: week, executorCpuSeconds: 1}", "per: Input should be 'day' or 'month'"),
        ("{user: a, per: day, executorCpuSeconds: 0}", "greater than 0"),
        ("{user: a, per: day, executorCpuSeconds: 1, onQuota: demote}", "goes with demoteTo"),
        (
            "{user: a, per: day, executorCpuSeconds: 1, onQuota: demote, demoteTo: all}",
            "demoteTo 'all' is not a group of resource_groups that takes queries",
        ),
    ],
)
def test_a_broken_quota_is_refused_saying_what(entry: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        parse_access(GROUPS + f"quotas: [{entry}]\n")
    assert problem in str(refused.value)
