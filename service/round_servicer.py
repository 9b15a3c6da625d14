"""RoundService: live rounds for game servers, one action per call (protos/shuangkou/v1/rounds.proto).

Stateless: each call rebuilds the round from the state bytes the caller sends back
(:meth:`shuangkou.core.Round.from_bytes` validates them), acts, and returns the new bytes, so any
replica answers any call. Each RPC is translate → core → translate; core exceptions go to
the wire through :func:`shuangkou.service.servicer.rpc` (RuleViolation → FAILED_PRECONDITION with the
rule's reason, a forged state → INVALID_ARGUMENT).
"""

from __future__ import annotations

from typing import Any, cast

import grpc

from shuangkou import core
from shuangkou.core.cards import SEATS
from shuangkou.core.variants import Variant
from shuangkou.v1 import cards_pb2, rounds_pb2, rounds_pb2_grpc, scoring_pb2

from .convert import (
    cards_of,
    declaration,
    declaration_to_proto,
    reading_to_proto,
    resolve_variant,
)
from .errors import BadInput, field_scope, rpc
from .limits import Limits
from .rounds import result_to_proto

__all__ = ["RoundServicer", "ROUND_SERVICE_NAME", "register_round_service"]

ROUND_SERVICE_NAME = rounds_pb2.DESCRIPTOR.services_by_name["RoundService"].full_name
MAX_STATE_BYTES = 4096   # a state is ~650 bytes (fixed per variant); far larger is not one
_PLAY, _PASS, _ESCAPE = (scoring_pb2.ACTION_TYPE_PLAY, scoring_pb2.ACTION_TYPE_PASS,
                         scoring_pb2.ACTION_TYPE_ESCAPE)
_KIND_OF_ACTION = {"play": _PLAY, "pass": _PASS, "escape": _ESCAPE}


def _seat(value: int, field: str) -> int:
    if value >= SEATS:
        raise BadInput(f"seat {value} is not a table seat (0-3)", field)
    return value


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



def _codes(cards: tuple[int, ...]) -> list[cards_pb2.Card]:
    """Core card codes as the Card enum (the enum's values are the codes)."""
    return cast("list[cards_pb2.Card]", list(cards))


def _reading_wire(reading: core.Reading) -> bytes:
    """A Reading message's bytes (the core keeps those of standing plays, per rule set)."""
    return reading_to_proto(reading).SerializeToString()


def fill_state(state: rounds_pb2.RoundState, r: core.Round) -> None:
    """Write the state bytes plus the readable view into ``state`` (a field of the
    response, so nothing is copied): the compiled core writes the RoundState's wire bytes in
    one pass (no per-card Python), protobuf's C runtime parses them."""
    state.MergeFromString(r._state_wire(_reading_wire))


