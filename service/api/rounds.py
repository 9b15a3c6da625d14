"""RoundService: live rounds for game servers, one action per call
(protos/shuangkou/v1/rounds.proto).

Stateless: each call rebuilds the round from the state bytes the caller sends back
(:meth:`shuangkou.core.Round.from_bytes` validates them), acts, and returns the new bytes,
so any replica answers any call. Each RPC is translate → core → translate; the round replies
(state, view, action record) come from the compiled reply writer (service/api/_round_replies.pyx,
its field keys read from the generated descriptors), the rest from the generated classes; core exceptions go to the wire through :func:`shuangkou.service.errors.rpc`
(RuleViolation → FAILED_PRECONDITION with the rule's reason, a forged state →
INVALID_ARGUMENT).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import grpc

from shuangkou import core
from shuangkou.core.cards import SEATS
from shuangkou.core.errors import RuleViolation
from shuangkou.core.round import ROUND_ID_BYTES
from shuangkou.core.shuffle import check_seed
from shuangkou.core.suggest import (
    MAX_ALTERNATIVES,
    TUOGUAN,
    Budget,
    Ranked,
    Suggestion,
    suggestions,
)
from shuangkou.core.variants import Variant
from shuangkou.v1 import readings_pb2, rounds_pb2, rounds_pb2_grpc

from ..costs import REPLY_MARGIN, search_cost, work_time
from ..errors import BadInput, StateMismatch, field_scope, rpc, scoped
from ..lane import SUGGEST_ACTION, Lane
from ..limits import Limits
from ..tracing import traced
from ._round_replies import apply_bytes, state_bytes
from .convert import (
    ACTION_NAMES,
    ACTION_TYPES,
    WIN_NAMES,
    card_values,
    cards_of,
    declaration,
    declaration_to_proto,
    reading_bytes,
    reading_to_proto,
    resolve_variant,
    seat_of,
    variant_label,
)
from .results import result_to_proto

#: No span: a SuggestAction without a search.
_NO_SEARCH = nullcontext()

if TYPE_CHECKING:   # prometheus_client must not be imported before the CLI sets it up
    from ..metrics import Metrics

__all__ = ["RoundServicer", "ROUND_SERVICE_NAME", "register_round_service", "fill_state",
           "apply_response", "within_deadline", "work_time", "REPLY_MARGIN"]

ROUND_SERVICE_NAME = rounds_pb2.DESCRIPTOR.services_by_name["RoundService"].full_name
MAX_STATE_BYTES = 4096   # a state is ~650 bytes (fixed per variant); far larger is not one
#: The longest one SuggestAction searches: `search.max_ms` at most, and the time limit of a
#: rollout budget given alone (the call's deadline, and the server's search_max_seconds,
#: bound it as well).
MAX_SEARCH_MS = 10_000

_DEFAULT_LIMITS = Limits()
_STATE_SCOPE = field_scope("state")      # one, reused: it keeps nothing between calls


def _load(request: Any, variant: str | Variant, keys: core.StateKeys | None) -> core.Round:
    """The round a request's state bytes hold, validated against the variant (and, with
    state keys, checked to be sealed by this service and unaltered)."""
    data = request.state
    if not data:
        raise BadInput("no state given: send the state.data of the last response", "state")
    if len(data) > MAX_STATE_BYTES:
        raise BadInput(f"a state of {len(data):,} bytes is not a round state", "state")
    with _STATE_SCOPE:
        return core.Round.from_bytes(data, variant, keys)


def _check_precondition(request: Any, r: core.Round) -> None:
    """Refuse a state that is not the round, or not the point of it, the request's
    ``precondition`` names (each part only when set): a sealed state proves the server
    issued it, not that it is this table's latest (docs/rounds.md "Freshness and identity")."""
    if not request.HasField("precondition"):
        return
    want = request.precondition
    if want.round_id:
        if len(want.round_id) != ROUND_ID_BYTES:
            raise BadInput(f"precondition.round_id must be {ROUND_ID_BYTES} bytes (the "
                           f"view's round_id); got {len(want.round_id)}",
                           "precondition.round_id")
        if want.round_id != r.round_id:
            raise StateMismatch(f"the state is of round {r.round_id.hex()}, not of round "
                                f"{want.round_id.hex()} that the precondition names: another "
                                "table's or an earlier round's state", "OTHER_ROUND")
    if want.HasField("actions_applied") and want.actions_applied != r.actions_applied:
        raise StateMismatch(f"the state is after {r.actions_applied} actions, not after "
                            f"{want.actions_applied} as the precondition expects: not the "
                            "table's latest state", "STALE_STATE")


