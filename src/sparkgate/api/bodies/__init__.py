"""The native API's JSON answers as pydantic models: what ``views.py`` and the routes build.

Routes keep building plain dicts (the dashboard reads the same views); each JSON route names
its model (``response_model=``), so the OpenAPI schema lists every key a client sees, and
FastAPI checks every answer against it. The models are closed (``extra="forbid"``): a view
that grows a key its model lacks fails loudly (a 500 in the tests), rather than the schema
quietly lying. Free-form only where the data is: a result row's values, Spark settings,
manifests, stream progress JSON, what a statement printed.

One module per resource, as the routes are (``queries``, ``engines``, ``streams``, ``jobs``,
``users``, ``tables``, ``health``), over ``common``: the closed base model, the timestamp and
paging every list shares. Routes import the module of the answers they give.
"""
