"""The file ``spark-submit`` runs for an engine (YARN): ``spark-submit ...
entry.py --engine-id N`` does what ``python -m sparkgate.engine --engine-id N`` does."""

from __future__ import annotations

import sys

from sparkgate.engine.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
