"""复盘: what each decision of a round cost, from what the deciding seat could see.

:func:`review` replays a replay document (the same validation and errors as
:func:`~shuangkou.core.replay.score_replay`) and, for every play and pass of every seat,
evaluates the candidate actions from that seat's view only — its own hand and the public
table, never another seat's cards (the rollout engine's rule, core_ext/_rollout.pyx, driven by
_search.pyx ``evaluate``):

* **candidates**: the ranked 提示 list (the rule policy's action, then the plays in its order
  of preference, then the pass) up to the budget's ``width``, plus the action actually taken;
* each candidate's **points** — the seat's team's expected settlement points (base ×
  multiplier + contributions, stake 1) from the decision to the round's end — and **first**,
  the chance the team places first, from determinized rollouts on paired deals: every
  candidate on the same random deals of the unseen cards, the other seats played by a
  mixture of the rule policy's styles (``model``);
* the **loss**: the best candidate's points minus the taken action's, with the standard
  error of that paired difference, and a **verdict** that counts a loss only beyond its
  noise (:data:`THRESHOLDS`; docs/review.md);
* the **stake**: the best candidate's points minus the worst's — what the decision could
  change. A seat's **loss share** is its losses over its stakes (0: always the best
  candidate, 1: always the worst): the figure that compares players, where the mean loss
  does not, because a team far behind has little left at stake and loses little per
  decision however it plays (docs/review.md "Comparing players");
* **agreement**: whether the taken action is the engine's first choice (rollouts.py
  ``choose`` at :data:`~shuangkou.core.rollouts.REVIEW_CHOICE`: the rule policy's action
  unless another candidate gains more than one standard error of points over it, then the
  best such — 托管 plays the same rule on value at three) and among its first three;
* with ``oracle``: every candidate also rolled out on the TRUE deal (the real hidden hands),
  and ``oracle_gain`` = the taken action's true points minus those of the best action the
  seat could have known — a partnership whose gains stay positive plays better than its
  information supports (the collusion signal; a signal, not proof).

A decision with one legal action (a pass with nothing that beats, a single play) is marked
``forced`` and not evaluated. An escape is not a decision of play and is not listed.
Deterministic for a replay, seed and rollout budget (each decision's deals are drawn from
the seed and the decision's index), on any machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from . import _search
from ._core import Reading, format_cards
from ._rollout import MAX_DECOYS
from .cards import SEATS, rank_name, team
from .declaration import Declaration
from .errors import DeadlineExceeded, ShuangkouError
from .fairplay import Evidence, concedes, evidence, over_partner
from .replay import Replay, _load, parse_replay, score_replay
from .rollouts import REVIEW_CHOICE, TUOGUAN_CHOICE, Evaluation, choose
from .suggest import RolloutBudget, declaration_for
from .tells import Tell, opponents_tell, tell

__all__ = ["DEFAULT_REVIEW", "NOISE", "THRESHOLDS", "VERDICTS", "Candidate", "Decision",
           "Review", "ReviewBudget", "SeatSummary", "review", "verdict"]

#: A decision's verdicts, from the forced to the worst.
VERDICTS = ("forced", "good", "inaccuracy", "mistake", "blunder")
#: A loss (points) past which a decision is each verdict, worst first — counted only when
#: it is also more than :data:`NOISE` standard errors (docs/review.md;
#: docs/decisions/engineering.md E69).
THRESHOLDS = (("blunder", 6.0), ("mistake", 3.0), ("inaccuracy", 1.0))
#: How many standard errors of the paired difference a loss must exceed to count.
NOISE = 2.0


@dataclass(frozen=True, slots=True)
class ReviewBudget(RolloutBudget):
    """What the review spends on each decision (suggest.RolloutBudget, whose checks are the
    only ones): ``rollouts`` over all its candidates (as the search counts them; at least
    two deals each way), ``ms`` an optional cap in wall time per decision (0: none; past two
    deals), ``model`` how the rollouts play the other seats (suggest.MODELS), ``exact`` the
    exact endgame's size and ``width`` the candidates from the ranked 提示 list (the action
    taken is added when it is not one of them); ``race``: the deals end once the best
    candidate is clearly ahead of every other (_rollout.pyx ``settled``: every candidate
    meets every deal, so the figures stay comparable). With fair play
    (``review(fair=True)``, core_ext/fairplay.py): ``decoys`` per view and ``fair_deals``
    deals on each of its views."""

    rollouts: int = 1200
    decoys: int = 8
    fair_deals: int = 12

    MIN_ROLLOUTS: ClassVar[int] = 1

    def __post_init__(self) -> None:
        RolloutBudget.__post_init__(self)   # (a slotted dataclass: no zero-argument super)
        if type(self.decoys) is not int or not 1 <= self.decoys <= MAX_DECOYS:
            raise ShuangkouError(f"decoys must be an integer 1–{MAX_DECOYS}; got "
                                 f"{self.decoys!r}", "decoys")
        if type(self.fair_deals) is not int or not 2 <= self.fair_deals <= 10_000:
            raise ShuangkouError(f"fair_deals must be an integer 2–10,000; got "
                                 f"{self.fair_deals!r}", "fair_deals")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form's ``budget`` (the width is the review's own ``width``)."""
        return {"rollouts": self.rollouts, "ms": self.ms, "model": self.model,
                "exact": self.exact, "race": self.race, "decoys": self.decoys,
                "fair_deals": self.fair_deals}


