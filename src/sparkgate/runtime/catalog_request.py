"""A catalog statement's request: the call (a HiveServer2 metadata call, or the catalog page's
browse and describe) and its name arguments. A door or the service builds one and submits its
``to_code()`` as the statement's code; the engine reads it back with ``parse_request``, which
refuses what a client could send that is not such a request, saying what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from sparkgate.recorded import InvalidCatalogRequest
from sparkgate.runtime.failures import DescribedError

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


def parse_request(code: str) -> CatalogRequest:
    """The request in a catalog statement's code, or ``DescribedError`` saying what is wrong."""
    try:
        body = json.loads(code)
    except ValueError as exc:
        raise _invalid(
            f"The catalog request is not JSON ({exc}); send an object such as "
            '{"call": "tables", "schema": "%"}.'
        ) from None
    if not isinstance(body, dict):
        raise _invalid(f"The catalog request must be a JSON object, not {code.strip()[:100]}.")
    call = body.get("call")
    if not isinstance(call, str) or call not in CALL_FIELDS:
        raise _invalid(
            f"Unknown catalog call {json.dumps(call)}; use one of {', '.join(CALL_FIELDS)}."
        )
    names: dict[str, str | None] = {}
    for field in CALL_FIELDS[call]:
        value = body.get(field)
        if value is not None and not isinstance(value, str):
            raise _invalid(
                f"Field {field!r} of a {call!r} call must be a string or null, "
                f"not {json.dumps(value)}."
            )
        names[field] = value
    table_types = body.get("table_types") if call == "tables" else None
    if table_types is not None and not (
        isinstance(table_types, list) and all(isinstance(t, str) for t in table_types)
    ):
        raise _invalid(
            "Field 'table_types' of a 'tables' call must be a list of strings or null, "
            f"not {json.dumps(table_types)}."
        )
    return CatalogRequest(call, names, tuple(table_types) if table_types is not None else None)


def _invalid(message: str) -> DescribedError:
    return DescribedError(InvalidCatalogRequest(message).recorded())
