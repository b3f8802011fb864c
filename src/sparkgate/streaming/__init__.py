"""Supervised Spark Structured Streaming: backoff, query definitions, job planning (pure, used
by server nodes) and the engine side (supervisor, progress listener, SQL handlers), whose
modules import PySpark and are imported by engines only."""
