"""What the rule policy proposes (core_ext/_suggest.pyx) and what the rollout engine
(core_ext/_rollout.pyx) reports of a decision, and the engine's choice: typed, frozen
records, read by 托管 and 提示 (suggest.py) and the review (review.py).

A :class:`Proposal` is one action the rule policy proposes: its action, or a ranked
alternative (the 提示 cycle, the search's candidates).

An :class:`Evaluation` holds one :class:`Evaluated` per candidate action, in candidate order:
candidate 0 is the rule policy's action, the reference every gain is measured against. A
candidate's figures come from paired deals — every candidate rolled out on the same deals of
the cards the seat cannot see — so the luck of the deal cancels out of its differences with
another candidate.

**The engine's choice** (:func:`choose`) is one rule with two named settings
(:data:`TUOGUAN_CHOICE`, :data:`REVIEW_CHOICE`): the candidate whose mean gain over candidate
0 is the largest among those whose gain exceeds ``margin`` standard errors of it (and 0);
else candidate 0. 托管 measures the gain in **value** — the team's settlement points plus a
bonus for placing first (_rollout.pyx ``win_bonus``) — with the margin of its Budget (three
standard errors by default: noise should not overturn the rule policy's action, a strong
default, in a live round); the review measures it in **points**, the settlement alone, with
one standard error: the review names what the engine would prefer on the figure it reports
(points lost), and asks less certainty of it because it judges, not plays (docs/review.md
"The engine's choice"; tests/test_rollouts.py holds both settings to this one function).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["REVIEW_CHOICE", "TUOGUAN_CHOICE", "ChoiceRule", "Evaluated", "Evaluation",
           "Proposal", "SelfPlay", "View", "choose"]


@dataclass(frozen=True, slots=True)
class Proposal:
    """An action the rule policy proposes for the seat to act: ``cards`` are codes from its
    hand (empty: a pass), ``reading`` the reading that stands (None for a pass),
    ``declared`` whether it is played declared (§7 rule 6); ``reason`` the policy's step or
    alternative that proposed it (suggest.REASON_TABLE's index) and ``danger`` the fewest
    cards an opponent holds."""

    cards: tuple[int, ...]
    reading: Any
    declared: bool
    reason: int
    danger: int


@dataclass(frozen=True, slots=True)
class Evaluated:
    """One candidate action of a decision, as the engine rolled it out.

    ``cards`` are codes from the seat's hand (empty: a pass), ``reading`` the reading that
    stands (None for a pass), ``declared`` whether it is played declared (§7 rule 6);
    ``reason`` the policy's step or alternative that proposed it (suggest.REASON_TABLE's
    index) and ``danger`` the fewest cards an opponent held; ``hint_rank`` its place in the
    提示 list (-1: not in it; a search's candidates: their index). ``live``: still rolled out
    when the deals ended (a race drops candidates clearly behind); ``deals``: the deals it
    met in the seat's own view. Its own outcomes there: ``points`` (the team's mean
    settlement points) and ``first`` (the share of deals the team placed first), None
    without deals. Paired with candidate 0: ``gain`` (value: points plus the win bonus) and
    ``gain_se``, ``gain_points`` and ``gain_points_se``, ``gain_first``. Paired with the
    action taken (the review's; else candidate 0): ``taken_points`` and ``taken_se``. On the
    engine's wider view (every hand seen, or the partner's too): ``wide_points`` and
    ``wide_first``, None when it was not rolled out."""

    cards: tuple[int, ...]
    reading: Any
    declared: bool
    reason: int
    danger: int
    hint_rank: int
    live: bool
    deals: int
    points: float | None
    first: float | None
    gain: float
    gain_se: float
    gain_points: float
    gain_points_se: float
    gain_first: float
    taken_points: float
    taken_se: float
    wide_points: float | None
    wide_first: float | None

    @property
    def is_pass(self) -> bool:
        return not self.cards


@dataclass(frozen=True, slots=True)
class View:
    """A fair-play view's rollouts of a decision's candidates (_search.evaluate's
    ``decoys``): ``kind`` "partner" (the seat's hand and its partner's seen) or "all" (every
    hand seen); ``decoy`` 0 for the true hands, k for decoy k (those hands made up from what
    the seat sees); the ``deals`` rolled out, and per candidate (candidate order) its team's
    mean settlement ``points`` there."""

    kind: str
    decoy: int
    deals: int
    points: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A decision's rollouts: the ``seat`` that decides, its ``candidates`` (candidate 0 the
    rule policy's action), ``taken`` (the index of the action a replay took, else None),
    ``forced`` (one legal action: nothing was rolled out), the deals of the seat's own view
    and of the wider one (``wide_deals``: 0 when not asked), ``rollouts`` and ``actions``
    played in all, ``exact`` (rollouts an exact endgame finished), ``seconds`` of wall time,
    ``cancelled`` (the caller went away: the figures are partial), ``raced`` (the race
    left only the anchors) and the fair-play ``views`` (none unless asked)."""

    seat: int
    candidates: tuple[Evaluated, ...]
    taken: int | None
    forced: bool
    deals: int
    wide_deals: int
    rollouts: int
    actions: int
    exact: int
    seconds: float
    cancelled: bool
    raced: bool
    views: tuple[View, ...] = ()


@dataclass(frozen=True, slots=True)
class ChoiceRule:
    """A setting of the engine's choice (module doc): the gain's ``measure`` and the
    ``margin`` in standard errors it must exceed."""

    measure: Literal["value", "points"]
    margin: float


#: 托管's choice at its default Budget margin (suggest.Budget.margin sets it per search).
TUOGUAN_CHOICE = ChoiceRule("value", 3.0)
#: The review's "engine's first choice" (review.py: agreement with the engine).
REVIEW_CHOICE = ChoiceRule("points", 1.0)


def choose(ev: Evaluation, rule: ChoiceRule) -> int:
    """The index of the engine's choice among ``ev.candidates`` (module doc): a live
    candidate with at least two deals whose gain over candidate 0 exceeds ``rule.margin``
    standard errors, the largest such gain (the first on a tie); else 0."""
    best, top = 0, 0.0
    for k, c in enumerate(ev.candidates):
        if k == 0 or not c.live or c.deals < 2:
            continue
        gain, se = (c.gain, c.gain_se) if rule.measure == "value" else (c.gain_points,
                                                                        c.gain_points_se)
        if gain > rule.margin * se and gain > top:
            best, top = k, gain
    return best


@dataclass(frozen=True, slots=True)
class SelfPlay:
    """Whole rounds played by one policy in all four seats (_search.selfplay): ``rounds``,
    the ``actions`` taken in them, team 0's total settlement ``points``."""

    rounds: int
    actions: int
    points: float
