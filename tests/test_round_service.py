"""RoundService (protos/shuangkou/v1/rounds.proto) against a real server on a loopback port:
whole rounds through start / suggest / apply in every variant, each rule error's reason,
forged states, and statelessness (two servers answer one round in turns)."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_helpers import (
    TIMEOUT,
    Running,
    ServerProcess,
    rich_error,
    running_server,
    serve_refused,
)

from shuangkou import core
from shuangkou.core.generate import deal
from shuangkou.v1 import (
    cards_pb2,
    readings_pb2,
    rounds_pb2,
    rounds_pb2_grpc,
    scoring_pb2,
    variants_pb2,
)

VARIANTS = [v.id for v in core.list_variants()]
PLAY, PASS, ESCAPE = (scoring_pb2.ACTION_TYPE_PLAY, scoring_pb2.ACTION_TYPE_PASS,
                      scoring_pb2.ACTION_TYPE_ESCAPE)


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running_server() as running:
        yield running


@pytest.fixture(scope="module")
def stub(server: Running) -> rounds_pb2_grpc.RoundServiceStub:
    return rounds_pb2_grpc.RoundServiceStub(server.channel)


def rule_set(variant: str) -> variants_pb2.RuleSet:
    return variants_pb2.RuleSet(id=variant)


def full_deal(variant: str, seed: int) -> rounds_pb2.StartRoundRequest:
    """A shuffled complete deal; the leader reveals its first card."""
    hands = deal(variant, random.Random(seed))
    leader = seed % 4
    request = rounds_pb2.StartRoundRequest(
        rule_set=rule_set(variant), leader=leader, revealed=hands[leader][0], stake=2,
        hands=[cards_pb2.Cards(cards=h) for h in hands])
    if core.get_variant(variant).decks == 3:      # three decks: teams stated (§9)
        request.ClearField("revealed")
        request.teams.add(seats=[leader, (leader + 2) % 4])
        request.teams.add(seats=[(leader + 1) % 4, (leader + 3) % 4])
    return request


def small_deal(variant: str = "baibian", **extra: Any) -> rounds_pb2.StartRoundRequest:
    """A partial deal: seat 0 leads 3S; 7777 is seat 0's bomb."""
    hands = ["3S 7777 9", "4S 5", "5S 8", "6S 6"]
    return rounds_pb2.StartRoundRequest(
        rule_set=rule_set(variant), leader=0, partial_deal=True,
        hands=[cards_pb2.Cards(cards_text=h) for h in hands], **extra)


def act(seat: int, kind: int = PASS, text: str = "") -> rounds_pb2.RoundAction:
    action = rounds_pb2.RoundAction(seat=seat, type=kind)
    if text:
        action.cards.cards_text = text
    return action


def apply(stub: Any, variant: str, state: bytes, action: rounds_pb2.RoundAction
          ) -> rounds_pb2.ApplyActionResponse:
    return stub.ApplyAction(rounds_pb2.ApplyActionRequest(
        rule_set=rule_set(variant), state=state, action=action), timeout=TIMEOUT)


def play_out(stubs: list[Any], request: rounds_pb2.StartRoundRequest
             ) -> tuple[rounds_pb2.ApplyActionResponse, int]:
    """Start the round and play it to the end with suggestions, alternating servers."""
    variant = request.rule_set.id
    state = stubs[0].StartRound(request, timeout=TIMEOUT).state
    size = len(state.data)
    for n in range(1000):
        stub = stubs[n % len(stubs)]
        hint = stub.SuggestAction(rounds_pb2.SuggestActionRequest(
            rule_set=rule_set(variant), state=state.data), timeout=TIMEOUT)
        assert hint.action.seat == state.view.turn and hint.reason
        done = apply(stub, variant, state.data, hint.action)
        assert done.record.seat == hint.action.seat
        if hint.action.type == PLAY:
            assert list(done.record.cards) == list(hint.action.cards.cards)
            assert done.record.reading.text == hint.reading.text
        state = done.state
        assert state.view.actions_applied == n + 1
        assert len(state.data) == size        # no history: the state never grows
        if state.view.over:
            return done, n + 1
    raise AssertionError("the round did not end")


