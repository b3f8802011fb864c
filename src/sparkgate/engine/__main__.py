"""``python -m sparkgate.engine --engine-id N``: run one engine (the launcher starts this)."""

from __future__ import annotations

import argparse
import sys

from sparkgate import logs
from sparkgate.engine.process import Engine
from sparkgate.settings import Settings
from sparkgate.store import Store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sparkgate.engine")
    parser.add_argument("--engine-id", type=int, required=True)
    args = parser.parse_args(argv)
    settings = Settings()
    logs.configure(settings, process="engine")
    # Every record of this process names its engine, whichever thread logs it.
    logs.bind_process(engine_id=args.engine_id)
    store = Store.open(settings.resolved_store_url, hints=settings.hints)
    try:
        return Engine(settings, store, args.engine_id).run()
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
