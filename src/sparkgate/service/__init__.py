"""The application layer: every use case of every front door, once.

The doors (``/v1`` in ``api``, ``livy``, ``hive2``, the dashboard in ``web``, and through the
client the CLI) translate their protocol into calls of this package and its answers back. Each
call takes the authenticated user (a ``Principal``) and does the visibility rule
(``visibility.py``), the rights check and the audit itself; it answers records of the store or
the small dataclasses here, and refuses with the typed errors of ``sparkgate.errors``, whose
stable codes each door maps to its protocol.

- ``sessions``: sessions (create, read, list, place, kill), the settings they open with;
- ``queries``: submitting and cancelling queries, reading, listing and waiting for them, their
  result pages (``ended``: ended ones kept for clients paging by cursor);
- ``engines``: engines (list, read, their Spark UIs, stopping one);
- ``idempotency``: how a submit or session creation is made once per ``Idempotency-Key``;
- ``streams``: stream jobs; ``jobs``: deploys, jobs and their runs;
- ``accounts``: personal access tokens, dashboard sign-ins, the audit log;
- ``saved_queries``: SQL kept under a name, private or shared with a group;
- ``data_access``: why a user may use a table (explain), a table's owner and grants;
- ``catalog``: the tables and views a user may see, one table's details and recent queries;
- ``loads``: a file uploaded into a table (received to disk, then queued as a load);
- ``connect``: Spark Connect sessions and operations (the Connect door forwards the calls);
- ``views``: records as the JSON doors and the dashboard show them.
"""

from __future__ import annotations

from sparkgate.auth.users import Users
from sparkgate.pricing import Prices
from sparkgate.service.accounts import Accounts
from sparkgate.service.catalog import Catalog
from sparkgate.service.connect import ConnectService
from sparkgate.service.data_access import DataAccess
from sparkgate.service.deployer import Deployer
from sparkgate.service.engines import Engines
from sparkgate.service.job_runs import JobRunner
from sparkgate.service.jobs import JobService
from sparkgate.service.loads import Loads
from sparkgate.service.queries import Queries
from sparkgate.service.saved_queries import SavedQueries
from sparkgate.service.sessions import Sessions
from sparkgate.service.stream_jobs import Streams
from sparkgate.service.streams import StreamService
from sparkgate.service.usage import UsageService
from sparkgate.service.watcher import StatementWatcher
from sparkgate.settings import Settings
from sparkgate.store import Store


class Service:
    """What a server node offers its doors."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        users: Users,
        sessions: Sessions,
        streams: Streams,
        deployer: Deployer,
        job_runner: JobRunner,
    ) -> None:
        self.settings = settings
        self.store = store
        self.users = users
        # Made before the service: stream supervision and job runs open and kill sessions.
        self.sessions = sessions
        # Requests that wait for queries sleep here until the store hints they ended.
        self.watcher = StatementWatcher(store, settings.hint_safety_poll)
        self.queries = Queries(settings, store, users, sessions, self.watcher)
        self.engines = Engines(store, users, sessions.placement)
        self.streams = StreamService(settings, store, users, sessions, self.queries, streams)
        self.jobs = JobService(store, users, deployer, job_runner)
        self.accounts = Accounts(store, users)
        self.saved_queries = SavedQueries(store, users)
        self.usage = UsageService(store, users, Prices.of(settings))
        self.data_access = DataAccess(store, users)
        self.catalog = Catalog(store, self.queries)
        self.loads = Loads(settings, users, self.queries)
        self.connect = ConnectService(settings, store, users, sessions, self.queries)
        self.queries.on_cancelling = self.connect.interrupt

    async def close(self) -> None:
        await self.watcher.close()
        self.connect.close()
