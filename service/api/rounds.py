"""RoundService: live rounds for game servers, one action per call
(protos/shuangkou/v1/rounds.proto).

Stateless: each call rebuilds the round from the state bytes the caller sends back
(:meth:`shuangkou.core.Round.from_bytes` validates them), acts, and returns the new bytes,
so any replica answers any call. Each RPC is translate → core → translate, the replies
built with the generated message classes from the public :class:`~shuangkou.core.Round`
API; core exceptions go to the wire through :func:`shuangkou.service.errors.rpc`
(RuleViolation → FAILED_PRECONDITION with the rule's reason, a forged state →
INVALID_ARGUMENT).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

import grpc

from shuangkou import core
from shuangkou.core._round import NO_SEED
from shuangkou.core.cards import SEATS
from shuangkou.core.errors import RuleViolation
from shuangkou.core.shuffle import check_seed
from shuangkou.core.variants import Variant
from shuangkou.v1 import cards_pb2, readings_pb2, rounds_pb2, rounds_pb2_grpc

from ..errors import BadInput, field_scope, rpc
from ..limits import Limits
from .convert import (
    ACTION_NAMES,
    ACTION_TYPES,
    WIN_NAMES,
    cards_of,
    declaration,
    declaration_to_proto,
    reading_to_proto,
    resolve_variant,
    seat_of,
    variant_label,
)
from .results import result_to_proto

if TYPE_CHECKING:   # prometheus_client must not be imported before the CLI sets it up
    from ..metrics import Metrics

__all__ = ["RoundServicer", "ROUND_SERVICE_NAME", "register_round_service", "fill_state"]

ROUND_SERVICE_NAME = rounds_pb2.DESCRIPTOR.services_by_name["RoundService"].full_name
MAX_STATE_BYTES = 4096   # a state is ~650 bytes (fixed per variant); far larger is not one
MAX_MESSAGES = 4096      # messages kept of the distinct standing plays seen

_STATE_SCOPE = field_scope("state")      # one, reused: it keeps nothing between calls


def _load(request: Any, variant: str | Variant) -> core.Round:
    """The round a request's state bytes hold, validated against the variant."""
    data = request.state
    if not data:
        raise BadInput("no state given: send the state.data of the last response", "state")
    if len(data) > MAX_STATE_BYTES:
        raise BadInput(f"a state of {len(data):,} bytes is not a round state", "state")
    with _STATE_SCOPE:
        return core.Round.from_bytes(data, variant)


def _codes(cards: tuple[int, ...]) -> tuple[cards_pb2.Card, ...]:
    """Core card codes as the Card enum (the enum's values are the codes)."""
    return cast("tuple[cards_pb2.Card, ...]", cards)


# Messages built once, then only ever copied from. What stands on the table: every later
# call of the trick sends the same play back, and building its Reading is most of what a
# reply costs; a play is its seat, its cards and the reading's name (kind, top, star and
# wilds name exactly one reading of the cards, docs/decisions.md 7) under one compiled rule
# set. And hands: an action changes at most the acting seat's, so the other three come back
# unchanged in the next call of the table.
_READINGS: dict[tuple[Any, ...], readings_pb2.Reading] = {}
_STANDING: dict[tuple[Any, ...], rounds_pb2.StandingPlay] = {}
_HANDS: dict[tuple[int, ...], cards_pb2.Cards] = {}


def _kept(cache: dict[Any, Any], key: Any, make: Callable[[], Any]) -> Any:
    """``cache[key]``, made on a miss; the cache is emptied when it holds MAX_MESSAGES."""
    msg = cache.get(key)
    if msg is None:
        if len(cache) >= MAX_MESSAGES:
            cache.clear()
        msg = cache[key] = make()
    return msg


def _key(cards: tuple[int, ...], reading: core.Reading) -> tuple[Any, ...]:
    return (reading.rules, cards, reading.kind, reading.top, reading.star, reading.wilds)


