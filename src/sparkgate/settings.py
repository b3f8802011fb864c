"""One settings object, read once at start-up and passed down.

Every field can be set from the environment as ``SPARKGATE_<FIELD>`` (``SPARKGATE_HOME``,
``SPARKGATE_STORE_URL``, ``SPARKGATE_SPARK_MASTER``, ...). Engines launched by a server get the
server's settings through the same variables, so both sides agree on paths and timeouts.
Dict fields (``SPARKGATE_SPARK_CONF``) are JSON.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from sparkgate.sql.durations import parse_duration


class EnginePod(BaseModel):
    """What an engine's pods get on Kubernetes (``SPARKGATE_KUBERNETES_ENGINE_PODS``, JSON, by
    share level). Unset fields take the ``default`` entry's, then Spark's defaults."""

    model_config = ConfigDict(extra="forbid")

    cpu: str | None = None  # the driver pod's CPU request ("1", "500m")
    memory: str | None = None  # the driver's heap ("2g"); the pod's request adds Spark's overhead
    executor_cpu: str | None = None
    executor_memory: str | None = None
    max_executors: int | None = Field(default=None, ge=1)
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    service_account: str | None = None
    # A pod template (YAML file) driver and executor pods start from: volumes for the shared
    # storage, security context, image pull secrets...
    template: Path | None = None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SPARKGATE_", extra="ignore")

    # Where everything lives when nothing else is said: store, results, warehouse, logs.
    home: Path = Path(".sparkgate")
    store_url: str | None = None  # default: SQLite file under home
    # The schema revision a node brings the store to when it starts: "head" (everything this
    # version knows). An older revision pins a node to the schema of an earlier release, so a
    # rolling upgrade (and the chaos suite's "upgrade while the other node runs") can be shown.
    store_revision: str = "head"

    host: str = "127.0.0.1"
    port: int = 8998
    # Seconds an idle HTTP connection is kept open. Longer than any client's polling interval:
    # the livy client polls batches every 5 s, exactly uvicorn's default, and then races the
    # server closing the connection it is about to reuse (a reset, a failed client call).
    http_keep_alive: float = 75.0
    # Logs of the server and its engines: readable lines, or one JSON object per line (for a
    # log shipper); either way each record names its query, session, user and engine.
    log_format: Literal["text", "json"] = "text"

    # Users and access (README "Users and access"). ``auth``: none | password | ldap | jwt, or a
    # comma list tried in order ("password,jwt"); personal access tokens work with any but none.
    auth: str = "none"
    auth_password_file: Path | None = None  # user:bcrypt-hash lines (htpasswd -B)
    auth_jwt_jwks: str | None = None  # a JWKS file path or an https:// URL
    auth_jwt_issuer: str | None = None
    auth_jwt_audience: str | None = None
    auth_jwt_user_claim: str = "sub"
    auth_jwt_leeway: float = 30.0  # seconds of clock skew allowed on exp/nbf
    auth_ldap_url: str | None = None  # ldap://host:389 or ldaps://host:636
    auth_ldap_user_dn: str | None = None  # uid={user},ou=people,dc=example,dc=org
    auth_ldap_search_base: str | None = None  # where groups are looked up (optional)
    # Groups whose members include the user: {dn} and {user} are filled in.
    auth_ldap_group_filter: str = "(|(member={dn})(uniqueMember={dn})(memberUid={user}))"
    auth_ldap_group_attribute: str = "cn"
    # Verified credentials are remembered this long (keyed by a hash), so a client polling
    # every 100 ms does not pay for bcrypt or an LDAP bind on every request.
    auth_cache_ttl: float = 60.0
    access_file: Path | None = None  # YAML: admins, groups, impersonators, rules, conf, limits
    # Admins when there is no access file: SPARKGATE_ADMINS=carol,dave (or a JSON list)
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Which sessions may share a warm engine: those of one user (default with auth), of one
    # group, of everyone (default without auth), or none (an engine per session).
    engine_share_level: Literal["user", "group", "server", "connection"] | None = None
    metrics_public: bool = False  # /metrics without credentials even when auth is on
    # Charge-back: a price per executor CPU-second, per GB (10^9 bytes) read and per GB
    # shuffled (written by map tasks) turns each query's cost and the usage totals into money
    # (``pricing.py``); none set: no money shown. ``price_currency`` only labels it ("EUR").
    price_per_cpu_second: float | None = Field(default=None, ge=0)
    price_per_gb_read: float | None = Field(default=None, ge=0)
    price_per_gb_shuffled: float | None = Field(default=None, ge=0)
    price_currency: str | None = None
    # A dashboard sign-in lasts this long (seconds): its cookie's token expires then.
    dashboard_session_ttl: float = 12 * 3600.0
    request_max_bytes: int = 8 * 1024 * 1024  # request bodies over this are refused (413)
    # A file loaded into a table (POST /v1/tables/{name}/data) is streamed to disk, not held
    # in memory: this bounds the disk it takes, not the node's memory.
    load_max_bytes: int = 10 * 1024 * 1024 * 1024
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    insecure: bool = False  # allow auth=none on an address other than loopback
    # Engines' Spark UIs are off unless this is true; then they listen on loopback only and
    # are reached through /v1/engines/{id}/ui with sparkgate's access checks.
    spark_ui: bool = False

    # Spark
    spark_master: str = "local[*]"
    # How engines start: "local" (a process on the node, any master), "yarn" (spark-submit,
    # client mode; written and unit-tested, not yet run here: launcher/submit.py) or
    # "kubernetes" (each engine a driver pod, its executors pods: launcher/kubernetes.py).
    launcher: Literal["local", "yarn", "kubernetes"] = "local"
    spark_submit: str | None = None  # default: pyspark's bin/spark-submit
    # Kubernetes: the image engine pods run (Spark, Python, sparkgate: deploy/image)
    kubernetes_image: str | None = None
    kubernetes_namespace: str = "default"  # where engine pods run
    kubernetes_service_account: str = "sparkgate-engine"  # engine pods' (they start executors)
    # The API server: in a pod, its service account (nothing to set); elsewhere a kubeconfig.
    kubernetes_kubeconfig: Path | None = None
    # Engine pods are named <prefix>-engine-<id>: two installations in one namespace differ.
    kubernetes_name_prefix: str = "sparkgate"
    kubernetes_labels: dict[str, str] = Field(default_factory=dict)  # on engine and executor pods
    # A Secret holding the SPARKGATE_* values that must not be written in a pod's spec (the
    # store URL, passwords): engine pods take it with envFrom, and those values are left out.
    kubernetes_env_secret: str | None = None
    # Engine pods' resources and placement, by share level ("user", "group", "server",
    # "connection"; "default" under each): see EnginePod.
    kubernetes_engine_pods: dict[str, EnginePod] = Field(default_factory=dict)
    spark_conf: dict[str, str] = Field(default_factory=dict)  # applied to every engine
    catalog: Literal["hive", "in-memory"] = "hive"
    metastore_uri: str | None = None  # thrift://host:port of an existing Hive metastore
    # The port of the metastore a home starts when no URI is given: None picks a free one when
    # the home first starts it, recorded in <home>/metastore/service.json and kept after. It
    # listens on loopback only, and a server reuses only the metastore its own home started.
    metastore_port: int | None = None
    warehouse_dir: Path | None = None
    results_dir: Path | None = None
    checkpoints_dir: Path | None = None
    staging_dir: Path | None = None
    uploads_dir: Path | None = None  # files being loaded into tables; shared, as results_dir

    # Engines
    engine_heartbeat_interval: float = 2.0
    engine_heartbeat_timeout: float = 30.0
    # An engine that cannot reach the store this long exits (giving back its cluster
    # resources). Shorter outages cost nothing: reapers judge heartbeats only a whole timeout
    # after they reach the store again.
    engine_store_patience: float = 600.0
    engine_start_timeout: float = 300.0
    # How long an engine on a cluster waits for its first executor before it fails with
    # NO_EXECUTORS (less than engine_start_timeout, so the reason given is that one).
    engine_executor_timeout: float = 120.0
    # After engines of one placement (kind and share key) fail NO_EXECUTORS in a row, the next
    # waits this long after the last failure, doubling with each, up to the max.
    engine_backoff_min: float = Field(default=10.0, ge=0)
    engine_backoff_max: float = Field(default=600.0, ge=0)
    # Engines and long polls act on wake-up hints from the store's writers (store/hints.py);
    # this is how often they look anyway, should a hint be lost. False: no hints at all (only
    # for testing that the safety poll alone is enough).
    hint_safety_poll: float = 1.0
    hints: bool = True
    engine_idle_timeout: float = 1800.0  # an engine with no sessions this long exits
    engine_driver_memory: str | None = None
    warm_engines: int = 1  # dedicated engines kept started, so a batch need not wait for a JVM
    shared_engine: bool = True  # keep a shared engine for interactive sessions running
    shared_engine_max_sessions: int = 64
    # On a standalone cluster, the shared engine keeps one executor while it lives (the other
    # engines give theirs back after 30 s idle): its users' first query after a pause then
    # does not wait seconds for a new one. False: it gives it back too.
    shared_engine_keep_executor: bool = True

    # Sessions and queries
    session_idle_timeout: float = 3600.0  # 0: never; an idle interactive session is ended
    result_page_max: int = 10_000
    result_retention: float = 7 * 86400.0  # seconds result files are kept; 0: forever
    # Result reuse: a read-only query is answered from an earlier result of the same query
    # (normalised text, session context, effective access rules) while every table it read is
    # unchanged. Off here for the whole server; per query ``?reuse=false`` or, in a session,
    # ``SET use_cached_result = false``. A result is kept for reuse ``reuse_ttl`` seconds (never
    # longer than ``result_retention``), if its files hold at most ``reuse_max_bytes``.
    reuse: bool = True
    reuse_ttl: float = Field(default=3600.0, ge=0)
    reuse_max_bytes: int = Field(default=256 * 1024 * 1024, ge=0)
    # Days the audit log (the access history with it) is kept; 0: forever.
    audit_retention_days: float = 365.0
    long_poll_max: float = 120.0
    # A submit's Idempotency-Key answers its first result this long (seconds); then the key
    # is forgotten (the results duty removes it) and may name a new request.
    idempotency_key_ttl: float = 86400.0
    # What a pyspark statement prints is kept up to this many characters (then cut, with a
    # note); a batch file's log keeps its last ``batch_log_max_chars``.
    python_output_max_chars: int = 8_000_000
    batch_log_max_chars: int = 1_000_000

    # HiveServer2 Thrift door (JDBC, ODBC, PyHive, dbt): binary TCP on this port (0: off; the
    # HTTP transport is always at /cliservice on the main port).
    thrift_port: int = 10009
    # The Spark Connect door (sc://host:port): gRPC on this port (0: off). Engines then run
    # Spark's Connect service on loopback, for the nodes only.
    connect_port: int = 15002
    thrift_idle_timeout: float = 3600.0  # a Thrift session unused this long ends (0: never)
    # How long GetOperationStatus holds its answer while the query runs (clients poll in a
    # tight loop): long enough to spare the store, short enough for progress and logs.
    thrift_status_wait: float = 1.0
    thrift_fetch_max_rows: int = 100_000  # rows one FetchResults returns at most
    # The binary port before login, where anyone who can reach it is talking (hive2/binary.py).
    # Seconds from a connection's start to its login (SASL done; NOSASL: its first message)
    # before it is closed, like Hive's hive.server2.thrift.login.timeout (0: no deadline).
    thrift_login_timeout: float = 20.0
    # Connections from one address still logging in at once; one more is closed (0: no cap).
    thrift_max_pending_logins_per_address: int = 16

    # Livy-compatible API (/sessions, /batches)
    # Rows a Livy ``sql`` statement returns inline. Livy's own cap is 1000, which users hit all
    # the time; 10000 is one native result page (``result_page_max``), still a small response.
    # The whole result stays pageable through /v1/queries/{id}/result.
    livy_sql_row_limit: int = 10_000
    livy_csrf_protection: bool = False  # require X-Requested-By on POST/DELETE, as Livy can
    # Ended sessions stay in Livy's lists this long (Livy's state-retain.sec); by id, forever.
    livy_session_retention: float = 600.0

    # Tables. CREATE/REPLACE TABLE AS SELECT run two-phase (staged, then made visible whole)
    # unless this is false; a session can say ``SET spark.sparkgate.ctas.atomic=false``.
    atomic_ctas: bool = True
    # Seconds a replaced table version is kept after the switch, so that queries still
    # reading it finish; then the table janitor removes it.
    table_version_grace: float = 3600.0
    # How often an engine looks for table writes only it can finish (a staging table left
    # in the catalog by a crash, a commit whose engine died mid-way).
    table_recovery_interval: float = 5.0

    # Background duties (reaper, placement, table janitor, stream supervision) held by leases
    duty_interval: float = 2.0
    lease_ttl: float = 15.0

    # Streaming. Defaults of every streaming query's retry.* options (a query's OPTIONS win);
    # durations in seconds, or written as in SQL: "1s", "500ms", "1h".
    stream_retry_enabled: bool = True
    stream_retry_max_attempts: int = 2_147_483_647
    stream_retry_min_backoff: float = 1.0
    stream_retry_max_backoff: float = 3600.0
    stream_retry_random_factor: float = 0.0
    stream_retry_stable_period: float = 60.0  # healthy this long: the failure count resets
    stream_progress_interval: float = 2.0  # at most one progress write per query this often
    stream_progress_history: int = 100  # progress samples kept per query
    stream_stop_timeout: float = 60.0  # a graceful stop waits this long for the batch to end
    stream_engine_max_jobs: int = 16  # stream jobs per streaming engine
    # Deploys (job manifests): how long a deploy waits for one job to stop, or to start running,
    # before it reports that job as not deployed (the job itself carries on).
    deploy_timeout: float = 300.0
    # Jobs a deploy stops and starts at the same time (each job's steps stay in order).
    deploy_parallelism: int = 4

    # Python modules whose register(spark) is called in every session an engine opens: how
    # Python UDFs become available to SQL (e.g. ["mycompany.udfs"]).
    udf_modules: list[str] = Field(default_factory=list)

    @field_validator("admins", mode="before")
    @classmethod
    def _parse_names(cls, value: object) -> object:
        # SPARKGATE_ADMINS=carol,dave as well as the JSON list pydantic-settings expects.
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [name.strip() for name in value.split(",") if name.strip()]
        return value

    def access_policy(self) -> str:
        """What an engine launched with these settings enforces, as a key to compare: the
        access file (by path; an engine rereads the file when it changes, but never looks at
        another path) and the admins. An engine reads both once, from its environment."""
        path = str(self.access_file.expanduser().resolve()) if self.access_file else None
        named = json.dumps({"access_file": path, "admins": sorted(self.admins)})
        return hashlib.sha256(named.encode()).hexdigest()

    @property
    def auth_methods(self) -> list[str]:
        return [m.strip() for m in self.auth.split(",") if m.strip() and m.strip() != "none"]

    @property
    def share_level(self) -> str:
        if self.engine_share_level:
            return self.engine_share_level
        return "user" if self.auth_methods else "server"

    @field_validator("spark_conf", mode="before")
    @classmethod
    def _parse_conf(cls, value: object) -> object:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value

    @field_validator(
        "stream_retry_min_backoff",
        "stream_retry_max_backoff",
        "stream_retry_stable_period",
        mode="before",
    )
    @classmethod
    def _parse_duration(cls, value: object) -> object:
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                return parse_duration(value)
        return value

    @property
    def resolved_home(self) -> Path:
        return self.home.expanduser().resolve()

    @property
    def resolved_store_url(self) -> str:
        if self.store_url:
            return self.store_url
        return f"sqlite:///{self.resolved_home / 'sparkgate.db'}"

    def _under_home(self, value: Path | None, name: str) -> Path:
        return (value or self.resolved_home / name).expanduser().resolve()

    @property
    def resolved_warehouse_dir(self) -> Path:
        return self._under_home(self.warehouse_dir, "warehouse")

    @property
    def resolved_results_dir(self) -> Path:
        return self._under_home(self.results_dir, "results")

    @property
    def resolved_checkpoints_dir(self) -> Path:
        return self._under_home(self.checkpoints_dir, "checkpoints")

    @property
    def resolved_staging_dir(self) -> Path:
        return self._under_home(self.staging_dir, "staging")

    @property
    def resolved_uploads_dir(self) -> Path:
        return self._under_home(self.uploads_dir, "uploads")

    @property
    def logs_dir(self) -> Path:
        return self.resolved_home / "logs"

    def to_env(self) -> dict[str, str]:
        """The environment that gives a child process (an engine) these same settings."""
        env: dict[str, str] = {}
        for name, value in self.model_dump().items():
            if value is None:
                continue
            if isinstance(value, (dict, list)):
                text = json.dumps(value, default=str)  # paths inside (engine pods' templates)
            elif isinstance(value, Path):
                text = str(value.expanduser().resolve())
            else:
                text = str(value)
            env[f"SPARKGATE_{name.upper()}"] = text
        env["SPARKGATE_HOME"] = str(self.resolved_home)
        env["SPARKGATE_STORE_URL"] = self.resolved_store_url
        return env
