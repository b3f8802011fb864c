"""Quotas: how much executor time a user or a group may spend per day or month.

    quotas:
      - {user: bob, per: day, executorCpuSeconds: 3600}            # onQuota: reject
      - {group: analysts, per: month, executorRunSeconds: 360000,
         onQuota: demote, demoteTo: "analysts.low"}

Spent is summed from the costs the engines recorded (``statement_costs``) of the queries that
ended since the period began (UTC: the day's, the month's first second); a group's, over the
users the access file puts in it now. At its quota a user's new work is refused (429,
``LIMIT_EXCEEDED``, naming the quota and when it resets) or, with ``onQuota: demote``, placed in
``demoteTo`` (a resource group, typically of low weight) instead of where its selectors would
put it. Work that runs is never stopped.
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DAY = 86400.0
METRICS = {"executorCpuSeconds": "executor CPU", "executorRunSeconds": "executor run time"}


class QuotaEntry(BaseModel):
    """One entry of the access file's ``quotas:``."""

    model_config = ConfigDict(extra="forbid")

    user: str | None = Field(default=None, description="The user it limits (or `group`).")
    group: str | None = Field(
        default=None,
        description="The group it limits, all its members together (by the access file, now).",
    )
    per: Literal["day", "month"] = Field(description="The period, from its first second UTC.")
    executorCpuSeconds: float | None = Field(
        default=None,
        gt=0,
        description="Executor CPU seconds of the period's ended queries (or executorRunSeconds).",
    )
    executorRunSeconds: float | None = Field(
        default=None, gt=0, description="Executor run seconds of the period's ended queries."
    )
    onQuota: Literal["reject", "demote"] = Field(
        default="reject",
        description="At the quota: `reject` new work (429 `LIMIT_EXCEEDED`, naming when it "
        "resets), or `demote` it into `demoteTo`. Work that runs goes on.",
    )
    demoteTo: str | None = Field(
        default=None,
        description="With `onQuota: demote`: the resource group (one without subgroups, "
        "dotted) new work goes to instead.",
    )

    @model_validator(mode="after")
    def _one_of_each(self) -> QuotaEntry:
        if (self.user is None) == (self.group is None):
            raise ValueError("a quota names a user or a group (one of them)")
        if (self.executorCpuSeconds is None) == (self.executorRunSeconds is None):
            raise ValueError("a quota counts executorCpuSeconds or executorRunSeconds (one)")
        if (self.onQuota == "demote") != (self.demoteTo is not None):
            raise ValueError("onQuota: demote goes with demoteTo (a resource group), and only it")
        return self


@dataclass(frozen=True)
class Quota:
    user: str | None
    group: str | None
    per: str  # day or month
    cpu: bool  # executor CPU seconds; else executor run seconds
    seconds: float
    demote_to: str | None  # None: reject

    @classmethod
    def of(cls, entry: QuotaEntry) -> Quota:
        cpu = entry.executorCpuSeconds is not None
        seconds = entry.executorCpuSeconds if cpu else entry.executorRunSeconds
        assert seconds is not None
        return cls(entry.user, entry.group, entry.per, cpu, seconds, entry.demoteTo)

    def applies(self, user: str, groups: frozenset[str]) -> bool:
        return self.user == user or (self.group is not None and self.group in groups)

    @property
    def name(self) -> str:
        who = f"user {self.user}" if self.user is not None else f"group {self.group}"
        metric = "executor CPU" if self.cpu else "executor run time"
        return f"{who}'s {self.seconds:g} s of {metric} per {self.per}"

    def period(self, now: float) -> tuple[float, float]:
        """The current period's start and end (its reset), UTC."""
        if self.per == "day":
            start = now - now % DAY
            return start, start + DAY
        day = time.gmtime(now)
        start = calendar.timegm((day.tm_year, day.tm_mon, 1, 0, 0, 0))
        year, month = (day.tm_year + 1, 1) if day.tm_mon == 12 else (day.tm_year, day.tm_mon + 1)
        return float(start), float(calendar.timegm((year, month, 1, 0, 0, 0)))
