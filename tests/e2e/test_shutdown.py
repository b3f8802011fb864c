"""Stopping engines: one through the API while the server runs; all of a home's, locally,
once its server is down (engines outlive the server on purpose, so this is how they end)."""

from __future__ import annotations

import subprocess
import sys

from sparkgate.schemas.queries import Session
from sparkgate.states import LIVE_ENGINE_STATES
from sparkgate_dev import MakeServer, eventually, wait_pids_gone


def test_engines_stop_through_the_api_and_a_home_stops_locally(make_server: MakeServer) -> None:
    server = make_server(warm_engines=0)
    server.wait_engines_running()
    with server.client() as sg:
        session = sg.wait_session(sg.create_session().id, {"idle"}, timeout=240)
        [engine] = sg.engines().engines
        assert sg.stop_engine(engine.id).state in {"stopping", "stopped"}

        def dead() -> Session | None:
            found = sg.session(session.id)
            return found if found.state == "dead" else None

        ended = eventually(dead, timeout=60)
        assert ended.error is not None and ended.error.code == "ENGINE_STOPPED"
        eventually(lambda: sg.engines(all=True).engines[0].state == "stopped", timeout=60)
        # Placement keeps a shared engine, as the settings ask: a new one starts.
        eventually(lambda: any(e.id != engine.id for e in sg.engines().engines), timeout=30)
        assert sg.stop_engine(engine.id).state == "stopped"  # harmless again

    def stop(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sparkgate.cli.main", "stop", *args],
            env=server.env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    refused = stop()
    assert refused.returncode == 1 and "SERVER_RUNNING" in refused.stderr

    server.stop()
    with server.store() as store:
        pids = [e.pid for e in store.engines.list_all(states=LIVE_ENGINE_STATES) if e.pid]
    assert pids, "the replacement engine outlives the server"
    done = stop("--timeout", "90")
    assert done.returncode == 0, done.stderr
    assert "engines stopped: 1, killed: 0" in done.stdout
    wait_pids_gone(pids, timeout=60)
    with server.store() as store:
        assert store.engines.list_all(states=LIVE_ENGINE_STATES) == []