@pytest.mark.parametrize("variant", VARIANTS)
def test_whole_round_through_start_suggest_apply(stub: Any, variant: str) -> None:
    done, actions = play_out([stub], full_deal(variant, 7))
    view, result = done.state.view, done.result
    assert done.record.round_over and not view.HasField("turn")
    assert done.HasField("result") and result.variant == variant
    assert list(result.finish_order) == list(view.finish_order)
    assert result.stake == 2 and sum(s.final for s in result.seats) == result.total
    assert sorted(view.hand_at) == [0, 1, 2, 3] and actions >= 4
    first = view.finish_order[0]
    assert view.hand_sizes[first] == 0 and len(view.hands[first].cards) == 0


def test_any_replica_answers_any_call() -> None:
    """Nothing is kept between calls: two servers play one round in turns."""
    with running_server() as a, running_server() as b:
        stubs = [rounds_pb2_grpc.RoundServiceStub(r.channel) for r in (a, b)]
        done, _ = play_out(stubs, full_deal("bianfeng", 3))
        alone, _ = play_out(stubs[:1], full_deal("bianfeng", 3))
    assert done.result == alone.result


def test_start_view(stub: Any) -> None:
    state = stub.StartRound(small_deal(), timeout=TIMEOUT).state
    view = state.view
    assert view.turn == 0 and not view.HasField("standing") and not view.over
    assert list(view.hand_sizes) == [6, 2, 2, 2] and list(view.hand_at) == [0, 1, 2, 3]
    assert 0 < len(state.data) < 1024


def test_record_of_a_trick(stub: Any) -> None:
    state = stub.StartRound(small_deal(), timeout=TIMEOUT).state.data
    done = apply(stub, "baibian", state, act(0, PLAY, "7777"))
    assert done.record.reading.is_bomb and done.record.next_turn == 1
    assert done.state.view.standing.seat == 0 and done.state.view.standing.reading.star == 4
    for seat in (1, 2):
        done = apply(stub, "baibian", done.state.data, act(seat))
        assert not done.record.HasField("trick_won_by")
    done = apply(stub, "baibian", done.state.data, act(3))
    assert done.record.trick_won_by == 0 and done.record.next_turn == 0
    assert not done.state.view.HasField("standing")


def rule_error(stub: Any, state: bytes, action: rounds_pb2.RoundAction,
               variant: str = "baibian") -> str:
    with pytest.raises(grpc.RpcError) as caught:
        apply(stub, variant, state, action)
    err = rich_error(caught.value)
    assert err.code == grpc.StatusCode.FAILED_PRECONDITION, err
    assert err.message
    return err.reason


def test_rule_errors_carry_their_reason(stub: Any) -> None:
    start = stub.StartRound(small_deal(), timeout=TIMEOUT).state.data
    assert rule_error(stub, start, act(1, PLAY, "4S")) == "NOT_YOUR_TURN"
    assert rule_error(stub, start, act(0, PLAY, "8")) == "CARDS_NOT_HELD"
    assert rule_error(stub, start, act(0)) == "LEADER_MUST_PLAY"
    led = apply(stub, "baibian", start, act(0, PLAY, "9")).state.data
    assert rule_error(stub, led, act(1, PLAY, "5")) == "DOES_NOT_BEAT"
    declared = act(0, PLAY, "3S")
    declared.declaration.kind = 2       # KIND_PAIR: 3S has no pair reading
    assert rule_error(stub, start, declared) == "NO_SUCH_READING"
    assert rule_error(stub, start, act(0, ESCAPE)) == "ESCAPE_NOT_ALLOWED"


def test_round_over_and_finished_seat(stub: Any) -> None:
    """huopin ends at the first finisher; then every action is ROUND_OVER."""
    request = rounds_pb2.StartRoundRequest(
        rule_set=rule_set("huopin"), leader=0, partial_deal=True,
        hands=[cards_pb2.Cards(cards_text=h) for h in ("7", "3 4", "5 6", "8 9")])
    state = stub.StartRound(request, timeout=TIMEOUT).state.data
    done = apply(stub, "huopin", state, act(0, PLAY, "7"))
    assert done.record.round_over and done.record.finished == 0
    assert done.result.winning_team == 0
    assert rule_error(stub, done.state.data, act(1), "huopin") == "ROUND_OVER"
    with pytest.raises(grpc.RpcError) as caught:
        stub.SuggestAction(rounds_pb2.SuggestActionRequest(
            rule_set=rule_set("huopin"), state=done.state.data), timeout=TIMEOUT)
    assert rich_error(caught.value).reason == "ROUND_OVER"


