"""ReviewRound on the wire: the request's review options checked, and a review rendered as a
ReviewRoundResponse.

A review (:class:`shuangkou.core.review.Review`) reaches the wire through
:func:`review_to_proto`, the one function that renders it, field for field: the fields of
its JSON form (``to_dict()``, which ``shuangkou review --json``, the archives and the round
page read too, docs/review.md) from that form, and the fair-play evidence and 托管's choice
from the record itself; the replay is read as ScoreRound reads it
(:func:`shuangkou.service.api.results.replay_input`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from shuangkou import core
from shuangkou.core.cards import rank_position
from shuangkou.core.review import DEFAULT_REVIEW, Review, ReviewBudget
from shuangkou.core.suggest import DEFAULT_WIDTH, MAX_ALTERNATIVES, MAX_ROLLOUTS
from shuangkou.v1 import scoring_pb2, service_pb2

from ..costs import fair_rollouts
from ..errors import BadInput
from ..review.options import budget_of
from .convert import ACTION_TYPES, KIND_BY_NAME

__all__ = ["ReviewOptions", "review_options", "review_to_proto", "VERDICTS_ON_WIRE",
           "FAIR_VIEWS_ON_WIRE", "MAX_WIDTH"]

#: The widest review a request may ask for: the search's own limit.
MAX_WIDTH = MAX_ALTERNATIVES
#: The review's verdict names -> the Verdict enum (its values' names, lower-cased).
VERDICTS_ON_WIRE = cast("dict[str, service_pb2.Verdict]", {
    name.removeprefix("VERDICT_").lower(): value
    for name, value in service_pb2.Verdict.items() if value})
#: The fair-play views (core_ext/fairplay.py KINDS) -> the FairView enum.
FAIR_VIEWS_ON_WIRE = cast("dict[str, service_pb2.FairView]", {
    name.removeprefix("FAIR_VIEW_").lower(): value
    for name, value in service_pb2.FairView.items() if value})


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    """What a request asks of the review, checked: ``review()``'s keyword arguments (a
    width of 0 leaves the review's default)."""

    budget: ReviewBudget
    width: int
    seed: int
    oracle: bool
    fair_play: bool = False

    def kwargs(self) -> dict[str, Any]:
        given = {"width": self.width} if self.width else {}
        return {"budget": self.budget, "seed": self.seed, "oracle": self.oracle,
                "fair": self.fair_play, **given}

    @property
    def fair_rollouts(self) -> int:
        """The fair-play views' rollouts for each evaluated decision (0 without fair play)."""
        if not self.fair_play:
            return 0
        return fair_rollouts(self.budget.decoys, self.budget.fair_deals,
                             self.width or DEFAULT_WIDTH)


def review_options(request: service_pb2.ReviewRoundRequest) -> ReviewOptions:
    """The review a ReviewRoundRequest asks for: 0 is the default for ``rollouts``,
    ``width``, ``decoys`` and ``fair_deals``; the fair-play budget only with ``fair_play``;
    beyond the limits, BadInput (a ShuangkouError, from the budget) naming the field."""
    if request.rollouts > MAX_ROLLOUTS:
        raise BadInput(f"rollouts must be at most {MAX_ROLLOUTS:,}; got {request.rollouts:,}",
                       "rollouts")
    if request.width > MAX_WIDTH:
        raise BadInput(f"width must be at most {MAX_WIDTH}; got {request.width:,}", "width")
    if not request.fair_play:
        for name in ("decoys", "fair_deals"):
            if getattr(request, name):
                raise BadInput(f"{name} goes with fair_play: set fair_play, or leave {name} "
                               "0", name)
    budget = budget_of(DEFAULT_REVIEW, rollouts=request.rollouts or None,
                       decoys=request.decoys or None, fair_deals=request.fair_deals or None)
    return ReviewOptions(budget, request.width, request.seed, request.oracle,
                         request.fair_play)


