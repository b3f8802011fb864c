"""Query tags: ``{"team": "finance"}`` on a query or a session, kept with each query; usage sums
costs by a tag's value, and resource groups' selectors match them (``clientTags``).

Given as JSON (``"tags"`` on ``POST /v1/queries`` and ``/v1/sessions``), as the ``sparkgate.tags``
session setting (``team=finance,project=churn``: JDBC URLs, Livy's ``conf``), as Spark Connect's
operation tags (``spark.addTag("team=finance")``) and as ``tags:`` in a job manifest. A tag
without ``=`` has the empty value. This module imports nothing of sparkgate's but its errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from sparkgate.errors import InvalidRequest

SETTING = "sparkgate.tags"
MAX_TAGS = 20
MAX_VALUE = 256
_KEY = re.compile(r"[A-Za-z0-9_.:\-]{1,64}")


def checked(tags: Mapping[str, str] | None, field: str = "tags") -> dict[str, str]:
    """``tags`` as kept, or InvalidRequest saying which tag is wrong and why."""
    if not tags:
        return {}
    if len(tags) > MAX_TAGS:
        raise InvalidRequest(f"{field}: at most {MAX_TAGS} tags, not {len(tags)}.", field=field)
    for key, value in tags.items():
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            raise InvalidRequest(
                f"{field}: tag {key!r}: a key is 1 to 64 letters, digits and _ . : -",
                field=field,
            )
        if not isinstance(value, str) or len(value) > MAX_VALUE:
            raise InvalidRequest(
                f"{field}: tag {key}: a value is a string of at most {MAX_VALUE} characters.",
                field=field,
            )
    return dict(tags)


def parsed(text: str, field: str = SETTING) -> dict[str, str]:
    """``team=finance,project=churn`` (a setting's value) as tags."""
    return from_words((w for w in text.split(",") if w.strip()), field)


def from_words(words: Iterable[str], field: str = "tags") -> dict[str, str]:
    """``["team=finance", "hipri"]`` (Spark Connect's operation tags) as tags."""
    tags: dict[str, str] = {}
    for word in words:
        key, _, value = word.strip().partition("=")
        tags[key.strip()] = value.strip()
    return checked(tags, field)


def take(conf: Mapping[str, str] | None) -> tuple[dict[str, str] | None, dict[str, str]]:
    """A session's settings without ``sparkgate.tags``, and the tags it gave."""
    if not conf or SETTING not in conf:
        return (dict(conf) if conf is not None else None), {}
    rest = {k: v for k, v in conf.items() if k != SETTING}
    return rest, parsed(conf[SETTING])


def words(tags: Mapping[str, str]) -> frozenset[str]:
    """What a selector's ``clientTags`` entry may name: ``team`` and ``team=finance``."""
    return frozenset(key for key in tags) | frozenset(f"{k}={v}" for k, v in tags.items())
