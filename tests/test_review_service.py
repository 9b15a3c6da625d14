"""ReviewRound (protos/shuangkou/v1/service.proto) against a real server on loopback, over
gRPC and HTTP (Connect JSON, gRPC-Web): the review of the core, field for field; a replay
refused as ScoreRound and ScoreReplays refuse it; options beyond their limits named; the
call bounded by its deadline; counted in the metrics.

Budgets are small (a few rollouts a candidate) so that every call takes well under a second:
what a review is worth is tests/test_review.py's and bench/bench_review.py's matter."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from grpc_helpers import REPLAY, TIMEOUT, Running, metric_value, rich_error, running_server
from test_http import grpc_status, grpc_web, post, status_of_json  # noqa: I001
from test_service_api import structured

from shuangkou import core
from shuangkou.core.review import DEFAULT_REVIEW, VERDICTS, Review, review
from shuangkou.core.suggest import MAX_ALTERNATIVES, MAX_ROLLOUTS
from shuangkou.service.api.review import VERDICTS_ON_WIRE, review_to_proto
from shuangkou.service.errors import decode_status
from shuangkou.service.limits import Limits
from shuangkou.v1 import scoring_pb2, service_pb2, variants_pb2

ROLLOUTS = 24   # per decision: a whole round reviews in well under a second


@pytest.fixture(scope="module")
def srv() -> Iterator[Running]:
    with running_server(http=True) as running:
        yield running


def generated(variant: str = "baibian", seed: int = 3) -> dict[str, Any]:
    replay: dict[str, Any] = core.generate_replay(variant, seed)
    return replay


def local(replay: dict[str, Any] | str, *, rollouts: int = ROLLOUTS, seed: int = 0,
          width: int = 6, oracle: bool = False, fair: bool = False, decoys: int = 0,
          fair_deals: int = 0) -> Review:
    """What the core's review gives (0: the default fair-play budget)."""
    budget = replace(DEFAULT_REVIEW, rollouts=rollouts, width=width,
                     decoys=decoys or DEFAULT_REVIEW.decoys,
                     fair_deals=fair_deals or DEFAULT_REVIEW.fair_deals)
    return review(replay, budget=budget, seed=seed, oracle=oracle, fair=fair)


def same_review(got: service_pb2.ReviewRoundResponse, want: Review) -> None:
    """The reply is the core's review on the wire (its timing aside)."""
    got = type(got).FromString(got.SerializeToString())
    got.seconds = 0.0
    assert got == review_to_proto(replace(want, seconds=0.0))


def test_verdict_names_are_the_cores() -> None:
    assert set(VERDICTS_ON_WIRE) == set(VERDICTS)


def test_a_round_reviewed_over_grpc_is_the_cores_review(srv: Running) -> None:
    replay = generated()
    reply = srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(
        replay_json=json.dumps(replay), rollouts=ROLLOUTS, seed=5), timeout=TIMEOUT)
    want = local(replay, seed=5)
    same_review(reply, want)
    assert [d.index for d in reply.decisions] == list(range(len(replay["actions"])))
    assert len(reply.seats) == 4 and reply.budget.rollouts == ROLLOUTS and reply.seed == 5
    for d, a in zip(reply.decisions, replay["actions"], strict=True):
        assert d.seat == a["seat"] and d.verdict != service_pb2.VERDICT_UNSPECIFIED
        assert [c.taken for c in d.candidates].count(True) == 1
    # the same review again, and from the typed Replay message
    again = srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(
        replay_json=json.dumps(replay), rollouts=ROLLOUTS, seed=5), timeout=TIMEOUT)
    same_review(again, want)
    typed = srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(
        rule_set=variants_pb2.RuleSet(id="baibian"), replay=structured(REPLAY),
        rollouts=ROLLOUTS), timeout=TIMEOUT)
    same_review(typed, local(REPLAY))


def test_oracle(srv: Running) -> None:
    """oracle: each evaluated candidate's points on the true deal, and the decision's gain."""
    replay = generated("qianbian", 2)
    reply = srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(
        replay_json=json.dumps(replay), rollouts=ROLLOUTS, oracle=True), timeout=TIMEOUT)
    same_review(reply, local(replay, oracle=True))
    rated = [d for d in reply.decisions if not d.forced and d.deals]
    assert rated and reply.oracle
    assert all(d.HasField("oracle_gain") for d in rated)
    assert all(c.HasField("true_points") for d in rated for c in d.candidates)


