"""sparkgate: a SQL gateway and job supervisor for Apache Spark."""

__version__ = "0.1.0"
