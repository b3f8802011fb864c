"""The SQL reference: what sparkgate adds to Spark SQL. Its own statements (the streaming
extensions ``sparkgate.sql.parser`` parses; GRANT, REVOKE and SHOW GRANTS, which the engine's
parser extension takes in front of Spark's), durations and triggers, and the settings a
session may or may not ``SET``.

Each statement class of ``sparkgate.sql.statements`` has a section here, or the page is not
made; the examples are parsed by the tests with sparkgate's own parsers, so they cannot drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from sparkgate.auth.access import ALWAYS_DENY
from sparkgate.sql import statements
from sparkgate.sql.durations import COMPACT_UNITS, UNIT_WORDS
from sparkgate.streaming.definitions import RETRY_OPTIONS
from sparkgate.tables.catalog import ATOMIC_CONF

# The engine's off switch for result reuse (Reuse.scala's OffKey, Databricks SQL's name).
REUSE_OFF = "use_cached_result"


@dataclass(frozen=True)
class Section:
    """One statement's part of the page: its grammar, what it does, examples that parse."""

    title: str
    grammar: str
    text: str
    examples: tuple[str, ...] = ()


SECTIONS: dict[type, Section] = {
    statements.CreateStream: Section(
        "CREATE STREAM",
        "CREATE [OR REPLACE] STREAM name [(col type, ...)] USING provider\n"
        "  [OPTIONS ('k'='v', ...)]\n"
        "CREATE [OR REPLACE] STREAM name FROM TABLE [db.]table [OPTIONS (...)]",
        "Registers a streaming temporary view `name` in the session (a temporary view: its "
        "name takes no database). Sources: `rate`, `rate-micro-batch`, `socket`, files "
        "(`json`, `csv`, `parquet`, `orc`, `text`, with a `path` option; all but `text` need "
        "the column list or a `schema` option), and any format on the classpath. `FROM TABLE` "
        "reads a catalog table as a stream. Between `CREATE STREAM` and `SAVE STREAM`, views "
        "are ordinary Spark SQL: filters, joins, windows, "
        "`FROM s WATERMARK ts DELAY OF INTERVAL 10 SECONDS`.",
        (
            "CREATE STREAM ticks USING rate OPTIONS ('rowsPerSecond'='10')",
            "CREATE OR REPLACE STREAM clicks (user STRING, url STRING, ts TIMESTAMP) USING json "
            "OPTIONS ('path'='/data/incoming/clicks')",
            "CREATE STREAM orders_feed FROM TABLE sales.orders",
        ),
    ),
    statements.SaveStream: Section(
        "SAVE STREAM",
        "SAVE STREAM [db.]view TO provider          -- or TO TABLE [db.]table\n"
        "  [IDENTIFIED BY query_name]                -- default: the view's name\n"
        "  [TRIGGER n unit]                          -- default: a batch as soon as one ends\n"
        "  [OUTPUT MODE APPEND | COMPLETE | UPDATE]\n"
        "  [PARTITIONED ON (col, ...)]\n"
        "  [OPTIONS ('k'='v', ...)]",
        "Starts a supervised streaming query writing the view to a sink, and returns one row "
        "(name, id, run id, state, checkpoint); the query runs on. The clauses may come in any "
        "order. Sinks: `parquet`, `json`, `csv`, `orc`, `text` (with a `path` option), "
        "`TO TABLE t`, `console`, `memory` (a table named after the query, in the same "
        "session), `noop`, and any sink format on the classpath. An output mode or "
        "`PARTITIONED ON` the sink cannot do, a missing `path` or a file source without "
        "columns is an error naming the line and position, before anything starts. Query "
        "names are unique within a stream job and among a session's running queries. The "
        "checkpoint is the `checkpointLocation` option, else one per job (or session) and "
        "query name.",
        (
            "SAVE STREAM clicks TO parquet IDENTIFIED BY clicks_archive TRIGGER 1 MINUTE "
            "PARTITIONED ON (url) OPTIONS ('path'='/data/archive/clicks', "
            "'retry.max.attempts'='10')",
            "SAVE STREAM per_minute TO console OUTPUT MODE UPDATE",
            "SAVE STREAM analysts.clean_orders TO TABLE analysts.orders TRIGGER 100ms",
        ),
    ),
    statements.StopStream: Section(
        "STOP STREAM",
        "STOP STREAM query_name",
        "Stops a streaming query of this session at a micro-batch boundary (in a session "
        "only: a stream job is stopped as a whole, `sparkgate streams stop NAME`).",
        ("STOP STREAM clicks_archive",),
    ),
    statements.PassThrough: Section(
        "Everything else",
        "",
        "Any other statement is Spark SQL, passed to Spark as it is, with Spark's own errors. "
        "Keywords of sparkgate's statements are case-insensitive; a syntax error in one says "
        "where and what was expected, in Spark's shape: `[PARSE_SYNTAX_ERROR] Syntax error at "
        "or near 'TOO': expected TO (line 1, position 15)`.",
        ("SELECT count(*) FROM sales.orders", "CREATE TEMPORARY VIEW v AS SELECT * FROM ticks"),
    ),
}

