"""The round end (RULES.md §9) as one table: one row per rule a variant's ``round_end`` names.

Each row says how the rule ends a round, how such a round is scored and the sentences that
describe it, and everything that depends on the round end reads it: the round and the
stored state (core_ext/_round.pyx, _state.pyx: when a finishing order ends the round and
what a state records), settlement (_settle.pyx: by places or by kou), the 托管 search, the
messages (scoring.py), the replay page, and variants.py (the names a variant may give, and
which of its tables must be complete). The round-over decision in compiled code is
``ended_at`` in core_ext/_round.pxd, the C twin of :meth:`RoundEnd.ended_at` reading the
same row (tests/test_round_ends.py checks that they agree).

A new rule that ends rounds by ``team`` and ``outs`` is one row here (docs/design.md, the
worked example); one that ends them some other way also needs a field here and its branch
in ``ended_at``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from .cards import SEATS, partner
from .errors import VariantError

__all__ = ["OVER_ESCAPE", "OVER_NONE", "ROUND_END_TABLE", "ROUND_ENDS", "RoundEnd", "round_end"]

#: How a stored state records a round's end (core_ext/_round.pxd ``OVER_*``): these two are
#: not a rule's; a round a rule ended records its row's ``over``.
OVER_NONE = 0            # the round goes on
OVER_ESCAPE = 3          # a seat escaped (§10.6)


@dataclass(frozen=True)
class RoundEnd:
    """One round-end rule."""

    name: str            # the value of Variant.round_end
    team: bool           # the round ends as soon as both players of one team are out
    outs: int            # ... and at the latest at this finish (1–4; 4: no earlier limit)
    kou: bool            # scored by kou from the cards the losers still hold (Variant.kou,
    #                      kou_thresholds), not by places (Variant.base)
    over: int            # what a stored state records for a round it ended (a signed
    #                      byte): never reused
    ends_with: str       # completes "<variant> ends with ...", said of a finishing order
    #                      that does not end the round
    finished: str        # why a round it ended is over; {seat}: the last finisher,
    #                      {partner}: its partner

    def ended_at(self, finish_order: Sequence[int]) -> int | None:
        """Index in ``finish_order`` (seats in the order their hands emptied) of the finish
        that ended the round, or None while it goes on."""
        out: set[int] = set()
        for i, seat in enumerate(finish_order):
            if i + 1 >= self.outs or (self.team and partner(seat) in out):
                return i
            out.add(seat)
        return None


#: The round-end rules, in the order variants list them (RULES.md §9).
ROUND_END_TABLE: tuple[RoundEnd, ...] = (
    RoundEnd("finishing_order", team=True, outs=SEATS, kou=False, over=1,
             ends_with="both players of one team",
             finished="seats {partner} and {seat} have both finished"),
    RoundEnd("first_out", team=False, outs=1, kou=True, over=2,
             ends_with="the first finisher",
             finished="seat {seat} went out first"),
)

#: The values ``Variant.round_end`` may take.
ROUND_ENDS: tuple[str, ...] = tuple(row.name for row in ROUND_END_TABLE)
_BY_NAME: Mapping[str, RoundEnd] = MappingProxyType({row.name: row for row in ROUND_END_TABLE})


def round_end(name: str) -> RoundEnd:
    """The row of the rule ``name``; VariantError for a name no row has (never a default)."""
    row = _BY_NAME.get(name)
    if row is None:
        raise VariantError(f"unknown round end {name!r}; the rules are {', '.join(ROUND_ENDS)}",
                           "round_end")
    return row


def _check_table(table: Sequence[RoundEnd]) -> None:
    """Refuse a table whose rows collide (at import: a new row is checked before any use)."""
    overs = [row.over for row in table]
    if len({row.name for row in table}) != len(table) or len(set(overs)) != len(overs) \
            or {OVER_NONE, OVER_ESCAPE} & set(overs) or not all(0 < x < 128 for x in overs) \
            or not all(1 <= row.outs <= SEATS for row in table):
        raise VariantError("the round-end table needs distinct names, distinct `over` numbers "
                           "1–127 other than OVER_ESCAPE (a state's signed byte), and outs 1–4", "round_end")


_check_table(ROUND_END_TABLE)
