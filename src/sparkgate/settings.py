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

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    cpu: str | None = None
    """The driver pod's CPU request, in Kubernetes' notation ("1", "500m")."""
    memory: str | None = None
    """The driver's heap, in Spark's notation ("2g"); the pod requests this plus Spark's
    memory overhead. Default: ``engine_driver_memory``, else ``1g``."""
    executor_cpu: str | None = None
    """Each executor pod's CPU request ("1", "500m")."""
    executor_memory: str | None = None
    """Each executor's heap ("4g"; default ``1g``); the pod requests this plus Spark's memory
    overhead."""
    max_executors: int | None = Field(default=None, ge=1)
    """The most executor pods one engine runs at once (dynamic allocation's maximum;
    default 2)."""
    node_selector: dict[str, str] | None = None
    """Node labels the driver and executor pods must be scheduled on (``{"pool": "spark"}``)."""
    tolerations: list[dict[str, Any]] | None = None
    """Kubernetes tolerations of the driver and executor pods, as in a pod spec."""
    service_account: str | None = None
    """The service account the driver pod runs as (it creates its executor pods); default:
    ``kubernetes_service_account``."""
    template: Path | None = None
    """A pod template (YAML file) the driver and executor pods start from: volumes for the
    shared storage, security context, image pull secrets."""


