"""Each resource as the doors show it, as pydantic models: sessions, queries, engines, streams,
jobs, users, tables, health, and the error answers. Defined once below the doors, so the
native API (``response_model=``), the dashboard, Livy and the client share one shape.

The models are closed (``extra="forbid"``): a key a model lacks fails loudly (a 500 in the
tests) rather than the OpenAPI schema quietly lying. Free-form only where the data is: a
result row's values, Spark settings, manifests, stream progress JSON, what a statement
printed. One module per resource, over ``common``: the closed base model, the timestamp and
the paging every list shares. A model validates from its store record (``from_attributes``):
a field of the record's name takes its value, epoch times and error dicts included; what a
record names otherwise or computes is given in the model's ``of``, in one place.
"""