# The Reading messages of the plays that stand are kept as bytes, once per distinct reading
# (convert.reading_bytes): every later call of the trick sends the same play back, and
# building its Reading is most of what a reply would cost.


def _standing_bytes(r: core.Round) -> bytes | None:
    standing = r.standing
    return None if standing is None else reading_bytes(standing.reading)


def _sealed(r: core.Round, keys: core.StateKeys | None) -> bytes | None:
    """The state's bytes sealed under ``keys``; None unsealed (the writer packs them)."""
    return None if keys is None else r.to_bytes(keys)


def fill_state(state: rounds_pb2.RoundState, r: core.Round,
               keys: core.StateKeys | None = None) -> None:
    """Write the state bytes (sealed under ``keys``, if any) and the readable view of ``r``
    into ``state`` (a field of the response, so nothing is copied): written by the compiled
    reply writer (service/api/_round_replies.pyx), parsed once by protobuf's runtime."""
    state.MergeFromString(state_bytes(r, _standing_bytes(r), _sealed(r, keys)))


def apply_response(r: core.Round, rec: core.ActionRecord,
                   keys: core.StateKeys | None = None) -> rounds_pb2.ApplyActionResponse:
    """The ApplyActionResponse of action ``rec`` just applied to ``r`` (its state sealed
    under ``keys``, if any): state, view and record written by the compiled reply writer;
    the settlement added when the round is over."""
    reading = None if rec.reading is None else reading_bytes(rec.reading)
    response = rounds_pb2.ApplyActionResponse.FromString(apply_bytes(
        r, rec.seat, ACTION_TYPES[rec.kind], rec.cards, reading, _standing_bytes(r),
        rec.trick_won_by, rec.finished, rec.wind_to, rec.next_turn, rec.round_over,
        _sealed(r, keys)))
    if r.is_over:
        response.result.CopyFrom(result_to_proto(r.result()))
    return response


class RoundServicer(rounds_pb2_grpc.RoundServiceServicer):
    def __init__(self, limits: Limits, metrics: Metrics,
                 keys: core.StateKeys | None = None, lane: Lane | None = None) -> None:
        self.limits = limits
        self.metrics = metrics
        self.keys = keys
        self.lane = lane or Lane(1, 8, limits.review_max_seconds)

    @contextmanager
    def _rules(self, method: str) -> Iterator[None]:
        """Count the rule a round's state refused, or the precondition it failed
        (``shuangkou_rule_errors_total``)."""
        try:
            yield
        except (RuleViolation, StateMismatch) as exc:
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
        fill_state(response.state, r, self.keys)
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
        r = _load(request, variant, self.keys)
        with self._rules("ApplyAction"):
            _check_precondition(request, r)
        action = request.action
        seat = seat_of(action.seat, "action.seat", table=True)
        kind = ACTION_NAMES.get(action.type)
        if kind is None:
            raise BadInput("action.type must be ACTION_TYPE_PLAY, _PASS or _ESCAPE",
                           "action.type")
        # a pass or an escape with cards or a declaration is refused by the Action itself
        cards, _ = cards_of(action.cards, "action.cards", self.limits,
                            allow_empty=kind != "play")
        declared = declaration(action, "declaration", "action.declaration")
        try:
            move = core.Action(seat, kind, tuple(cards), declared)
        except core.ShuangkouError as exc:   # its own checks, named as the request's fields
            raise scoped(exc, "action", nested=True) from None
        with self._rules("ApplyAction"):
            rec = r.apply(move)
        response = apply_response(r, rec, self.keys)
        if r.is_over:
            self.metrics.rounds_finished.labels(variant_label(variant),
                                                WIN_NAMES[response.result.kind]).inc()
        return response

    @rpc
    def SuggestAction(self, request: rounds_pb2.SuggestActionRequest,
                      context: grpc.ServicerContext) -> rounds_pb2.SuggestActionResponse:
        variant = resolve_variant(request)
        r = _load(request, variant, self.keys)
        with self._rules("SuggestAction"):
            _check_precondition(request, r)
        if request.count > MAX_ALTERNATIVES:
            raise BadInput(f"count must be at most {MAX_ALTERNATIVES}; got {request.count}",
                           "count")
        with self.lane.counted(SUGGEST_ACTION):
            asked = _budget(request, self.limits)
        label = variant_label(variant)

        def decide() -> Ranked:
            """The decision within the call's time left (a search: in the lane, timed from
            its start, its wait in the lane not counted)."""
            left = context.time_remaining()
            budget = within_deadline(asked, left)
            t0 = time.perf_counter()
            # a search is the call's long part: a span of its own (tracing on), child of the
            # call's
            with self._rules("SuggestAction"), traced(
                    "shuangkou.search", **{"shuangkou.budget.rollouts": budget.rollouts,
                                           "shuangkou.budget.ms": budget.ms}
                    ) if budget.searches else _NO_SEARCH as span:
                ranked = suggestions(r, request.count or 1,
                                     seed=request.seed if request.HasField("seed") else None,
                                     budget=budget, timeout=left,
                                     cancelled=lambda: not context.is_active())
                if span is not None:
                    span.set_attributes({"shuangkou.search.rollouts": ranked.rollouts,
                                         "shuangkou.search.deals": ranked.deals,
                                         "shuangkou.search.candidates": ranked.width})
            self.metrics.suggest_seconds.labels(label).observe(time.perf_counter() - t0)
            return ranked

        ranked = self.lane.run(SUGGEST_ACTION, context, lambda: search_cost(
            r, within_deadline(asked, context.time_remaining())), decide) \
            if asked.searches else decide()
        first = ranked.actions[0]
        self.metrics.suggestions.labels(label, first.kind).inc()
        response = rounds_pb2.SuggestActionResponse(reason=first.reason)
        _fill_suggested(response.action, response.reading, first)
        for s in ranked.actions:
            out = response.actions.add(reason=s.reason, deals=s.deals)
            _fill_suggested(out.action, out.reading, s)
            if s.gain is not None and s.wins is not None:
                out.gain, out.wins = s.gain, s.wins
        if request.HasField("search"):
            response.search.CopyFrom(rounds_pb2.SearchReport(
                rollouts=ranked.rollouts, deals=ranked.deals, candidates=ranked.width,
                elapsed_ms=ranked.seconds * 1e3))
        return response


