"""Typed stubs of the compiled reply writer (service/api/_wire.pyx)."""

from collections.abc import Sequence

from shuangkou.core._round import RoundCore
from shuangkou.v1 import service_pb2

def state_bytes(r: RoundCore, reading: bytes | None, sealed: bytes | None = None) -> bytes: ...
def apply_bytes(r: RoundCore, seat: int, action_type: int, cards: tuple[int, ...],
                reading: bytes | None, standing: bytes | None, trick_won_by: int | None,
                finished: int | None, wind_to: int | None, next_turn: int | None,
                round_over: bool, sealed: bytes | None = None) -> bytes: ...
def batch_columns(kind: Sequence[int], top: Sequence[int], star: Sequence[int],
                  cards: Sequence[int], readings: Sequence[int], kind_values: bytes,
                  tally: Sequence[int]) -> bytes: ...
def batch_errors(first: int, indexes: Sequence[int], groups: Sequence[int],
                 statuses: list[bytes]) -> bytes: ...
def classify_reply(cards: Sequence[int], readings: list[bytes], reading: bytes) -> bytes: ...
def read_classify_request(data: bytes) -> tuple[str, list[int], str] | \
    service_pb2.ClassifyPlayRequest: ...