def test_seat_finished_cannot_escape(stub: Any) -> None:
    request = rounds_pb2.StartRoundRequest(
        rule_set=rule_set("bianfeng"), leader=0, partial_deal=True,
        hands=[cards_pb2.Cards(cards_text=h) for h in ("7", "3 4", "5 6", "8 9")])
    state = stub.StartRound(request, timeout=TIMEOUT).state.data
    done = apply(stub, "bianfeng", state, act(0, PLAY, "7"))
    assert done.record.finished == 0 and not done.record.round_over
    assert rule_error(stub, done.state.data, act(0, ESCAPE), "bianfeng") == "SEAT_FINISHED"
    escaped = apply(stub, "bianfeng", done.state.data, act(2, ESCAPE))
    assert escaped.record.round_over and escaped.result.escaper == 2


def bad_argument(stub: Any, state: bytes, variant: str = "baibian") -> Any:
    with pytest.raises(grpc.RpcError) as caught:
        apply(stub, variant, state, act(0, PLAY, "3S"))
    err = rich_error(caught.value)
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT, err
    return err


def test_forged_states_are_invalid_argument(stub: Any) -> None:
    state = stub.StartRound(small_deal(), timeout=TIMEOUT).state.data
    assert bad_argument(stub, b"").fields == ["state"]
    assert bad_argument(stub, b"\x00garbage")
    assert bad_argument(stub, state[: len(state) // 2])
    assert bad_argument(stub, bytes(b ^ 0x5A for b in state))
    assert bad_argument(stub, b"x" * 5000).fields == ["state"]
    # the last bomb slot's last byte (the 48 bytes after it are the seed commitment and
    # the round id)
    assert bad_argument(stub, state[:-49] + bytes([state[-49] ^ 1]) + state[-48:])


def test_a_state_read_under_another_variant_is_checked(stub: Any) -> None:
    """fengkuang_crazy has no 3s: the baibian state's cards are not its deck."""
    state = stub.StartRound(small_deal(), timeout=TIMEOUT).state.data
    bad_argument(stub, state, "fengkuang_crazy")


def test_unknown_variant_and_bad_deal(stub: Any) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stub.StartRound(small_deal("nope"), timeout=TIMEOUT)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    with pytest.raises(grpc.RpcError) as caught:
        stub.StartRound(rounds_pb2.StartRoundRequest(
            rule_set=rule_set("baibian"), leader=0,
            hands=[cards_pb2.Cards(cards_text="3 4")] * 4), timeout=TIMEOUT)
    assert rich_error(caught.value).fields == ["hands"]   # not a complete deal
    with pytest.raises(grpc.RpcError) as caught:
        stub.StartRound(small_deal(revealed=cards_pb2.CARD_9S), timeout=TIMEOUT)
    assert rich_error(caught.value).fields == ["revealed"]   # the leader does not hold it
    with pytest.raises(grpc.RpcError) as caught:
        stub.StartRound(small_deal(stake=0), timeout=TIMEOUT)
    assert rich_error(caught.value).fields == ["stake"]
    with pytest.raises(grpc.RpcError) as caught:
        stub.StartRound(rounds_pb2.StartRoundRequest(
            rule_set=rule_set("baibian"), leader=7, partial_deal=True,
            hands=[cards_pb2.Cards(cards_text="3")] * 4), timeout=TIMEOUT)
    assert rich_error(caught.value).fields == ["leader"]


def test_suggest_with_a_seed_is_legal_and_reproducible(stub: Any) -> None:
    state = stub.StartRound(full_deal("qianbian", 11), timeout=TIMEOUT).state.data
    request = rounds_pb2.SuggestActionRequest(rule_set=rule_set("qianbian"), state=state,
                                              seed=5)
    first = stub.SuggestAction(request, timeout=TIMEOUT)
    assert stub.SuggestAction(request, timeout=TIMEOUT) == first
    assert apply(stub, "qianbian", state, first.action).record.seat == first.action.seat


def test_suggest_ranks_hints_for_a_hint_button(stub: Any) -> None:
    """count: the 提示 cycle, the policy's action first (it is `action` too), every entry
    a legal action of the seat with its reason; pass last when following."""
    state = stub.StartRound(small_deal(), timeout=TIMEOUT).state.data
    state = apply(stub, "baibian", state, act(0, PLAY, "3S")).state.data
    hint = stub.SuggestAction(rounds_pb2.SuggestActionRequest(
        rule_set=rule_set("baibian"), state=state, count=8), timeout=TIMEOUT)
    assert hint.actions[0].action == hint.action and hint.actions[0].reason == hint.reason
    assert [a.action.type for a in hint.actions][-1] == PASS and len(hint.actions) >= 3
    assert not hint.HasField("search") and not hint.actions[0].HasField("gain")
    for a in hint.actions:
        assert a.action.seat == 1 and a.reason
        assert apply(stub, "baibian", state, a.action).record.seat == 1
    one = stub.SuggestAction(rounds_pb2.SuggestActionRequest(
        rule_set=rule_set("baibian"), state=state), timeout=TIMEOUT)
    assert one.action == hint.action and len(one.actions) == 1


def test_suggest_by_search_reports_its_budget_and_is_deterministic(stub: Any) -> None:
    """search: a rollout budget alone gives the same ranking on every call; the report says
    what was spent; an empty budget is the 托管 default (1,200 rollouts at most)."""
    state = stub.StartRound(full_deal("huopin", 4), timeout=TIMEOUT).state.data
    request = rounds_pb2.SuggestActionRequest(
        rule_set=rule_set("huopin"), state=state, seed=3, count=4,
        search=rounds_pb2.SearchBudget(rollouts=60))
    first = stub.SuggestAction(request, timeout=TIMEOUT)
    again = stub.SuggestAction(request, timeout=TIMEOUT)
    assert [a.action for a in again.actions] == [a.action for a in first.actions]
    report = first.search
    assert 0 < report.rollouts <= 60 and report.candidates > 1
    assert report.deals == report.rollouts // report.candidates and report.elapsed_ms > 0
    assert first.actions[0].HasField("gain") and first.actions[0].deals == report.deals
    assert all(a.HasField("wins") and -1 <= a.wins <= 1 for a in first.actions)
    assert "search" in first.reason
    default = stub.SuggestAction(rounds_pb2.SuggestActionRequest(
        rule_set=rule_set("huopin"), state=state, search=rounds_pb2.SearchBudget()),
        timeout=TIMEOUT)
    assert 0 < default.search.rollouts <= 1200
    assert apply(stub, "huopin", state, default.action).record.seat == default.action.seat


@pytest.mark.parametrize(("extra", "field"), [
    ({"count": 33}, "count"),
    ({"search": rounds_pb2.SearchBudget(max_ms=10_001)}, "search.max_ms"),
    ({"search": rounds_pb2.SearchBudget(rollouts=2_000_000)}, "search.rollouts"),
])
def test_suggest_refuses_budgets_past_the_limits(stub: Any, extra: dict[str, Any],
                                                 field: str) -> None:
    state = stub.StartRound(small_deal(), timeout=TIMEOUT).state.data
    with pytest.raises(grpc.RpcError) as caught:
        stub.SuggestAction(rounds_pb2.SuggestActionRequest(
            rule_set=rule_set("baibian"), state=state, **extra), timeout=TIMEOUT)
    error = rich_error(caught.value)
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT and error.fields == [field]


HEAVY = ('{"id": "edge", "extends": "qianbian", "decks": 4, "joker_copies": 4, '
         '"hand_size": 40, "chain_min_links": 2}')


def test_suggest_on_a_heavy_hand_stops_at_the_deadline(stub: Any) -> None:
    """Issue 19: a 40-card hand with eight wilds facing 22222 under a four-deck house
    variant (112,343 beating plays): past the call's deadline the server stops and answers
    DEADLINE_EXCEEDED, in every mode (bench_suggest.py --server measures its CPU after the
    deadline and the memory of such calls side by side)."""
    house = variants_pb2.RuleSet(custom_json=HEAVY)
    mine = "3333 4444 5555 6666 7777 8888 9999 TTT K SJ SJ SJ SJ BJ BJ BJ BJ"
    request = rounds_pb2.StartRoundRequest(
        rule_set=house, leader=0, partial_deal=True, partner=2,
        hands=[cards_pb2.Cards(cards_text=h) for h in ("2 2 2 2 2 3", mine, "4", "5")])
    state = stub.StartRound(request, timeout=TIMEOUT).state.data
    state = stub.ApplyAction(rounds_pb2.ApplyActionRequest(
        rule_set=house, state=state, action=act(0, PLAY, "2 2 2 2 2")), timeout=TIMEOUT).state.data
    for extra in ({}, {"count": 8}, {"search": rounds_pb2.SearchBudget()}):
        with pytest.raises(grpc.RpcError) as caught:
            stub.SuggestAction(rounds_pb2.SuggestActionRequest(
                rule_set=house, state=state, **extra), timeout=0.02)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    done = stub.SuggestAction(rounds_pb2.SuggestActionRequest(rule_set=house, state=state),
                              timeout=TIMEOUT)
    assert done.action.seat == 1


def test_wind_passes_to_the_partner(stub: Any) -> None:
    """接风 (§9): seat 0 goes out, everyone passes, the partner (seat 2) leads."""
    request = rounds_pb2.StartRoundRequest(
        rule_set=rule_set("baibian"), leader=0, partial_deal=True,
        hands=[cards_pb2.Cards(cards_text=h) for h in ("7", "3 4", "5 6", "8 9")])
    state = stub.StartRound(request, timeout=TIMEOUT).state.data
    done = apply(stub, "baibian", state, act(0, PLAY, "7"))
    assert done.record.finished == 0 and list(done.state.view.finish_order) == [0]
    for seat in (1, 2, 3):
        done = apply(stub, "baibian", done.state.data, act(seat))
    assert done.record.trick_won_by == 0 and done.record.wind_to == 2
    assert done.record.next_turn == 2 and done.state.view.turn == 2
    assert not done.HasField("result")


def test_a_house_variant_travels_as_custom_json(stub: Any) -> None:
    """Two-link chain bombs (a house rule): 4444 5555 is one bomb of 6 stars."""
    house = variants_pb2.RuleSet(
        custom_json='{"id": "house", "extends": "baibian", "chain_min_links": 2}')
    request = small_deal()
    request.rule_set.CopyFrom(house)
    request.hands[0].cards_text = "4444 5555 3S"
    state = stub.StartRound(request, timeout=TIMEOUT).state.data
    done = stub.ApplyAction(rounds_pb2.ApplyActionRequest(
        rule_set=house, state=state, action=act(0, PLAY, "4444 5555")), timeout=TIMEOUT)
    assert done.record.reading.kind == readings_pb2.KIND_CHAIN_BOMB
    assert done.record.reading.star == 6
    hint = stub.SuggestAction(rounds_pb2.SuggestActionRequest(
        rule_set=house, state=done.state.data), timeout=TIMEOUT)
    assert hint.action.seat == 1 and hint.action.type == PASS


# ----------------------------------------------------------------------------- the wire

def _reference_response(r: core.Round, rec: Any) -> rounds_pb2.ApplyActionResponse:
    """An ApplyActionResponse built field by field from the core's answers (the slow,
    obvious twin of the servicer's reply)."""
    from shuangkou.service.api.convert import reading_to_proto

    out = rounds_pb2.ApplyActionResponse()
    out.state.data = r.to_bytes()
    view = out.state.view
    if r.turn is not None:
        view.turn = r.turn
    view.hand_sizes[:] = r.cards_left
    for s in range(4):
        view.hands.add().cards[:] = sorted(r.hand(s))
    if r.standing is not None:
        view.standing.seat = r.standing.seat
        view.standing.cards[:] = r.standing.cards
        view.standing.reading.CopyFrom(reading_to_proto(r.standing.reading))
    view.passes, view.over, view.actions_applied = r.passes, r.is_over, r.actions_applied
    view.finish_order[:] = r.finish_order
    view.hand_at[:] = r.hand_at
    view.round_id = r.round_id
    record = out.record
    record.seat, record.round_over = rec.seat, rec.round_over
    record.type = {"play": PLAY, "pass": PASS, "escape": ESCAPE}[rec.kind]
    record.cards[:] = rec.cards
    if rec.reading is not None:
        record.reading.CopyFrom(reading_to_proto(rec.reading))
    for name in ("trick_won_by", "finished", "wind_to", "next_turn"):
        if getattr(rec, name) is not None:
            setattr(record, name, getattr(rec, name))
    return out


def _declare(msg: readings_pb2.Declaration, d: core.Declaration) -> None:
    from shuangkou.core.cards import rank_position
    from shuangkou.service.api.convert import KIND_BY_NAME

    def rank(r: int | str) -> int:
        return r if isinstance(r, int) else rank_position(r)    # "9" or a position

    msg.kind = KIND_BY_NAME[d.kind]
    if d.top is not None:
        msg.top = rank(d.top)
    if d.star is not None:
        msg.star = d.star
    if d.wilds is not None:
        msg.wilds.ranks[:] = [rank(w) for w in d.wilds]


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_reply_is_the_message_built_field_by_field(variant: str) -> None:
    """ApplyAction's state, view and record (built by the servicer from the public Round
    API, with its kept Reading, standing-play and hand messages) equal the response built
    field by field here, on every action of whole rounds (plays, passes, 接风, finishes,
    escapes, the round's end)."""
    import sys
    from pathlib import Path

    from shuangkou.core.generate import generate_replay
    from shuangkou.core.replay import parse_replay
    from shuangkou.service.api.rounds import RoundServicer
    from shuangkou.service.limits import Limits

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))
    from messages import Context
    from prometheus_client import CollectorRegistry

    from shuangkou.service.metrics import Metrics

    servicer = RoundServicer(Limits(max_cards=64, max_batch=64, enumeration_cap=10_000,
                                    max_message_bytes=4 << 20), Metrics(CollectorRegistry()))
    checked, escapes = 0, core.get_variant(variant).escape != "none"
    for seed in range(4):
        rep = parse_replay(generate_replay(variant, seed, 0.5 if escapes else 0))
        r = rep.start()
        for a in rep.actions:
            request = rounds_pb2.ApplyActionRequest(rule_set=rule_set(variant),
                                                    state=r.to_bytes())
            request.action.seat = a.seat
            request.action.type = {"play": PLAY, "pass": PASS, "escape": ESCAPE}[a.kind]
            if a.kind == "play":
                request.action.cards.cards[:] = a.cards
                if a.declare is not None:
                    _declare(request.action.declaration, a.declare)
            got = servicer.ApplyAction(request, Context())
            rec = (r.play(a.seat, a.cards, a.declare) if a.kind == "play" else
                   r.pass_turn(a.seat) if a.kind == "pass" else r.escape(a.seat))
            want = _reference_response(r, rec)
            got.ClearField("result")
            assert got == want, (variant, seed, r.actions_applied)
            checked += 1
    assert checked > 100