#: The default review budget, 1,200 rollouts per decision, the deals ending once the best is
#: clear: a whole round within 3 s of CPU on every built-in variant, with the validity
#: figures of the earlier 2,000 (docs/BENCHMARKS.md "复盘"; docs/decisions/engineering.md E69).
DEFAULT_REVIEW = ReviewBudget()


def verdict(loss: float, loss_se: float) -> str:
    """The verdict of an evaluated decision: the worst of :data:`THRESHOLDS` its loss
    exceeds, counting a loss only beyond :data:`NOISE` standard errors.

    >>> verdict(7.0, 1.0), verdict(7.0, 4.0), verdict(0.9, 0.1)
    ('blunder', 'good', 'good')
    """
    for name, points in THRESHOLDS:
        if loss > max(points, NOISE * loss_se):
            return name
    return "good"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One action evaluated at a decision: ``kind`` ``"play"`` or ``"pass"``, ``cards`` the
    codes played (empty: a pass), ``declaration`` what the play is declared as (None:
    undeclared), ``reading`` the reading that stands (None for a pass); ``points`` /
    ``first`` the seat's team's expected settlement points and chance of placing first (None
    for a forced decision), ``se`` the standard error of its points minus the taken action's
    (paired deals; 0 for the taken), ``hint_rank`` its place in the 提示 list (-1: not in
    it), ``true_points`` the same on the true deal (oracle mode, else None)."""

    kind: str
    cards: tuple[int, ...]
    declaration: Declaration | None
    reading: Reading | None
    points: float | None
    first: float | None
    se: float
    hint_rank: int
    taken: bool
    true_points: float | None

    def action_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "cards": format_cards(list(self.cards)),
                "declare": _declare_dict(self.declaration)}

    def to_dict(self) -> dict[str, Any]:
        return {**self.action_dict(),
                "reading": self.reading.describe() if self.reading is not None else None,
                "points": self.points, "first": self.first, "se": self.se,
                "hint_rank": self.hint_rank, "taken": self.taken,
                "true_points": self.true_points}


def _declare_dict(d: Declaration | None) -> dict[str, Any] | None:
    """A declaration in the JSON form: its kind, top (a rank name) and star."""
    if d is None:
        return None
    top = rank_name(d.top) if isinstance(d.top, int) else d.top
    return {"kind": d.kind, "top": top, "star": d.star}


@dataclass(frozen=True, slots=True)
class Decision:
    """One play or pass of a replay (``index`` into its actions) by table ``seat``."""

    index: int
    seat: int
    forced: bool
    candidates: tuple[Candidate, ...]    # best first by points; the taken action among them
    taken: int                           # index into candidates of the action taken
    best: int
    choice: int                          # the engine's first choice (the search's rule)
    loss: float
    loss_se: float
    stake: float                         # best points - the worst candidate's (0 forced)
    verdict: str
    agrees_first: bool
    agrees_top3: bool
    eval_team0: float | None
    oracle_gain: float | None
    deals: int
    fair: tuple[Evidence, ...] = ()
    tuoguan: int = 0                     # 托管's choice (rollouts.TUOGUAN_CHOICE) on these deals
    tell: Tell | None = None             # with fair play: what it tells of the partner's hand
    opponents_tell: Tell | None = None   # with fair play: what it tells of the opponents' hands
    over_partner: bool | None = None     # with fair play: a chance to block (fairplay.over_partner)
    concedes: bool | None = None         # with fair play: a chance to concede (fairplay.concedes)
    cards_left: int = 0                  # the seat's cards before it acted (fairplay.LATE)

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "seat": self.seat, "forced": self.forced,
                "taken": self.candidates[self.taken].action_dict(),
                "candidates": [c.to_dict() for c in self.candidates], "best": self.best,
                "choice": self.choice, "loss": self.loss, "loss_se": self.loss_se,
                "stake": self.stake, "verdict": self.verdict, "agrees_first": self.agrees_first,
                "agrees_top3": self.agrees_top3, "eval_team0": self.eval_team0,
                "oracle_gain": self.oracle_gain, "deals": self.deals,
                "fair": [_evidence_dict(e) for e in self.fair], "tuoguan": self.tuoguan,
                "tell": _tell_dict(self.tell), "opponents_tell": _tell_dict(self.opponents_tell),
                "over_partner": self.over_partner, "concedes": self.concedes,
                "cards_left": self.cards_left}


@dataclass(frozen=True, slots=True)
class SeatSummary:
    """One table seat's decisions: ``decisions`` all of them, ``forced`` those with one legal
    action; the rest (evaluated) give ``mean_loss``, ``loss_share`` (their losses over their
    stakes; None when nothing was at stake), the verdict counts, ``agree_first`` /
    ``agree_top3`` (shares; None when none was evaluated) and, in oracle mode,
    ``oracle_gain`` (mean)."""

    seat: int
    player: str | None
    decisions: int
    forced: int
    mean_loss: float | None
    loss_share: float | None
    inaccuracies: int
    mistakes: int
    blunders: int
    agree_first: float | None
    agree_top3: float | None
    oracle_gain: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"seat": self.seat, "player": self.player, "decisions": self.decisions,
                "forced": self.forced, "mean_loss": self.mean_loss,
                "loss_share": self.loss_share, "inaccuracies": self.inaccuracies, "mistakes": self.mistakes,
                "blunders": self.blunders, "agree_first": self.agree_first,
                "agree_top3": self.agree_top3, "oracle_gain": self.oracle_gain}


@dataclass(frozen=True, slots=True)
class Review:
    """A replay reviewed (module doc) at ``budget`` (its ``width`` too) and ``seed``;
    ``oracle`` / ``fair``: whether the true deal and the fair-play views were asked for.
    :meth:`to_dict` is its JSON form (docs/review.md)."""

    variant: str
    budget: ReviewBudget
    seed: int
    oracle: bool
    fair: bool
    players: tuple[str, ...] | None          # by table seat
    decisions: tuple[Decision, ...]
    seats: tuple[SeatSummary, ...]
    final: tuple[int, ...]
    winning_team: int | None
    rollouts: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "budget": self.budget.to_dict(), "seed": self.seed,
                "width": self.budget.width, "oracle": self.oracle,
                "players": list(self.players) if self.players is not None else None,
                "decisions": [d.to_dict() for d in self.decisions],
                "seats": [s.to_dict() for s in self.seats],
                "result": {"final": list(self.final), "winning_team": self.winning_team},
                "rollouts": self.rollouts, "seconds": self.seconds}


# ----------------------------------------------------------------------------- one decision

def _evidence_dict(e: Evidence) -> dict[str, Any]:
    return {"kind": e.kind, "regret": e.regret, "decoy_regrets": list(e.decoy_regrets),
            "excess": e.excess, "disagree": e.disagree, "follows": e.follows,
            "candidates": [{"regret": c.regret, "decoy_regrets": list(c.decoy_regrets)}
                           for c in e.candidates]}


def _tell_dict(t: Tell | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"kind": t.kind, "passed": t.passed, "value": t.value,
            "decoy_values": list(t.decoy_values), "excess": t.excess}


def _decision(index: int, seat: int, taken_cards: tuple[int, ...], ev: Evaluation,
              last_eval: float | None) -> Decision:
    """A decision from the engine's evaluation (core_ext/_search.pyx ``evaluate``)."""
    rows = ev.candidates
    t = ev.taken
    assert t is not None                   # the review always names the action taken
    # best first by points (the 提示 order among equals); a forced decision keeps its one row
    order = sorted(range(len(rows)), key=lambda k: (-(rows[k].points or 0.0), k))
    cands = []
    for k in order:
        c = rows[k]
        cands.append(Candidate(
            "play" if c.cards else "pass", taken_cards if k == t else c.cards,
            declaration_for(c.reading) if c.declared else None, c.reading, c.points, c.first,
            c.taken_se if k != t else 0.0, c.hint_rank, k == t, c.wide_points))
    taken = order.index(t)
    if ev.forced or not ev.deals:
        return Decision(index, seat, ev.forced, tuple(cands), taken, 0, taken,
                        0.0, 0.0, 0.0, "forced" if ev.forced else "good", True, True,
                        last_eval, None, 0, (), taken)
    best = order[0]
    points, top, worst = rows[t].points, rows[best].points, rows[order[-1]].points
    assert points is not None and top is not None and worst is not None   # deals were made
    loss = top - points
    loss_se = rows[best].taken_se
    stake = top - worst
    choice = choose(ev, REVIEW_CHOICE)
    top3 = [choice] + [k for k in order if k != choice][:2]
    oracle_gain = None
    true_taken, true_best = rows[t].wide_points, rows[best].wide_points
    if true_taken is not None and true_best is not None:
        oracle_gain = true_taken - true_best
    return Decision(index, seat, False, tuple(cands), taken, 0, order.index(choice),
                    loss, loss_se, stake, verdict(loss, loss_se), choice == t, t in top3,
                    points if team(seat) == 0 else -points, oracle_gain, ev.deals,
                    tuple(replace(e, candidates=tuple(e.candidates[k] for k in order))
                          for e in evidence(ev)),
                    order.index(choose(ev, TUOGUAN_CHOICE)))


