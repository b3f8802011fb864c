"""How the service layer's own values look in the JSON of the doors (``/v1``, the CLI through
it) and on the dashboard. A store record's view is its schema's ``of`` (``Session.of``,
``Query.of``, ...); here are those built from what only the service knows.
"""

from __future__ import annotations

from sparkgate.auth.principal import Principal
from sparkgate.schemas.common import iso
from sparkgate.schemas.engines import Engine
from sparkgate.schemas.queries import Query, ResultPage
from sparkgate.schemas.users import RIGHTS, Whoami
from sparkgate.service import queries
from sparkgate.service.engines import Whose
from sparkgate.store.records import EngineRecord

# ``iso`` is the timestamp of every view; the views of other resources import it from here.
__all__ = ["engine_view", "iso", "principal_view", "query_view", "result_page_view"]


def query_view(described: queries.Described) -> Query:
    """A query with its cost, price, place and tags as the service read them."""
    return Query.of(
        described.statement,
        described.cost,
        described.place,
        described.tags,
        described.price,
        described.tasks,
        described.reused,
    )


def engine_view(engine: EngineRecord, whose: Whose | None = None) -> Engine:
    """An engine, with whose work it runs when the user is told (admins)."""
    if whose is None:
        return Engine.of(engine)
    return Engine.of(engine, whose.share_level, whose.runs_for)


def result_page_view(page: queries.ResultPage) -> ResultPage:
    # Its rows are validated here, once: ``WaitedQuery.with_page`` keeps the model as built.
    return ResultPage.model_validate(page)


def principal_view(user: Principal) -> Whoami:
    """Who the credentials say the caller is."""
    return Whoami(
        user=user.name,
        groups=sorted(user.groups),
        admin=user.admin,
        rights=RIGHTS.validate_python(sorted(user.rights)),
        via=user.via,
    )
