"""The access file's ``resource_groups:`` (Trino's format): a Trino configuration pasted as
YAML loads; selectors place a query by user, group, door, kind of work and tags, with
templates expanded; a broken configuration is refused with what is wrong, where."""

from __future__ import annotations

import logging

import pytest

from sparkgate.auth.access import parse_access
from sparkgate.auth.resource_groups import ResourceGroups
from sparkgate.errors import ConfigurationError

# Trino's documented example (resource-groups.json), as YAML: memory and CPU limits,
# weighted_fair, query_priority, ${USER} and a named group of a selector's source.
TRINO_EXAMPLE = """
resource_groups:
  rootGroups:
    - name: global
      softMemoryLimit: 80%
      hardConcurrencyLimit: 100
      maxQueued: 1000
      schedulingPolicy: weighted
      jmxExport: true
      subGroups:
        - {name: data_definition, softMemoryLimit: 10%, hardConcurrencyLimit: 5,
           maxQueued: 100, schedulingWeight: 1}
        - name: adhoc
          softMemoryLimit: 10%
          hardConcurrencyLimit: 50
          maxQueued: 1
          schedulingWeight: 10
          subGroups:
            - name: other
              softMemoryLimit: 10%
              hardConcurrencyLimit: 2
              maxQueued: 1
              schedulingWeight: 10
              schedulingPolicy: weighted_fair
              subGroups:
                - {name: "${USER}", softMemoryLimit: 10%, hardConcurrencyLimit: 1,
                   maxQueued: 100}
            - name: bi-${toolname}
              softMemoryLimit: 10%
              hardConcurrencyLimit: 10
              maxQueued: 100
              schedulingWeight: 10
              schedulingPolicy: weighted_fair
              subGroups:
                - {name: "${USER}", softMemoryLimit: 10%, hardConcurrencyLimit: 3, maxQueued: 10}
        - name: pipeline
          softMemoryLimit: 80%
          hardConcurrencyLimit: 45
          maxQueued: 100
          schedulingWeight: 1
          jmxExport: true
          subGroups:
            - {name: "pipeline_${USER}", softMemoryLimit: 50%, hardConcurrencyLimit: 5,
               maxQueued: 100}
    - {name: admin, softMemoryLimit: 100%, hardConcurrencyLimit: 50, maxQueued: 100,
       schedulingPolicy: query_priority, jmxExport: true}
  selectors:
    - {user: bob, group: admin}
    - {userGroup: admin, group: admin}
    - {source: ".*pipeline.*", queryType: DATA_DEFINITION, group: global.data_definition}
    - {source: ".*pipeline.*", group: "global.pipeline.pipeline_${USER}"}
    - {source: "(?<toolname>hive2|livy)", clientTags: [hipri],
       group: "global.adhoc.bi-${toolname}.${USER}"}
    - {group: "global.adhoc.other.${USER}"}
  cpuQuotaPeriod: 1h
"""


def _groups(text: str) -> ResourceGroups:
    groups = parse_access(text).resource_groups
    assert groups is not None
    return groups


def test_trinos_example_loads_and_places(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="sparkgate.auth"):
        groups = _groups(TRINO_EXAMPLE)
    assert "never matches" in caplog.text  # DATA_DEFINITION: a Trino statement type
    assert "not enforced by sparkgate: jmxExport, softMemoryLimit" in caplog.text
    policies = {s.name: s.scheduling_policy for s in groups.specs}
    assert policies["global"] == policies["global.adhoc.other"] == "weighted"
    assert policies["admin"] == "fair"  # query_priority
    place = groups.place
    assert place("bob", frozenset(), source="rest", query_type="one-off") == "admin"
    assert place("carol", frozenset({"admin"}), source="rest", query_type="batch") == "admin"
    assert (
        place("dave", frozenset(), source="hive2", query_type="interactive", tags={"hipri", "x"})
        == "global.adhoc.bi-hive2.dave"
    )
    assert (
        place("dave", frozenset(), source="hive2", query_type="interactive")
        == "global.adhoc.other.dave"  # without the tag
    )
    # a user name with a dot stays one group
    assert (
        place("d.o", frozenset(), source="rest", query_type="one-off") == "global.adhoc.other.d_o"
    )


def test_selectors_match_whole_names_and_the_kind_of_work() -> None:
    groups = _groups(
        """
resource_groups:
  rootGroups:
    - {name: etl, hardConcurrencyLimit: 1, maxQueued: 1}
    - {name: rest, hardConcurrencyLimit: 1, maxQueued: 1}
  selectors:
    - {user: "etl_.*", queryType: batch, group: etl}
    - {source: livy|rest, group: rest}
"""
    )
    assert groups.place("etl_nightly", frozenset(), source="rest", query_type="batch") == "etl"
    assert groups.place("etl_nightly", frozenset(), source="rest", query_type="one-off") == "rest"
    assert groups.place("my_etl_x", frozenset(), source="livy", query_type="batch") == "rest"
    assert groups.place("anyone", frozenset(), source="hive2", query_type="interactive") is None


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("rootGroups: []\n  selectors: [{group: a}]", "rootGroups: List should have at least 1"),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: 1, maxQueued: 1}]\n"
            "  selectors: [{group: b}]",
            "selectors[0]: group 'b' is not a group of rootGroups",
        ),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: 1, maxQueued: 1, subGroups: "
            "[{name: b, hardConcurrencyLimit: 1, maxQueued: 1}]}]\n  selectors: [{group: a}]",
            "group 'a' has subgroups",
        ),
        (
            "rootGroups: [{name: a.b, hardConcurrencyLimit: 1, maxQueued: 1}]\n"
            "  selectors: [{group: a}]",
            "holds a '.'",
        ),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: -1, maxQueued: 1}]\n"
            "  selectors: [{group: a}]",
            "hardConcurrencyLimit: Input should be greater than or equal to 0",
        ),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: 1, maxQueued: 1, maxRunnin: 2}]\n"
            "  selectors: [{group: a}]",
            "maxRunnin: Extra inputs are not permitted",
        ),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: 1, maxQueued: 1}]\n"
            "  selectors: [{group: a, user: '(unclosed'}]",
            "not a regular expression",
        ),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: 1, maxQueued: 1}]\n"
            "  selectors: [{group: a, queryType: nightly}]",
            "queryType 'nightly' is none of interactive, one-off, batch, stream",
        ),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: 1, maxQueued: 1}, "
            "{name: a, hardConcurrencyLimit: 2, maxQueued: 1}]\n  selectors: [{group: a}]",
            "group names repeat: a",
        ),
        (
            "rootGroups: [{name: a, hardConcurrencyLimit: 1, maxQueued: 1, "
            "schedulingPolicy: lottery}]\n  selectors: [{group: a}]",
            "schedulingPolicy",
        ),
    ],
)
def test_a_broken_configuration_is_refused_saying_where(body: str, problem: str) -> None:
    with pytest.raises(ConfigurationError, match="access file: resource_groups") as refused:
        parse_access(f"resource_groups:\n  {body}\n")
    assert problem in str(refused.value)