def test_kept_messages_are_dropped_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    """The servicer keeps the encoded Reading of each distinct standing play (the one cache
    of readings' bytes, service/api/convert.py); with room for one, every reply of whole
    rounds is still the response built field by field."""
    from shuangkou.service.api import convert

    monkeypatch.setattr(convert, "READING_CACHE_SIZE", 1)
    monkeypatch.setattr(convert, "ENCODED_READINGS", {})
    monkeypatch.setattr(convert, "_reading_messages", {})
    test_the_reply_is_the_message_built_field_by_field("fengkuang")
    assert len(convert.ENCODED_READINGS) <= 1


def test_every_rpc_of_the_round_service_is_registered() -> None:
    """register_round_service (the generated registration) serves exactly the proto's RPCs,
    with the proto's message types."""
    from prometheus_client import CollectorRegistry

    from shuangkou.service.api.rounds import (
        ROUND_SERVICE_NAME,
        RoundServicer,
        register_round_service,
    )
    from shuangkou.service.limits import Limits
    from shuangkou.service.metrics import Metrics

    class Registry:
        def __init__(self) -> None:
            self.handlers: dict[str, Any] = {}

        def add_generic_rpc_handlers(self, generic: Any) -> None:
            pass

        def add_registered_method_handlers(self, service: str, handlers: Any) -> None:
            assert service == ROUND_SERVICE_NAME
            self.handlers.update(handlers)

    registry = Registry()
    register_round_service(registry,  # type: ignore[arg-type]
                           RoundServicer(Limits(), Metrics(CollectorRegistry())))
    methods = rounds_pb2.DESCRIPTOR.services_by_name["RoundService"].methods
    assert set(registry.handlers) == {m.name for m in methods}
    for m in methods:
        h = registry.handlers[m.name]
        assert not (h.request_streaming or h.response_streaming or m.client_streaming
                    or m.server_streaming)
        request_type = getattr(rounds_pb2, m.input_type.name)
        assert h.request_deserializer == request_type.FromString, m.name
        reply_type = getattr(rounds_pb2, m.output_type.name)
        assert h.response_serializer in (None, reply_type.SerializeToString), m.name


