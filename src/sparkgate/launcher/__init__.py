"""Starting engines (launchers) and deciding which engine hosts which session (placement)."""

from __future__ import annotations

from sparkgate.launcher.base import Launcher
from sparkgate.settings import Settings
from sparkgate.store import Store


def launcher_for(settings: Settings, store: Store) -> Launcher:
    """The launcher ``settings.launcher`` names."""
    if settings.launcher == "yarn":
        from sparkgate.launcher.submit import YarnLauncher

        return YarnLauncher(settings, store)
    if settings.launcher == "kubernetes":
        from sparkgate.launcher.kubernetes import KubernetesLauncher

        return KubernetesLauncher(settings, store)
    from sparkgate.launcher.local import LocalLauncher

    return LocalLauncher(settings, store)