# ----------------------------------------------------------------------------- a replay

def _players(players: Sequence[str] | None, hand_at: Sequence[int]) -> tuple[str, ...] | None:
    """The replay's ``players`` (by dealt seat, validated by the replay reader) by table
    seat; None when the replay names none."""
    if players is None:
        return None
    return tuple(str(players[hand_at[t]]) for t in range(SEATS))


def _summaries(decisions: Sequence[Decision],
               players: tuple[str, ...] | None) -> tuple[SeatSummary, ...]:
    out = []
    for s in range(SEATS):
        mine = [d for d in decisions if d.seat == s]
        rated = [d for d in mine if not d.forced]
        n = len(rated)
        gains = [d.oracle_gain for d in rated if d.oracle_gain is not None]
        loss, stakes = sum(d.loss for d in rated), sum(d.stake for d in rated)
        out.append(SeatSummary(
            s, players[s] if players is not None else None, len(mine), len(mine) - n,
            loss / n if n else None, loss / stakes if stakes > 0 else None,
            sum(d.verdict == "inaccuracy" for d in rated),
            sum(d.verdict == "mistake" for d in rated),
            sum(d.verdict == "blunder" for d in rated),
            sum(d.agrees_first for d in rated) / n if n else None,
            sum(d.agrees_top3 for d in rated) / n if n else None,
            sum(gains) / len(gains) if gains else None))
    return tuple(out)


