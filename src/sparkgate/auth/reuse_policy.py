"""The access decisions a result was read under, as digests: a result computed for one user
is reused for another only when every decision its reads took is the same for them (whether
they may read, which columns are hidden, which masked and how, which rows filtered). Two users
under different rules never share a result; two under the same rules may.

The engine computes these when it keeps a result; a node computes them for the user asking
again, from the same rules and the same owners and grants, so both sides use this module.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable

from sparkgate.auth.access import AccessRules
from sparkgate.auth.tables import OWNERSHIP, SELECT, effective
from sparkgate.auth.tables import Access as TableAccess
from sparkgate.store.table_access import TableFacts, TableName

# The digest of "no table rules in force": every user may read everything, unmasked.
OPEN = "open"


def digest(access: TableAccess) -> str:
    """What of a decision changes a read's rows: not the other privileges."""
    reads = bool(access.privileges & {SELECT, OWNERSHIP})
    payload = {
        "read": reads,
        "hidden": sorted(access.hidden),
        "masks": dict(sorted(access.masks.items())),
        "filter": access.filter,
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def decisions(
    rules: AccessRules,
    facts: Callable[[TableName], TableFacts],
    user: str,
    groups: frozenset[str],
    names: Iterable[str],
) -> dict[str, str]:
    """The digest of ``user``'s decision about each table or view (full names)."""
    wanted = sorted(set(names))
    if rules.tables is None:
        return dict.fromkeys(wanted, OPEN)
    known = rules.groups_of(user, groups)
    admin = rules.is_admin(user, known)
    found: dict[str, str] = {}
    for name in wanted:
        parts = name.split(".")
        if len(parts) != 3:
            found[name] = "unknown:" + name  # never equal to a decision
            continue
        table = TableName.of(*parts)
        fact = facts(table)
        access = effective(
            rules.tables,
            user,
            known,
            table.catalog,
            table.schema,
            table.table,
            admin=admin,
            owner=fact.owner,
            grants=fact.as_triples(),
        )
        found[name] = digest(access)
    return found
