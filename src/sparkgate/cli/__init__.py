"""The ``sparkgate`` command line."""