def _action(seat: int, data: Mapping[str, Any], out: scoring_pb2.Action) -> None:
    """A review's action (``kind``, ``cards`` as text tokens, ``declare``) into ``out``."""
    out.seat = seat
    out.type = ACTION_TYPES[data["kind"]]
    cards = data.get("cards") or ()
    if cards:
        out.cards.cards[:] = cast("list[Any]", core.parse_cards(list(cards)))
    declared = data.get("declare")
    if declared is not None:
        out.declaration.kind = KIND_BY_NAME[declared["kind"]]
        if declared.get("top") is not None:   # a rank name, as replays write it
            out.declaration.top = _rank(declared["top"])
        if declared.get("star") is not None:
            out.declaration.star = int(declared["star"])
        if declared.get("wilds") is not None:
            out.declaration.wilds.SetInParent()
            out.declaration.wilds.ranks[:] = [_rank(w) for w in declared["wilds"]]


def _rank(value: str | int) -> int:
    position = value if isinstance(value, int) else rank_position(value)
    assert position is not None, f"a review wrote the rank {value!r}"
    return position


def _optional(msg: Any, name: str, value: Any) -> None:
    if value is not None:
        setattr(msg, name, value)


def review_to_proto(review: Review, fair_play: bool = False) -> service_pb2.ReviewRoundResponse:
    """A review as a ReviewRoundResponse (``fair_play``: it was asked for the fair-play
    evidence, which its decisions then carry)."""
    data = review.to_dict()
    budget = data["budget"]
    msg = service_pb2.ReviewRoundResponse(
        variant=data["variant"],
        budget=service_pb2.ReviewBudget(rollouts=budget["rollouts"], ms=budget["ms"],
                                        model=budget["model"], exact=budget.get("exact", 0),
                                        decoys=review.budget.decoys,
                                        fair_deals=review.budget.fair_deals),
        seed=data["seed"], width=data["width"], oracle=data.get("oracle", False),
        players=data.get("players") or (), rollouts=data["rollouts"],
        seconds=data["seconds"], fair_play=fair_play)
    for record, d in zip(review.decisions, data["decisions"], strict=True):
        out = msg.decisions.add()
        _decision(d, out)
        out.tuoguan = record.tuoguan
        for e in record.fair:
            out.fair.add(view=FAIR_VIEWS_ON_WIRE[e.kind], regret=e.regret,
                         decoy_regrets=e.decoy_regrets, excess=e.excess,
                         disagree=e.disagree, follows=e.follows)
    for s in data["seats"]:
        seat = msg.seats.add(seat=s["seat"], decisions=s["decisions"], forced=s["forced"],
                             inaccuracies=s["inaccuracies"], mistakes=s["mistakes"],
                             blunders=s["blunders"])
        for name in ("player", "mean_loss", "loss_share", "agree_first", "agree_top3",
                     "oracle_gain"):
            _optional(seat, name, s.get(name))
    result = data["result"]
    msg.result.final[:] = result["final"]
    _optional(msg.result, "winning_team", result.get("winning_team"))
    return msg


def _decision(d: Mapping[str, Any], out: service_pb2.ReviewedDecision) -> None:
    seat = d["seat"]
    out.index, out.seat, out.forced = d["index"], seat, d["forced"]
    _action(seat, d["taken"], out.taken)
    for c in d["candidates"]:
        cand = out.candidates.add(reading=c.get("reading") or "", se=c["se"], taken=c["taken"])
        _action(seat, c, cand.action)
        for name in ("points", "first", "true_points"):
            _optional(cand, name, c.get(name))
        if c.get("hint_rank") is not None and c["hint_rank"] >= 0:   # -1: not a hint
            cand.hint_rank = c["hint_rank"]
    out.best, out.choice = d["best"], d.get("choice", d["best"])
    out.loss, out.loss_se, out.stake = d["loss"], d["loss_se"], d["stake"]
    out.verdict = VERDICTS_ON_WIRE[d["verdict"]]
    out.agrees_first, out.agrees_top3 = d["agrees_first"], d["agrees_top3"]
    out.deals = d.get("deals", 0)
    for name in ("eval_team0", "oracle_gain"):
        _optional(out, name, d.get(name))
