"""A real OpenLDAP slapd for tests: a temporary directory, a free loopback port, known users.

reason = slapd_unavailable()
if reason:
    pytest.skip(reason)
with SlapdServer() as ldap:
    Settings(auth="ldap", auth_ldap_url=ldap.url, auth_ldap_user_dn=ldap.user_dn_template, ...)

slapd runs in the foreground (``-d 0``), so the tracked pid is slapd itself and ``stop()`` ends
exactly that process. The directory is loaded offline with slapadd before slapd starts.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings
from pathlib import Path
from types import TracebackType

from sparkgate_dev import free_port

SUFFIX = "dc=example,dc=org"
PEOPLE = f"ou=people,{SUFFIX}"
GROUPS = f"ou=groups,{SUFFIX}"
ROOT_DN = f"cn=admin,{SUFFIX}"
ROOT_PASSWORD = "admin-pw"

LDAP_USERS = {"alice": "alice-pw", "bob": "bob-pw", "dave": "dave-pw"}
LDAP_GROUPS = {"analysts": ["bob", "dave"]}

MODULE_DIR = Path("/usr/lib/ldap")  # Debian's
SCHEMA_DIR = Path("/etc/ldap/schema")
SCHEMAS = ("core", "cosine", "inetorgperson", "nis")


def slapd_binary() -> str | None:
    if os.access("/usr/sbin/slapd", os.X_OK):
        return "/usr/sbin/slapd"
    return shutil.which("slapd")


def slapd_unavailable() -> str | None:
    """Why a test slapd cannot run here (for ``pytest.skip``), or None if it can."""
    if slapd_binary() is None:
        return (
            "slapd is not installed (apt-get install slapd ldap-utils, or scripts/install --test)"
        )
    missing = [s for s in SCHEMAS if not (SCHEMA_DIR / f"{s}.schema").is_file()]
    if missing:
        return f"OpenLDAP schemas {', '.join(missing)} not found in {SCHEMA_DIR}"
    return None


def ssha(password: str) -> str:
    """An RFC 2307 ``{SSHA}`` hash, as ``slappasswd -s`` makes."""
    salt = os.urandom(8)
    digest = hashlib.sha1(password.encode() + salt).digest()
    return "{SSHA}" + base64.b64encode(digest + salt).decode()


def user_dn(name: str) -> str:
    return f"uid={name},{PEOPLE}"


def directory_ldif() -> str:
    entries = [
        f"dn: {SUFFIX}\nobjectClass: dcObject\nobjectClass: organization\n"
        "dc: example\no: Example\n",
        f"dn: {PEOPLE}\nobjectClass: organizationalUnit\nou: people\n",
        f"dn: {GROUPS}\nobjectClass: organizationalUnit\nou: groups\n",
    ]
    for name, password in LDAP_USERS.items():
        entries.append(
            f"dn: {user_dn(name)}\nobjectClass: inetOrgPerson\nuid: {name}\ncn: {name}\n"
            f"sn: {name}\nuserPassword: {ssha(password)}\n"
        )
    for group, members in LDAP_GROUPS.items():
        lines = "".join(f"member: {user_dn(m)}\n" for m in members)
        entries.append(f"dn: cn={group},{GROUPS}\nobjectClass: groupOfNames\ncn: {group}\n{lines}")
    return "\n".join(entries)


def slapd_conf(directory: Path) -> str:
    includes = "".join(f"include {SCHEMA_DIR / s}.schema\n" for s in SCHEMAS)
    modules = ""
    if (MODULE_DIR / "back_mdb.so").exists():  # built as a module (Debian), not in the binary
        modules = f"modulepath {MODULE_DIR}\nmoduleload back_mdb\n"
    return (
        f"{includes}"
        f"pidfile {directory / 'slapd.pid'}\n"
        f"argsfile {directory / 'slapd.args'}\n"
        f"{modules}\n"
        "database mdb\n"
        "maxsize 16777216\n"
        f'suffix "{SUFFIX}"\n'
        f'rootdn "{ROOT_DN}"\n'
        f"rootpw {ROOT_PASSWORD}\n"
        f"directory {directory / 'db'}\n"
        "access to attrs=userPassword by self write by anonymous auth by * none\n"
        "access to * by * read\n"
    )


class SlapdServer:
    """One slapd child process with the users and groups above; ``stop()`` removes everything."""

    def __init__(self, *, start_timeout: float = 20.0) -> None:
        self.start_timeout = start_timeout
        self.directory: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.url = ""
        self.user_dn_template = f"uid={{user}},{PEOPLE}"
        self.search_base = GROUPS
        self.root_dn = ROOT_DN
        self.root_password = ROOT_PASSWORD

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> SlapdServer:
        reason = slapd_unavailable()
        if reason:
            raise RuntimeError(reason)
        binary = slapd_binary()
        assert binary is not None
        self.directory = Path(tempfile.mkdtemp(prefix="sparkgate-slapd-"))
        try:
            conf = self.directory / "slapd.conf"
            conf.write_text(slapd_conf(self.directory))
            (self.directory / "db").mkdir()
            ldif = self.directory / "directory.ldif"
            ldif.write_text(directory_ldif())
            # slapadd is slapd in tool mode (-T); loading offline needs neither a bind nor ldapadd.
            loaded = subprocess.run(
                [binary, "-T", "add", "-f", str(conf), "-l", str(ldif)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if loaded.returncode != 0:
                raise RuntimeError(f"slapadd failed ({loaded.returncode}): {loaded.stderr.strip()}")
            for _attempt in range(3):  # another process may take the free port before slapd does
                if self._launch(binary, conf):
                    return self
            raise RuntimeError(f"slapd did not start: {self._log_tail()}")
        except BaseException:
            self.stop()
            raise

    def _launch(self, binary: str, conf: Path) -> bool:
        assert self.directory is not None
        self.port = free_port()
        self.url = f"ldap://127.0.0.1:{self.port}"
        with open(self.directory / "slapd.log", "wb") as log:
            self.process = subprocess.Popen(
                [binary, "-h", f"{self.url}/", "-f", str(conf), "-d", "0"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                return False
            if self._accepts():
                self._check_bind()
                return True
            time.sleep(0.05)
        self._kill()
        raise RuntimeError(f"slapd did not listen on {self.url} in {self.start_timeout}s")

    def _accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def _check_bind(self) -> None:
        with warnings.catch_warnings():  # see sparkgate.auth.ldap
            warnings.simplefilter("ignore", DeprecationWarning)
            import ldap3

        name, password = next(iter(LDAP_USERS.items()))
        connection = ldap3.Connection(
            ldap3.Server(self.url, get_info=ldap3.NONE, connect_timeout=5),
            user=user_dn(name),
            password=password,
            receive_timeout=5,
        )
        try:
            if not connection.bind():
                raise RuntimeError(f"test bind as {name} to {self.url} failed: {connection.result}")
        finally:
            connection.unbind()

    def _log_tail(self) -> str:
        if self.directory is None:
            return ""
        try:
            text = (self.directory / "slapd.log").read_text(errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-5:])

    def _kill(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)

    def stop(self) -> None:
        self._kill()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    def __enter__(self) -> SlapdServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
