"""Rendering the dashboard's pages: one Jinja2 environment and the filters its templates use.

Templates receive the native API's views (the models ``/v1`` answers, ``sparkgate.schemas``), so
a page shows exactly what the API would show its user; the filters only format them.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import PythonLexer, SqlLexer

from sparkgate import __version__
from sparkgate.schemas.errors import RecordedError
from sparkgate.states import (
    TERMINAL_ENGINE_STATES,
    TERMINAL_SESSION_STATES,
    TERMINAL_STATEMENT_STATES,
)
from sparkgate.units import byte_size

_env = Environment(
    loader=PackageLoader("sparkgate.web", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
# Pieces of one text are highlighted apart (around an error's mark): no newline may be added
# or removed at their ends.
_LEXERS = {
    "sql": SqlLexer(stripnl=False, ensurenl=False),
    "pyspark": PythonLexer(stripnl=False, ensurenl=False),
}
_FORMATTER = HtmlFormatter(nowrap=True)

# Scripts, styles and everything else only from the node itself (``static/``), and nothing
# written into the page: no inline <script>, no style="" or on*="" attributes, no eval (htmx
# runs with allowEval off, see base.html). Injected markup that slipped past escaping could run
# nothing. Forms post only here; no plugin, no <base>.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

# Pages hold buttons that kill and cancel: no other site may frame them (clickjacking), and
# links out do not carry the page's address.
_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}

# The final states of what pages show (states.py's groups), as the views write them: no poll
# or button is shown for what can no longer change.
FINAL = {
    "query": frozenset(s.value for s in TERMINAL_STATEMENT_STATES),
    "session": frozenset(s.value for s in TERMINAL_SESSION_STATES),
    "engine": frozenset(s.value for s in TERMINAL_ENGINE_STATES),
}


def render(request: Request, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    user = getattr(request.state, "ui_user", None)
    body = _env.get_template(template).render(
        request=request,
        user=user,
        auth_on=request.app.state.node.users.enabled,
        version=__version__,
        path=request.url.path,
        **context,
    )
    return HTMLResponse(body, status_code=status, headers=_HEADERS)


def from_htmx(request: Request) -> bool:
    """Whether the page's own script (htmx) sent this request, for a fragment."""
    return request.headers.get("hx-request") == "true"


def render_list(request: Request, template: str, table: str, /, **context: Any) -> HTMLResponse:
    """A list page, or only its table when the page's own poll asks (htmx's header): one
    route, so the poll reads exactly what the page shows."""
    if from_htmx(request):
        return render(request, table, **context)
    return render(request, template, **context)


def timestamp(value: str | float | None) -> float | None:
    """Seconds since the epoch from an API view's ISO timestamp (or a number)."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def when(value: str | float | None) -> str:
    """``2026-11-23 14:05:09`` in UTC: short, sortable, the same on every node."""
    ts = timestamp(value)
    if ts is None:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def between(start: str | float | None, end: str | float | None = None) -> str:
    """How long from ``start`` to ``end`` (or to now, for what still runs)."""
    begin = timestamp(start)
    if begin is None:
        return "—"
    finish = timestamp(end)
    return duration((finish if finish is not None else time.time()) - begin)


def ago(value: str | float | None) -> str:
    ts = timestamp(value)
    if ts is None:
        return "never"
    return duration(max(0.0, time.time() - ts)) + " ago"


def first_line(code: str, width: int = 100) -> str:
    line = next((part.strip() for part in code.splitlines() if part.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def code_html(code: str, kind: str = "sql", error: RecordedError | None = None) -> Markup:
    """The code, highlighted, with the span an error points at wrapped in ``<mark>``."""
    lexer = _LEXERS.get(kind, _LEXERS["sql"])
    span = error_span(code, error)
    if span is None:
        return _highlight(code, lexer)
    start, stop = span
    return Markup("").join(
        [
            _highlight(code[:start], lexer),
            Markup('<mark id="error-at" class="error-at" title="the error is here">'),
            escape(code[start:stop]),
            Markup("</mark>"),
            _highlight(code[stop:], lexer),
        ]
    )


def _highlight(text: str, lexer: Lexer) -> Markup:
    if not text:
        return Markup("")
    html = highlight(text, lexer, _FORMATTER)
    # The formatter ends its last line with a newline the text may not have.
    if html.endswith("\n") and not text.endswith("\n"):
        html = html[:-1]
    return Markup(html)


def error_span(code: str, error: RecordedError | None) -> tuple[int, int] | None:
    """Where in ``code`` an error points: Spark's start/stop index, else its 1-based line and
    position widened to the word there (the error's parameters, when Spark gave them)."""
    if error is None:
        return None
    where = error.model_extra or {}
    start, stop = where.get("start_index"), where.get("stop_index")
    if isinstance(start, int) and 0 <= start < len(code):
        end = stop + 1 if isinstance(stop, int) and stop >= start else start + 1
        return start, min(end, len(code))
    line, position = where.get("line"), where.get("position")
    if not isinstance(line, int) or not isinstance(position, int) or line < 1 or position < 1:
        return None
    lines = code.split("\n")
    if line > len(lines):
        return None
    offset = sum(len(text) + 1 for text in lines[: line - 1]) + position - 1
    if offset >= len(code):
        return None
    end = offset
    while end < len(code) and not code[end].isspace() and code[end] not in ",;()":
        end += 1
    return offset, max(end, offset + 1)


def pygments_css() -> str:
    return str(_FORMATTER.get_style_defs(".code"))  # type: ignore[no-untyped-call]


_env.filters.update(
    when=when,
    ago=ago,
    between=between,
    duration=duration,
    first_line=first_line,
    size=byte_size,
)
_env.globals.update(code_html=code_html, final=FINAL)
