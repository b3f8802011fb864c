"""Faults: an engine killed with SIGKILL, a server restarted. Nothing sticks, nothing is lost."""

from __future__ import annotations

import os
import signal
import time

from sparkgate.client import Client
from sparkgate.states import EngineState
from sparkgate_dev import ServerProcess, eventually
from tests.e2e.conftest import OpenSession, run, wait_idle


def test_engine_killed_with_sigkill_fails_its_query_with_engine_lost(
    server: ServerProcess, sg: Client
) -> None:
    # A one-off query with a driver of its own (to kill).
    submitted = sg.submit("SELECT sum(id % 7) FROM range(100000000000)", isolation="engine")
    eventually(lambda: sg.query(submitted.id).state == "running", timeout=240)
    session = sg.session(submitted.session_id)
    assert session.engine_id is not None
    with server.store() as store:
        engine = store.engines.get(session.engine_id)
    assert engine.pid is not None
    os.killpg(engine.pid, signal.SIGKILL)  # the Python driver and its JVM, no goodbye
    killed_at = time.monotonic()

    done = sg.wait(submitted.id, timeout=120)
    assert done.state == "failed", done
    assert done.error is not None
    assert done.error.code == "ENGINE_LOST"
    # Declared lost after the heartbeat timeout, not before and not much after.
    waited = time.monotonic() - killed_at
    timeout = server.settings.engine_heartbeat_timeout
    assert timeout - 2 <= waited <= timeout + 20, waited
    assert sg.session(session.id).state == "dead"
    with server.store() as store:
        assert store.engines.get(engine.id).state is EngineState.LOST


def test_server_restart_loses_nothing_and_engines_keep_running(
    server: ServerProcess, sg: Client, interactive: OpenSession
) -> None:
    session = interactive()
    run(sg, "CREATE TEMPORARY VIEW before_restart AS SELECT 7 AS n", session.id)
    answered = run(sg, "SELECT n * 6 AS answer FROM before_restart", session.id)
    assert session.engine_id is not None
    with server.store() as store:
        engine_pid = store.engines.get(session.engine_id).pid
    assert engine_pid is not None

    server.stop()
    os.kill(engine_pid, 0)  # the engine outlives the server
    server.start()

    wait_idle(sg, session.id)
    assert sg.query(answered.id).state == "success"
    assert sg.result(answered.id).rows == [[42]]
    # The same engine, the same Spark session: its temporary view is still there.
    again = run(sg, "SELECT n FROM before_restart", session.id)
    assert again.state == "success" and sg.result(again.id).rows == [[7]]
    assert sg.session(session.id).engine_id == session.engine_id
