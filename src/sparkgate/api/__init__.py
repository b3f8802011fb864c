"""The HTTP API: sparkgate's native /v1 routes (and, beside them, compatibility routes)."""
