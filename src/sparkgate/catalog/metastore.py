"""The embedded Hive metastore: one catalog for every engine, from PySpark's own jars.

Spark's built-in Derby catalog can be opened by one process only, so separate engines could
not see each other's tables. With embedded defaults the server starts a standalone Hive
metastore service (Derby under ``$SPARKGATE_HOME/metastore``) and engines connect to it over
thrift. ``SPARKGATE_METASTORE_URI`` points at an existing metastore instead.

The service listens on 127.0.0.1 only, on a port chosen for its home when it first starts
(``SPARKGATE_METASTORE_PORT`` fixes one) and recorded with its pid in
``<home>/metastore/service.json``. It is detached like the engines: it outlives a server
restart, and a node reuses it only if the recorded process is alive and is the one listening
on the recorded port. A listener this home did not start (another installation's catalog, on
a shared machine) is never reused. Facts and pitfalls: SPARK-NOTES.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from sparkgate.errors import ConfigurationError
from sparkgate.processes import alive
from sparkgate.procfs import listeners, socket_inodes
from sparkgate.settings import Settings

log = logging.getLogger("sparkgate.metastore")

_START_TIMEOUT = 180.0
_STOP_TIMEOUT = 15.0
_HOST = "127.0.0.1"
_RECORD = "service.json"
_LEGACY_PID = "pid"  # what versions before the loopback service recorded
_MAIN_CLASS = "SparkgateLoopbackMetaStore"

# Hive 2.3's HiveMetaStore (the one in PySpark's jars) always binds the wildcard address: it
# passes a null host to HiveAuthUtils.getServerSocket and has no bind-host setting. This is
# its startMetaStore for sparkgate's configuration (no SASL, SSL or framed transport, binary
# protocol), binding the address it is given. Java runs it from source (JEP 330).
_LAUNCHER_SOURCE = """\
import java.lang.reflect.Field;
import java.net.InetSocketAddress;
import org.apache.hadoop.hive.common.LogUtils;
import org.apache.hadoop.hive.conf.HiveConf;
import org.apache.hadoop.hive.conf.HiveConf.ConfVars;
import org.apache.hadoop.hive.metastore.HiveMetaStore;
import org.apache.hadoop.hive.metastore.IHMSHandler;
import org.apache.hadoop.hive.metastore.TSetIpAddressProcessor;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportFactory;

