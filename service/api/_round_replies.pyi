"""Typed stubs of RoundService's compiled reply writer (service/api/_round_replies.pyx)."""

from shuangkou.core._round import RoundCore

def state_bytes(r: RoundCore, reading: bytes | None, sealed: bytes | None = None) -> bytes: ...
def apply_bytes(r: RoundCore, seat: int, action_type: int, cards: tuple[int, ...],
                reading: bytes | None, standing: bytes | None, trick_won_by: int | None,
                finished: int | None, wind_to: int | None, next_turn: int | None,
                round_over: bool, sealed: bytes | None = None) -> bytes: ...