# ----------------------------------------------------------------------------- rules, seals (issue 19)

def _house_file(tmp: Path, table: list[list[int]]) -> Path:
    path = tmp / f"h{table[0][1]}.json"
    path.write_text(json.dumps({"id": "h", "extends": "bianfeng", "multiplier": table}))
    return path


def _keys(tmp: Path, name: str, **keys: bytes) -> Path:
    """A key directory as a Kubernetes Secret mounts it: one file per key, ``..data`` links."""
    root = tmp / name
    data = root / "..2026_12_01_00_00_00.000000001"
    data.mkdir(parents=True)
    for kid, key in keys.items():
        (data / kid).write_bytes(key + b"\n")
        (root / kid).symlink_to(Path("..data") / kid)
    (root / "..data").symlink_to(data.name)
    return root


@contextlib.contextmanager
def _serving(*args: str, env: dict[str, str] | None = None) -> Iterator[Any]:
    server = ServerProcess("--port", "0", "--metrics-port", "0", *args, env=env)
    try:
        server.wait_serving()
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield rounds_pb2_grpc.RoundServiceStub(channel)
    finally:
        assert server.stop() == 0


def _refused(stub: Any, variant: str, state: bytes, sentence: str) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        apply(stub, variant, state, act(0, PLAY, "3S"))
    err = rich_error(caught.value)
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == ["state"], err
    assert sentence in err.message, err.message


