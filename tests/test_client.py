"""shuangkou.client against a real server on a loopback port, blocking and asyncio: answers
equal to the core's, errors as exceptions carrying the google.rpc reason and field, a default
deadline on every call, and the channel's retries (UNAVAILABLE retried on the unary RPCs, a
refusal and the ScoreReplays stream never) against a servicer that fails on purpose."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import FileDescriptor, ServiceDescriptor
from grpc_helpers import REPLAY, free_port, running_server

from shuangkou import core
from shuangkou.client import (
    DEADLINES,
    RETRIED,
    AsyncRoundClient,
    AsyncShuangkouClient,
    Rejected,
    RoundClient,
    ServiceError,
    ShuangkouClient,
    channels,
    methods,
)
from shuangkou.v1 import (
    cards_pb2,
    rounds_pb2,
    scoring_pb2,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

BAIBIAN = variants_pb2.RuleSet(id="baibian")


def cards(text: str) -> cards_pb2.Cards:
    return cards_pb2.Cards(cards_text=text)


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with running_server() as running:
        yield f"127.0.0.1:{running.port}"


# ----------------------------------------------------------------------------- the methods

def test_every_rpc_has_a_method_a_deadline_and_a_retry_decision() -> None:
    """Read from the protos: a new RPC without a client method or a default deadline fails
    here; the retried ones are exactly the unary RPCs."""
    for service, classes in (("ShuangkouService", (ShuangkouClient, AsyncShuangkouClient)),
                             ("RoundService", (RoundClient, AsyncRoundClient))):
        for m in channels.methods(service):
            snake = "".join("_" + c.lower() if c.isupper() else c for c in m.name).lstrip("_")
            assert all(callable(getattr(cls, snake, None)) for cls in classes), m.name
            assert DEADLINES[m.name] > 0
            assert (m in RETRIED) == (not m.streaming), m.name
    assert {m.name for m in RETRIED} >= {"ApplyAction", "StartRound", "ClassifyPlay"}
    assert "ScoreReplays" not in {m.name for m in RETRIED}
    config = channels.service_config()
    (method_config,) = config["methodConfig"]
    assert method_config["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]
    assert "timeout" not in method_config      # a caller's longer deadline is not capped


def _grown(service: str, rpc: str, request: str, response: str) -> ServiceDescriptor:
    """``service`` as its .proto declares it with one unary RPC more, ``rpc`` (``request``
    and ``response``: message names of the same file), in a descriptor pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(file: FileDescriptor) -> None:
        for dependency in file.dependencies:
            add(dependency)
        if file.name in added:
            return
        proto = descriptor_pb2.FileDescriptorProto()
        file.CopyToProto(proto)
        for declared in proto.service:
            if declared.name == service:
                declared.method.add(name=rpc, input_type=f".{proto.package}.{request}",
                                    output_type=f".{proto.package}.{response}")
        pool.Add(proto)
        added.add(file.name)

    add(methods.SERVICES[service].file)
    return pool.FindServiceByName(methods.SERVICES[service].full_name)


def test_a_new_rpc_without_a_row_fails_at_import() -> None:
    """The method table is checked against the descriptors when the client is imported: an
    RPC the protos gain without a row fails (saying what to write), as does a row with no
    RPC or with the wrong messages; the tables as they are pass."""
    grown = _grown("RoundService", "ForfeitRound", "StartRoundRequest", "StartRoundResponse")
    with pytest.raises(TypeError, match=re.escape(
            "shuangkou.v1.RoundService.ForfeitRound has no row in "
            "shuangkou.client.methods.RoundMethods: add forfeit_round = "
            "Unary(StartRoundRequest, StartRoundResponse, deadline=...)")):
        methods.check(methods.RoundMethods, grown)

    class Extra(methods.RoundMethods):
        forfeit_round = methods.Unary(rounds_pb2.StartRoundRequest,
                                      rounds_pb2.StartRoundResponse, deadline=10.0)

    methods.check(Extra, grown)
    with pytest.raises(TypeError, match="no RPC of RoundService is named ForfeitRound"):
        methods.check(Extra)

    class Wrong(methods.ShuangkouMethods):
        compare_plays = methods.Unary(service_pb2.ClassifyPlayRequest,
                                      service_pb2.ComparePlaysResponse, deadline=10.0)

    with pytest.raises(TypeError, match=r"Wrong.compare_plays is \('shuangkou.v1.Classify"):
        methods.check(Wrong)
    for table in methods.TABLES:
        methods.check(table)


