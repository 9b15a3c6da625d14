"""ReviewRound on the wire: the request's review options read, and a review rendered as a
ReviewRoundResponse.

A review (:class:`shuangkou.core.review.Review`) reaches the wire through
:func:`review_to_proto`, the one function that renders it, field for field from the record:
card codes as they are, a declaration through :func:`~.convert.declaration_to_proto`, a
reading as its text. Its messages mirror the JSON form (``Review.to_dict()``, which
``shuangkou review --json`` and the archives write, docs/review.md). The options become a
:class:`~shuangkou.core.review.ReviewBudget`, which alone checks their bounds; the replay is
read as ScoreRound reads it (:func:`shuangkou.service.api.results.replay_input`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from shuangkou.core.review import DEFAULT_REVIEW, Candidate, Decision, Review, ReviewBudget
from shuangkou.core.tells import Tell
from shuangkou.v1 import scoring_pb2, service_pb2

from ..costs import fair_rollouts
from ..errors import BadInput
from ..review.options import budget_of
from .convert import ACTION_TYPES, card_values, declaration_to_proto

__all__ = ["ReviewOptions", "review_options", "review_to_proto", "VERDICTS_ON_WIRE",
           "FAIR_VIEWS_ON_WIRE", "TELLS_ON_WIRE"]

#: The review's verdict names -> the Verdict enum (its values' names, lower-cased).
VERDICTS_ON_WIRE = cast("dict[str, service_pb2.Verdict]", {
    name.removeprefix("VERDICT_").lower(): value
    for name, value in service_pb2.Verdict.items() if value})
#: The fair-play views (core_ext/fairplay.py KINDS) -> the FairView enum.
FAIR_VIEWS_ON_WIRE = cast("dict[str, service_pb2.FairView]", {
    name.removeprefix("FAIR_VIEW_").lower(): value
    for name, value in service_pb2.FairView.items() if value})
#: The kinds of tell (core_ext/tells.py KINDS) -> the FairTell.Kind enum.
TELLS_ON_WIRE = cast("dict[str, service_pb2.FairTell.Kind]", {
    name.removeprefix("KIND_").lower(): value
    for name, value in service_pb2.FairTell.Kind.items() if value})


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    """What a request asks of the review: ``review()``'s keyword arguments."""

    budget: ReviewBudget
    seed: int
    oracle: bool
    fair_play: bool = False

    def kwargs(self) -> dict[str, Any]:
        return {"budget": self.budget, "seed": self.seed, "oracle": self.oracle,
                "fair": self.fair_play}

    @property
    def fair_rollouts(self) -> int:
        """The fair-play views' rollouts for each evaluated decision (0 without fair play)."""
        if not self.fair_play:
            return 0
        return fair_rollouts(self.budget.decoys, self.budget.fair_deals, self.budget.width)


def review_options(request: service_pb2.ReviewRoundRequest) -> ReviewOptions:
    """The review a ReviewRoundRequest asks for: 0 is the default for ``rollouts``,
    ``width``, ``decoys`` and ``fair_deals``; the fair-play budget only with ``fair_play``;
    beyond the limits, a ShuangkouError from the budget naming the field."""
    if not request.fair_play:
        for name in ("decoys", "fair_deals"):
            if getattr(request, name):
                raise BadInput(f"{name} goes with fair_play: set fair_play, or leave {name} "
                               "0", name)
    budget = budget_of(DEFAULT_REVIEW, rollouts=request.rollouts or None,
                       width=request.width or None, decoys=request.decoys or None,
                       fair_deals=request.fair_deals or None)
    return ReviewOptions(budget, request.seed, request.oracle, request.fair_play)


def review_to_proto(review: Review) -> service_pb2.ReviewRoundResponse:
    """A review as a ReviewRoundResponse."""
    budget = review.budget
    msg = service_pb2.ReviewRoundResponse(
        variant=review.variant,
        budget=service_pb2.ReviewBudget(rollouts=budget.rollouts, ms=budget.ms,
                                        model=budget.model, exact=budget.exact,
                                        decoys=budget.decoys, fair_deals=budget.fair_deals),
        seed=review.seed, width=budget.width, oracle=review.oracle,
        players=review.players or (), rollouts=review.rollouts, seconds=review.seconds,
        fair_play=review.fair)
    for d in review.decisions:
        _decision(d, msg.decisions.add())
    for s in review.seats:
        msg.seats.add(seat=s.seat, player=s.player, decisions=s.decisions, forced=s.forced,
                      mean_loss=s.mean_loss, inaccuracies=s.inaccuracies,
                      mistakes=s.mistakes, blunders=s.blunders, agree_first=s.agree_first,
                      agree_top3=s.agree_top3, oracle_gain=s.oracle_gain,
                      loss_share=s.loss_share)
    msg.result.final[:] = review.final
    if review.winning_team is not None:
        msg.result.winning_team = review.winning_team
    return msg


def _decision(d: Decision, out: service_pb2.ReviewedDecision) -> None:
    """One decision (unset: what the record leaves None)."""
    out.index, out.seat, out.forced = d.index, d.seat, d.forced
    _action(d.seat, d.candidates[d.taken], out.taken)
    for c in d.candidates:
        cand = out.candidates.add(
            reading=c.reading.describe() if c.reading is not None else "", points=c.points,
            first=c.first, se=c.se, taken=c.taken, true_points=c.true_points,
            hint_rank=c.hint_rank if c.hint_rank >= 0 else None)   # -1: not a hint
        _action(d.seat, c, cand.action)
    out.best, out.choice = d.best, d.choice
    out.loss, out.loss_se, out.stake = d.loss, d.loss_se, d.stake
    out.verdict = VERDICTS_ON_WIRE[d.verdict]
    out.agrees_first, out.agrees_top3 = d.agrees_first, d.agrees_top3
    out.deals, out.tuoguan = d.deals, d.tuoguan
    if d.eval_team0 is not None:
        out.eval_team0 = d.eval_team0
    if d.oracle_gain is not None:
        out.oracle_gain = d.oracle_gain
    for e in d.fair:
        fair = out.fair.add(view=FAIR_VIEWS_ON_WIRE[e.kind], regret=e.regret,
                            decoy_regrets=e.decoy_regrets, excess=e.excess,
                            disagree=e.disagree, follows=e.follows)
        for regrets in e.candidates:
            fair.candidates.add(regret=regrets.regret, decoy_regrets=regrets.decoy_regrets)
    if d.tell is not None:
        out.tell.CopyFrom(_tell(d.tell))
    if d.opponents_tell is not None:
        out.opponents_tell.CopyFrom(_tell(d.opponents_tell))
    if d.over_partner is not None:
        out.over_partner = d.over_partner
    if d.concedes is not None:
        out.concedes = d.concedes
    out.cards_left = d.cards_left


def _tell(t: Tell) -> service_pb2.FairTell:
    return service_pb2.FairTell(kind=TELLS_ON_WIRE[t.kind], passed=t.passed, value=t.value,
                                decoy_values=t.decoy_values, excess=t.excess)


def _action(seat: int, c: Candidate, out: scoring_pb2.Action) -> None:
    """A candidate's action (its kind, card codes and declaration) into ``out``."""
    out.seat = seat
    out.type = ACTION_TYPES[c.kind]
    if c.cards:
        out.cards.cards[:] = card_values(c.cards)
    if c.declaration is not None:
        out.declaration.CopyFrom(declaration_to_proto(c.declaration))