/** Hive's metastore service, listening on one address (sparkgate: catalog/metastore.py). */
public class SparkgateLoopbackMetaStore {
  public static void main(String[] args) throws Throwable {
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    HiveConf.setLoadMetastoreConfig(true);
    HiveConf conf = new HiveConf(HiveMetaStore.HMSHandler.class);
    LogUtils.initHiveLog4j();
    // What HiveMetaStore.main sets: this process is a metastore service, not a client.
    Field remote = HiveMetaStore.class.getDeclaredField("isMetaStoreRemote");
    remote.setAccessible(true);
    remote.setBoolean(null, true);
    long maxMessageSize = conf.getLongVar(ConfVars.METASTORESERVERMAXMESSAGESIZE);
    IHMSHandler handler = HiveMetaStore.newRetryingHMSHandler(
        new HiveMetaStore.HMSHandler("new db based metaserver", conf, false), conf);
    TServerSocket socket = new TServerSocket(new InetSocketAddress(host, port));
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .processor(new TSetIpAddressProcessor<IHMSHandler>(handler))
        .transportFactory(new TTransportFactory())
        .protocolFactory(new TBinaryProtocol.Factory())
        .inputProtocolFactory(
            new TBinaryProtocol.Factory(true, true, maxMessageSize, maxMessageSize))
        .minWorkerThreads(conf.getIntVar(ConfVars.METASTORESERVERMINTHREADS))
        .maxWorkerThreads(conf.getIntVar(ConfVars.METASTORESERVERMAXTHREADS));
    System.out.println("sparkgate: Hive metastore listening on " + host + ":" + port);
    new TThreadPoolServer(serverArgs).serve();
  }
}
"""


@dataclass(frozen=True)
class MetastoreService:
    """What ``service.json`` records about the metastore a home started."""

    port: int
    pid: int | None  # None: stopped (the port stays this home's choice)

    @property
    def uri(self) -> str:
        return f"thrift://{_HOST}:{self.port}"


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
    requested = requested_port(settings)
    directory = settings.resolved_home / "metastore"
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "w") as lock:
        # Several nodes of one home share the service; one of them starts it.
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = read_record(directory)
        if record is not None and record.pid is not None and _is_ours(record, directory):
            if _owns_listener(record.pid, record.port) and requested in (None, record.port):
                log.info("reusing this home's metastore (pid %s, %s)", record.pid, record.uri)
                _warn_if_outdated(settings, directory, record)
                return record.uri
            # Ours but not serving (or on a port no longer wanted): replace it, or its Derby
            # database stays locked.
            log.warning("replacing this home's metastore (pid %s): not serving", record.pid)
            _terminate(record.pid)
        _stop_legacy(directory)
        return _start(settings, directory, requested, record).uri


def _warn_if_outdated(settings: Settings, directory: Path, record: MetastoreService) -> None:
    """A running service keeps the configuration it started with: one an earlier release
    started is not replaced under the engines using it, but its operator is told."""
    try:
        running = (directory / "conf" / "hive-site.xml").read_text()
    except OSError:
        return
    if running != _hive_site(settings, directory):
        log.warning(
            "this home's metastore (pid %s) runs with the configuration an earlier sparkgate "
            "wrote (before this release, DROP SCHEMA failed on it); run `sparkgate stop` when "
            "no query runs and start the server again to restart it with this release's",
            record.pid,
        )


def requested_port(settings: Settings) -> int | None:
    """The port the settings fix for the embedded metastore, or None: choose one.

    Only an explicitly given ``metastore_port`` fixes the port; its default (or None) means
    "a free port, chosen for this home at first start"."""
    port = settings.metastore_port
    if not port:
        return None
    return int(port)


def read_record(directory: Path) -> MetastoreService | None:
    try:
        data = json.loads((directory / _RECORD).read_text())
        pid = data.get("pid")
        return MetastoreService(port=int(data["port"]), pid=None if pid is None else int(pid))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_record(directory: Path, service: MetastoreService) -> None:
    path = directory / _RECORD
    temporary = path.with_suffix(".tmp")
    temporary.write_text(
        json.dumps({"host": _HOST, "port": service.port, "pid": service.pid}) + "\n"
    )
    temporary.replace(path)


def _start(
    settings: Settings, directory: Path, requested: int | None, previous: MetastoreService | None
) -> MetastoreService:
    if requested is not None:
        if not _port_free(requested):
            raise ConfigurationError(
                f"Port {requested} (SPARKGATE_METASTORE_PORT) is in use by a process this "
                f"sparkgate home ({settings.resolved_home}) did not start; sparkgate never "
                "reuses a metastore it did not start. Free the port, choose another one, or "
                "unset it to let sparkgate choose."
            )
        return _launch(settings, directory, requested)
    # The port recorded for this home if it is free, else any free one.
    candidates = [previous.port] if previous is not None and _port_free(previous.port) else []
    for attempt in range(3):
        port = candidates[attempt] if attempt < len(candidates) else _free_port()
        try:
            return _launch(settings, directory, port)
        except _PortTaken:
            log.info("port %s was taken before the metastore bound it; choosing another", port)
    raise ConfigurationError("The embedded Hive metastore found no free port to listen on.")


class _PortTaken(Exception):
    pass


def _hive_site(settings: Settings, directory: Path) -> str:
    """The service's ``hive-site.xml``."""
    properties = {
        "javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={directory / 'metastore_db'};create=true"
        ),
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(settings.resolved_warehouse_dir),
        # Without this the service dies at start-up on a missing disruptor class.
        "hive.async.log.enabled": "false",
        # Hive 2.3 defaults to BoneCP, which PySpark's jars do not ship (HikariCP is there,
        # as Spark itself uses). The metastore's transaction handler opens its pool when a
        # database is dropped (AcidEventListener.onDropDatabase): with BoneCP every DROP
        # SCHEMA failed after dropping the schema, and the client's retry found nothing.
        "datanucleus.connectionPoolingType": "HikariCP",
    }
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
        for k, v in properties.items()
    )
    return f"<configuration>\n{body}</configuration>\n"


