"""The state store: one facade over the tables, used alike by server nodes and engines.

store = Store.open("sqlite:///.sparkgate/sparkgate.db")
store.migrate()
session = store.sessions.add(SessionKind.INTERACTIVE, now=time.time())
store.transitions.session(session.id, SessionState.STARTING, now=time.time())
"""

from __future__ import annotations

from sparkgate.store import schema
from sparkgate.store.audit import AuditLog
from sparkgate.store.connect import ConnectMaps
from sparkgate.store.database import Database
from sparkgate.store.engines import Engines
from sparkgate.store.idempotency import IdempotencyKeys
from sparkgate.store.jobs import Deployments, JobRuns, Jobs
from sparkgate.store.leases import Leases
from sparkgate.store.migrate import migrate
from sparkgate.store.resource_groups import ResourceGroups
from sparkgate.store.reuse import ResultReuse
from sparkgate.store.saved_queries import SavedQueries
from sparkgate.store.sessions import Sessions
from sparkgate.store.statement_costs import StatementCosts
from sparkgate.store.statement_tables import StatementTables
from sparkgate.store.statements import Statements
from sparkgate.store.stream_jobs import StreamJobs
from sparkgate.store.stream_queries import StreamQueries
from sparkgate.store.table_access import TableAccess
from sparkgate.store.table_transactions import TableTransactions
from sparkgate.store.tokens import Tokens
from sparkgate.store.transitions import Outcome, Transitions
from sparkgate.store.usage import UsageReports


class Store:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.sessions = Sessions(db)
        # The queue (store.resource_groups): statements enter it, transitions admit from it.
        self.resource_groups = ResourceGroups(db)
        self.statements = Statements(db, self.resource_groups)
        self.engines = Engines(db)
        self.leases = Leases(db)
        self.table_txns = TableTransactions(db)
        self.transitions = Transitions(db, self.resource_groups)
        self.stream_jobs = StreamJobs(db)
        self.stream_queries = StreamQueries(db, self.transitions)
        self.jobs = Jobs(db)
        self.deployments = Deployments(db)
        self.job_runs = JobRuns(db)
        self.tokens = Tokens(db)
        self.audit = AuditLog(db)
        self.connect = ConnectMaps(db)
        self.idempotency = IdempotencyKeys(db)
        self.table_access = TableAccess(db)
        self.statement_tables = StatementTables(db)
        self.statement_costs = StatementCosts(db)
        self.usage = UsageReports(db, self.statement_costs)
        self.saved_queries = SavedQueries(db)
        self.reuse = ResultReuse(db)

    @classmethod
    def open(cls, url: str, *, hints: bool = True) -> Store:
        return cls(Database(url, hints=hints))

    def migrate(self, revision: str = "head") -> None:
        """Bring the schema to ``revision``, by default the newest (safe to call from several
        nodes at once)."""
        migrate(self.db, revision)

    def close(self) -> None:
        self.db.dispose()


__all__ = ["Database", "Outcome", "Store", "schema"]
