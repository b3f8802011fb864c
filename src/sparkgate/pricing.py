"""Charge-back: a cost in money, from the prices the settings give (``price_per_cpu_second``,
``price_per_gb_read``, ``price_per_gb_shuffled``, ``price_currency``). The one place a query's
or a usage row's cost becomes an amount; with no price set there is none (None).

    Prices.of(settings).money(cost)  # -> Money(amount=0.0123, currency="EUR") | None
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sparkgate.statement_cost import StatementCost

if TYPE_CHECKING:
    from sparkgate.settings import Settings

GB = 1e9  # bytes: the decimal gigabyte a price list means


@dataclass(frozen=True)
class Money:
    """What a cost comes to at the prices set, and each part of it."""

    amount: float
    cpu: float
    read: float
    shuffled: float
    currency: str | None = None

    @property
    def text(self) -> str:
        """As shown: ``0.0123 EUR`` (4 decimals: a query costs fractions of a cent)."""
        return f"{self.amount:.4f}" + (f" {self.currency}" if self.currency else "")


@dataclass(frozen=True)
class Prices:
    per_cpu_second: float | None = None
    per_gb_read: float | None = None
    per_gb_shuffled: float | None = None
    currency: str | None = None

    @classmethod
    def of(cls, settings: Settings) -> Prices:
        return cls(
            settings.price_per_cpu_second,
            settings.price_per_gb_read,
            settings.price_per_gb_shuffled,
            settings.price_currency,
        )

    @property
    def set(self) -> bool:
        return any(
            p is not None for p in (self.per_cpu_second, self.per_gb_read, self.per_gb_shuffled)
        )

    def money(self, cost: StatementCost | None) -> Money | None:
        """The cost's price: executor CPU seconds, bytes read (input) and bytes shuffled
        (written by map tasks, counted once) at their prices; None without a price or a cost."""
        if cost is None or not self.set:
            return None
        cpu = cost.executor_cpu_time_ns / 1e9 * (self.per_cpu_second or 0.0)
        read = cost.input_bytes / GB * (self.per_gb_read or 0.0)
        shuffled = cost.shuffle_write_bytes / GB * (self.per_gb_shuffled or 0.0)
        return Money(cpu + read + shuffled, cpu, read, shuffled, self.currency)