def _launch(settings: Settings, directory: Path, port: int) -> MetastoreService:
    conf_dir = directory / "conf"
    conf_dir.mkdir(exist_ok=True)
    settings.resolved_warehouse_dir.mkdir(parents=True, exist_ok=True)
    (conf_dir / "hive-site.xml").write_text(_hive_site(settings, directory))
    source = directory / f"{_MAIN_CLASS}.java"
    source.write_text(_LAUNCHER_SOURCE)
    command = [
        java_executable(),
        "-Xmx256m",
        "-Djava.net.preferIPv4Stack=true",
        f"-Dhive.log.dir={directory / 'logs'}",
        f"-Dderby.stream.error.file={directory / 'derby.log'}",
        "-cp",
        f"{conf_dir}{os.pathsep}{pyspark_jars()}/*",
        str(source),
        _HOST,
        str(port),
    ]
    log_path = directory / "metastore.log"
    offset = log_path.stat().st_size if log_path.exists() else 0
    log.info("starting the embedded Hive metastore on %s:%s", _HOST, port)
    with open(log_path, "ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=str(directory),
            start_new_session=True,
        )
    service = MetastoreService(port=port, pid=process.pid)
    # Recorded at once, so that stop_metastore finds it even while it starts.
    _write_record(directory, service)
    # Reap it if it exits while we run (no zombie), and keep the handle referenced.
    threading.Thread(target=process.wait, name="reap-metastore", daemon=True).start()
    deadline = time.monotonic() + _START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            with open(log_path, "rb") as f:
                f.seek(offset)
                output = f.read().decode(errors="replace")
            if "Address already in use" in output:
                raise _PortTaken()
            hint = ""
            if "jdk.compiler" in output:
                hint = (
                    "\nThis Java lacks the jdk.compiler module, which the embedded metastore's "
                    "launcher needs: install a full JDK 17+, or set SPARKGATE_METASTORE_URI."
                )
            raise ConfigurationError(
                f"The embedded Hive metastore exited at start-up (code {process.returncode}); "
                f"see {log_path}:\n{output[-2000:]}{hint}"
            )
        if _owns_listener(process.pid, port):
            return service
        time.sleep(0.25)
    _terminate(process.pid)
    raise ConfigurationError(
        f"The embedded Hive metastore did not listen on port {port} within "
        f"{_START_TIMEOUT:.0f}s; see {log_path}."
    )


def stop_metastore(settings: Settings) -> bool:
    """Stop the embedded metastore this home started; True if one was running."""
    directory = settings.resolved_home / "metastore"
    record = read_record(directory)
    stopped = False
    if record is not None and record.pid is not None:
        if _is_ours(record, directory):
            stopped = _terminate(record.pid)
        _write_record(directory, MetastoreService(port=record.port, pid=None))
    return _stop_legacy(directory) or stopped


def _stop_legacy(directory: Path) -> bool:
    """Stop a metastore an earlier sparkgate started for this home (it listened on every
    interface, and holds the Derby database the new one needs)."""
    pid_file = directory / _LEGACY_PID
    if not pid_file.exists():
        return False
    try:
        pid = int(pid_file.read_text())
    except ValueError:
        pid = 0
    pid_file.unlink(missing_ok=True)
    if pid <= 0 or "HiveMetaStore" not in _cmdline(pid):
        return False
    log.info("stopping the metastore an earlier sparkgate started (pid %s)", pid)
    return _terminate(pid)


def _terminate(pid: int) -> bool:
    """SIGTERM the process group of ``pid``, SIGKILL it if it lingers; True if it ran."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + _STOP_TIMEOUT
    while time.monotonic() < deadline:
        if not alive(pid):
            _reap(pid)
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return True


def _reap(pid: int) -> None:
    """Collect ``pid`` if this process started it: a zombie until its reaper thread runs,
    and callers take the return of a stop to mean the process is gone."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _is_ours(record: MetastoreService, directory: Path) -> bool:
    """True if the recorded pid is still the metastore this home started (not a reused pid)."""
    if record.pid is None or not alive(record.pid):
        return False
    if not Path("/proc").is_dir():
        return True  # no way to look closer here; the listener check still applies
    cmdline = _cmdline(record.pid)
    return _MAIN_CLASS in cmdline and str(directory) in cmdline


def _owns_listener(pid: int, port: int) -> bool:
    """True if process ``pid`` itself listens on loopback ``port`` (not just anything)."""
    if not Path("/proc").is_dir():
        return alive(pid) and _listening(port)
    try:
        inodes = socket_inodes(pid)
    except OSError:
        return False
    return any(one.port == port and one.inode in inodes for one in listeners())


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((_HOST, port))
        except OSError:
            return False
    return not _listening(port)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((_HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((_HOST, port)) == 0
