"""The Spark properties and environment an engine starts with: its UI in particular."""

from __future__ import annotations

from pathlib import Path

from sparkgate.engine.spark import engine_spark_conf, engine_spark_env
from sparkgate.settings import Settings
from sparkgate.states import EngineKind


def _settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(home=tmp_path, spark_master="local[2]", **values)  # type: ignore[arg-type]


def test_the_ui_is_off_by_default(tmp_path: Path) -> None:
    conf = engine_spark_conf(_settings(tmp_path), engine_id=3)
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.ui.killEnabled"] == "false"


def test_the_ui_when_on_is_proxied_and_cannot_kill(tmp_path: Path) -> None:
    conf = engine_spark_conf(_settings(tmp_path, spark_ui=True), engine_id=7)
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.ui.proxyBase"] == "/v1/engines/7/ui"
    assert conf["spark.ui.killEnabled"] == "false"
    assert conf["spark.ui.port"] == "0"  # not 4040+, shared with every Spark on the machine
    assert engine_spark_env(conf) == {"SPARK_LOCAL_IP": "127.0.0.1"}


def test_an_admin_may_turn_the_ui_on_but_not_off_loopback(tmp_path: Path) -> None:
    settings = _settings(
        tmp_path, spark_conf={"spark.ui.enabled": "true", "spark.ui.killEnabled": "true"}
    )
    conf = engine_spark_conf(settings, engine_id=1)
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.ui.killEnabled"] == "false"
    assert engine_spark_env(conf) == {"SPARK_LOCAL_IP": "127.0.0.1"}
    # Nor can a session's own conf turn kills back on.
    conf = engine_spark_conf(settings, {"spark.ui.killEnabled": "true"}, engine_id=1)
    assert conf["spark.ui.killEnabled"] == "false"


def test_the_ui_can_be_turned_off_by_spark_conf(tmp_path: Path) -> None:
    settings = _settings(tmp_path, spark_ui=True, spark_conf={"spark.ui.enabled": "false"})
    assert engine_spark_conf(settings)["spark.ui.enabled"] == "false"


def test_without_an_engine_id_there_is_no_proxy_base(tmp_path: Path) -> None:
    conf = engine_spark_conf(_settings(tmp_path, spark_ui=True))
    assert "spark.ui.proxyBase" not in conf


def test_a_remote_master_keeps_a_routable_driver_address(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, spark_master="spark://10.0.0.5:7077", spark_ui=True)
    conf = engine_spark_conf(settings, engine_id=2)
    assert not conf["spark.driver.host"].startswith("127.")
    assert engine_spark_env(conf) == {"SPARK_LOCAL_IP": "127.0.0.1"}
    # UI off: the environment is left alone, the driver host to Spark.
    off = engine_spark_conf(Settings(home=tmp_path, spark_master="spark://10.0.0.5:7077"))
    assert "spark.driver.host" not in off
    assert engine_spark_env(off) == {}
    # An admin's driver host is kept.
    pinned = Settings(
        home=tmp_path,
        spark_master="yarn",
        spark_ui=True,
        spark_conf={"spark.driver.host": "gateway.example"},
    )
    assert engine_spark_conf(pinned)["spark.driver.host"] == "gateway.example"


def test_spark_progress_bars_stay_out_of_the_engine_log(tmp_path: Path) -> None:
    for log_format in ("text", "json"):
        conf = engine_spark_conf(_settings(tmp_path, log_format=log_format))
        assert conf["spark.ui.showConsoleProgress"] == "false"
    # An admin's spark_conf still decides.
    wanted = {"spark.ui.showConsoleProgress": "true"}
    conf = engine_spark_conf(_settings(tmp_path, log_format="json", spark_conf=wanted))
    assert conf["spark.ui.showConsoleProgress"] == "true"


def test_on_a_standalone_cluster_engines_ask_one_core_and_only_while_busy(tmp_path: Path) -> None:
    conf = engine_spark_conf(Settings(home=tmp_path, spark_master="spark://m:7077"))
    assert conf["spark.cores.max"] == conf["spark.executor.cores"] == "1"
    assert conf["spark.dynamicAllocation.enabled"] == "true"
    assert conf["spark.dynamicAllocation.shuffleTracking.enabled"] == "true"
    assert conf["spark.dynamicAllocation.minExecutors"] == "0"
    assert conf["spark.dynamicAllocation.initialExecutors"] == "1"
    # SPARKGATE_SPARK_CONF, then a session's conf, say otherwise.
    settings = Settings(
        home=tmp_path,
        spark_master="spark://m:7077",
        spark_conf={"spark.cores.max": "4", "spark.dynamicAllocation.enabled": "false"},
    )
    conf = engine_spark_conf(settings, {"spark.cores.max": "2"})
    assert conf["spark.cores.max"] == "2" and conf["spark.dynamicAllocation.enabled"] == "false"
    # Local mode has one JVM: nothing to share, nothing asked.
    local = engine_spark_conf(_settings(tmp_path))
    assert not any(key.startswith("spark.dynamicAllocation") for key in local)
    assert "spark.cores.max" not in local


def test_on_a_standalone_master_only_the_shared_engine_keeps_an_executor(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, spark_master="spark://10.0.0.5:7077")
    shared = engine_spark_conf(settings, kind=EngineKind.SHARED)
    assert shared["spark.dynamicAllocation.minExecutors"] == "1"
    for kind in (EngineKind.DEDICATED, EngineKind.STREAMING, None):
        assert engine_spark_conf(settings, kind=kind)["spark.dynamicAllocation.minExecutors"] == "0"
    # The setting, or the admin's Spark conf, gives it back too.
    off = settings.model_copy(update={"shared_engine_keep_executor": False})
    assert (
        engine_spark_conf(off, kind=EngineKind.SHARED)["spark.dynamicAllocation.minExecutors"]
        == "0"
    )
    admin = settings.model_copy(
        update={"spark_conf": {"spark.dynamicAllocation.minExecutors": "0"}}
    )
    assert (
        engine_spark_conf(admin, kind=EngineKind.SHARED)["spark.dynamicAllocation.minExecutors"]
        == "0"
    )
    # Local mode has no executors to keep.
    assert "spark.dynamicAllocation.minExecutors" not in engine_spark_conf(
        _settings(tmp_path), kind=EngineKind.SHARED
    )


def test_killed_tasks_cpu_is_measured_only_where_executors_share_the_drivers_jar(
    tmp_path: Path,
) -> None:
    # The plugin's class is on the driver's class path only: an executor in another JVM
    # that cannot load it fails to start, so it is set for local masters alone.
    local = engine_spark_conf(_settings(tmp_path), authz_jar="/x/authz.jar")
    assert local["spark.plugins"].split(",")[0] == "sparkgate.authz.KilledTaskCpu"
    for master in ("spark://10.0.0.5:7077", "local-cluster[2,1,1024]", "k8s://https://k:6443"):
        conf = engine_spark_conf(
            Settings(home=tmp_path, spark_master=master), authz_jar="/x/authz.jar"
        )
        assert "KilledTaskCpu" not in conf.get("spark.plugins", "")
