"""Typed stubs of ShuangkouService's compiled classification replies
(service/api/_classify_replies.pyx)."""

from collections.abc import Sequence

def batch_columns(kind: Sequence[int], top: Sequence[int], star: Sequence[int],
                  cards: Sequence[int], readings: Sequence[int], kind_values: bytes,
                  tally: Sequence[int]) -> bytes: ...
def batch_errors(first: int, indexes: Sequence[int], groups: Sequence[int],
                 statuses: list[bytes]) -> bytes: ...
def classify_reply(cards: Sequence[int], readings: list[bytes], reading: bytes) -> bytes: ...
