"""A local Kubernetes to try things on, until Ctrl-C (or SIGTERM):

    python -m sparkgate_dev.kube [--work DIR] [--node NAME]...

builds the control plane first when its binaries are missing (once per machine), starts it and
one test kubelet per node, and prints the ``KUBECONFIG`` to use. A later run on the same work
directory finds the cluster's objects again (etcd keeps them)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from sparkgate_dev.kube import Cluster, ControlPlaneUnavailable, ensure_built
from sparkgate_dev.kube.controlplane import CACHE


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sparkgate_dev.kube")
    parser.add_argument("--work", type=Path, default=CACHE / "cluster", help="the cluster's state")
    parser.add_argument("--node", action="append", help="a node's name (default: node-1)")
    args = parser.parse_args(argv)
    try:
        print("control plane binaries in", ensure_built(), flush=True)
    except ControlPlaneUnavailable as exc:
        sys.exit(f"no control plane: {exc}")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with Cluster(args.work, nodes=args.node or ["node-1"]) as cluster:
        print(f"export KUBECONFIG={cluster.kubeconfig}")
        print(f"local images: {cluster.images_file}; logs: {args.work / 'logs'}")
        print("up; Ctrl-C stops it", flush=True)
        stop.wait()
    print("stopped")


if __name__ == "__main__":
    main()
