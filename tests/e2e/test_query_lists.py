"""What every answer of a query carries, end to end (a real server, a real engine): its
resource group, tags and turn in the list (``GET /v1/queries``), in a submit's answer with
``?wait`` and without, in the cancel answer and in ``sparkgate queries list``, as the single
read gives them; engines say whose work they run, to admins only; a cancelled query's cost
counts the CPU its killed tasks spent; prices turn costs into money (``/v1/usage``, a query).
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sparkgate_dev import ServerProcess, eventually, kill_engines, local_test_settings, user_files

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

PASSWORDS = {"bob": "bob-pw", "carol": "carol-pw"}
ACCESS = """
admins: [carol]
groups: {analysts: [bob]}
resource_groups:
  rootGroups:
    - name: analysts
      hardConcurrencyLimit: 4
      maxQueued: 9
      subGroups:
        - {name: "${USER}", hardConcurrencyLimit: 2, maxQueued: 9}
  selectors:
    - {userGroup: analysts, group: "analysts.${USER}"}
"""
FINAL = {"success", "failed", "cancelled"}
# A query that reads and shuffles: every price applies.
SHUFFLING = "SELECT k, count(*) FROM (SELECT id % 13 AS k FROM range(200000)) GROUP BY k"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> Iterator[ServerProcess]:
    home = tmp_path_factory.mktemp("lists-home")
    settings = local_test_settings(
        home,
        metastore_uri=metastore_uri,
        auth="password",
        # Each user's engines their own (the warm one is bob's once he asks): what the
        # engines list tells admins.
        engine_share_level="user",
        price_per_cpu_second=0.5,
        price_per_gb_read=2.0,
        price_per_gb_shuffled=1.0,
        price_currency="EUR",
        **user_files(home, PASSWORDS, ACCESS),
    )
    server = ServerProcess(settings).start()
    server.wait_engines_running()
    try:
        yield server
    finally:
        server.stop()
        kill_engines(settings)


def _api(server: ServerProcess, user: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, auth=(user, PASSWORDS[user]), timeout=120)


def _cli(server: ServerProcess, user: str, *args: str) -> str:
    env = {**server.env, "SPARKGATE_USER": user, "SPARKGATE_PASSWORD": PASSWORDS[user]}
    done = subprocess.run(
        [sys.executable, "-m", "sparkgate.cli.main", *args, "--server", server.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _final(api: httpx.Client, query_id: int) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        query = dict(api.get(f"/v1/queries/{query_id}", params={"wait": 10}).json())
        return query if query["state"] in FINAL else None

    return eventually(done, timeout=240, what=f"query {query_id} final")


def test_lists_and_submit_answers_carry_the_group_and_tags(server: ServerProcess) -> None:
    with _api(server, "bob") as bob:
        waited = bob.post(
            "/v1/queries", params={"wait": 120}, json={"query": "SELECT 1", "tags": {"team": "fin"}}
        )
        assert waited.status_code == 201, waited.text
        answer = waited.json()
        assert answer["state"] == "success", answer
        assert answer["resource_group"] == "analysts.bob"
        assert answer["tags"] == {"team": "fin"}
        assert answer["queue_position"] is None

        queued = bob.post("/v1/queries", json={"query": "SELECT 2", "tags": {"team": "ops"}})
        accepted = queued.json()
        assert accepted["resource_group"] == "analysts.bob", accepted
        assert accepted["tags"] == {"team": "ops"}
        _final(bob, accepted["id"])

        listed = bob.get("/v1/queries", params={"limit": 10}).json()["queries"]
        by_id = {q["id"]: q for q in listed}
        for query_id, team in ((answer["id"], "fin"), (accepted["id"], "ops")):
            single = bob.get(f"/v1/queries/{query_id}").json()
            assert by_id[query_id]["resource_group"] == single["resource_group"] == "analysts.bob"
            assert by_id[query_id]["tags"] == single["tags"] == {"team": team}
            assert by_id[query_id]["queue_position"] is None

    table = _cli(server, "bob", "queries", "list")
    line = next(row for row in table.splitlines() if row.startswith(f"{answer['id']}\t"))
    assert "analysts.bob" in line.split("\t") and "team=fin" in line.split("\t"), table


def test_admins_are_told_whose_work_each_engine_runs(server: ServerProcess) -> None:
    """bob's queries ran on an engine of share level user, his: carol (an admin) is told so
    in ``/v1/engines`` and ``sparkgate engines list``; bob sees his engine as before."""
    with _api(server, "bob") as bob:
        assert bob.post("/v1/queries", params={"wait": 120}, json={"query": "SELECT 3"}).is_success
        mine = bob.get("/v1/engines").json()["engines"]
    assert mine and all(e["share_level"] is None and e["runs_for"] is None for e in mine)
    with _api(server, "carol") as carol:
        engines = carol.get("/v1/engines").json()["engines"]
        whose = {(e["share_level"], e["runs_for"]) for e in engines}
        assert ("user", "bob") in whose, engines
        bobs = next(e for e in engines if e["runs_for"] == "bob")
        single = carol.get(f"/v1/engines/{bobs['id']}").json()
        assert (single["share_level"], single["runs_for"]) == ("user", "bob")
    listed = _cli(server, "carol", "engines", "list")
    row = next(r for r in listed.splitlines() if r.startswith(f"{bobs['id']}\t"))
    assert "user bob" in row.split("\t"), listed


def test_prices_turn_costs_into_money(server: ServerProcess) -> None:
    """At the prices the server is given, a query's price is its CPU seconds, GB read and GB
    shuffled at those prices, in ``GET /v1/queries/{id}``, ``sparkgate queries show`` and
    ``/v1/usage`` (a row's price: the sum over its cost)."""
    with _api(server, "bob") as bob:
        since = time.time() - 1
        waited = bob.post(
            "/v1/queries",
            params={"wait": 120},
            json={"query": SHUFFLING},
        ).json()
        query = bob.get(f"/v1/queries/{waited['id']}").json()
        cost, price = query["cost"], query["price"]
        assert cost["executor_cpu_time_ns"] > 0 and cost["shuffle_write_bytes"] > 0, cost
        cpu = cost["executor_cpu_time_ns"] / 1e9 * 0.5
        read = cost["input_bytes"] / 1e9 * 2.0
        shuffled = cost["shuffle_write_bytes"] / 1e9 * 1.0
        assert price["currency"] == "EUR"
        assert price["cpu"] == pytest.approx(cpu) and price["shuffled"] == pytest.approx(shuffled)
        assert price["amount"] == pytest.approx(cpu + read + shuffled) and price["amount"] > 0
        usage = bob.get("/v1/usage", params={"since": since}).json()["rows"]
        assert len(usage) == 1 and usage[0]["key"] == "bob", usage
        summed = usage[0]["cost"]
        expected = (
            summed["executor_cpu_time_ns"] / 1e9 * 0.5
            + summed["input_bytes"] / 1e9 * 2.0
            + summed["shuffle_write_bytes"] / 1e9 * 1.0
        )
        assert usage[0]["price"]["amount"] == pytest.approx(expected) and expected > 0
    shown = _cli(server, "bob", "queries", "show", str(waited["id"]))
    assert f"{price['amount']:.4f} EUR" in shown, shown
    report = _cli(server, "bob", "usage", "--since", "1h")
    assert "price" in report.splitlines()[0].split("\t"), report
