"""Which executor runs each statement kind: the one place that knows every capability.

The registry is written out here rather than filled by the capabilities registering
themselves: every statement kind and the module that runs it are read in one place, and no
statement kind can go missing because its module was not imported. The capabilities import
only ``runtime.contract``, never this module, so importing it (as ``engine.running`` does) is
what loads them, and there is no cycle.
"""

from __future__ import annotations

from sparkgate.engine.batch_files import run_file
from sparkgate.engine.catalog_calls import run_catalog
from sparkgate.engine.python_runner import run_statement
from sparkgate.engine.sql_handlers import run_sql
from sparkgate.runtime.contract import Executor
from sparkgate.states import StatementKind
from sparkgate.tables.loader import run_load

EXECUTORS: dict[StatementKind, Executor] = {
    StatementKind.SQL: run_sql,  # sparkgate's SQL extensions, then spark.sql (sql_handlers)
    StatementKind.PYSPARK: run_statement,  # Python in the session's namespace (python_runner)
    StatementKind.FILE: run_file,  # a .py or .sql file, like spark-submit (batch_files)
    StatementKind.CATALOG: run_catalog,  # a JDBC metadata call (catalog_calls)
    StatementKind.LOAD: run_load,  # an uploaded file into a table (tables.loader)
}