def test_fair_play(srv: Running) -> None:
    """fair_play: each evaluated decision's evidence on both views (the true view's regret,
    the decoys', excess, disagree, follows) and 托管's choice, the core's review field for
    field; without it none, and 托管's choice all the same."""
    replay = generated("huopin", 4)
    request = service_pb2.ReviewRoundRequest(replay_json=json.dumps(replay), rollouts=ROLLOUTS,
                                             fair_play=True, decoys=2, fair_deals=4, seed=2)
    reply = srv.stub.ReviewRound(request, timeout=TIMEOUT)
    want = local(replay, fair=True, decoys=2, fair_deals=4, seed=2)
    same_review(reply, want)
    assert reply.fair_play and (reply.budget.decoys, reply.budget.fair_deals) == (2, 4)
    # each decision's cards left: the seat's before it acted, replayed here
    typed = core.replay.parse_replay(replay)
    r, left = typed.start(), {}
    for i, action in enumerate(typed.actions):
        left[i] = r.cards_left[action.seat]
        r.apply(action)
    assert [d.cards_left for d in reply.decisions] == [left[d.index] for d in reply.decisions]
    rated = [d for d in reply.decisions if not d.forced and d.deals]
    assert rated and all([e.view for e in d.fair] == [service_pb2.FAIR_VIEW_PARTNER,
                                                      service_pb2.FAIR_VIEW_ALL]
                         and all(len(e.decoy_regrets) == 2 for e in d.fair) for d in rated)
    assert not any(d.fair for d in reply.decisions if d.forced)
    for d, core_d in zip(reply.decisions, want.decisions, strict=True):
        assert d.tuoguan == core_d.tuoguan < len(d.candidates)
        for e, core_e in zip(d.fair, core_d.fair, strict=True):
            assert e.excess == pytest.approx(core_e.excess)
            assert e.excess == pytest.approx(sum(e.decoy_regrets) / 2 - e.regret)
            # every candidate's regrets, in the decision's candidate order
            assert [(c.regret, list(c.decoy_regrets)) for c in e.candidates] == [
                (c.regret, list(c.decoy_regrets)) for c in core_e.candidates]
            assert len(e.candidates) == len(d.candidates)
        # the tell: set exactly where the core's decision has one
        assert d.HasField("tell") == (core_d.tell is not None)
        if core_d.tell is not None:
            t = core_d.tell
            assert (service_pb2.FairTell.Kind.Name(d.tell.kind), d.tell.passed,
                    d.tell.value, list(d.tell.decoy_values)) == (
                f"KIND_{t.kind.upper()}", t.passed, t.value, list(t.decoy_values))
        assert d.HasField("opponents_tell") == (core_d.opponents_tell is not None)
        if core_d.opponents_tell is not None:
            assert (d.opponents_tell.kind, d.opponents_tell.value) == (
                service_pb2.FairTell.KIND_BEAT, core_d.opponents_tell.value)
        # a chance to block: set exactly where the core's decision has one
        assert d.HasField("over_partner") == (core_d.over_partner is not None)
        assert d.over_partner == bool(core_d.over_partner)
        # a chance to concede: likewise
        assert d.HasField("concedes") == (core_d.concedes is not None)
        assert d.concedes == bool(core_d.concedes)
        # the seat's cards before it acted: the thrown-round test's moment (E94)
        assert d.cards_left == core_d.cards_left > 0
    assert {d.over_partner for d in reply.decisions if d.HasField("over_partner")} == {
        True, False}
    assert {d.tell.kind for d in reply.decisions if d.HasField("tell")} == {
        service_pb2.FairTell.KIND_LEAD, service_pb2.FairTell.KIND_FOLLOW}
    # without the flag: no evidence, the default fair-play budget echoed
    plain = srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(
        replay_json=json.dumps(replay), rollouts=ROLLOUTS, seed=2), timeout=TIMEOUT)
    same_review(plain, local(replay, seed=2))
    assert not plain.fair_play and not any(d.fair for d in plain.decisions)
    assert not any(d.HasField("tell") or d.HasField("opponents_tell") or
                   d.HasField("over_partner") or d.HasField("concedes")
                   for d in plain.decisions)
    assert any(d.HasField("opponents_tell") for d in reply.decisions)
    assert [d.tuoguan for d in plain.decisions] == [d.tuoguan for d in reply.decisions]
    # and over HTTP, Connect JSON
    assert _by_connect_json(srv, request, reply) == reply