def _reading(cards: tuple[int, ...], reading: core.Reading) -> readings_pb2.Reading:
    msg: readings_pb2.Reading = _kept(_READINGS, _key(cards, reading),
                                      lambda: reading_to_proto(reading))
    return msg


def _standing(play: core.Standing) -> rounds_pb2.StandingPlay:
    msg: rounds_pb2.StandingPlay = _kept(
        _STANDING, (play.seat, *_key(play.cards, play.reading)),
        lambda: rounds_pb2.StandingPlay(seat=play.seat, cards=_codes(play.cards),
                                        reading=_reading(play.cards, play.reading)))
    return msg


def _hand(cards: tuple[int, ...]) -> cards_pb2.Cards:
    msg: cards_pb2.Cards = _kept(_HANDS, cards, lambda: cards_pb2.Cards(cards=_codes(cards)))
    return msg


def fill_state(state: rounds_pb2.RoundState, r: core.Round) -> None:
    """Write the state bytes and the readable view of ``r`` into ``state`` (a field of the
    response, so nothing is copied; fields left at their zero value are not set)."""
    state.data = r.to_bytes()
    view = state.view
    turn = r.turn
    if turn is not None:
        view.turn = turn
    view.hand_sizes.extend(r.cards_left)
    view.hands.extend([_hand(r.hand(seat)) for seat in range(SEATS)])
    standing = r.standing
    if standing is not None:
        view.standing.CopyFrom(_standing(standing))
    if r.passes:
        view.passes = r.passes
    if r.finish_order:
        view.finish_order.extend(r.finish_order)
    if r.is_over:
        view.over = True
    view.hand_at.extend(r.hand_at)
    view.actions_applied = r.actions_applied
    if r.seed_sha256 != NO_SEED:
        view.seed_sha256 = r.seed_sha256


def _fill_record(out: rounds_pb2.ActionRecord, rec: core.ActionRecord) -> None:
    out.seat = rec.seat
    out.type = ACTION_TYPES[rec.kind]
    out.cards.extend(_codes(rec.cards))
    if rec.reading is not None:
        out.reading.CopyFrom(_reading(rec.cards, rec.reading))
    if rec.trick_won_by is not None:
        out.trick_won_by = rec.trick_won_by
    if rec.finished is not None:
        out.finished = rec.finished
    if rec.wind_to is not None:
        out.wind_to = rec.wind_to
    if rec.next_turn is not None:
        out.next_turn = rec.next_turn
    out.round_over = rec.round_over


