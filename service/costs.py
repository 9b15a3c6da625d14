"""What a search or a review is expected to cost, and how long its work may run: the lane
admits expensive calls by their expected cost (:mod:`shuangkou.service.lane`), the caps of
:class:`~shuangkou.service.limits.Limits` bound what one call may ask.

**The cost model.** A rollout plays one deal of the unseen cards from the decision to the
round's end, so what it costs grows with the cards still in play: :data:`RATES` holds, per
built-in variant, the CPU-seconds of one rollout per card in play, measured
(``bench/bench_lane.py --parts rates``: the review's evaluation and 托管's search alike, every
sixth decision of generated rounds; docs/BENCHMARKS.md "The lane"). A variant that is not
a built-in (a house or custom variant) is charged the dearest row. What a call spends
around its rollouts (the candidates, the reply) is tens of microseconds: left out.

A call's expected cost is its rollouts' — a search's budget of rollouts at the cards in
play now; a review's rollouts per decision at each decision's cards in play, twice with
``oracle``, and with fair play its views' (:func:`fair_rollouts`) — and never more than the
time it may run (its budget's time, the server's cap, its deadline): its work runs on one
thread, and a thread spends at most a CPU-second a second. It is an upper estimate: a search that races its candidates out stops early, a
review's forced decisions are not rolled out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from shuangkou.core.cards import SEATS
from shuangkou.core.replay import Replay
from shuangkou.core.suggest import Budget
from shuangkou.core.variants import BUILTIN, Variant

from .errors import Refused

__all__ = ["RATES", "REPLY_MARGIN", "TimeLimit", "cards_in_play", "decisions",
           "fair_rollouts", "review_cost", "rollout_seconds", "search_cost", "work_time"]

#: CPU-seconds of one rollout per card in play, by built-in variant: the larger of the
#: evaluation's and the search's (``bench/bench_lane.py --parts rates`` prints both),
#: rounded up; measured on issue 61's rollout engine, 2026-12-06 (docs/BENCHMARKS.md "The
#: lane").
RATES: dict[str, float] = {
    "baibian": 0.54e-6,
    "fengkuang": 0.51e-6,
    "fengkuang_crazy": 0.46e-6,
    "bianfeng": 0.52e-6,
    "bianfeng_lishui": 0.73e-6,
    "qianbian": 0.61e-6,
    "huopin": 0.61e-6,
}
#: A house or custom variant's rate: the dearest built-in's.
DEAREST = max(RATES.values())

#: What a call keeps of its time left for writing and sending the reply, so that work
#: longer than the deadline still answers in time (issue 33 item 4): a fifth of the time
#: left, at least 50 ms, at most 500 ms. A reply takes ~1 ms to build, but on a loaded
#: server a thread waits for the GIL and a core far longer than that: with a tenth, a 2 s
#: call missed its deadline on a 2-core machine at load 10.
REPLY_MARGIN = (0.050, 0.2, 0.500)


def work_time(left: float) -> float:
    """Of the ``left`` seconds a call has, what its work may take: all but
    :data:`REPLY_MARGIN`, kept for the reply to reach the caller in time (SuggestAction's
    search, ReviewRound's review)."""
    low, share, high = REPLY_MARGIN
    return max(left - min(max(low, left * share), high), 0.0)


def rollout_seconds(variant: str | Variant) -> float:
    """CPU-seconds of one rollout per card in play under ``variant`` (a built-in's id or
    any :class:`Variant`: a house or custom one is charged :data:`DEAREST`)."""
    if isinstance(variant, str):
        return RATES.get(variant, DEAREST)
    return RATES.get(variant.id, DEAREST) if BUILTIN.get(variant.id) == variant else DEAREST


def cards_in_play(round: Any) -> int:
    """The cards still in the four hands of ``round`` (a :class:`shuangkou.core.Round`)."""
    return sum(len(round.hand(seat)) for seat in range(SEATS))


def search_cost(round: Any, budget: Budget) -> float:
    """The expected CPU-seconds of a search of ``round``'s decision under ``budget`` (its
    time already cut to what the call may run: :func:`within_deadline`)."""
    by_rollouts = (budget.rollouts * rollout_seconds(round.variant) * cards_in_play(round)
                   if budget.rollouts else math.inf)
    return min(by_rollouts, budget.ms / 1e3) if budget.ms else by_rollouts


def decisions(replay: Replay) -> int:
    """The decisions a review of ``replay`` evaluates: its plays and passes."""
    return sum(a.kind != "escape" for a in replay.actions)


def fair_rollouts(decoys: int, fair_deals: int, width: int) -> int:
    """The rollouts the fair-play views add to each evaluated decision of a review of
    ``width`` candidates (core_ext/_search.pyx ``evaluate``): two views (the partner's hand,
    every hand), each on the true hands and ``decoys`` decoys, ``fair_deals`` deals each,
    every candidate (the taken action's too) on each deal."""
    return 2 * (decoys + 1) * fair_deals * (width + 1)


def review_cost(replay: Replay, rollouts: int, oracle: bool, width: int,
                fair: int = 0) -> float:
    """The expected CPU-seconds of a review of ``replay`` at ``rollouts`` per decision of
    ``width`` candidates, before any bound on its time: each decision's rollouts at the
    cards then in play (at least two deals of every candidate, the taken action's too;
    twice with ``oracle``) and ``fair`` more for the fair-play views
    (:func:`fair_rollouts`)."""
    left = sum(len(hand) for hand in replay.hands)
    in_play = 0
    for action in replay.actions:
        if action.kind != "escape":
            in_play += left
        left -= len(action.cards)
    each = max(rollouts, 2 * (width + 1)) * (2 if oracle else 1) + fair
    return each * in_play * rollout_seconds(replay.variant)


@dataclass(frozen=True, slots=True)
class TimeLimit:
    """How long a call's work may run once it starts: its time left less the reply's margin
    (:func:`work_time`), never more than ``cap`` seconds, the server setting ``setting``."""

    seconds: float
    cap: float
    setting: str

    @classmethod
    def of(cls, left: float | None, cap: float, setting: str) -> TimeLimit:
        return cls(cap if left is None else min(cap, work_time(left)), cap, setting)

    @property
    def capped(self) -> bool:
        """Whether the cap, not the call's deadline, is what ends the work."""
        return self.seconds >= self.cap

    def reached(self, what: str) -> Refused:
        """The refusal of work that ran to the cap (RESOURCE_EXHAUSTED, ``CAP_REACHED``)."""
        return Refused(f"the {what} ran to {self.setting} ({self.cap:g} s), the server's cap "
                       f"on one {what}'s time whatever the deadline; ask for fewer "
                       "rollouts", "CAP_REACHED", self.setting, self.cap)
