"""RoundService (protos/shuangkou/v1/rounds.proto) against a real server on a loopback port:
whole rounds through start / suggest / apply in every variant, each rule error's reason,
forged states, and statelessness (two servers answer one round in turns)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_helpers import TIMEOUT, Running, rich_error, running_server

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
    # the last bomb slot's last byte (the 32 bytes after it are the seed commitment)
    assert bad_argument(stub, state[:-33] + bytes([state[-33] ^ 1]) + state[-32:])


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
    """The servicer keeps Reading, standing-play and hand messages; with room for one of
    each, every reply of whole rounds is still the response built field by field."""
    from shuangkou.service.api import rounds

    monkeypatch.setattr(rounds, "MAX_MESSAGES", 1)
    for cache in ("_READINGS", "_STANDING", "_HANDS"):
        monkeypatch.setattr(rounds, cache, {})
    test_the_reply_is_the_message_built_field_by_field("fengkuang")
    assert max(map(len, (rounds._READINGS, rounds._STANDING, rounds._HANDS))) <= 1


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