@pytest.mark.parametrize(("options", "field", "says"), [
    ({"decoys": 2}, "decoys", "decoys goes with fair_play"),
    ({"fair_deals": 4}, "fair_deals", "fair_deals goes with fair_play"),
    ({"decoys": 2, "fair_deals": 4}, "decoys", "decoys goes with fair_play"),
    ({"fair_play": True, "decoys": 99}, "decoys", "decoys must be an integer 1–"),
    ({"fair_play": True, "decoys": 2**32 - 1}, "decoys", "decoys must be an integer 1–"),
    ({"fair_play": True, "fair_deals": 1}, "fair_deals", "fair_deals must be an integer 2–"),
    ({"fair_play": True, "fair_deals": 10_001}, "fair_deals",
     "fair_deals must be an integer 2–10,000"),
])
def test_fair_play_options_out_of_bounds(srv: Running, options: dict[str, Any], field: str,
                                         says: str) -> None:
    """The fair-play budget without fair_play, or beyond its bounds: INVALID_ARGUMENT naming
    the field, over gRPC and HTTP, before any work."""
    request = service_pb2.ReviewRoundRequest(replay_json=json.dumps(REPLAY), **options)
    with pytest.raises(grpc.RpcError) as info:
        srv.stub.ReviewRound(request, timeout=TIMEOUT)
    err = rich_error(info.value)
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == [field]
    assert says in err.message
    status, _, body = post(srv, "ShuangkouService/ReviewRound",
                           json_format.MessageToJson(request).encode())
    assert status == 400 and decode_status(status_of_json(body)).field == field


def test_counted_in_the_metrics(srv: Running) -> None:
    before = metric_value(srv.scrape(), "grpc_server_handled_total", grpc_method="ReviewRound",
                          grpc_code="OK") or 0
    reply = srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(
        replay_json=json.dumps(REPLAY), rollouts=ROLLOUTS), timeout=TIMEOUT)
    text = srv.scrape()
    assert metric_value(text, "grpc_server_handled_total", grpc_method="ReviewRound",
                        grpc_code="OK") == before + 1
    good = sum(d.verdict == service_pb2.VERDICT_GOOD for d in reply.decisions)
    assert (metric_value(text, "shuangkou_decisions_reviewed_total", variant="baibian",
                         verdict="good") or 0) >= good


def _by_connect_json(srv: Running, request: service_pb2.ReviewRoundRequest,
                     want: service_pb2.ReviewRoundResponse) -> service_pb2.ReviewRoundResponse:
    """ReviewRound's reply to ``request`` over HTTP in Connect JSON, its wall time set to
    ``want``'s (the one field two runs do not share)."""
    status, _, body = post(srv, "ShuangkouService/ReviewRound",
                           json_format.MessageToJson(request).encode())
    assert status == 200, body
    got = json_format.ParseDict(json.loads(body), service_pb2.ReviewRoundResponse())
    got.seconds = want.seconds
    return got

def test_over_http_json_and_grpc_web(srv: Running) -> None:
    request = service_pb2.ReviewRoundRequest(replay_json=json.dumps(REPLAY), rollouts=ROLLOUTS)
    want = srv.stub.ReviewRound(request, timeout=TIMEOUT)
    assert _by_connect_json(srv, request, want) == want
    by_web = grpc_web(srv).review_round(request, timeout_ms=int(TIMEOUT * 1000))
    by_web.seconds = want.seconds
    assert by_web == want


def _bad_replays() -> list[dict[str, Any] | str]:
    wrong_seat = {**REPLAY, "actions": REPLAY["actions"][:5] + [{"seat": 2, "play": "5S"}]}
    unfinished = {**REPLAY, "actions": REPLAY["actions"][:3]}
    return [wrong_seat, unfinished, "{", "[]", {**REPLAY, "hands": ["3S"]},
            {**REPLAY, "variant": "nosuch"}]


@pytest.mark.parametrize("bad", _bad_replays())
def test_an_invalid_replay_fails_as_scoring_it_does(srv: Running, bad: dict[str, Any] | str
                                                    ) -> None:
    text = bad if isinstance(bad, str) else json.dumps(bad)
    with pytest.raises(grpc.RpcError) as scored:
        srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(replay_json=text), timeout=TIMEOUT)
    with pytest.raises(grpc.RpcError) as reviewed:
        srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(replay_json=text,
                                                            rollouts=ROLLOUTS),
                             timeout=TIMEOUT)
    assert reviewed.value.code() == scored.value.code()
    assert grpc_status(reviewed.value) == grpc_status(scored.value)   # message and details
    # ScoreReplays' in-band error is the same google.rpc.Status
    [streamed] = srv.stub.ScoreReplays(iter([service_pb2.ScoreReplaysRequest(
        replay_json=text)]), timeout=TIMEOUT)
    assert streamed.error == grpc_status(reviewed.value)
    # and over HTTP
    status, _, body = post(srv, "ShuangkouService/ReviewRound", json.dumps(
        {"replayJson": text, "rollouts": ROLLOUTS}).encode())
    assert status >= 400 and status_of_json(body) == streamed.error


