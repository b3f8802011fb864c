"""Background duties of server nodes, each held by one node at a time through a lease."""
