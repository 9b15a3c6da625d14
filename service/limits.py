"""Request size limits (--max-cards, --max-batch, --enumeration-cap), checked before core calls."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BadInput

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    max_cards: int = 64
    max_batch: int = 100_000
    enumeration_cap: int = 10_000

    def check_cards(self, count: int, field: str) -> None:
        if count > self.max_cards:
            raise BadInput(f"{count} cards exceed the server limit of {self.max_cards} per "
                           f"play or hand", field)

    def check_batch(self, count: int, field: str) -> None:
        if count > self.max_batch:
            raise BadInput(f"{count} plays exceed the server limit of {self.max_batch} per "
                           f"BatchClassify request", field)

    def plays_limit(self, requested: int) -> int:
        """The number of plays to list: the request's limit, never above the cap."""
        return self.enumeration_cap if requested <= 0 else min(requested, self.enumeration_cap)
