"""The plain records a :class:`shuangkou.core.Round` hands out: what stands on the table and what an
action did. Kept apart from the compiled round so both it and the façade can import them."""

from __future__ import annotations

from dataclasses import dataclass

from ._core import Reading

__all__ = ["ActionRecord", "Standing"]


@dataclass(frozen=True, slots=True)
class Standing:
    """The play standing on the table: who made it, its cards and the reading that stands."""

    seat: int
    cards: tuple[int, ...]
    reading: Reading


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """What one action did (RULES.md §9).

    ``kind`` is ``play``, ``pass`` or ``escape``; ``reading`` the reading that now stands
    (plays only); ``trick_won_by`` the seat whose play took the trick when this pass ended
    it; ``finished`` the seat that emptied its hand with this play; ``wind_to`` the seat
    that leads by 接风 (the trick's winner had gone out); ``next_turn`` the seat to act
    next (None once the round is over).
    """

    seat: int
    kind: str
    cards: tuple[int, ...] = ()
    reading: Reading | None = None
    trick_won_by: int | None = None
    finished: int | None = None
    wind_to: int | None = None
    next_turn: int | None = None
    round_over: bool = False
