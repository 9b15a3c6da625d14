"""Round results on the wire: RoundSummary and Replay requests in, RoundResult messages out.

One result shape: :class:`shuangkou.core.scoring.RoundResult` (and the replay's subclass),
rendered to JSON by its own ``to_dict`` and to the wire by :func:`result_to_proto`, the one
function that does; :func:`result_to_dict` reads a message back into exactly
``to_dict()``'s shape (clients such as :mod:`shuangkou.service.batch.remote`, which must
yield the same dicts as the local scorer).
"""

from __future__ import annotations

from typing import Any

from shuangkou import core
from shuangkou.core.cards import SEATS
from shuangkou.core.documents import load_json
from shuangkou.core.errors import InvalidPlay, VariantError
from shuangkou.core.replay import check_players
from shuangkou.core.variants import BUILTIN, Variant, get_variant
from shuangkou.v1 import scoring_pb2

from ..errors import BadInput, UnknownVariant, field_scope
from ..limits import Limits
from .convert import ACTION_NAMES, WIN_KINDS, WIN_NAMES, cards_of, declaration, seat_of

__all__ = ["score_summary", "score_replay_request", "replay_input", "replay_record",
           "result_to_proto", "result_to_dict"]


def score_summary(summary: scoring_pb2.RoundSummary, variant: str | Variant,
                  limits: Limits) -> scoring_pb2.RoundResult:
    """Settle a round from a RoundSummary message (core.scoring.score_round)."""
    bombs: list[list[core.Reading]] = [[] for _ in range(SEATS)]
    for i, bomb in enumerate(summary.bombs):
        where = f"summary.bombs[{i}]"
        seat = seat_of(bomb.seat, f"{where}.seat")
        codes, where_cards = cards_of(bomb.cards, f"{where}.cards", limits)
        declared = declaration(bomb, "declaration", f"{where}.declaration")
        with field_scope(where_cards):
            reading = core.play_reading(codes, variant, None, declared)
        if not reading.is_bomb:
            raise InvalidPlay(f"{' '.join(core.format_cards(codes))} is not a bomb: it "
                              f"reads as {reading.describe()}", where)
        bombs[seat].append(reading)
    hands = None
    if summary.hands:
        if len(summary.hands) != SEATS:
            raise BadInput(f"hands lists {len(summary.hands)} seats; give all {SEATS} or none",
                           "summary.hands")
        hands = [cards_of(h, f"summary.hands[{s}]", limits, allow_empty=True)[0]
                 for s, h in enumerate(summary.hands)]
    cards_left = list(summary.cards_left) if summary.cards_left else None
    with field_scope("summary", nested=True):
        result = core.score_round(
            variant, list(summary.finish_order), bombs,
            stake=summary.stake if summary.HasField("stake") else 1,
            cards_left=cards_left,
            escape=summary.escape if summary.HasField("escape") else None,
            hands=hands, table_fee=summary.table_fee)
    return result_to_proto(result)


def score_replay_request(request: Any, variant: str | Variant,
                         limits: Limits) -> scoring_pb2.RoundResult:
    """Validate and settle the replay of a ScoreRound/ScoreReplays request."""
    replay, where = replay_input(request, variant, limits)
    with field_scope(where, nested=True):
        return result_to_proto(core.score_replay(replay))


def replay_input(request: Any, variant: str | Variant,
                 limits: Limits) -> tuple[core.Replay | dict[str, Any] | str, str]:
    """The replay of a request's ``round`` oneof (``replay`` or ``replay_json``) as the core
    takes it, and the request field it came from (errors the core finds in it are scoped
    there, nested): a typed message as the core's typed record, a document as parsed JSON
    under the request's rule set — or as the text, when it is not JSON at all, for the core
    to report as ``score-replays`` does. ScoreRound, ScoreReplays and ReviewRound read their
    replays here."""
    which = request.WhichOneof("round")
    if which != "replay_json":   # a typed message becomes the core's typed record
        return replay_record(request.replay, variant, limits), "replay"   # names full paths
    where = "replay_json"
    named = request.rule_set.WhichOneof("source") is not None
    try:
        with field_scope(where):
            document: Any = load_json(request.replay_json, where, invalid=_Malformed)
    except _Malformed:
        return request.replay_json, where
    if isinstance(document, dict):
        _check_replay_variant(document, variant, named, where)
        if named or "variant" not in document:
            document["variant"] = variant
    return document, where


def _check_replay_variant(document: dict[str, Any], variant: str | Variant, named: bool,
                          where: str) -> None:
    """An unknown built-in id is NOT_FOUND (the core would call it a malformed replay); a
    replay may not contradict the rule set its request names."""
    own = document.get("variant")
    if isinstance(own, str) and own not in BUILTIN:
        try:
            get_variant(own)
        except VariantError as exc:   # same text as the core's "variant: ..." reason
            raise UnknownVariant(f"variant: {exc}", f"{where}.variant") from None
    if own is not None and named and own != _variant_id(variant):
        raise BadInput(f"the replay names variant {own!r} but the request names "
                       f"{_variant_id(variant)!r}", f"{where}.variant")


class _Malformed(ValueError):
    """Not JSON at all: left to the core, whose message the local scorer prints too."""


def _variant_id(variant: str | Variant) -> str:
    return variant if isinstance(variant, str) else variant.id


