"""The SQL worksheet (``/ui/sql``): an editor, its runs, results, chart, downloads, history and
saved queries, for a signed-in user with the ``sql`` right.

The page is a shell; its script (``static/build/worksheet.js``, bundled from ``web-src/`` by
``scripts/install``) does the work through ``/v1`` as the user, with the dashboard's cookie:
sessions, queries, result pages and downloads, the catalog, saved queries. The one call of its
own is ``POST /ui/sql/statements``, which splits a script where Spark would (the server's
``split_script``, so the browser holds no second SQL lexer).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from sparkgate.auth.access import SQL
from sparkgate.http.deps import UserDep
from sparkgate.sql.errors import SqlError
from sparkgate.sql.script import split_script
from sparkgate.web.templating import render

router = APIRouter(prefix="/ui", include_in_schema=False)

# A worksheet's text, as the editor holds it: generous, but bounded like every body.
SCRIPT_MAX = 1_000_000


@cache
def editor_built() -> bool:
    """Whether the bundle is there: a checkout where ``scripts/install`` could not run npm
    serves the page with a sentence saying so, instead of a dead editor."""
    return files("sparkgate.web").joinpath("static/build/worksheet.js").is_file()


@router.get("/sql")
def worksheet_page(request: Request, user: UserDep) -> HTMLResponse:
    allowed = SQL in user.rights or user.admin
    return render(
        request,
        "worksheet.html",
        allowed=allowed,
        built=editor_built(),
        status=200 if allowed else 403,
    )


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=SCRIPT_MAX)


class ScriptStatement(BaseModel):
    text: str
    offset: int = Field(description="Where it starts in the script (characters).")
    line: int = Field(description="1-based line of its first character.")
    position: int = Field(description="1-based position on that line.")


class Statements(BaseModel):
    statements: list[ScriptStatement]


@router.post("/sql/statements", response_model=None)
def statements(script: Script, user: UserDep) -> Statements | JSONResponse:
    """``{"text": "SET a=1; SELECT ';'"}`` -> its statements in order, each with where it
    starts, split at the semicolons Spark would split at (not in strings or comments). An
    unterminated string answers 422 with its line and position (``PARSE_SYNTAX_ERROR``), as
    JSON: the dashboard's error pages are for pages, this answers the page's script."""
    try:
        pieces = split_script(script.text)
    except SqlError as error:
        return JSONResponse(error.recorded().to_json(), status_code=422)
    return Statements(
        statements=[
            ScriptStatement(
                text=piece.text, offset=piece.offset, line=piece.line, position=piece.position
            )
            for piece in pieces
        ]
    )
