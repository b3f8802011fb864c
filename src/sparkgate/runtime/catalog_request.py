"""A catalog statement's request: the call (a HiveServer2 metadata call, or the catalog page's
browse and describe) and its name arguments. A door or the service builds one and submits its
``to_code()`` as the statement's code; the engine reads it back (``engine/catalog_requests``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

# The name arguments each call takes (all optional strings); "tables" also takes table_types.
CALL_FIELDS: dict[str, tuple[str, ...]] = {
    "catalogs": (),
    "schemas": ("catalog", "schema"),
    "tables": ("catalog", "schema", "table"),
    "table_types": (),
    "columns": ("catalog", "schema", "table", "column"),
    "type_info": (),
    "functions": ("catalog", "schema", "function"),
    "primary_keys": ("catalog", "schema", "table"),
    "cross_reference": (
        "parent_catalog",
        "parent_schema",
        "parent_table",
        "foreign_catalog",
        "foreign_schema",
        "foreign_table",
    ),
    # sparkgate's catalog page (catalog_browse): exact names, not patterns.
    "browse": ("schema",),
    "describe": ("schema", "table"),
}


@dataclass(frozen=True)
class CatalogRequest:
    call: str
    names: Mapping[str, str | None]
    table_types: tuple[str, ...] | None = None

    def get(self, field: str) -> str | None:
        return self.names.get(field)

    def to_code(self) -> str:
        """The catalog statement's code that asks for this: what ``parse_request`` reads back
        (names left unset are left out)."""
        body: dict[str, object] = {"call": self.call}
        body.update((field, name) for field, name in self.names.items() if name is not None)
        if self.table_types is not None:
            body["table_types"] = list(self.table_types)
        return json.dumps(body)
