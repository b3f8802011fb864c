"""The resource groups' reference: the access file's ``resource_groups:`` key, every key with
its type, default and meaning, read from the pydantic models that parse it
(``sparkgate.auth.resource_groups``), and an example that the real parser accepts (the tests
parse it)."""

from __future__ import annotations

from sparkgate.auth.resource_groups import QUERY_TYPES, SOURCES, ResourceGroupsFile
from sparkgate.reference.access_file import model_sections, render

# The resource-groups how-to's team example: a share of the cluster for analysts, two queries
# each at most, and a group for the ETL tool's batches.
EXAMPLE = """\
groups: {analysts: [alice, bob], etl: [airflow]}
resource_groups:
  rootGroups:
    - name: analysts
      hardConcurrencyLimit: 4          # the team's share of the cluster
      maxQueued: 100
      subGroups:
        - {name: "${USER}", hardConcurrencyLimit: 2, maxQueued: 20}   # 2 each at most
    - {name: etl, hardConcurrencyLimit: 2, maxQueued: 50}
  selectors:                           # the first match places the query
    - {userGroup: etl, queryType: batch, group: etl}
    - {userGroup: analysts, group: "analysts.${USER}"}
"""

_INTRO = """\
# Resource groups

The access file's `resource_groups:` key holds Trino's resource-group configuration as it is,
in YAML (a Trino `resource-groups.json` pasted as YAML loads). A group at its
`hardConcurrencyLimit` queues new work: the query's state is `queued`, with its group and its
turn (`queue_position`, 1: next). Within a group, users take turns (the user with the fewest
admitted queries there goes next); between subgroups the parent's `schedulingPolicy` decides.
A full queue (`maxQueued`) answers 429 naming the group; with `resource_groups:` set, a query
no selector takes is refused (403, `FORBIDDEN`). The queue is in the store, shared by every
node. Without `resource_groups:` no query waits. See
[Resource groups](../how-to/resource-groups.md) for how to use them, and the
[access file](access-file.md) for the rest of the file.

Group names may hold `${{USER}}`, `${{SOURCE}}` and the named groups of a selector's regular
expressions (`source: "(?<tool>hive2|livy)"`, `group: "bi-${{tool}}"`): one group per user, door
or tool. A selector's `source` is one of {sources}; its `queryType` one of {query_types}.

Trino's keys that sparkgate accepts and does not enforce: memory and CPU limits,
`softConcurrencyLimit`, `jmxExport`, `cpuQuotaPeriod`, and Trino's statement types as a
`queryType` (they never match). Inside a shared engine, a group's statements run in a Spark
FAIR pool of their own (`group:<name>`) weighted by its `schedulingWeight`.

## An example

```yaml
{example}```
"""


def page() -> str:
    intro = _INTRO.format(
        sources=", ".join(f"`{s}`" for s in SOURCES),
        query_types=", ".join(f"`{t}`" for t in QUERY_TYPES),
        example=EXAMPLE,
    )
    sections = model_sections(ResourceGroupsFile, "resource_groups")
    return "\n".join([intro, *render(sections, "`resource_groups`")])
