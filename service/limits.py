"""Request size limits (--max-cards, --max-batch, --enumeration-cap), checked before core
calls, the batch cap that keeps every allowed BatchClassify answerable, and the caps on one
search's or review's cost (--search-max-rollouts, --search-max-seconds,
--review-max-rollouts, --review-max-seconds: docs/decisions.md 80)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BadInput, OverCap

__all__ = ["Limits", "WORST_BATCH_ITEM_BYTES", "BATCH_REPLY_OVERHEAD"]

# Upper bound of one play's share of a BatchClassify reply: five column entries (<= 8 bytes)
# plus the larger of a compact per-item error (BatchError with a google.rpc.Status of at most
# 160 bytes of message, ErrorInfo and a field violation: <= 420 bytes; tests/
# test_resource_bounds.py checks the bound) and, with include_readings, one Reading (the
# largest is a long chain bomb, < 300 bytes). Measured worst cases are well below.
WORST_BATCH_ITEM_BYTES = 430
BATCH_REPLY_OVERHEAD = 64 * 1024   # framing, the valid count, slack


@dataclass(frozen=True)
class Limits:
    max_cards: int = 64
    max_batch: int = 100_000
    enumeration_cap: int = 10_000
    max_message_bytes: int = 4 * 1024 * 1024
    search_max_rollouts: int = 1_000_000
    search_max_seconds: float = 10.0
    review_max_rollouts: int = 1_000_000
    review_max_seconds: float = 30.0

    @property
    def batch_cap(self) -> int:
        """Most plays one BatchClassify may hold: --max-batch, lowered so that the answer to
        the worst allowed batch still fits --max-message-bytes."""
        room = max(self.max_message_bytes - BATCH_REPLY_OVERHEAD, WORST_BATCH_ITEM_BYTES)
        return max(1, min(self.max_batch, room // WORST_BATCH_ITEM_BYTES))

    def check_cards(self, count: int, field: str) -> None:
        if count > self.max_cards:
            raise BadInput(f"{count} cards exceed the server limit of {self.max_cards} per "
                           f"play or hand", field)

    def check_batch(self, count: int, field: str) -> None:
        cap = self.batch_cap
        if count > cap:
            why = ("" if cap == self.max_batch else
                   f" (--max-batch {self.max_batch} lowered so that the answer fits "
                   f"{self.max_message_bytes} bytes)")
            raise BadInput(f"{count} plays exceed the server limit of {cap} per "
                           f"BatchClassify request{why}", field)

    def plays_limit(self, requested: int) -> int:
        """The number of plays per page: the request's page size, never above the cap."""
        return self.enumeration_cap if requested <= 0 else min(requested, self.enumeration_cap)

    def check_search(self, rollouts: int, ms: int, field: str) -> None:
        """A search's budget (``<field>.rollouts``, ``<field>.max_ms``) within the caps."""
        if rollouts > self.search_max_rollouts:
            raise OverCap(f"{field}.rollouts {rollouts:,} is over this server's cap of "
                          f"{self.search_max_rollouts:,} (search_max_rollouts)",
                          f"{field}.rollouts", "search_max_rollouts", self.search_max_rollouts)
        if ms > self.search_max_seconds * 1e3:
            raise OverCap(f"{field}.max_ms {ms:,} is over this server's cap of "
                          f"{self.search_max_seconds * 1e3:,.0f} ms (search_max_seconds "
                          f"{self.search_max_seconds:g})", f"{field}.max_ms",
                          "search_max_seconds", self.search_max_seconds)

    def check_review(self, rollouts: int, decisions: int, oracle: bool, field: str,
                     fair: int = 0) -> None:
        """A review's rollouts in all — ``rollouts`` (the request's ``field``) for each of
        ``decisions``, twice with ``oracle``, and ``fair`` more each for the fair-play views
        (costs.fair_rollouts) — within the cap. Past it, the field to lower is named: the
        fair-play budget's (``fair_deals``) when the rest fits alone."""
        times = 2 if oracle else 1
        total = decisions * (rollouts * times + fair)
        if total <= self.review_max_rollouts:
            return
        views = f" and the fair-play views' {fair:,} each" if fair else ""
        said = (f"{field} {rollouts:,} for each of {decisions:,} decisions"
                f"{' (twice with oracle)' if oracle else ''}{views} make {total:,} rollouts, "
                f"over this server's cap of {self.review_max_rollouts:,} "
                "(review_max_rollouts): this round allows ")
        room = self.review_max_rollouts // max(decisions, 1)
        if fair and rollouts * times <= room:
            raise OverCap(f"{said}the fair-play views {room - rollouts * times:,} rollouts a "
                          "decision at most: lower fair_deals or decoys", "fair_deals",
                          "review_max_rollouts", self.review_max_rollouts)
        most = max(room - fair, 0) // times
        raise OverCap(f"{said}{field} {most:,} at most", field, "review_max_rollouts",
                      self.review_max_rollouts)