class RoundServicer(rounds_pb2_grpc.RoundServiceServicer):
    def __init__(self, limits: Limits, metrics: Metrics) -> None:
        self.limits = limits
        self.metrics = metrics

    @contextmanager
    def _rules(self, method: str) -> Iterator[None]:
        """Count the rule a round's state refused (``shuangkou_rule_errors_total``)."""
        try:
            yield
        except RuleViolation as exc:
            self.metrics.rule_errors.labels(method, exc.reason).inc()
            raise

    @rpc
    def StartRound(self, request: rounds_pb2.StartRoundRequest,
                   context: grpc.ServicerContext) -> rounds_pb2.StartRoundResponse:
        variant = resolve_variant(request)
        stake = request.stake if request.HasField("stake") else 1
        if request.HasField("seed"):
            r = self._seeded(request, variant, stake)
        else:
            r = self._dealt(request, variant, stake)
        self.metrics.rounds_started.labels(variant_label(variant),
                                           "seed" if request.HasField("seed") else "hands").inc()
        response = rounds_pb2.StartRoundResponse()
        fill_state(response.state, r)
        return response

    def _seeded(self, request: rounds_pb2.StartRoundRequest, variant: str | Variant,
                stake: int) -> core.Round:
        given = [name for name in ("hands", "revealed", "leader", "partial_deal")
                 if (len(request.hands) if name == "hands" else getattr(request, name))]
        if given:
            raise BadInput(f"a deal from a seed takes no {given[0]}: the seed deals the hands "
                           "and picks the revealed card and the leader", given[0])
        with field_scope("seed"):
            check_seed(request.seed)
        return core.Round.deal_seeded(
            variant, request.seed, stake=stake, table_fee=request.table_fee,
            partner=(seat_of(request.partner, "partner", table=True)
                     if request.HasField("partner") else None),
            teams=[list(t.seats) for t in request.teams] or None)

    def _dealt(self, request: rounds_pb2.StartRoundRequest, variant: str | Variant,
               stake: int) -> core.Round:
        if len(request.hands) != SEATS:
            raise BadInput(f"a deal has {SEATS} hands; got {len(request.hands)}", "hands")
        hands = [cards_of(h, f"hands[{i}]", self.limits, allow_empty=True)[0]
                 for i, h in enumerate(request.hands)]
        leader = seat_of(request.leader, "leader", table=True)
        partner = (seat_of(request.partner, "partner", table=True)
                   if request.HasField("partner") else None)
        teams = [list(t.seats) for t in request.teams] or None
        revealed = [request.revealed] if request.revealed else None   # one card code
        # The core names the offending field as the request does (hands, revealed, teams …).
        return core.Round.deal(
            variant, hands, leader, revealed=revealed, partner=partner, teams=teams,
            stake=stake, table_fee=request.table_fee, partial_deal=request.partial_deal)

    @rpc
    def ApplyAction(self, request: rounds_pb2.ApplyActionRequest,
                    context: grpc.ServicerContext) -> rounds_pb2.ApplyActionResponse:
        variant = resolve_variant(request)
        r = _load(request, variant)
        action = request.action
        seat = seat_of(action.seat, "action.seat", table=True)
        kind = ACTION_NAMES.get(action.type)
        with self._rules("ApplyAction"):
            if kind == "play":
                cards, _ = cards_of(action.cards, "action.cards", self.limits)
                rec = r.play(seat, cards,
                             declaration(action, "declaration", "action.declaration"))
            elif kind == "pass":
                rec = r.pass_turn(seat)
            elif kind == "escape":
                rec = r.escape(seat)
            else:
                raise BadInput("action.type must be ACTION_TYPE_PLAY, _PASS or _ESCAPE",
                               "action.type")
        response = rounds_pb2.ApplyActionResponse()
        fill_state(response.state, r)
        _fill_record(response.record, rec)
        if r.is_over:
            response.result.CopyFrom(result_to_proto(r.result()))
            self.metrics.rounds_finished.labels(variant_label(variant),
                                                WIN_NAMES[response.result.kind]).inc()
        return response

    @rpc
    def SuggestAction(self, request: rounds_pb2.SuggestActionRequest,
                      context: grpc.ServicerContext) -> rounds_pb2.SuggestActionResponse:
        variant = resolve_variant(request)
        r = _load(request, variant)
        t0 = time.perf_counter()
        with self._rules("SuggestAction"):
            s = core.suggest(r, seed=request.seed if request.HasField("seed") else None)
        label = variant_label(variant)
        self.metrics.suggest_seconds.labels(label).observe(time.perf_counter() - t0)
        self.metrics.suggestions.labels(label, s.kind).inc()
        response = rounds_pb2.SuggestActionResponse(reason=s.reason)
        action = response.action
        action.seat, action.type = s.seat, ACTION_TYPES[s.kind]
        if s.kind == "play":
            action.cards.cards[:] = _codes(s.cards)
            if s.declaration is not None:   # named exactly: kind, top, star, wilds
                action.declaration.CopyFrom(declaration_to_proto(s.reading))
            response.reading.CopyFrom(reading_to_proto(s.reading))
        return response


def register_round_service(server: grpc.Server, servicer: RoundServicer) -> str:
    """Add ``servicer`` to ``server`` (the generated registration); returns the service's
    full name (for reflection, health)."""
    rounds_pb2_grpc.add_RoundServiceServicer_to_server(servicer, server)
    return ROUND_SERVICE_NAME