class Settings(BaseSettings):
    # Each field's docstring is its meaning for users: the settings reference page is
    # generated from it (sparkgate.reference.settings).
    model_config = SettingsConfigDict(
        env_prefix="SPARKGATE_", extra="ignore", use_attribute_docstrings=True
    )

    home: Path = Path(".sparkgate")
    """Where everything lives unless said otherwise: the SQLite store, results, warehouse,
    checkpoints, uploads, logs and the embedded metastore."""
    store_url: str | None = None
    """The store's SQLAlchemy URL, e.g. ``postgresql+psycopg://user@host:5432/sparkgate``.
    Default: a SQLite file under ``home`` (one node only). Several nodes share one PostgreSQL
    database."""
    # "head" is everything this version knows; an older revision pins a node to the schema of
    # an earlier release, so a rolling upgrade (and the chaos suite's "upgrade while the other
    # node runs") can be shown.
    store_revision: str = "head"
    """The schema revision a node migrates the store to when it starts (never down):
    ``head`` (the newest this version knows) or an earlier revision's id."""

    host: str = "127.0.0.1"
    """The address the server listens on. Any address other than loopback needs
    authentication (or ``insecure``)."""
    port: int = 8998
    """The HTTP port: REST API, Livy API, dashboard, ``/metrics``, ``/healthz`` and
    HiveServer2 over HTTP (``/cliservice``)."""
    # Longer than any client's polling interval: the livy client polls batches every 5 s,
    # exactly uvicorn's default, and then races the server closing the connection it is about
    # to reuse (a reset, a failed client call).
    http_keep_alive: float = 75.0
    """Seconds an idle HTTP connection is kept open (longer than clients poll)."""
    log_format: Literal["text", "json"] = "text"
    """Logs of the server and its engines: ``text`` (readable lines) or ``json`` (one JSON
    object per line, for a log shipper). Either way each record names its query, session,
    user and engine."""

    # Users and access (docs/how-to/authentication.md). Personal access tokens work with any
    # method but none.
    auth: str = "none"
    """How users prove who they are: ``none``, ``password``, ``ldap``, ``jwt``, or a comma
    list tried in order (``password,jwt``). Personal access tokens work with any but
    ``none``."""
    auth_password_file: Path | None = None
    """The password file of ``password`` authentication: ``user:bcrypt-hash`` lines, as
    ``htpasswd -B`` or ``sparkgate users add`` write them."""
    auth_jwt_jwks: str | None = None
    """``jwt``: the keys tokens are verified against, a JWKS file (re-read when it changes) or
    an ``https://`` URL (fetched again on an unknown key id)."""
    auth_jwt_issuer: str | None = None
    """``jwt``: the issuer (``iss``) tokens must name; unset, any issuer is accepted."""
    auth_jwt_audience: str | None = None
    """``jwt``: the audience (``aud``) tokens must name; unset, any audience is accepted."""
    auth_jwt_user_claim: str = "sub"
    """``jwt``: the claim that holds the user's name."""
    auth_jwt_leeway: float = 30.0
    """``jwt``: seconds of clock skew allowed when checking ``exp`` and ``nbf``."""
    auth_ldap_url: str | None = None
    """``ldap``: the directory server, ``ldap://host:389`` or ``ldaps://host:636``
    (certificates are checked)."""
    auth_ldap_user_dn: str | None = None
    """``ldap``: the DN a user binds as, ``{user}`` filled in:
    ``uid={user},ou=people,dc=example,dc=org``."""
    auth_ldap_search_base: str | None = None
    """``ldap``: where the user's groups are searched for; unset, groups are not looked up."""
    auth_ldap_group_filter: str = "(|(member={dn})(uniqueMember={dn})(memberUid={user}))"
    """``ldap``: the filter that finds the groups whose members include the user (``{dn}``
    and ``{user}`` are filled in)."""
    auth_ldap_group_attribute: str = "cn"
    """``ldap``: the attribute of a group entry that is its name in sparkgate."""
    # Keyed by a hash of the credentials, so a client polling every 100 ms does not pay for
    # bcrypt or an LDAP bind on every request.
    auth_cache_ttl: float = 60.0
    """Seconds a verified password (or LDAP bind) is remembered, so that repeated requests do
    not check it again."""
    access_file: Path | None = None
    """The access file (YAML): admins, groups, impersonators, table rules, conf, limits and
    resource groups. Nodes and engines re-read it when it changes."""
    admins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    """Admins when there is no access file: names separated by commas (``carol,dave``) or a
    JSON list."""
    engine_share_level: Literal["user", "group", "server", "connection"] | None = None
    """Which sessions may share a warm engine: those of one ``user`` (the default with
    authentication), of one ``group``, of everyone (``server``, the default without), or none
    (``connection``: an engine per session)."""
    metrics_public: bool = False
    """Serve ``/metrics`` without credentials even when authentication is on."""
    # Prices are applied in pricing.py; none set: no money shown.
    price_per_cpu_second: float | None = Field(default=None, ge=0)
    """Charge-back: the price of one executor CPU-second. With any price set, each query's
    cost and the usage totals are shown in money too."""
    price_per_gb_read: float | None = Field(default=None, ge=0)
    """Charge-back: the price of one GB (10^9 bytes) read."""
    price_per_gb_shuffled: float | None = Field(default=None, ge=0)
    """Charge-back: the price of one GB (10^9 bytes) shuffled (written by map tasks)."""
    price_currency: str | None = None
    """The label shown with prices (``EUR``); it converts nothing."""
    dashboard_session_ttl: float = 12 * 3600.0
    """Seconds a dashboard sign-in lasts (its cookie's token expires then)."""
    request_max_bytes: int = 8 * 1024 * 1024
    """Request bodies larger than this many bytes are refused (413)."""
    # The file is streamed to disk, not held in memory: this bounds the disk it takes, not the
    # node's memory.
    load_max_bytes: int = 10 * 1024 * 1024 * 1024
    """A file loaded into a table (``sparkgate load``, ``POST /v1/tables/{name}/data``) larger
    than this many bytes is refused (413). The file is streamed to disk, so this bounds disk,
    not memory."""
    ssl_certfile: Path | None = None
    """A certificate (PEM): the server serves HTTPS, and TLS on the HiveServer2 binary and
    Spark Connect ports. Needs ``ssl_keyfile``."""
    ssl_keyfile: Path | None = None
    """The certificate's private key (PEM)."""
    insecure: bool = False
    """On an address other than loopback, allow running without authentication, or the
    HiveServer2 binary and Spark Connect ports without TLS while authentication is on (for
    instance when TLS ends in front of the node)."""
    spark_ui: bool = False
    """Turn the engines' Spark UIs on. They listen on loopback only and are reached through
    ``/v1/engines/{id}/ui/``, by admins."""

    # Spark
    spark_master: str = "local[*]"
    """The Spark master engines run against: ``local[*]``, ``spark://host:7077``, ``yarn``."""
    # "yarn" is written and unit-tested, not yet run here (launcher/submit.py); "kubernetes":
    # launcher/kubernetes.py.
    launcher: Literal["local", "yarn", "kubernetes"] = "local"
    """How engines start: ``local`` (a process on the node, any master), ``kubernetes`` (each
    engine a driver pod, its executors pods) or ``yarn`` (``spark-submit`` in client mode)."""
    spark_submit: str | None = None
    """The ``spark-submit`` the ``yarn`` launcher runs. Default: the one pyspark ships."""
    kubernetes_image: str | None = None
    """``kubernetes``: the image engine pods run (Spark, Python and sparkgate, as built from
    ``deploy/image``)."""
    kubernetes_namespace: str = "default"
    """``kubernetes``: the namespace engine pods run in."""
    kubernetes_service_account: str = "sparkgate-engine"
    """``kubernetes``: the service account engine pods run as (they create their executor
    pods)."""
    kubernetes_kubeconfig: Path | None = None
    """``kubernetes``: a kubeconfig, for a node outside the cluster. Unset: the pod's service
    account (a node in the cluster needs nothing)."""
    kubernetes_name_prefix: str = "sparkgate"
    """``kubernetes``: engine pods are named ``<prefix>-engine-<id>``, so two installations in
    one namespace differ."""
    kubernetes_labels: dict[str, str] = Field(default_factory=dict)
    """``kubernetes``: labels put on engine and executor pods (JSON object)."""
    kubernetes_env_secret: str | None = None
    """``kubernetes``: a Secret holding the settings that must not be written in a pod's spec
    (the store URL, passwords); engine pods take their environment from it (``envFrom``)."""
    kubernetes_engine_pods: dict[str, EnginePod] = Field(default_factory=dict)
    """``kubernetes``: engine pods' resources and placement by share level (``default``,
    ``user``, ``group``, ``server``, ``connection``), a JSON object; the keys of each entry are
    listed under Engine pods below."""
    spark_conf: dict[str, str] = Field(default_factory=dict)
    """Spark properties for every engine (JSON object), e.g. ``{"spark.executor.memory":
    "4g"}``. On a standalone master they apply over sparkgate's defaults
    (``spark.cores.max=1``, ``spark.executor.cores=1``, ``spark.executor.memory=1g``)."""
    catalog: Literal["hive", "in-memory"] = "hive"
    """The table catalog: ``hive`` (a Hive metastore shared by all engines) or ``in-memory``
    (each engine its own, gone when it stops)."""
    metastore_uri: str | None = None
    """``thrift://host:9083`` of an existing Hive metastore. Unset: the home's embedded
    metastore, started by the first node that needs it."""
    # None picks a free port when the home first starts the metastore, recorded in
    # <home>/metastore/service.json and kept after. A server reuses only the metastore its own
    # home started.
    metastore_port: int | None = None
    """The port of the embedded metastore (on loopback). Unset: a free port, chosen when the
    home first starts it and kept after."""
    warehouse_dir: Path | None = None
    """Where managed tables' data lives (any Hadoop-compatible path). Default:
    ``<home>/warehouse``."""
    results_dir: Path | None = None
    """Where query results are written. Every node and engine must read it (shared storage
    with several machines). Default: ``<home>/results``."""
    checkpoints_dir: Path | None = None
    """Where streaming queries keep their checkpoints (any Hadoop-compatible path). Default:
    ``<home>/checkpoints``."""
    staging_dir: Path | None = None
    """A directory for staged files (default ``<home>/staging``), reserved: no part of
    sparkgate reads or writes it."""
    uploads_dir: Path | None = None
    """Where files being loaded into tables wait for their engine. Every engine must read it
    (shared storage with several machines). Default: ``<home>/uploads``."""

    # Engines
    engine_heartbeat_interval: float = 2.0
    """Seconds between an engine's heartbeats to the store."""
    engine_heartbeat_timeout: float = 30.0
    """Seconds without a heartbeat before an engine is declared lost (its queries end
    ``ENGINE_LOST``)."""
    # Shorter outages cost nothing: reapers judge heartbeats only a whole timeout after they
    # reach the store again.
    engine_store_patience: float = 600.0
    """Seconds an engine that cannot reach the store runs on before it exits, giving back its
    cluster resources."""
    engine_start_timeout: float = 300.0
    """Seconds an engine may take to start Spark before the reaper declares it failed."""
    # Less than engine_start_timeout, so the reason given is that one.
    engine_executor_timeout: float = 120.0
    """Seconds an engine on a cluster waits for its first executor before it fails with
    ``NO_EXECUTORS``."""
    engine_backoff_min: float = Field(default=10.0, ge=0)
    """After engines of one placement fail ``NO_EXECUTORS`` in a row, seconds the next waits
    after the last failure; doubled for each failure, up to ``engine_backoff_max``."""
    engine_backoff_max: float = Field(default=600.0, ge=0)
    """The longest wait between engine launches after ``NO_EXECUTORS`` failures (seconds)."""
    # Engines and long polls act on wake-up hints from the store's writers (store/hints.py).
    hint_safety_poll: float = 1.0
    """Seconds between an engine's (and a long poll's) looks at the store when no wake-up hint
    came, should a hint be lost."""
    hints: bool = True
    """Wake-up hints between nodes and engines. ``false``: only the safety poll (for testing
    that it is enough)."""
    engine_idle_timeout: float = 1800.0
    """Seconds an engine with no sessions runs before it exits."""
    engine_driver_memory: str | None = None
    """The engines' driver heap (``spark.driver.memory``, e.g. ``2g``). Unset: Spark's default
    (on Kubernetes, ``1g`` unless the engine pods' ``memory`` says otherwise)."""
    warm_engines: int = 1
    """Dedicated engines kept started, so that a batch need not wait for a JVM to start."""
    shared_engine: bool = True
    """Keep a shared engine running for interactive sessions."""
    shared_engine_max_sessions: int = 64
    """Sessions one shared engine serves before another starts."""
    # The other engines give theirs back after 30 s idle; the first query after a pause then
    # does not wait seconds for a new executor.
    shared_engine_keep_executor: bool = True
    """On a standalone cluster, the shared engine keeps one executor while it lives. ``false``:
    it gives it back when idle too, and the first query after a pause waits for a new one."""

    # Sessions and queries
    session_idle_timeout: float = 3600.0
    """Seconds an idle interactive session lasts before it is ended (0: never)."""
    result_page_max: int = 10_000
    """The most rows one result page holds, whatever a client asks for."""
    result_retention: float = 7 * 86400.0
    """Seconds result files are kept (0: forever)."""
    # Reuse matches normalised text, session context and effective access rules.
    reuse: bool = True
    """Result reuse: a read-only query is answered from an earlier result of the same query
    while every table it read is unchanged. ``false`` turns it off for the whole server; per
    query, ``?reuse=false`` or in a session ``SET use_cached_result = false``."""
    reuse_ttl: float = Field(default=3600.0, ge=0)
    """Seconds a result is kept for reuse (never longer than ``result_retention``)."""
    reuse_max_bytes: int = Field(default=256 * 1024 * 1024, ge=0)
    """The largest result (its files, in bytes) kept for reuse."""
    audit_retention_days: float = 365.0
    """Days the audit log and the access history are kept (0: forever)."""
    long_poll_max: float = 120.0
    """The longest a long poll (``?wait=``) holds its answer, in seconds, whatever it asks."""
    # Then the results duty removes the key.
    idempotency_key_ttl: float = 86400.0
    """Seconds a submit's ``Idempotency-Key`` answers a repeat with what the first request
    made; after that the key may name a new request."""
    python_output_max_chars: int = 8_000_000
    """What a pyspark statement prints is kept up to this many characters (then cut, with a
    note)."""
    batch_log_max_chars: int = 1_000_000
    """A batch file's log keeps the last this many characters of its output."""

    thrift_port: int = 10009
    """The HiveServer2 binary (TCP) port for JDBC, ODBC, PyHive and dbt (0: off). HiveServer2
    over HTTP is always at ``/cliservice`` on the main port."""
    connect_port: int = 15002
    """The Spark Connect port (``sc://host:port``, gRPC; 0: off). Engines then run Spark's
    Connect service on loopback."""
    thrift_idle_timeout: float = 3600.0
    """A HiveServer2 session unused this many seconds is ended (0: never)."""
    # Clients poll in a tight loop: long enough to spare the store, short enough for progress
    # and logs.
    thrift_status_wait: float = 1.0
    """Seconds GetOperationStatus holds its answer while the query runs."""
    thrift_fetch_max_rows: int = 100_000
    """The most rows one FetchResults returns."""
    # The binary port before login is where anyone who can reach it is talking
    # (hive2/binary.py).
    thrift_login_timeout: float = 20.0
    """Seconds a binary-port connection has to log in (SASL done; NOSASL: its first message)
    before it is closed, like Hive's ``hive.server2.thrift.login.timeout`` (0: no deadline)."""
    thrift_max_pending_logins_per_address: int = 16
    """Binary-port connections from one address that may be logging in at once; one more is
    closed (0: no cap)."""

    # Livy-compatible API (/sessions, /batches). Livy's own cap on sql rows is 1000, which
    # users hit all the time; 10000 is one native result page (result_page_max), still a
    # small response.
    livy_sql_row_limit: int = 10_000
    """Rows a Livy ``sql`` statement returns inline; the whole result stays pageable through
    ``/v1/queries/{id}/result``."""
    livy_csrf_protection: bool = False
    """Require the ``X-Requested-By`` header on Livy POST and DELETE requests, as Livy can."""
    livy_session_retention: float = 600.0
    """Seconds ended sessions stay in Livy's lists (Livy's ``state-retain.sec``); by id they
    stay readable."""

    # Tables
    atomic_ctas: bool = True
    """Run CREATE/REPLACE TABLE AS SELECT in two phases (staged, then made visible whole). A
    session can say ``SET spark.sparkgate.ctas.atomic=false``."""
    table_version_grace: float = 3600.0
    """Seconds a replaced table version is kept after the switch, so that queries still
    reading it finish; then the table janitor removes it."""
    table_recovery_interval: float = 5.0
    """Seconds between an engine's looks for table writes only it can finish (a staging table
    a crash left in the catalog, a commit whose engine died mid-way)."""

    # Background duties (reaper, placement, table janitor, stream supervision) held by leases
    duty_interval: float = 2.0
    """Seconds between a node's rounds of background duties (reaping, placement, table
    janitor, stream supervision, deploys, job runs)."""
    lease_ttl: float = 15.0
    """Seconds before a dead node's background duties are taken over by another node."""

    # Streaming: the OPTIONS of a streaming query win over these.
    stream_retry_enabled: bool = True
    """Default of streaming queries' ``retry.enabled``: restart a failed query from its
    checkpoint."""
    stream_retry_max_attempts: int = 2_147_483_647
    """Default of ``retry.max.attempts``: restarts in a row after which a query is failed for
    good."""
    stream_retry_min_backoff: float = 1.0
    """Default of ``retry.min.backoff``: the wait before the first restart, doubled for each
    failure in a row (seconds, or a duration such as ``500ms``, ``1s``, ``1h``)."""
    stream_retry_max_backoff: float = 3600.0
    """Default of ``retry.max.backoff``: the longest wait between restarts (seconds or a
    duration)."""
    stream_retry_random_factor: float = 0.0
    """Default of ``retry.random.factor``: each wait is stretched by a random factor in
    ``[1, 1 + this)``."""
    stream_retry_stable_period: float = 60.0
    """Default of ``retry.stable.period``: a query healthy this long starts counting its
    failures from zero again (seconds or a duration)."""
    stream_progress_interval: float = 2.0
    """Seconds between progress writes of one streaming query, at most."""
    stream_progress_history: int = 100
    """Progress samples kept per streaming query."""
    stream_stop_timeout: float = 60.0
    """Seconds a graceful stop waits for the current micro-batch to end."""
    stream_engine_max_jobs: int = 16
    """Stream jobs one streaming engine runs."""
    deploy_timeout: float = 300.0
    """Seconds a deploy waits for one job to stop, or to start running, before it reports that
    job as not deployed (the job itself carries on)."""
    deploy_parallelism: int = 4
    """Jobs a deploy stops and starts at the same time (each job's steps stay in order)."""

    udf_modules: list[str] = Field(default_factory=list)
    """Python modules whose ``register(spark)`` is called in every session an engine opens,
    making Python UDFs available to SQL (JSON list, e.g. ``["mycompany.udfs"]``). Engines and
    their Python workers must be able to import them."""

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
