"""ReviewRound on the wire: the request's review options checked, and a review rendered as a
ReviewRoundResponse.

A review (:class:`shuangkou.core.review.Review`) has one shape outside the core: the JSON
form of its ``to_dict()``, which ``shuangkou review --json``, the archives and the round
page read too (docs/review.md). :func:`review_to_proto` is the one function that puts it on
the wire, field for field; the replay itself is read as ScoreRound reads it
(:func:`shuangkou.service.api.results.replay_input`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from shuangkou import core
from shuangkou.core.review import DEFAULT_REVIEW, ReviewBudget
from shuangkou.core.suggest import MAX_ALTERNATIVES, MAX_ROLLOUTS
from shuangkou.v1 import readings_pb2, scoring_pb2, service_pb2

from ..errors import BadInput
from .convert import ACTION_TYPES, KIND_BY_NAME

__all__ = ["ReviewOptions", "review_options", "review_to_proto", "VERDICTS_ON_WIRE",
           "MAX_WIDTH"]

#: The widest review a request may ask for: the search's own limit.
MAX_WIDTH = MAX_ALTERNATIVES
#: The review's verdict names -> the Verdict enum (its values' names, lower-cased).
VERDICTS_ON_WIRE = cast("dict[str, service_pb2.Verdict]", {
    name.removeprefix("VERDICT_").lower(): value
    for name, value in service_pb2.Verdict.items() if value})


@dataclass(frozen=True, slots=True)
class ReviewOptions:
    """What a request asks of the review, checked: ``review()``'s keyword arguments (a
    width of 0 leaves the review's default)."""

    budget: ReviewBudget
    width: int
    seed: int
    oracle: bool

    def kwargs(self) -> dict[str, Any]:
        given = {"width": self.width} if self.width else {}
        return {"budget": self.budget, "seed": self.seed, "oracle": self.oracle, **given}


def review_options(request: service_pb2.ReviewRoundRequest) -> ReviewOptions:
    """The review a ReviewRoundRequest asks for: 0 is the default for ``rollouts`` and
    ``width``; beyond the limits, BadInput naming the field."""
    if request.rollouts > MAX_ROLLOUTS:
        raise BadInput(f"rollouts must be at most {MAX_ROLLOUTS:,}; got {request.rollouts:,}",
                       "rollouts")
    if request.width > MAX_WIDTH:
        raise BadInput(f"width must be at most {MAX_WIDTH}; got {request.width:,}", "width")
    budget = DEFAULT_REVIEW
    if request.rollouts:
        budget = ReviewBudget(rollouts=request.rollouts, ms=budget.ms, model=budget.model)
    return ReviewOptions(budget, request.width, request.seed, request.oracle)


def _action(seat: int, data: Mapping[str, Any], out: scoring_pb2.Action) -> None:
    """A review's action (``kind``, ``cards`` as text tokens, ``declare``) into ``out``."""
    out.seat = seat
    out.type = ACTION_TYPES[data["kind"]]
    cards = data.get("cards") or ()
    if cards:
        out.cards.cards[:] = cast("list[Any]", core.parse_cards(list(cards)))
    declared = data.get("declare")
    if declared is not None:
        _declaration(declared, out.declaration)


def _declaration(data: Any, out: readings_pb2.Declaration) -> None:
    """A declaration as a review writes it: the kind alone, or kind, top, star and wilds."""
    if isinstance(data, str):
        out.kind = KIND_BY_NAME[data]   # type: ignore[index]
        return
    out.kind = KIND_BY_NAME[data["kind"]]
    if data.get("top") is not None:
        out.top = int(data["top"])
    if data.get("star") is not None:
        out.star = int(data["star"])
    if data.get("wilds") is not None:
        out.wilds.SetInParent()
        out.wilds.ranks[:] = [int(w) for w in data["wilds"]]


def _optional(msg: Any, name: str, value: Any) -> None:
    if value is not None:
        setattr(msg, name, value)


def review_to_proto(data: Mapping[str, Any]) -> service_pb2.ReviewRoundResponse:
    """A review's JSON form (``Review.to_dict()``) as a ReviewRoundResponse."""
    budget = data["budget"]
    msg = service_pb2.ReviewRoundResponse(
        variant=data["variant"],
        budget=service_pb2.ReviewBudget(rollouts=budget["rollouts"], ms=budget["ms"],
                                        model=budget["model"]),
        seed=data["seed"], width=data["width"], players=data.get("players") or (),
        rollouts=data["rollouts"], seconds=data["seconds"])
    for d in data["decisions"]:
        _decision(d, msg.decisions.add())
    for s in data["seats"]:
        seat = msg.seats.add(
            seat=s["seat"], decisions=s["decisions"], forced=s["forced"],
            mean_loss=s["mean_loss"] or 0.0, inaccuracies=s["inaccuracies"],
            mistakes=s["mistakes"], blunders=s["blunders"],
            agree_first=s["agree_first"] or 0.0, agree_top3=s["agree_top3"] or 0.0)
        _optional(seat, "player", s.get("player"))
    result = data["result"]
    msg.result.final[:] = result["final"]
    _optional(msg.result, "winning_team", result.get("winning_team"))
    return msg


def _decision(d: Mapping[str, Any], out: service_pb2.ReviewedDecision) -> None:
    seat = d["seat"]
    out.index, out.seat, out.forced = d["index"], seat, d["forced"]
    _action(seat, d["taken"], out.taken)
    for c in d["candidates"]:
        cand = out.candidates.add(points=c["points"], first=c["first"], se=c["se"],
                                  taken=c["taken"])
        _action(seat, c, cand.action)
        _optional(cand, "hint_rank", c.get("hint_rank"))
        _optional(cand, "true_points", c.get("true_points"))
    out.best, out.loss, out.loss_se = d["best"], d["loss"], d["loss_se"]
    out.verdict = VERDICTS_ON_WIRE[d["verdict"]]
    out.agrees_first, out.agrees_top3 = d["agrees_first"], d["agrees_top3"]
    out.eval_team0 = d["eval_team0"]
    _optional(out, "oracle_gain", d.get("oracle_gain"))

