"""The plain records of a round (:class:`shuangkou.core.Round`): an action as a replay states
it, what stands on the table, and what an action did. Kept apart from the compiled round so
that it, replay reading and the façade can all import them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # the compiled modules import this one
    from ._core import Reading
    from .declaration import Declaration

__all__ = ["Action", "ActionRecord", "Standing"]


@dataclass(frozen=True)
class Action:
    """One action of a replay: ``kind`` is ``play``, ``pass`` or ``escape``; ``cards`` the
    codes played (empty otherwise); ``declare`` the declared reading, if any."""

    seat: int
    kind: str
    cards: tuple[int, ...] = ()
    declare: Declaration | None = None


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