def replay_record(replay: scoring_pb2.Replay, variant: str | Variant,
                  limits: Limits) -> core.Replay:
    """A Replay message as the core's typed record (its form checked here, field by field;
    the rules when the core folds it over a Round)."""
    if len(replay.hands) != SEATS:
        raise BadInput(f"hands lists {len(replay.hands)} dealt hands; give all {SEATS}",
                       "replay.hands")
    hands = tuple(tuple(cards_of(h, f"replay.hands[{d}]", limits)[0])
                  for d, h in enumerate(replay.hands))
    actions = []
    for i, action in enumerate(replay.actions):
        where = f"replay.actions[{i}]"
        seat = seat_of(action.seat, f"{where}.seat")
        kind = ACTION_NAMES.get(action.type)
        if kind is None:
            raise BadInput("an action's type must be PLAY, PASS or ESCAPE", f"{where}.type")
        declared = declaration(action, "declaration", f"{where}.declaration")
        cards = cards_of(action.cards, f"{where}.cards", limits, allow_empty=kind != "play")[0]
        with field_scope(where):     # a pass or an escape with cards: the Action refuses it
            actions.append(core.Action(seat, kind, tuple(cards), declared))
    return core.Replay(
        variant=get_variant(variant) if isinstance(variant, str) else variant, hands=hands,
        leader=seat_of(replay.leader, "replay.leader"),
        revealed=[replay.revealed] if replay.revealed else None,
        partner=replay.partner if replay.HasField("partner") else None,
        teams=[list(team.seats) for team in replay.teams] or None,
        stake=replay.stake if replay.HasField("stake") else 1, table_fee=replay.table_fee,
        partial_deal=replay.partial_deal, actions=tuple(actions),
        players=_players(replay))


def _players(replay: scoring_pb2.Replay) -> tuple[str, ...] | None:
    """The message's ``players`` checked as the JSON document's are (none given: None)."""
    if not replay.players:
        return None
    try:
        return check_players(list(replay.players))
    except core.ReplayError as exc:
        raise BadInput(exc.detail, "replay.players") from None


# ----------------------------------------------------------------------------- results

def _opt(msg: Any, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None


def result_to_proto(r: Any) -> scoring_pb2.RoundResult:
    """shuangkou.core.scoring.RoundResult -> RoundResult message."""
    msg = scoring_pb2.RoundResult(
        variant=r.variant, kind=WIN_KINDS[r.kind], winning_team=r.winning_team,
        finish_order=list(r.finish_order), star=r.star, star_seat=r.star_seat,
        multiplier=r.multiplier, stake=r.stake, escaper=r.escaper, table_fee=r.table_fee,
        total=r.total, hand_at=list(getattr(r, "hand_at", ())),
        action_count=getattr(r, "actions", None))
    hand_at = getattr(r, "hand_at", None)
    for s in r.seats:
        src = s.star_source
        msg.seats.add(
            seat=s.seat, team=s.team, place=s.place, base=s.base, star=s.star,
            star_source=scoring_pb2.StarSource(rule=src.rule, bomb=src.bomb, n=src.n, k=src.k,
                                               bonus=src.bonus, text=src.describe()),
            multiplier=s.multiplier, contribution=s.contribution, escape=s.escape,
            final=s.final, dealt_seat=hand_at[s.seat] if hand_at else None)
    for e in r.contributions:
        msg.contributions.add(seat=e.seat, star=e.star, gain=e.gain, pay=e.pay, to_seats=list(e.to),
                              bomb=e.bomb)
    return msg


def result_to_dict(msg: scoring_pb2.RoundResult) -> dict[str, Any]:
    """RoundResult message -> the dict core.scoring.RoundResult.to_dict() gives."""
    seats = []
    for s in msg.seats:
        src = s.star_source
        source = {k: _opt(src, k) for k in ("bomb", "n", "k", "bonus")}
        source = {"rule": src.rule, **{k: v for k, v in source.items() if v is not None},
                  "text": src.text}
        seats.append({
            "seat": s.seat, "team": s.team, "place": _opt(s, "place"), "base": s.base,
            "star": s.star, "star_source": source, "multiplier": s.multiplier,
            "contribution": s.contribution, "escape": s.escape, "final": s.final})
        if s.HasField("dealt_seat"):
            seats[-1]["dealt_seat"] = s.dealt_seat
    result = {
        "variant": msg.variant, "kind": WIN_NAMES[msg.kind],
        "winning_team": _opt(msg, "winning_team"),
        "finish_order": list(msg.finish_order), "star": msg.star,
        "star_seat": _opt(msg, "star_seat"), "multiplier": msg.multiplier, "stake": msg.stake,
        "escaper": _opt(msg, "escaper"), "table_fee": msg.table_fee,
        "final": [s["final"] for s in seats], "total": msg.total,
        "seats": seats,
        "contributions": [{"seat": e.seat, "star": e.star, "gain": e.gain, "pay": e.pay,
                           "to": list(e.to_seats), "bomb": _opt(e, "bomb")}
                          for e in msg.contributions],
    }
    if msg.hand_at:   # a replay's result (core.replay.ReplayResult.to_dict)
        result["hand_at"] = list(msg.hand_at)
        result["actions"] = msg.action_count
    return result
