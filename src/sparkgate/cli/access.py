"""``sparkgate access``: why a user may or may not use a table, and what was granted on it."""

from __future__ import annotations

from typing import Annotated

import typer

from sparkgate.cli.common import JsonOption, console, fetch_to_show
from sparkgate.cli.render import table

app = typer.Typer(help="Data access control: explain a decision, list a table's grants.")


@app.command()
def explain(
    who: Annotated[str, typer.Argument(metavar="USER", help="The user asked about.")],
    privilege: Annotated[str, typer.Argument(help="SELECT, INSERT, DELETE, UPDATE, OWNERSHIP.")],
    table_name: Annotated[str, typer.Argument(metavar="TABLE", help="schema.table")],
    as_json: JsonOption = False,
) -> None:
    """Which table rule, ownership and grants decide, and the answer (admins).

    Example: sparkgate access explain bob SELECT hr.salaries
    """
    answer = fetch_to_show(lambda sg: sg.explain_access(who, privilege, table_name), as_json)
    if answer is None:
        return
    for reason in answer.reasons:
        console.print(f"- {reason}", highlight=False)
    verdict = "allowed" if answer.allowed else "denied"
    console.print(f"{who} {answer.privilege} on {table_name}: {verdict}", highlight=False)


@app.command()
def grants(
    table_name: Annotated[str, typer.Argument(metavar="TABLE", help="schema.table")],
    as_json: JsonOption = False,
) -> None:
    """A table's owner and what was granted on it (its owner and admins).

    Example: sparkgate access grants hr.salaries
    """
    answer = fetch_to_show(lambda sg: sg.table_grants(table_name), as_json)
    if answer is None:
        return
    console.print(f"{answer.table}, owned by {answer.owner or '(not recorded)'}")
    rows = ((g.grantee_type, g.grantee, g.privilege, g.granted_by) for g in answer.grants)
    console.print(table(("grantee_type", "grantee", "privilege", "granted_by"), rows))