def review(replay: Replay | Mapping[str, Any] | str | bytes, *,
           budget: ReviewBudget = DEFAULT_REVIEW, seed: int = 0,
           timeout: float | None = None, cancelled: Callable[[], bool] | None = None,
           oracle: bool = False, fair: bool = False, partial_deal: bool = False) -> Review:
    """Review every play and pass of ``replay`` (a replay document or a typed
    :class:`~shuangkou.core.replay.Replay`, as :func:`~shuangkou.core.replay.score_replay`
    takes it: ReviewRound's typed message becomes the record) from the deciding seat's view
    (module doc). ``timeout`` (seconds) and ``cancelled`` (asked between deals) bound the
    whole review.

    :raises ReplayError: the replay is invalid, exactly as ``score_replay`` says.
    :raises DeadlineExceeded: ``timeout`` passed, or ``cancelled()`` was true, before the
        review finished.
    """
    if not isinstance(budget, ReviewBudget):    # its values: checked when it was made
        raise ShuangkouError("budget must be a ReviewBudget", "budget")
    if type(seed) is not int or not 0 <= seed < 2**64:
        raise ShuangkouError(f"seed must be an integer 0–2^64-1; got {seed!r}", "seed")
    t0 = time.monotonic()
    if isinstance(replay, Replay):     # a record: players (if any) on it, as on a document's
        result = score_replay(replay)
        typed = replay
    else:
        doc = _load(replay)
        result = score_replay(doc, partial_deal=partial_deal)    # its errors, as they are
        typed = parse_replay(doc, partial_deal=partial_deal)
    rnd = typed.start()
    decisions: list[Decision] = []
    rollouts = 0
    last_eval: float | None = None
    for i, action in enumerate(typed.actions):
        if action.kind == "escape":
            rnd.apply(action)
            continue
        if cancelled is not None and cancelled():
            raise DeadlineExceeded("the review was cancelled before it finished")
        left = None
        if timeout is not None:
            left = t0 + timeout - time.monotonic()
            if left <= 0:
                raise DeadlineExceeded("the review ran out of its time budget")
        before = rnd.copy()
        record = rnd.apply(action)
        ev = _search.evaluate(
            before, (action.cards, record.reading, action.declare is not None),
            rollouts=budget.rollouts, ms=budget.ms, seed=seed, width=budget.width,
            timeout=left, cancelled=cancelled, model=budget.model, exact=budget.exact,
            wide="all" if oracle else None, race=budget.race,
            decoys=budget.decoys if fair else 0, fair_deals=budget.fair_deals)
        if ev.cancelled:
            raise DeadlineExceeded("the review was cancelled before it finished")
        rollouts += ev.rollouts
        d = replace(_decision(i, action.seat, action.cards, ev, last_eval),
                    cards_left=before.cards_left[action.seat])
        if fair:
            d = replace(d, tell=tell(before, action.cards, record.reading, seed=seed, index=i),
                        opponents_tell=opponents_tell(before, action.cards, record.reading,
                                                      seed=seed, index=i),
                        over_partner=over_partner(before, action.cards),
                        concedes=concedes(before, action.cards))
        last_eval = d.eval_team0
        decisions.append(d)
    players = _players(typed.players, result.hand_at)
    return Review(typed.variant.id, budget, seed, oracle, fair, players, tuple(decisions),
                  _summaries(decisions, players), tuple(result.final), result.winning_team,
                  rollouts, time.monotonic() - t0)
