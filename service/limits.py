"""Request size limits (--max-cards, --max-batch, --enumeration-cap), checked before core
calls, and the batch cap that keeps every allowed BatchClassify answerable."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import BadInput

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