def test_a_new_rpc_with_a_row_is_a_method_of_both_clients() -> None:
    """One row is the whole of a new RPC on the client side: the blocking and the asyncio
    client both get its method, sending the row's default deadline (or ``timeout=``) and
    raising the server's refusal as ``Rejected``. Served here by a handler of its own for
    an RPC ShuangkouService gains in a grown descriptor."""

    class Grown(methods.ShuangkouMethods):
        get_server_time = methods.Unary(service_pb2.GetServerInfoRequest,
                                        service_pb2.GetServerInfoResponse, deadline=7.0)

    class Client(ShuangkouClient, Grown):
        pass

    class AsyncClient(AsyncShuangkouClient, Grown):
        pass

    methods.check(Grown, _grown("ShuangkouService", "GetServerTime", "GetServerInfoRequest",
                                "GetServerInfoResponse"))

    def remaining(request: Any, context: grpc.ServicerContext) -> Any:
        if ("refuse", "yes") in context.invocation_metadata():
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "refused as asked")
        return service_pb2.GetServerInfoResponse(version=f"{context.time_remaining():.1f}")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(
        "shuangkou.v1.ShuangkouService", {"GetServerTime": grpc.unary_unary_rpc_method_handler(
            remaining, request_deserializer=service_pb2.GetServerInfoRequest.FromString,
            response_serializer=service_pb2.GetServerInfoResponse.SerializeToString)})])
    target = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()
    asked, refuse = service_pb2.GetServerInfoRequest(), [("refuse", "yes")]
    try:
        with Client(target) as client:
            assert 6.0 < float(client.get_server_time(asked).version) <= 7.0
            assert float(client.get_server_time(asked, timeout=30).version) > 7.0
            with pytest.raises(Rejected, match="refused as asked"):
                client.get_server_time(asked, metadata=refuse)

        async def asyncio_client() -> str:
            async with AsyncClient(target) as client:
                with pytest.raises(Rejected):
                    await client.get_server_time(asked, metadata=refuse)
                return (await client.get_server_time(asked)).version

        assert 6.0 < float(asyncio.run(asyncio_client())) <= 7.0
    finally:
        server.stop(None)


def test_rules_answers_are_the_cores(address: str) -> None:
    with ShuangkouClient(address) as rules:
        reply = rules.classify_play(service_pb2.ClassifyPlayRequest(
            play=cards("45678 BJ"), rule_set=BAIBIAN))
        assert reply.reading.text == core.classify("45678 BJ", "baibian").primary.describe()
        plays = rules.enumerate_legal_plays(service_pb2.EnumerateLegalPlaysRequest(
            hand=cards("33 44 55 66 77 BJ"), to_beat=cards("55"), rule_set=BAIBIAN))
        assert len(plays.plays) == len(core.legal_plays("33 44 55 66 77 BJ", "baibian",
                                                        to_beat="55"))
        assert "baibian" in {v.id for v in rules.list_variants().variants}
        assert rules.get_server_info().version
        replies = list(rules.score_replays(
            service_pb2.ScoreReplaysRequest(replay_json=line)
            for line in (json.dumps(REPLAY), "{")))
        assert [r.WhichOneof("outcome") for r in replies] == ["result", "error"]
        review = rules.review_round(service_pb2.ReviewRoundRequest(
            replay_json=json.dumps(REPLAY), rollouts=4))
        assert len(review.decisions) == len(REPLAY["actions"]) and len(review.seats) == 4


def test_a_refused_request_raises_with_its_reason_and_field(address: str) -> None:
    with ShuangkouClient(address) as rules:
        with pytest.raises(Rejected) as caught:
            rules.classify_play(service_pb2.ClassifyPlayRequest(play=cards("3S 4"),
                                                                rule_set=BAIBIAN))
    exc = caught.value
    assert exc.code == grpc.StatusCode.INVALID_ARGUMENT
    assert (exc.reason, exc.field) == ("INVALID_PLAY", "play.cards_text")
    assert exc.message and str(exc).startswith("INVALID_ARGUMENT: ")
    assert "[INVALID_PLAY, field play.cards_text]" in str(exc)


def test_a_round_on_one_shared_channel(address: str) -> None:
    """RoundClient on the channel of a ShuangkouClient: a seeded deal played by 托管 to the
    core's settlement; the leader's pass refused as FAILED_PRECONDITION, LEADER_MUST_PLAY."""
    seed = hashlib.sha256(b"client").digest()
    with ShuangkouClient(address) as rules:
        rounds = RoundClient(channel=rules.channel)
        state = rounds.start_round(rounds_pb2.StartRoundRequest(rule_set=BAIBIAN,
                                                                seed=seed)).state
        with pytest.raises(Rejected) as caught:
            rounds.apply_action(rounds_pb2.ApplyActionRequest(
                rule_set=BAIBIAN, state=state.data, action=rounds_pb2.RoundAction(
                    seat=state.view.turn, type=scoring_pb2.ACTION_TYPE_PASS)))
        assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert caught.value.reason == "LEADER_MUST_PLAY"
        reply = None
        while not state.view.over:
            hint = rounds.suggest_action(rounds_pb2.SuggestActionRequest(
                rule_set=BAIBIAN, state=state.data))
            reply = rounds.apply_action(rounds_pb2.ApplyActionRequest(
                rule_set=BAIBIAN, state=state.data, action=hint.action))
            state = reply.state
        rounds.close()        # not its channel: the rules client still works
        assert rules.get_server_info().version
    r = core.Round.deal_seeded("baibian", seed)
    while not r.is_over:
        s = core.suggest(r)
        r.play(s.seat, s.cards, s.declaration) if s.kind == "play" else r.pass_turn(s.seat)
    assert reply is not None and [s.final for s in reply.result.seats] == list(r.result().final)


