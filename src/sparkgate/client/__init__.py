"""A small Python client for sparkgate's native API.

with Client("http://127.0.0.1:8998") as sg:
    query = sg.submit("SELECT 1 AS one")
    done = sg.wait(query.id)          # a schemas.Query: done.state, done.error, ...
    page = sg.result(query.id)        # a schemas.ResultPage: page.columns, page.rows

Each call answers the native API's model of what it asked for (``sparkgate.schemas``, the
models the server answers with), read leniently: keys a newer server adds are left out.

Several nodes (``Client("http://a:8998,http://b:8998")`` or a list, and ``--server`` /
``SPARKGATE_SERVER`` in the CLI the same way): calls go to one node until it cannot answer,
then to the next, as libpq's multi-host URLs do. A node that cannot answer is one that refuses
the connection, or answers 503 (it cannot reach the store: nothing was done); a request that
reached a node which died before answering is sent again elsewhere only when that is safe:
reads, deletes and cancels, and submits (queries and sessions), which carry an
``Idempotency-Key`` (a fresh one per submit, the same on each of its retries), so that the
node that answers a retry answers the query the first attempt made, if it was made, instead
of running it twice. Other POSTs (stream jobs, deploys, job runs) are not sent twice.
``patience`` seconds (0 by default) go on trying when every node failed, honouring
``Retry-After``.

Credentials, first found wins: ``token=`` or ``user=``/``password=``; ``SPARKGATE_TOKEN``;
``SPARKGATE_USER`` with ``SPARKGATE_PASSWORD``; the token ``sparkgate login`` stored for the
server. A token is sent as ``Authorization: Bearer``, a user and password as Basic.
"""

from __future__ import annotations

from sparkgate.client.access import AccessCalls
from sparkgate.client.auth import PERSONAL_TOKEN_PREFIX, BearerAuth
from sparkgate.client.engines import EngineCalls
from sparkgate.client.jobs import JobCalls
from sparkgate.client.queries import FINAL_STATES, QueryCalls
from sparkgate.client.saved_queries import SavedQueryCalls
from sparkgate.client.streams import StreamCalls
from sparkgate.client.tables import TableCalls, format_of
from sparkgate.client.transport import DEFAULT_SERVER, ClientError, servers_of
from sparkgate.schemas.health import Health

__all__ = [
    "DEFAULT_SERVER",
    "FINAL_STATES",
    "PERSONAL_TOKEN_PREFIX",
    "BearerAuth",
    "Client",
    "ClientError",
    "format_of",
    "servers_of",
]


class Client(
    QueryCalls, SavedQueryCalls, StreamCalls, EngineCalls, JobCalls, AccessCalls, TableCalls
):
    """The native API's calls (grouped by resource, one module each) over one transport
    (``transport``: which node, failover, retries)."""

    def health(self) -> Health:
        return Health.read(self._call("GET", "/healthz"))