def within_deadline(budget: Budget, left: float | None) -> Budget:
    """``budget`` with its time cut to what the call has left less :data:`REPLY_MARGIN`:
    the search stops early enough for the reply to reach the caller before its deadline
    (the rule policy's action, the floor, stays bounded by the deadline alone)."""
    if left is None or not budget.searches:
        return budget
    ms = work_time(left) * 1e3
    if budget.ms and budget.ms <= ms:
        return budget
    # 0 would mean "no time limit": a call with no time to spare still gets the policy's
    # action, ranked by nothing; only the time changes, never how the search plays
    return replace(budget, ms=max(ms, 1e-3))


def _budget(request: rounds_pb2.SuggestActionRequest, limits: Limits = _DEFAULT_LIMITS
            ) -> Budget:
    """The search budget a request asks for: none without `search`, the 托管 default for
    an empty one; otherwise 托管's search with the request's rollouts and time, a rollout
    budget alone given the longest time. Never past ``limits``' caps on a search
    (search_max_rollouts refuses more rollouts, search_max_seconds a longer time and bounds
    every search's: docs/decisions.md 80)."""
    if not request.HasField("search"):
        return Budget()
    b = request.search
    if b.max_ms > MAX_SEARCH_MS:       # the service's bound on one call's search time
        raise BadInput(f"search.max_ms must be at most {MAX_SEARCH_MS:,}; got {b.max_ms:,}",
                       "search.max_ms")
    longest = min(float(MAX_SEARCH_MS), limits.search_max_seconds * 1e3)
    with field_scope("search", nested=True):     # the budget checks its values, once
        asked = (replace(TUOGUAN, ms=min(TUOGUAN.ms, longest)) if not b.rollouts and not b.max_ms
                 else replace(TUOGUAN, rollouts=b.rollouts, ms=float(b.max_ms or longest)))
    limits.check_search(b.rollouts, b.max_ms, "search")
    return asked


def _fill_suggested(action: rounds_pb2.RoundAction, reading: readings_pb2.Reading,
                    s: Suggestion) -> None:
    action.seat, action.type = s.seat, ACTION_TYPES[s.kind]
    if s.kind == "play":
        action.cards.cards[:] = card_values(s.cards)
        if s.declaration is not None:   # named exactly: kind, top, star, wilds
            action.declaration.CopyFrom(declaration_to_proto(s.reading.declaration))
        reading.CopyFrom(reading_to_proto(s.reading))


def register_round_service(server: grpc.Server, servicer: RoundServicer) -> str:
    """Add ``servicer`` to ``server`` (the generated registration); returns the service's
    full name (for reflection, health)."""
    rounds_pb2_grpc.add_RoundServiceServicer_to_server(servicer, server)
    return ROUND_SERVICE_NAME
