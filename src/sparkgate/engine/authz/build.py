"""Compile the engine's SQL extension (the ``*.scala`` files here) into a jar, with pyspark's
own Scala compiler and against pyspark's own jars: no download, no build tool, only the Java
Spark already needs. ``scripts/install`` runs it; an engine that finds no jar for these
sources (an edited source, a new pyspark) compiles it at start (about 5 s).

    python -m sparkgate.engine.authz.build       # prints the jar's path
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

log = logging.getLogger("sparkgate.engine")

HERE = Path(__file__).parent
EXTENSION_CLASS = "sparkgate.authz.Extensions"
COSTS_LISTENER_CLASS = "sparkgate.authz.QueryCosts"
KILLED_TASK_CPU_PLUGIN = "sparkgate.authz.KilledTaskCpu"


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _sources() -> list[Path]:
    return sorted(HERE.glob("*.scala"))


def _fingerprint() -> str:
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in _sources():
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _jar_dirs() -> list[Path]:
    """Beside the installation (a venv's share/), else the user's cache."""
    return [
        Path(sys.prefix) / "share" / "sparkgate",
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sparkgate",
    ]


def jar_path() -> Path | None:
    """The compiled jar for these sources, if there is one."""
    name = f"sparkgate-authz-{_fingerprint()}.jar"
    for directory in _jar_dirs():
        if (directory / name).is_file():
            return directory / name
    return None


def ensure_jar() -> Path:
    """The jar, compiled first if missing (one compiler at a time per directory)."""
    found = jar_path()
    if found is not None:
        return found
    name = f"sparkgate-authz-{_fingerprint()}.jar"
    errors: list[str] = []
    for directory in _jar_dirs():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            with open(directory / ".compile.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                target = directory / name
                if not target.is_file():
                    _compile(target)
                    for stale in directory.glob("sparkgate-authz-*.jar"):
                        if stale != target:  # built from earlier sources
                            stale.unlink(missing_ok=True)
                return target
        except OSError as exc:
            errors.append(f"{directory}: {exc}")
    raise RuntimeError("cannot write the access-control extension's jar: " + "; ".join(errors))


def _compile(target: Path) -> None:
    jars = _pyspark_jars()
    compiler = [
        next(jars.glob(f"{name}-2.13*.jar"))
        for name in ("scala-compiler", "scala-library", "scala-reflect")
    ]
    java = Path(os.environ["JAVA_HOME"]) / "bin" / "java" if os.environ.get("JAVA_HOME") else "java"
    classpath = ":".join(str(j) for j in sorted(jars.glob("*.jar")))
    with tempfile.TemporaryDirectory(prefix="sparkgate-authz-") as scratch:
        built = Path(scratch) / "authz.jar"
        command = [
            str(java),
            "-cp",
            ":".join(str(j) for j in compiler),
            "scala.tools.nsc.Main",
            "-usejavacp",
            "-nowarn",
            "-classpath",
            classpath,
            "-d",
            str(built),
            *(str(s) for s in _sources()),
        ]
        log.info("compiling the access-control extension into %s", target)
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not built.is_file():
            raise RuntimeError(
                "compiling the access-control extension failed:\n" + done.stdout + done.stderr
            )
        shutil.move(built, target.with_suffix(".part"))
        os.replace(target.with_suffix(".part"), target)


if __name__ == "__main__":
    print(ensure_jar())
