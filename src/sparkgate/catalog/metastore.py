"""The embedded Hive metastore: one catalog for every engine, from PySpark's own jars.

Spark's built-in Derby catalog can be opened by one process only, so separate engines could
not see each other's tables. With embedded defaults the server starts a standalone Hive
metastore service (Derby under ``$SPARKGATE_HOME/metastore``) and engines connect to it over
thrift. The service is detached like the engines: it outlives a server restart, and a node
that finds it already listening reuses it. ``SPARKGATE_METASTORE_URI`` points at an existing
metastore instead. Facts and pitfalls: SPARK-NOTES.md.
"""

from __future__ import annotations

import fcntl
import importlib.util
import logging
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from xml.sax.saxutils import escape

from sparkgate.errors import ConfigurationError
from sparkgate.settings import Settings

log = logging.getLogger("sparkgate.metastore")

_START_TIMEOUT = 180.0


def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not candidate or not Path(candidate).exists():
        raise ConfigurationError(
            "Java was not found: Spark needs Java 17 or newer. Install OpenJDK 17 "
            "(e.g. 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME."
        )
    return candidate


def pyspark_jars() -> Path:
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError("PySpark is not installed in this environment.")
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def ensure_metastore(settings: Settings) -> str | None:
    """The thrift URI engines should use, starting the embedded metastore if needed."""
    if settings.catalog != "hive":
        return None
    if settings.metastore_uri:
        return settings.metastore_uri
    port = settings.metastore_port
    uri = f"thrift://127.0.0.1:{port}"
    directory = settings.resolved_home / "metastore"
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "w") as lock:
        # Several nodes on one machine share the service; one of them starts it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _listening(port):
            log.info("reusing the metastore listening on port %s", port)
            return uri
        _start(settings, directory, port)
    return uri


def _start(settings: Settings, directory: Path, port: int) -> None:
    conf_dir = directory / "conf"
    conf_dir.mkdir(exist_ok=True)
    warehouse = settings.resolved_warehouse_dir
    warehouse.mkdir(parents=True, exist_ok=True)
    properties = {
        "javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={directory / 'metastore_db'};create=true"
        ),
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(warehouse),
        # Without this the service dies at start-up on a missing disruptor class.
        "hive.async.log.enabled": "false",
    }
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in properties.items()
    )
    (conf_dir / "hive-site.xml").write_text(f"<configuration>\n{body}</configuration>\n")
    command = [
        java_executable(),
        "-Xmx256m",
        f"-Dhive.log.dir={directory / 'logs'}",
        f"-Dderby.stream.error.file={directory / 'derby.log'}",
        "-cp",
        f"{conf_dir}{os.pathsep}{pyspark_jars()}/*",
        "org.apache.hadoop.hive.metastore.HiveMetaStore",
        "-p",
        str(port),
    ]
    log_path = directory / "metastore.log"
    log.info("starting the embedded Hive metastore on port %s", port)
    with open(log_path, "ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=str(directory),
            start_new_session=True,
        )
    (directory / "pid").write_text(str(process.pid))
    # Reap it if it exits while we run (no zombie), and keep the handle referenced.
    threading.Thread(target=process.wait, name="reap-metastore", daemon=True).start()
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            raise ConfigurationError(
                f"The embedded Hive metastore exited at start-up (code {process.returncode}); "
                f"see {log_path}:\n{tail}"
            )
        if _listening(port):
            return
        time.sleep(0.25)
    process.kill()
    raise ConfigurationError(
        f"The embedded Hive metastore did not listen on port {port} within "
        f"{_START_TIMEOUT:.0f}s; see {log_path}."
    )


def stop_metastore(settings: Settings) -> bool:
    """Stop the embedded metastore this home started; True if one was running."""
    pid_file = settings.resolved_home / "metastore" / "pid"
    if not pid_file.exists():
        return False
    try:
        os.killpg(int(pid_file.read_text()), 15)
    except (ProcessLookupError, ValueError):
        return False
    finally:
        pid_file.unlink(missing_ok=True)
    return True


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