def test_asyncio_clients(address: str) -> None:
    async def main() -> tuple[str, str, list[str], str]:
        async with AsyncShuangkouClient(address) as rules:
            rounds = AsyncRoundClient(channel=rules.channel)
            reply = await rules.classify_play(service_pb2.ClassifyPlayRequest(
                play=cards("7777 BJ"), rule_set=BAIBIAN))
            try:
                await rules.classify_play(service_pb2.ClassifyPlayRequest(
                    play=cards("3S 4"), rule_set=BAIBIAN))
            except Rejected as exc:
                reason = exc.reason
            outcomes = [r.WhichOneof("outcome") async for r in rules.score_replays(
                [service_pb2.ScoreReplaysRequest(replay_json=json.dumps(REPLAY))])]
            state = (await rounds.start_round(rounds_pb2.StartRoundRequest(
                rule_set=BAIBIAN, seed=bytes(32)))).state
            hint = await rounds.suggest_action(rounds_pb2.SuggestActionRequest(
                rule_set=BAIBIAN, state=state.data))
            return reply.reading.text, reason, outcomes, hint.reason

    text, reason, outcomes, hint = asyncio.run(main())
    assert text == core.classify("7777 BJ", "baibian").primary.describe()
    assert reason == "INVALID_PLAY" and outcomes == ["result"] and hint


def test_an_unreachable_server_is_unavailable() -> None:
    with ShuangkouClient(f"127.0.0.1:{free_port()}") as rules:
        with pytest.raises(ServiceError) as caught:
            rules.get_server_info(timeout=10)
    assert caught.value.code == grpc.StatusCode.UNAVAILABLE
    assert not isinstance(caught.value, Rejected)


# ----------------------------------------------------------------------------- retries, deadlines

class Flaky(service_pb2_grpc.ShuangkouServiceServicer):
    """Fails the first ``failures`` calls of each method with UNAVAILABLE, then answers;
    ClassifyPlay always refuses; GetServerInfo reports the deadline it was given."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def _count(self, method: str, context: grpc.ServicerContext) -> None:
        with self.lock:
            self.calls[method] = self.calls.get(method, 0) + 1
            n = self.calls[method]
        if n <= self.failures:
            context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")

    def GetServerInfo(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._count("GetServerInfo", context)
        return service_pb2.GetServerInfoResponse(version=f"{context.time_remaining():.1f}")

    def ClassifyPlay(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        with self.lock:
            self.calls["ClassifyPlay"] = self.calls.get("ClassifyPlay", 0) + 1
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "no")

    def ScoreReplays(self, requests: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        self._count("ScoreReplays", context)
        for _ in requests:
            yield service_pb2.ScoreReplaysResponse()


@pytest.fixture
def flaky() -> Iterator[tuple[Flaky, str]]:
    servicer = Flaky(failures=2)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    service_pb2_grpc.add_ShuangkouServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield servicer, f"127.0.0.1:{port}"
    finally:
        server.stop(None)


def test_unavailable_is_retried_and_the_default_deadline_sent(flaky: tuple[Flaky, str]
                                                              ) -> None:
    servicer, target = flaky
    with ShuangkouClient(target) as rules:
        info = rules.get_server_info()          # two UNAVAILABLE, then the answer
        assert servicer.calls["GetServerInfo"] == 3
        assert DEADLINES["GetServerInfo"] - 3 < float(info.version) <= DEADLINES["GetServerInfo"]
        with pytest.raises(Rejected):           # a refusal is final: sent once
            rules.classify_play(service_pb2.ClassifyPlayRequest())
        assert servicer.calls["ClassifyPlay"] == 1
        with pytest.raises(ServiceError) as caught:   # the stream is not the channel's to retry
            list(rules.score_replays([service_pb2.ScoreReplaysRequest(replay_json="{}")]))
        assert caught.value.code == grpc.StatusCode.UNAVAILABLE
        assert servicer.calls["ScoreReplays"] == 1


def test_retries_end_and_asyncio_retries_too(flaky: tuple[Flaky, str]) -> None:
    servicer, target = flaky
    servicer.failures = 100
    with ShuangkouClient(target) as rules, pytest.raises(ServiceError) as caught:
        rules.get_server_info(timeout=30)
    assert caught.value.code == grpc.StatusCode.UNAVAILABLE
    assert caught.value.message == "warming up"
    assert servicer.calls["GetServerInfo"] == channels.RETRY_POLICY["maxAttempts"]

    servicer.failures, servicer.calls = 1, {}

    async def main() -> str:
        async with AsyncShuangkouClient(target) as rules:
            return (await rules.get_server_info(timeout=5)).version

    assert 4 < float(asyncio.run(main())) <= 5
    assert servicer.calls["GetServerInfo"] == 2
