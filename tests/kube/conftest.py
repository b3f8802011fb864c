"""A local Kubernetes (control plane + one test kubelet) per test module that asks for it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from sparkgate_dev.kube import Cluster, ControlPlaneUnavailable, ensure_built


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if os.geteuid() != 0:
        pytest.skip("the test kubelet needs root: pods get mount namespaces and local routes")
    try:
        ensure_built()
    except ControlPlaneUnavailable as exc:
        pytest.skip(f"no local Kubernetes control plane: {exc}")
    with Cluster(tmp_path_factory.mktemp("kube")) as started:
        started.add_local_image("python", [sys.executable])
        started.add_local_image("shell", [], cmd=["sh"])
        yield started
