"""What counts as "the same query": fingerprints that ignore how a job is written.

A deploy must not throw state away because someone re-indented a query, added a comment or
changed keyword case. SQL is compared as sqlglot's canonical Spark SQL (identifiers lower-
cased and uniformly quoted, since Spark resolves them case-insensitively); where sqlglot
cannot parse Spark's dialect (``GROUP BY window(...)``, ``WATERMARK``, ``CREATE STREAM``), or
its reading loses a name or a literal of the text, as the canonical token stream. Python code
is compared by its syntax tree, so comments and formatting do not count either.

A job has three fingerprints (``job_fingerprints``), one per kind of change:

- **query**: what is written and how state is laid out: the query (``sql`` or ``code``), the
  target table, ``sources`` and the shared definitions the job uses, the mode, the output
  mode, ``partitioned-by`` and whether metadata columns are added. A change needs a new
  version with clean state.
- **config**: how it runs: ``properties``, ``trigger`` and ``sink-options``. A change restarts
  the query from the state it saved.
- **supervision**: ``description``, ``retry`` and ``tags``. A change is recorded without
  touching the running query; it applies from the query's next start.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import SqlglotError
from sqlglot.tokenizer_core import TokenType

from sparkgate.jobs.definitions import Definition
from sparkgate.sql.errors import SqlError
from sparkgate.sql.lexer import lex
from sparkgate.store.jobs import Fingerprints

if TYPE_CHECKING:
    from sparkgate.jobs.manifest import Manifest

_DIALECT = Spark()
_NAME_TOKENS = frozenset({TokenType.VAR, TokenType.IDENTIFIER})
_VALUE_TOKENS = frozenset({TokenType.STRING, TokenType.NUMBER})


def canonical_sql(sql: str) -> str:
    """One spelling for every way of writing the same SQL statement(s)."""
    try:
        statements = _quietly_parse(sql)
    except SqlglotError:
        return canonical_tokens(sql)
    if any(isinstance(s, exp.Command) for s in statements):
        return canonical_tokens(sql)  # not understood: sqlglot keeps such text verbatim
    parts = []
    for statement in statements:
        for identifier in statement.find_all(exp.Identifier):
            identifier.set("this", identifier.this.lower())
            identifier.set("quoted", True)
        parts.append(statement.sql(dialect=_DIALECT, comments=False))
    canonical = ";\n".join(parts)
    if not _keeps_everything(sql, canonical):
        return canonical_tokens(sql)
    return canonical


def _quietly_parse(sql: str) -> list[exp.Expr]:
    # sqlglot warns (on its logger) about every statement it only half understands.
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return [s for s in sqlglot.parse(sql, read=_DIALECT) if s is not None]
    finally:
        logger.setLevel(level)


def _keeps_everything(original: str, canonical: str) -> bool:
    """Every name and literal of the text is still in sqlglot's reading of it. A reading that
    dropped one (Spark syntax sqlglot misreads) could make two different queries look equal;
    the token stream is then the safe comparison."""
    try:
        before = _names_and_values(original)
        after = _names_and_values(canonical)
    except SqlglotError:
        return False
    return not (before - after)


def _names_and_values(sql: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for token in _DIALECT.tokenize(sql):
        if token.token_type in _NAME_TOKENS:
            found[f"name:{token.text.lower()}"] += 1
        elif token.token_type in _VALUE_TOKENS:
            found[f"{token.token_type.name}:{token.text}"] += 1
    return found


def canonical_tokens(sql: str) -> str:
    """The token stream with case and spacing normalised (comments are not tokens)."""
    out = []
    for token in _DIALECT.tokenize(sql):
        if token.token_type in _NAME_TOKENS:
            out.append(f"name:{token.text.lower()}")
        elif token.token_type is TokenType.STRING:
            out.append(f"str:{token.text}")
        elif token.token_type is TokenType.SEMICOLON:
            continue
        else:
            out.append(f"{token.token_type.name}:{token.text.upper()}")
    return " ".join(out)


def canonical_python(code: str) -> str:
    try:
        return ast.dump(ast.parse(code), annotate_fields=False, include_attributes=False)
    except SyntaxError:
        return code.strip()


def canonical_table(name: str) -> str:
    """``Analytics.`Clicks``` and ``analytics.clicks`` are one table (Spark's session catalog
    is case-insensitive)."""
    try:
        return ".".join(lx.value.lower() for lx in lex(name) if lx.is_name)
    except SqlError:
        return name.strip().lower()


def digest(*parts: str) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode())
        hasher.update(b"\x00")
    return hasher.hexdigest()[:16]


def job_fingerprints(manifest: Manifest, used: Sequence[Definition]) -> Fingerprints:
    """The three fingerprints of a job (see the module docstring). Fields a batch job does not
    use (trigger, output mode, retry) are left out of its fingerprints."""
    streaming = not manifest.batch
    query = [
        f"mode:{manifest.mode}",
        f"sql:{canonical_sql(manifest.sql)}" if manifest.sql is not None else "",
        f"code:{canonical_python(manifest.code)}" if manifest.code is not None else "",
        f"target:{canonical_table(manifest.target_table)}",
        *(f"source:{canonical_sql(s)}" for s in manifest.sources),
        *(f"definition:{canonical_sql(d.text)}" for d in used),
        f"output-mode:{manifest.output_mode}" if streaming else "",
        "partitioned-by:" + ",".join(c.strip().lower() for c in manifest.partitioned_by),
        f"metadata-columns:{manifest.metadata_columns}",
    ]
    config = [
        "properties:" + _sorted_json(manifest.properties),
        f"trigger:{manifest.trigger}" if streaming else "",
        "sink-options:" + _sorted_json({k.lower(): v for k, v in manifest.sink_options.items()}),
    ]
    supervision = [
        f"description:{manifest.description}",
        "retry:" + _sorted_json(manifest.retry.options()) if streaming else "",
    ]
    if manifest.tags:  # only when given: a job declared before tags keeps its fingerprint
        supervision.append("tags:" + _sorted_json(manifest.tags))
    return Fingerprints(digest(*query), digest(*config), digest(*supervision))


def _sorted_json(values: dict[str, str]) -> str:
    return json.dumps(values, sort_keys=True)