class RoundServicer(rounds_pb2_grpc.RoundServiceServicer):
    def __init__(self, limits: Limits) -> None:
        self.limits = limits

    @rpc
    def StartRound(self, request: rounds_pb2.StartRoundRequest,
                   context: grpc.ServicerContext) -> rounds_pb2.StartRoundResponse:
        variant = resolve_variant(request)
        if len(request.hands) != SEATS:
            raise BadInput(f"a deal has {SEATS} hands; got {len(request.hands)}", "hands")
        hands = [cards_of(h, f"hands[{i}]", self.limits, allow_empty=True)[0]
                 for i, h in enumerate(request.hands)]
        leader = _seat(request.leader, "leader")
        partner = (_seat(request.partner, "partner") if request.HasField("partner")
                   else None)
        teams = [list(t.seats) for t in request.teams] or None
        revealed = [request.revealed] if request.revealed else None   # one card code
        # The core names the offending field as the request does (hands, revealed, teams …).
        r = core.Round.deal(
            variant, hands, leader, revealed=revealed, partner=partner, teams=teams,
            stake=request.stake if request.HasField("stake") else 1,
            table_fee=request.table_fee, partial_deal=request.partial_deal)
        response = rounds_pb2.StartRoundResponse()
        fill_state(response.state, r)
        return response

    @rpc
    def ApplyAction(self, request: rounds_pb2.ApplyActionRequest,
                    context: grpc.ServicerContext) -> rounds_pb2.ApplyActionResponse:
        return rounds_pb2.ApplyActionResponse.FromString(self._apply(request))

    @rpc
    def apply_action_wire(self, request: rounds_pb2.ApplyActionRequest,
                          context: grpc.ServicerContext) -> bytes:
        """ApplyAction as the server registers it: the reply's wire bytes as the core wrote
        them, sent as they are (no response message built, then serialized again)."""
        return self._apply(request)

    def _apply(self, request: rounds_pb2.ApplyActionRequest) -> bytes:
        """The ApplyActionResponse's bytes: state, view and record written by the compiled
        core in one pass; the settlement appended when the action ended the round."""
        variant = resolve_variant(request)
        r = _load(request, variant)
        action = request.action
        seat = _seat(action.seat, "action.seat")
        kind = action.type
        if kind == _PLAY:
            cards, _ = cards_of(action.cards, "action.cards", self.limits)
            rec = r.play(seat, cards, declaration(action, "declaration", "action.declaration"))
        elif kind == _PASS:
            rec = r.pass_turn(seat)
        elif kind == _ESCAPE:
            rec = r.escape(seat)
        else:
            raise BadInput("action.type must be ACTION_TYPE_PLAY, _PASS or _ESCAPE",
                           "action.type")
        wire = r._response_wire(rec, _KIND_OF_ACTION[rec.kind], _reading_wire)
        if r.is_over:     # a message's bytes followed by another's parse as their merge
            wire += rounds_pb2.ApplyActionResponse(
                result=result_to_proto(r.result())).SerializeToString()
        return wire

    @rpc
    def SuggestAction(self, request: rounds_pb2.SuggestActionRequest,
                      context: grpc.ServicerContext) -> rounds_pb2.SuggestActionResponse:
        r = _load(request, resolve_variant(request))
        s = core.suggest(r, seed=request.seed if request.HasField("seed") else None)
        response = rounds_pb2.SuggestActionResponse(reason=s.reason)
        action = response.action
        action.seat, action.type = s.seat, _KIND_OF_ACTION[s.kind]
        if s.kind == "play":
            action.cards.cards[:] = _codes(s.cards)
            if s.declaration is not None:   # named exactly: kind, top, star, wilds
                action.declaration.CopyFrom(declaration_to_proto(s.reading))
            response.reading.CopyFrom(reading_to_proto(s.reading))
        return response


def register_round_service(server: grpc.Server, limits: Limits) -> str:
    """Add the RoundService to ``server``; returns its full name (for reflection, health).

    What the generated ``add_RoundServiceServicer_to_server`` does, except that ApplyAction,
    the call a table makes on every move, is served by
    :meth:`RoundServicer.apply_action_wire` with no response serializer: its reply leaves
    as the bytes the core wrote. Every RPC of the proto's service is registered (tested)."""
    s = RoundServicer(limits)
    unary = grpc.unary_unary_rpc_method_handler
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {   # generic in the stubs only
        "StartRound": unary(s.StartRound, rounds_pb2.StartRoundRequest.FromString,
                            rounds_pb2.StartRoundResponse.SerializeToString),
        "ApplyAction": unary(s.apply_action_wire, rounds_pb2.ApplyActionRequest.FromString),
        "SuggestAction": unary(s.SuggestAction, rounds_pb2.SuggestActionRequest.FromString,
                               rounds_pb2.SuggestActionResponse.SerializeToString),
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(ROUND_SERVICE_NAME, handlers),))
    server.add_registered_method_handlers(ROUND_SERVICE_NAME, handlers)
    return ROUND_SERVICE_NAME
