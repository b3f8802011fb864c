"""Two-phase tables: atomic CREATE [OR REPLACE] TABLE / REPLACE TABLE ... AS SELECT.

- ``statement``: recognising the statements (pure);
- ``plan``: staged, plain, refused or skipped (pure);
- ``twophase``: the protocol, ``begin`` / ``commit`` / ``abort``, bound to the statement's
  lifecycle by ``CtasStatusHook``; ``handler``: the SQL handler engines run;
- ``janitor``: the server duty that cleans up after crashes; ``recovery``: what only an engine
  (with the catalog) can finish;
- ``catalog``, ``locations``, ``relocate``: Spark's catalog, staging paths, error positions.

Only the engine-side modules import PySpark (lazily); the janitor runs on server nodes.
"""
