"""The documentation site's reference pages, made from the code at each build.

One module per page, each with ``page() -> str``: the page's Markdown, its title (``# ...``)
first, read from what the code itself holds (the settings, the commands, the routes and their
schemas, the error codes, the metrics), so the reference says what this version does.
``docs/gen_reference.py`` writes them into the site as ``reference/<page>.md``.

The top of the import graph: a page may read any part of the package, nothing imports a page.
"""