def test_typed_replay_errors_name_the_field(srv: Running) -> None:
    msg = structured(REPLAY)
    msg.actions[1].type = scoring_pb2.ACTION_TYPE_UNSPECIFIED
    with pytest.raises(grpc.RpcError) as info:
        srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(replay=msg), timeout=TIMEOUT)
    assert rich_error(info.value).fields == ["replay.actions[1].type"]
    with pytest.raises(grpc.RpcError) as info:
        srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(), timeout=TIMEOUT)
    err = rich_error(info.value)
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == ["round"]


@pytest.mark.parametrize(("options", "field"), [
    ({"rollouts": MAX_ROLLOUTS + 1}, "rollouts"),
    ({"width": MAX_ALTERNATIVES + 1}, "width"),
])
def test_options_beyond_their_limits(srv: Running, options: dict[str, int], field: str) -> None:
    request = service_pb2.ReviewRoundRequest(replay_json=json.dumps(REPLAY), **options)
    with pytest.raises(grpc.RpcError) as info:
        srv.stub.ReviewRound(request, timeout=TIMEOUT)
    err = rich_error(info.value)
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == [field]
    assert f"{field} must be an integer 1–" in err.message
    status, _, body = post(srv, "ShuangkouService/ReviewRound",
                           json_format.MessageToJson(request).encode())
    assert status == 400 and decode_status(status_of_json(body)).field == field


def test_a_deadline_too_short_for_the_review(srv: Running) -> None:
    """A whole round at the largest budget the server accepts (review_max_rollouts over its
    decisions) cannot fit 0.3 s: the call ends DEADLINE_EXCEEDED about when its deadline
    passes, not when the review would have finished."""
    replay = generated()
    largest = Limits().review_max_rollouts // sum("escape" not in a
                                                   for a in replay["actions"])
    request = service_pb2.ReviewRoundRequest(replay_json=json.dumps(replay), rollouts=largest)
    t0 = time.perf_counter()
    with pytest.raises(grpc.RpcError) as info:
        srv.stub.ReviewRound(request, timeout=0.3)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert time.perf_counter() - t0 < 3.0
    # the server is free again at once
    assert srv.stub.ReviewRound(service_pb2.ReviewRoundRequest(
        replay_json=json.dumps(REPLAY), rollouts=ROLLOUTS), timeout=TIMEOUT).decisions


def test_a_burst_with_deadlines_reconciles_with_the_counters() -> None:
    """60 ReviewRounds of about 0.2 s of work each, with 1.5 s deadlines, against 2 threads
    and a queue of 12: the first are reviewed, the last admitted expire waiting or run out
    of time, the rest are refused for overload. What the clients saw and what the server
    counted agree (grpc_helpers.reconciled, as for SuggestAction's burst), and every review
    that finished counted each of its decisions once."""
    from grpc_helpers import burst, reconciled

    n, doc = 60, json.dumps(generated())
    decisions = len(local(doc, rollouts=50).decisions)
    request = service_pb2.ReviewRoundRequest(replay_json=doc, rollouts=50)
    with running_server(threads=2, max_queued_calls=12) as srv:
        got = burst(srv.port, "/shuangkou.v1.ShuangkouService/ReviewRound", request, n,
                    timeout=1.5)
        text = srv.settled("shuangkou_requests_rejected_total", grpc_method="ReviewRound")
        # the server is free again: a review within its deadline is answered
        assert len(srv.stub.ReviewRound(request, timeout=TIMEOUT).decisions) == decisions
    handled, expired = reconciled(got, text, "ReviewRound")
    reviewed = sum(metric_value(text, "shuangkou_decisions_reviewed_total", verdict=v)
                   for v in VERDICTS)
    assert got.codes["OK"] > 0 and got.codes["RESOURCE_EXHAUSTED"] > 0, got.codes
    assert reviewed == handled["OK"] * decisions, (got.codes, handled, expired)
