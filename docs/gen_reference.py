"""Write the reference pages from the code, at each build (mkdocs-gen-files runs this).

Each page is ``sparkgate.reference.<module>.page()``: the Markdown of ``reference/<page>``, made
from what the code holds (settings, commands, routes, errors, metrics), so the reference cannot
drift from it. A module that is missing fails the build; ``SPARKGATE_DOCS_PARTIAL=1`` skips it
instead, saying so, for trying the site while pages are being written.
"""

from __future__ import annotations

import importlib
import os
import sys

import mkdocs_gen_files

# The page each module writes, in the order of the nav.
PAGES = {
    "settings": "settings.md",
    "cli": "cli.md",
    "rest_api": "rest-api.md",
    "errors": "errors.md",
    "metrics": "metrics.md",
    "access_file": "access-file.md",
    "resource_groups": "resource-groups.md",
    "sql": "sql.md",
}


def main() -> None:
    partial = os.environ.get("SPARKGATE_DOCS_PARTIAL") == "1"
    for module_name, page in PAGES.items():
        qualified = f"sparkgate.reference.{module_name}"
        try:
            module = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if not partial or exc.name != qualified:
                raise
            print(
                f"gen_reference: {qualified} does not exist yet: reference/{page} skipped "
                "(SPARKGATE_DOCS_PARTIAL=1)",
                file=sys.stderr,
            )
            continue
        text = module.page()
        if not text.startswith("# "):
            raise ValueError(f"{qualified}.page() must start with the page's title (# ...)")
        with mkdocs_gen_files.open(f"reference/{page}", "w") as out:
            out.write(text)


main()
