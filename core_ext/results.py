"""The records a settlement returns (RULES.md §10): frozen dataclasses, each with ``to_dict``.

:class:`RoundResult` and its per-seat :class:`SeatResult`, :class:`StarSource` (where a
round star came from) and :class:`ContributionEvent`; :class:`ReplayResult` is a replay's
settlement (the round's plus where each dealt hand sat). Kept apart from the settlement so
that the compiled settlement (core_ext/_settle.pyx, which builds them) and the Python faces
(core_ext/scoring.py, replay.py, round.py) all import them from here and nothing imports
back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ContributionEvent", "ReplayResult", "RoundResult", "SeatResult", "StarSource"]


@dataclass(frozen=True)
class StarSource:
    """Where a seat's round star came from (§10.2).

    ``rule``: ``none`` (no bomb), ``bomb`` (the star of bomb number ``bomb`` of the seat,
    0-based in play order), ``multi_bomb`` (``k`` or more bombs of at least ``n`` cards) or
    ``chain_bonus`` (chain bomb number ``bomb`` plus ``bonus`` other bombs of equal star).
    """

    rule: str = "none"
    bomb: int | None = None
    n: int | None = None
    k: int | None = None
    bonus: int | None = None

    def describe(self) -> str:
        if self.rule == "bomb":
            return f"bomb #{self.bomb}"
        if self.rule == "multi_bomb":
            return f"{self.k} bombs of at least {self.n} cards"
        if self.rule == "chain_bonus":
            return f"chain bomb #{self.bomb} + {self.bonus} bombs of equal star"
        return "no bomb"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"rule": self.rule}
        if self.rule == "none":         # every other field unset (the common case)
            d["text"] = "no bomb"
            return d
        if self.bomb is not None:
            d["bomb"] = self.bomb
        if self.n is not None:
            d["n"] = self.n
        if self.k is not None:
            d["k"] = self.k
        if self.bonus is not None:
            d["bonus"] = self.bonus
        d["text"] = self.describe()
        return d


@dataclass(frozen=True)
class ContributionEvent:
    """One contribution payment (§10.4): ``to`` seats get +gain, the others pay each."""

    seat: int                 # whose bomb / round star earned it
    star: int                 # the settlement star (capped) it was paid at
    gain: int
    pay: int
    to: tuple[int, ...]       # seats receiving +gain (the player, or the player's team)
    bomb: int | None = None   # bomb number of the seat (per-bomb mode); None = round star

    def to_dict(self) -> dict[str, Any]:
        return {"seat": self.seat, "star": self.star, "gain": self.gain, "pay": self.pay,
                "to": list(self.to), "bomb": self.bomb}


@dataclass(frozen=True)
class SeatResult:
    """One seat's settlement: ``final = (base × multiplier + contribution + escape) × stake``
    (the huopin escaper also pays the table fee, which the stake does not multiply)."""

    seat: int
    team: int                 # 0 = seats 0 and 2, 1 = seats 1 and 3
    place: int | None         # None for seats still holding cards at an escape
    base: int
    star: int                 # the seat's round star (uncapped)
    star_source: StarSource
    multiplier: int
    contribution: int
    escape: int               # escape settlement amount (0 unless the round was escaped)
    final: int

    def to_dict(self) -> dict[str, Any]:
        return {"seat": self.seat, "team": self.team, "place": self.place, "base": self.base,
                "star": self.star, "star_source": self.star_source.to_dict(),
                "multiplier": self.multiplier, "contribution": self.contribution,
                "escape": self.escape, "final": self.final}


@dataclass(frozen=True)
class RoundResult:
    """The settlement of one round. ``kind`` is double/single/flat (双扣/单扣/平扣) or escape."""

    variant: str
    kind: str
    winning_team: int | None  # 0 = seats 0 and 2, 1 = seats 1 and 3; None after an escape
    finish_order: tuple[int, ...]  # seats that emptied their hands, in order
    star: int                 # settlement star that set the multiplier (capped)
    star_seat: int | None     # whose star that was (None: no bomb counted / escape rules)
    multiplier: int
    stake: int
    escaper: int | None
    table_fee: int
    seats: tuple[SeatResult, ...]
    contributions: tuple[ContributionEvent, ...]

    @property
    def final(self) -> tuple[int, ...]:
        return tuple(s.final for s in self.seats)

    @property
    def ranking(self) -> tuple[int, ...]:
        """Seats by place (1st first); only the finishers after an escape."""
        placed = [s for s in self.seats if s.place is not None]
        return tuple(s.seat for s in sorted(placed, key=lambda s: s.place or 0))

    @property
    def total(self) -> int:
        """Sum of the final amounts: 0 where the variant is zero-sum (docs/replays.md)."""
        return sum(s.final for s in self.seats)

    def to_dict(self) -> dict[str, Any]:
        final = [s.final for s in self.seats]
        return {
            "variant": self.variant, "kind": self.kind,
            "winning_team": self.winning_team,
            "finish_order": list(self.finish_order), "star": self.star,
            "star_seat": self.star_seat, "multiplier": self.multiplier, "stake": self.stake,
            "escaper": self.escaper, "table_fee": self.table_fee,
            "final": final, "total": sum(final),
            "seats": [s.to_dict() for s in self.seats],
            "contributions": [c.to_dict() for c in self.contributions],
        }


@dataclass(frozen=True)
class ReplayResult(RoundResult):
    """A replay's settlement: the :class:`RoundResult` plus where each dealt hand sat."""

    hand_at: tuple[int, ...]   # dealt seat whose hand sits at each table seat
    actions: int               # number of actions validated

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["hand_at"] = list(self.hand_at)
        for s in d["seats"]:
            s["dealt_seat"] = self.hand_at[s["seat"]]
        d["actions"] = self.actions
        return d
