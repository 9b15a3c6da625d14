"""The plain records of a round (:class:`shuangkou.core.Round`): an action as a replay states
it, what stands on the table, and what an action did. Kept apart from the compiled round so
that it, replay reading and the façade can all import them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .cards import check_seat
from .errors import ShuangkouError

if TYPE_CHECKING:   # the compiled modules import this one
    from ._core import Reading
    from .declaration import Declaration

__all__ = ["ACTION_KINDS", "Action", "ActionRecord", "Standing"]

#: What a seat can do on its turn (RULES.md §9); escaping is §10's, any time.
ACTION_KINDS = ("play", "pass", "escape")


@dataclass(frozen=True, slots=True)
class Action:
    """One action, as a replay states it or a player sends it (``Round.apply`` applies
    it): ``kind`` is ``play``, ``pass`` or ``escape``; ``cards`` the codes played (empty
    otherwise); ``declare`` the declared reading, if any.

    Checked for form when made (ShuangkouError naming the field): a seat 0–3, a known
    kind, and no cards or declaration on a pass or an escape — refused, never dropped,
    since the sender meant something the action cannot do. Whether the round allows it
    is the round's to say.

        >>> Action(1, "pass", (21,))
        Traceback (most recent call last):
        ...
        shuangkou.core.errors.ShuangkouError: a pass takes no cards or declaration
    """

    seat: int
    kind: str
    cards: tuple[int, ...] = ()
    declare: Declaration | None = None

    def __post_init__(self) -> None:
        check_seat(self.seat)
        if self.kind == "play":          # the usual action: one comparison
            return
        if self.kind not in ACTION_KINDS:
            raise ShuangkouError(f"an action is one of play, pass or escape; got "
                                 f"{self.kind!r}", "kind")
        if self.cards or self.declare is not None:
            raise ShuangkouError(f"a{'n' if self.kind == 'escape' else ''} {self.kind} takes "
                                 "no cards or declaration",
                                 "cards" if self.cards else "declaration")


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