# GRANT, REVOKE and SHOW GRANTS: parsed in the engine (Authz.scala's Grants), not by
# sparkgate.sql; the tests match these with that parser's own patterns.
GRANT_EXAMPLES = (
    "GRANT SELECT, INSERT ON TABLE analysts.daily TO GROUP finance",
    "REVOKE INSERT ON TABLE analysts.daily FROM GROUP finance",
    "GRANT ALL PRIVILEGES ON analysts.daily TO USER bob",
    "SHOW GRANTS ON TABLE analysts.daily",
)

_GRANTS = """\
## GRANT, REVOKE, SHOW GRANTS

```
GRANT {privilege [, ...] | ALL [PRIVILEGES]} ON [TABLE | VIEW] [[catalog.]db.]table
  TO {USER | GROUP} name           -- privilege: SELECT, INSERT, DELETE or UPDATE
REVOKE ... ON [TABLE | VIEW] [[catalog.]db.]table FROM {USER | GROUP} name
SHOW GRANTS ON [TABLE | VIEW] [[catalog.]db.]table
```

A table's or view's owner (its creator through sparkgate) and admins grant and revoke
privileges on it, at every door that takes SQL (Spark's own parser refuses these statements for
the session catalog: the engines take them in front of it). `GRANT_SELECT` in a table rule lets
its users grant `SELECT` on what they do not own. A user's privileges on a table are the first
matching table rule's plus the grants to them or a group of theirs; masks and filters come from
the rule. Grants are audited (`table.grant`, `table.revoke`) and also listed by
`GET /v1/tables/{table}/grants` and `sparkgate access grants TABLE`.

Rights (`sql`, `code`, `streams`, `jobs`, `admin`) and table rules are not granted in SQL: they
are the [access file](access-file.md)'s `rules:` and `tables:`. See
[Access rules](../how-to/access-rules.md).

```sql
{examples}
```
"""


def _durations() -> str:
    compact = ", ".join(f"`{unit}`" for unit in COMPACT_UNITS)
    words = ", ".join(f"`{word.upper()}[S]`" for word in UNIT_WORDS)
    return f"""\
## Durations and triggers

Options that take a duration (`retry.min.backoff`, ...) write it compact, a number glued to its
unit: `50s`, `100ms`, `1min`; units {compact}. `TRIGGER` takes the same (`TRIGGER 100ms`), a
number and a unit word (`TRIGGER 5 SECONDS`, `TRIGGER 1 MINUTE`; units {words}), or either
after `INTERVAL` or in quotes. A trigger starts a micro-batch every interval; without one a
batch starts as soon as the previous one ends.

## Stream options

`SAVE STREAM ... OPTIONS` passes its options to Spark's sink, except these, which set how
sparkgate restarts the query after a failure (their server-wide defaults are the
`SPARKGATE_STREAM_RETRY_*` settings): {", ".join(f"`{o}`" for o in RETRY_OPTIONS)}.
"""


_HONOURED = "\n".join(
    [
        "| Setting | What it does |",
        "| --- | --- |",
        f"| `SET {REUSE_OFF} = false` | No result reuse for the session's next queries (`true` "
        "turns it on again); Databricks SQL's name. |",
        f"| `SET {ATOMIC_CONF} = false` | `CREATE/REPLACE TABLE AS SELECT` runs as Spark's own, "
        "not two-phase (server-wide: `SPARKGATE_ATOMIC_CTAS`). |",
    ]
)


def _settings() -> str:
    always = ", ".join(f"`{key}`" for key in ALWAYS_DENY)
    return f"""\
## Settings: SET

`SET key = value` in a session is Spark's, checked first against the access file's deny list
(`conf.deny`): a denied key answers 403 `SETTING_DENIED` naming it, and nothing runs. Keys
starting `sparkgate.` are never settable ({always} among them: the user a session checks
table rules as, and the file a load may read). sparkgate honours these:

{_HONOURED}
"""


def page() -> str:
    classes = get_args(statements.Statement)
    missing = [cls.__name__ for cls in classes if cls not in SECTIONS]
    if missing:
        raise RuntimeError(f"statement classes without a section in the SQL reference: {missing}")
    lines = [
        "# SQL",
        "",
        "sparkgate runs Spark SQL (see Spark's "
        "[SQL reference](https://spark.apache.org/docs/latest/sql-ref.html)) and adds the "
        "statements below: streams, in a session or a stream job; grants on tables. Everything "
        "else is Spark's.",
        "",
    ]
    for cls in classes:
        section = SECTIONS[cls]
        lines += [f"## {section.title}", ""]
        if section.grammar:
            lines += ["```", section.grammar, "```", ""]
        lines += [section.text, ""]
        if section.examples:
            lines += ["```sql", *(f"{example};" for example in section.examples), "```", ""]
    lines.append(_durations())
    lines.append(_GRANTS.replace("{examples}", "\n".join(f"{e};" for e in GRANT_EXAMPLES)))
    lines.append(_settings())
    return "\n".join(lines)