def test_a_state_of_house_variant_h_is_refused_under_another_h(tmp_path: Path) -> None:
    """Two servers each load a house variant ``h``, with different multiplier tables: a
    round started on one cannot continue on the other (the state names the rules, not the
    id), while a server with the same ``h`` continues it."""
    one, other = _house_file(tmp_path, [[5, 2], [6, 4]]), _house_file(tmp_path, [[5, 3]])
    with _serving("--variants", str(one)) as first:
        state = first.StartRound(small_deal("h"), timeout=TIMEOUT).state.data
    with _serving("--variants", str(other)) as second:
        _refused(second, "h", state, "it is a round of other rules than h's")
    with _serving("--variants", str(one)) as same:
        assert apply(same, "h", state, act(0, PLAY, "3S")).record.seat == 0


def test_signed_states_refuse_any_alteration(tmp_path: Path) -> None:
    """With state keys (a Secret-like directory, given by environment) every state is
    sealed; flipping the stake or table-fee bytes, which an unsigned server accepts as a
    plausible round, is refused; an unsealed state is refused too."""
    keys = _keys(tmp_path, "keys", k1=b"k" * 44)
    request = small_deal(stake=2, table_fee=5)
    stake_at = 4 + 16 + 21          # MAGIC, rules fingerprint, the head's signed bytes
    with _serving() as unsigned:
        plain = unsigned.StartRound(request, timeout=TIMEOUT).state.data
        flipped = bytearray(plain)
        flipped[stake_at] ^= 0x40          # stake 2 -> 66: still a state the rules reach
        done = apply(unsigned, "baibian", bytes(flipped), act(0, PLAY, "3S"))
        assert done.state.view.actions_applied == 1
    with _serving(env={"SHUANGKOU_STATE_KEYS": str(keys)}) as signed:
        sealed = signed.StartRound(request, timeout=TIMEOUT).state.data
        # the same state but for its round id (16 random bytes drawn at each deal), sealed
        assert len(sealed) == len(plain) + 35 and sealed[:len(plain) - 16] == plain[:-16]
        assert apply(signed, "baibian", sealed, act(0, PLAY, "3S")).record.seat == 0
        for at in (stake_at, stake_at + 8, len(plain) // 2, len(sealed) - 1):
            altered = bytearray(sealed)
            altered[at] ^= 0x40
            _refused(signed, "baibian", bytes(altered), "its signature does not match")
        _refused(signed, "baibian", plain, "it is not signed")
    with _serving() as unsigned:
        _refused(unsigned, "baibian", sealed, "this server holds no state keys")


def test_state_keys_rotate_and_a_wrong_key_id_is_refused(tmp_path: Path) -> None:
    """Rotation over three deployments: k1 alone; k1 and k2, signing with k2; k2 alone.
    Rounds in flight survive each step; a state under a key id the server does not hold,
    or under another key of the same id, is refused."""
    k1, k2 = b"1" * 32, b"2" * 48
    only_k1, both, only_k2 = (_keys(tmp_path, "a", k1=k1), _keys(tmp_path, "b", k1=k1, k2=k2),
                              _keys(tmp_path, "c", k2=k2))
    impostor = _keys(tmp_path, "d", k1=b"x" * 32)
    with _serving("--state-keys", str(only_k1)) as old:
        by_k1 = old.StartRound(small_deal(), timeout=TIMEOUT).state.data
    assert by_k1.endswith(b"k1\x02" + by_k1[-32:])
    with _serving("--state-keys", str(both), "--state-key-id", "k2") as middle:
        moved = apply(middle, "baibian", by_k1, act(0, PLAY, "3S")).state.data
        assert moved[-35:-32] == b"k2\x02"
    with _serving("--state-keys", str(only_k2)) as new:
        assert apply(new, "baibian", moved, act(1, PASS)).record.seat == 1
        _refused(new, "baibian", by_k1, "signed with key id 'k1', which this server does not "
                                        "hold")
    with _serving("--state-keys", str(impostor)) as wrong:
        _refused(wrong, "baibian", by_k1, "its signature does not match")


@pytest.mark.parametrize(("args", "words"), [
    (("--state-keys", "/nonexistent/keys"), "setting 'state_keys': cannot read"),
    (("--state-key-id", "k1"), "'state_key_id' needs 'state_keys'"),
    (("--state-keys", "{both}"), "setting 'state_key_id' must name the key"),
    (("--state-keys", "{both}", "--state-key-id", "k9"), "k9"),
    (("--state-keys", "{short}"), "at least 32 bytes"),
])
def test_bad_state_keys_stop_the_server(tmp_path: Path, args: tuple[str, ...],
                                        words: str) -> None:
    paths = {"both": _keys(tmp_path, "both", k1=b"1" * 32, k2=b"2" * 32),
             "short": _keys(tmp_path, "short", k1=b"too short")}
    args = tuple(a.format(**{k: str(v) for k, v in paths.items()}) for a in args)
    status, log = serve_refused(*args)
    assert status == 2 and words in log and "Traceback" not in log, log
    assert len(log.strip().splitlines()) == 1, log


def test_a_pass_or_an_escape_with_a_declaration_or_cards_is_refused(stub: Any) -> None:
    state = stub.StartRound(small_deal("bianfeng"), timeout=TIMEOUT).state.data
    state = apply(stub, "bianfeng", state, act(0, PLAY, "3S")).state.data
    for kind in (PASS, ESCAPE):
        with_declaration = act(1, kind)
        with_declaration.declaration.kind = readings_pb2.KIND_SINGLE
        for action, field in ((with_declaration, "action.declaration"),
                              (act(1, kind, "4S"), "action.cards")):
            with pytest.raises(grpc.RpcError) as caught:
                apply(stub, "bianfeng", state, action)
            err = rich_error(caught.value)
            assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == [field], err
            assert "takes no" in err.message
    assert apply(stub, "bianfeng", state, act(1, PASS)).record.seat == 1


@pytest.mark.parametrize("hands", [["7777 7777 7", "3S", "4S", "5S"],      # one hand
                                   ["7777", "7777", "7", "5S"],            # the deal
                                   ["7S 7S 7S", "3S", "4S", "5S"]])        # one face
def test_more_copies_than_the_deck_are_invalid_cards(stub: Any, hands: list[str]) -> None:
    """Nine copies of a rank (of two decks' eight) are bad cards, as docs/api.md lists them
    (INVALID_CARDS), not a malformed request (they were BAD_REQUEST, issue 19)."""
    request = rounds_pb2.StartRoundRequest(rule_set=rule_set("baibian"), partial_deal=True,
                                           hands=[cards_pb2.Cards(cards_text=h) for h in hands])
    with pytest.raises(grpc.RpcError) as caught:
        stub.StartRound(request, timeout=TIMEOUT)
    err = rich_error(caught.value)
    assert (err.code, err.reason, err.fields) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                  "INVALID_CARDS", ["hands"]), err


def test_a_seeded_deal_carries_its_commitment_in_every_reply(stub: Any) -> None:
    """StartRound from a seed: the view's seed_sha256 is the seed's commitment, in the reply
    of StartRound and of every ApplyAction (the compiled reply writer) and in the state's
    bytes; a deal of given hands has none."""
    from shuangkou.core.shuffle import commitment

    seed = bytes(range(32))
    state = stub.StartRound(rounds_pb2.StartRoundRequest(rule_set=rule_set("baibian"),
                                                         seed=seed), timeout=TIMEOUT).state
    assert state.view.seed_sha256 == commitment(seed)
    for _ in range(3):
        hint = stub.SuggestAction(rounds_pb2.SuggestActionRequest(
            rule_set=rule_set("baibian"), state=state.data), timeout=TIMEOUT)
        state = apply(stub, "baibian", state.data, hint.action).state
        assert state.view.seed_sha256 == commitment(seed)
        assert core.Round.from_bytes(state.data, "baibian").seed_sha256 == commitment(seed)
    given = stub.StartRound(small_deal(), timeout=TIMEOUT).state
    assert given.view.seed_sha256 == b"" and not given.view.HasField("standing")
