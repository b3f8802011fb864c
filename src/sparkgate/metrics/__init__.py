"""Prometheus figures: the cluster's, read from the store at scrape time (``cluster``), and this
process's, kept in memory by each server node (``process``). ``GET /metrics`` serves both."""
