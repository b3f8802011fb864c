"""sparkgate's benchmarks: one module per figure, each one command (``scripts/bench NAME``,
which runs ``python -m bench.NAME``) printing a table against raw PySpark or the peer it
names, measured in the same run. ``harness`` starts the servers and peers they share."""
