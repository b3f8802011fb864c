"""The image's entrypoint (deploy/image/entrypoint), run as a pod would run it, with fake
``java``, ``spark-submit`` and Python programs that print the arguments they were given.

The executor's command is compared with what Spark's own image entrypoint
(resource-managers/kubernetes/docker/src/main/dockerfiles/spark/entrypoint.sh and its 4.x
version in spark-docker) starts for the same variables, as Spark 4.3's
BasicExecutorFeatureStep sets them on an executor pod. One difference, on purpose: Spark's
script leaves empty class-path entries where a variable is unset ("conf::jars/*"), which Java
reads as the working directory; this one leaves them out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ENTRYPOINT = Path(__file__).resolve().parents[2] / "deploy" / "image" / "entrypoint"

# What BasicExecutorFeatureStep puts on an executor pod (the pod's IP and name through the
# downward API); SPARK_JAVA_OPT_<n> are spark.executor.extraJavaOptions, then the Spark
# properties an executor needs at start, numbered in order.
EXECUTOR_POD_ENV = {
    "SPARK_USER": "sparkgate",
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@sparkgate-engine-7-driver-svc.team.svc:7078",
    "SPARK_EXECUTOR_CORES": "2",
    "SPARK_EXECUTOR_MEMORY": "1408m",
    "SPARK_APPLICATION_ID": "spark-0123456789abcdef",
    "SPARK_CONF_DIR": "/opt/spark/conf",
    "SPARK_EXECUTOR_ID": "3",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_EXECUTOR_POD_IP": "10.244.1.17",
    "SPARK_EXECUTOR_POD_NAME": "sparkgate-engine-7-exec-3",
    "SPARK_AUTH_SECRET": "secret",
    **{f"SPARK_JAVA_OPT_{n}": f"-Dspark.opt{n}=v{n}" for n in range(12)},
}
# One option with spaces stays one argument.
EXECUTOR_POD_ENV["SPARK_JAVA_OPT_1"] = "-Dspark.executor.extraJavaOptions.note=two words"


def fake_program(path: Path) -> Path:
    """An executable at ``path`` that prints its arguments, one per line, after its own name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('#!/bin/sh\nprintf "%s\\n" "$0" "$@"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def homes(tmp_path: Path) -> dict[str, Path]:
    """A fake JAVA_HOME and SPARK_HOME, a fake Python, and a working directory."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    return {
        "java_home": fake_program(tmp_path / "jre" / "bin" / "java").parents[1],
        "spark_home": fake_program(tmp_path / "spark" / "bin" / "spark-submit").parents[1],
        "python": fake_program(tmp_path / "venv" / "bin" / "python"),
        "workdir": workdir,
    }


def run(args: list[str], env: dict[str, str], cwd: Path) -> list[str]:
    """The arguments the entrypoint's final program got, its own name first."""
    done = subprocess.run(
        [str(ENTRYPOINT), *args],
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def base_env(homes: dict[str, Path]) -> dict[str, str]:
    return {
        "JAVA_HOME": str(homes["java_home"]),
        "SPARK_HOME": str(homes["spark_home"]),
        "SPARKGATE_PYTHON": str(homes["python"]),
    }


def test_executor_runs_sparks_kubernetes_backend_as_sparks_entrypoint_does(
    homes: dict[str, Path],
) -> None:
    argv = run(["executor"], {**base_env(homes), **EXECUTOR_POD_ENV}, homes["workdir"])

    spark_home, workdir = homes["spark_home"], homes["workdir"]
    assert argv == [
        f"{homes['java_home']}/bin/java",
        # in the order Spark numbered them: _10 and _11 after _9, not after _1
        *(EXECUTOR_POD_ENV[f"SPARK_JAVA_OPT_{n}"] for n in range(12)),
        "-Xms1408m",
        "-Xmx1408m",
        "-cp",
        f"/opt/spark/conf:{spark_home}/jars/*:{workdir}",
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
        "--driver-url",
        "spark://CoarseGrainedScheduler@sparkgate-engine-7-driver-svc.team.svc:7078",
        "--executor-id",
        "3",
        "--cores",
        "2",
        "--app-id",
        "spark-0123456789abcdef",
        "--hostname",
        "10.244.1.17",
        "--resourceProfileId",
        "0",
        "--podName",
        "sparkgate-engine-7-exec-3",
    ]


def test_executor_class_path_keeps_sparks_order(homes: dict[str, Path]) -> None:
    env = {
        **base_env(homes),
        **EXECUTOR_POD_ENV,
        "SPARK_CLASSPATH": "/opt/extra/a.jar",  # spark.executor.extraClassPath
        "SPARK_EXTRA_CLASSPATH": "/opt/derived/*",
        "HADOOP_CONF_DIR": "/opt/hadoop/conf",
        "SPARK_DIST_CLASSPATH": "/opt/hadoop/share/*",
    }
    argv = run(["executor"], env, homes["workdir"])

    class_path = argv[argv.index("-cp") + 1].split(":")
    assert class_path == [
        "/opt/spark/conf",
        "/opt/hadoop/conf",
        "/opt/extra/a.jar",
        f"{homes['spark_home']}/jars/*",
        "/opt/derived/*",
        str(homes["workdir"]),
        "/opt/hadoop/share/*",
    ]


def test_executor_without_a_conf_dir_reads_spark_homes_and_finds_java_on_path(
    homes: dict[str, Path],
) -> None:
    env = {**base_env(homes), **EXECUTOR_POD_ENV}
    del env["JAVA_HOME"], env["SPARK_CONF_DIR"]
    env["PATH"] = f"{homes['java_home']}/bin:/usr/bin:/bin"
    argv = run(["executor"], env, homes["workdir"])

    assert argv[0] == f"{homes['java_home']}/bin/java"
    assert argv[argv.index("-cp") + 1].split(":")[0] == f"{homes['spark_home']}/conf"


def test_driver_runs_spark_submit_in_client_mode_on_the_pods_address(
    homes: dict[str, Path],
) -> None:
    # What spark-submit's cluster mode gives the driver pod (KUBERNETES-NOTES: as observed).
    args = [
        "--properties-file",
        "/opt/spark/conf/spark.properties",
        "--class",
        "org.apache.spark.deploy.PythonRunner",
        "local:///opt/app/main.py",
    ]
    env = {**base_env(homes), "SPARK_DRIVER_BIND_ADDRESS": "10.244.1.9"}
    argv = run(["driver", *args], env, homes["workdir"])

    assert argv == [
        f"{homes['spark_home']}/bin/spark-submit",
        "--conf",
        "spark.driver.bindAddress=10.244.1.9",
        "--conf",
        "spark.executorEnv.SPARK_DRIVER_POD_IP=10.244.1.9",
        "--deploy-mode",
        "client",
        *args,
    ]


def test_engine_and_serve_run_sparkgates_python(homes: dict[str, Path]) -> None:
    env = base_env(homes)
    python = str(homes["python"])

    engine = run(["engine", "--engine-id", "7"], env, homes["workdir"])
    serve = run(["serve", "--port", "8998"], env, homes["workdir"])

    assert engine == [python, "-m", "sparkgate.engine", "--engine-id", "7"]
    assert serve == [python, "-m", "sparkgate.cli.main", "server", "--port", "8998"]


def test_other_commands_run_as_given_with_the_found_spark_home(homes: dict[str, Path]) -> None:
    # No SPARK_HOME: the pyspark package of SPARKGATE_PYTHON (here, this test's Python).
    import pyspark

    env = {"SPARKGATE_PYTHON": sys.executable}
    printed = run(["sh", "-c", 'echo "$SPARK_HOME $PYSPARK_PYTHON"'], env, homes["workdir"])

    assert printed == [f"{os.path.dirname(pyspark.__file__)} python3"]


def test_no_command_is_a_usage_error(homes: dict[str, Path]) -> None:
    done = subprocess.run(
        [str(ENTRYPOINT)],
        env={"PATH": "/usr/bin:/bin", **base_env(homes)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "usage: entrypoint serve|engine|executor|driver" in done.stderr
