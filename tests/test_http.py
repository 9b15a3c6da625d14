"""The HTTP port (service/http/): Connect (JSON, binary) and gRPC-Web from the same servicers
as gRPC — the same answers, the same errors (google.rpc.Status, the same reasons), the same
limits and deadlines, the same metrics — against a real server on loopback."""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import status_pb2
from grpc_helpers import TIMEOUT, Running, cards, metric_value, rich_error, running_server
from prometheus_client import generate_latest

from shuangkou.v1 import (
    rounds_connect,
    rounds_pb2,
    rounds_pb2_grpc,
    scoring_pb2,
    service_connect,
    service_pb2,
)

PLAY, PASS = scoring_pb2.ACTION_TYPE_PLAY, scoring_pb2.ACTION_TYPE_PASS


@pytest.fixture(scope="module")
def srv() -> Iterator[Running]:
    with running_server(http=True, http_cors_origins=("http://page.example",),
                        max_message_bytes=256 * 1024) as running:
        yield running


def post(srv: Running, method: str, body: bytes, *, content_type: str = "application/json",
         headers: dict[str, str] | None = None) -> tuple[int, Message, bytes]:
    """One HTTP request to ``/shuangkou.v1.<method>``: status, headers (names in any case,
    as HTTP has them), body."""
    request = urllib.request.Request(f"{srv.http_url}/shuangkou.v1.{method}", data=body,
                                     headers={"Content-Type": content_type, **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read()


def call_json(srv: Running, method: str, message: Any) -> dict[str, Any]:
    status, _, body = post(srv, method, json_format.MessageToJson(message).encode())
    assert status == 200, body
    result: dict[str, Any] = json.loads(body)
    return result


def grpc_web(srv: Running, service: str = "shuangkou") -> Any:
    client = (service_connect.ShuangkouServiceClientSync if service == "shuangkou"
              else rounds_connect.RoundServiceClientSync)
    from connectrpc.protocol import ProtocolType
    return client(srv.http_url, protocol=ProtocolType.GRPC_WEB, send_compression=None)


def status_of_json(body: bytes) -> status_pb2.Status:
    """The google.rpc.Status a Connect JSON error carries (code name, message, detail bytes)."""
    error = json.loads(body)
    code = [c.value[0] for c in grpc.StatusCode
            if c.name.replace("CANCELLED", "CANCELED").lower() == error["code"]][0]
    status = status_pb2.Status(code=code, message=error["message"])
    for d in error.get("details", []):
        packed = status.details.add()
        packed.type_url = "type.googleapis.com/" + d["type"]
        packed.value = base64.b64decode(d["value"] + "===")
    return status


def grpc_status(exc: grpc.RpcError) -> status_pb2.Status:
    from grpc_status import rpc_status
    found = rpc_status.from_call(exc)  # type: ignore[arg-type]
    assert found is not None
    return found


# ----------------------------------------------------------------------------- same answers

REQUESTS: list[tuple[str, Any]] = [
    ("ShuangkouService/ClassifyPlay",
     service_pb2.ClassifyPlayRequest(play=cards("45678 BJ"))),
    ("ShuangkouService/ComparePlays",
     service_pb2.ComparePlaysRequest(current=cards("4444 5555 6666"), play=cards("3333333"))),
    ("ShuangkouService/EnumerateLegalPlays",
     service_pb2.EnumerateLegalPlaysRequest(hand=cards("33 44 55 66 77 BJ"), to_beat=cards("55"),
                                            page_size=2, include_counts=True)),
    ("ShuangkouService/BatchClassify",
     service_pb2.BatchClassifyRequest(plays_text=["33", "3 4", "4444"])),
    ("ShuangkouService/ScoreRound", service_pb2.ScoreRoundRequest(
        summary=scoring_pb2.RoundSummary(finish_order=[0, 2]))),
    ("ShuangkouService/ListVariants", service_pb2.ListVariantsRequest()),
    ("ShuangkouService/GetVariant", service_pb2.GetVariantRequest()),
    ("RoundService/StartRound", rounds_pb2.StartRoundRequest(seed=bytes(range(32)))),
]


@pytest.mark.parametrize(("method", "request_"), REQUESTS, ids=[m for m, _ in REQUESTS])
def test_json_answers_are_the_grpc_answers(srv: Running, method: str, request_: Any) -> None:
    service, name = method.split("/")
    stub = (srv.stub if service == "ShuangkouService"
            else rounds_pb2_grpc.RoundServiceStub(srv.channel))
    want = getattr(stub, name)(request_, timeout=TIMEOUT)
    answer = call_json(srv, method, request_)
    # the native runtime writes the JSON json_format (the slow twin) writes, and reads it back
    assert answer == json_format.MessageToDict(want)
    assert json_format.ParseDict(answer, type(want)()) == want


def test_json_requests_read_as_json_format_reads_them(srv: Running) -> None:
    """Field names as in the .proto or in lowerCamelCase, enums by name or number, int64 as
    a string, bytes as base64: the request the servicer gets is json_format's."""
    bodies = [
        ("ShuangkouService/ClassifyPlay", service_pb2.ClassifyPlayRequest,
         '{"rule_set": {"id": "huopin"}, "play": {"cards": ["CARD_7S", 22, "CARD_BJ"]}}'),
        ("ShuangkouService/ScoreRound", service_pb2.ScoreRoundRequest,
         '{"summary": {"finishOrder": [0, 2], "stake": "3", "bombs": [{"seat": 1, '
         '"cards": {"cardsText": "333333"}}]}}'),
        ("RoundService/StartRound", rounds_pb2.StartRoundRequest,
         '{"seed": "AAECAwQFBgcICQoLDA0ODw==", "stake": 2}'),
    ]
    for method, cls, body in bodies:
        service, name = method.split("/")
        stub = (srv.stub if service == "ShuangkouService"
                else rounds_pb2_grpc.RoundServiceStub(srv.channel))
        want = getattr(stub, name)(json_format.Parse(body, cls()), timeout=TIMEOUT)
        status, _, reply = post(srv, method, body.encode())
        assert status == 200 and json.loads(reply) == json_format.MessageToDict(want), method


def test_binary_connect_and_grpc_web_answer_alike(srv: Running) -> None:
    request = service_pb2.ClassifyPlayRequest(play=cards("7777 BJ"))
    want = srv.stub.ClassifyPlay(request, timeout=TIMEOUT)
    status, headers, body = post(srv, "ShuangkouService/ClassifyPlay",
                                 request.SerializeToString(), content_type="application/proto")
    assert status == 200 and headers["Content-Type"] == "application/proto"
    assert service_pb2.ClassifyPlayResponse.FromString(body) == want
    with grpc_web(srv) as client:
        assert client.classify_play(request) == want
        info = client.get_server_info(service_pb2.GetServerInfoRequest())
    assert info.variant_ids == srv.stub.GetServerInfo(service_pb2.GetServerInfoRequest(),
                                                      timeout=TIMEOUT).variant_ids


def test_a_live_round_over_grpc_web(srv: Running) -> None:
    """Start from a seed, then 托管 plays every seat to the end: the same round as gRPC's."""
    stub = rounds_pb2_grpc.RoundServiceStub(srv.channel)
    start = rounds_pb2.StartRoundRequest(seed=b"grpc-web round seed")
    with grpc_web(srv, "rounds") as client:
        state = client.start_round(start).state
        assert state == stub.StartRound(start, timeout=TIMEOUT).state
        for _ in range(400):
            suggested = client.suggest_action(rounds_pb2.SuggestActionRequest(state=state.data))
            reply = client.apply_action(rounds_pb2.ApplyActionRequest(
                state=state.data, action=suggested.action))
            state = reply.state
            if state.view.over:
                break
    assert state.view.over and len(reply.result.seats) == 4 and reply.result.kind


# ----------------------------------------------------------------------------- same errors

def _bad_requests(srv: Running) -> list[tuple[str, Any]]:
    from shuangkou.v1 import variants_pb2
    stub = rounds_pb2_grpc.RoundServiceStub(srv.channel)
    state = stub.StartRound(rounds_pb2.StartRoundRequest(seed=bytes(16)), timeout=TIMEOUT).state
    out_of_turn = (state.view.turn + 1) % 4
    return [
        ("ShuangkouService/ClassifyPlay",
         service_pb2.ClassifyPlayRequest(play=cards("45678 XX"))),
        ("ShuangkouService/GetVariant",
         service_pb2.GetVariantRequest(rule_set=variants_pb2.RuleSet(id="no_such"))),
        ("RoundService/ApplyAction", rounds_pb2.ApplyActionRequest(
            state=state.data, action=rounds_pb2.RoundAction(seat=out_of_turn, type=PASS))),
        ("RoundService/StartRound", rounds_pb2.StartRoundRequest(seed=b"short")),
    ]


def test_errors_are_the_same_status_on_every_protocol(srv: Running) -> None:
    for method, request in _bad_requests(srv):
        service, name = method.split("/")
        stub = (srv.stub if service == "ShuangkouService"
                else rounds_pb2_grpc.RoundServiceStub(srv.channel))
        with pytest.raises(grpc.RpcError) as caught:
            getattr(stub, name)(request, timeout=TIMEOUT)
        want = grpc_status(caught.value)
        assert rich_error(caught.value).reason          # every one has its reason
        status, _, body = post(srv, method, json_format.MessageToJson(request).encode())
        assert status in (400, 404) and status_of_json(body) == want, (method, body)
        # gRPC-Web: the grpc-status-details-bin trailer, decoded by connectrpc's client
        from connectrpc.errors import ConnectError
        client = grpc_web(srv, "shuangkou" if service == "ShuangkouService" else "rounds")
        with client, pytest.raises(ConnectError) as web:
            getattr(client, "".join("_" + c.lower() if c.isupper() else c
                                    for c in name).lstrip("_"))(request)
        assert web.value.code.name.replace("CANCELED", "CANCELLED") == grpc.StatusCode(
            [c for c in grpc.StatusCode if c.value[0] == want.code][0]).name
        assert web.value.message == want.message
        assert [(d.type_name, d.message_bytes) for d in web.value.details] == [
            (d.type_url.removeprefix("type.googleapis.com/"), d.value) for d in want.details]


def test_json_errors_show_each_detail_readable(srv: Running) -> None:
    status, _, body = post(srv, "ShuangkouService/ClassifyPlay",
                           b'{"play": {"cardsText": "45678 XX"}}')
    error = json.loads(body)
    assert status == 400 and error["code"] == "invalid_argument"
    assert [d["debug"] for d in error["details"]] == [
        {"reason": "INVALID_CARDS", "domain": "shuangkou.v1"},
        {"fieldViolations": [{"field": "play.cards_text", "reason": "INVALID_CARDS",
                              "description": error["message"]}]}]


@pytest.mark.parametrize("body", [
    b'{"paly": {"cardsText": "33"}}',                 # a typo is an error, not ignored
    b'{"play": {"cardsText": "\\ud800"}}',            # a lone surrogate
    b'{"ruleSet": {"variant": 1e999}}',
    b'{"play": ' * 5000 + b'{}' + b'}' * 5000,        # deep JSON
    b'\xff\xfe not UTF-8',
    b'[]',
])
def test_undecodable_json_is_invalid_argument_and_counted(srv: Running, body: bytes) -> None:
    before = metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                          grpc_method="ClassifyPlay", reason="undecodable")
    status, _, reply = post(srv, "ShuangkouService/ClassifyPlay", body)
    error = json.loads(reply)
    assert status == 400 and error["code"] == "invalid_argument", reply
    assert error["message"].startswith("request is not a valid ClassifyPlayRequest in JSON")
    assert len(error["message"]) < 400
    assert metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                        grpc_method="ClassifyPlay", reason="undecodable") == before + 1


@pytest.mark.parametrize("top", ["-1", "4294967296", "1e300"])
def test_a_number_out_of_its_fields_range_names_the_field(srv: Running, top: str) -> None:
    body = b'{"play": {"cardsText": "33"}, "declaration": {"top": %s}}' % top.encode()
    status, _, reply = post(srv, "ShuangkouService/ClassifyPlay", body)
    error = json.loads(reply)
    assert status == 400 and error["code"] == "invalid_argument", reply
    assert "out of range for uint32 for field shuangkou.v1.Declaration.top" in \
        error["message"], error["message"]
    assert len(error["message"]) < 400


FIRST_USE = """
import threading, time
import protobuf._descriptors as descriptors
initialize = descriptors.initialize_message_type

def slowly(cls):        # the window between a class made and made whole, widened
    time.sleep(0.002)
    initialize(cls)

descriptors.initialize_message_type = slowly
from shuangkou.service.http.codec import Codec
from shuangkou.v1 import rounds_pb2, service_pb2

class Admission:
    def decoder(self, decode):
        return decode

codec = Codec(Admission(), json=True)
requests = [(service_pb2.ClassifyPlayRequest, b'{"play": {"cardsText": "45678 BJ"}}'),
            (rounds_pb2.ApplyActionRequest, b'{"action": {"seat": 1, "type": "ACTION_TYPE_PASS"}}')]
start, refused = threading.Barrier(8), []

def first_calls():
    start.wait()
    for cls, data in requests:
        if not isinstance(got := codec.decode(data, cls), cls):
            refused.append(got.detail)

threads = [threading.Thread(target=first_calls) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(refused[:1])
"""


def test_the_first_json_calls_of_many_threads_decode() -> None:
    """protobuf-py makes a message's class on its first use, and threads that first use it
    at once could find it half made: a valid request refused INVALID_ARGUMENT
    ("AttributeError", seen in bench/bench_http.py's first calls). Every class is made
    before the port serves. In a process of its own, the window widened."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_message_size_limit_is_gRPCs(srv: Running) -> None:
    """max_message_bytes (256 KiB here) bounds the message, refused and counted as on gRPC; a
    body over twice that is refused by the port before it is read (413), counted the same."""
    big = service_pb2.BatchClassifyRequest(plays_text=["33"] * 80_000)     # ~320 KB
    assert 256 * 1024 < big.ByteSize() < 512 * 1024
    with pytest.raises(grpc.RpcError) as caught:
        srv.stub.BatchClassify(big, timeout=TIMEOUT)
    before = metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                          grpc_method="BatchClassify", reason="too_large")
    status, _, body = post(srv, "ShuangkouService/BatchClassify", big.SerializeToString(),
                           content_type="application/proto")
    error = json.loads(body)
    assert status == 429 and error["code"] == "resource_exhausted"
    assert error["message"] == caught.value.details()
    assert metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                        grpc_method="BatchClassify", reason="too_large") == before + 1
    status, _, body = post(srv, "ShuangkouService/BatchClassify", b"x" * (600 * 1024),
                           content_type="application/proto")
    assert status == 413 and json.loads(body)["code"] == "resource_exhausted"
    assert metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                        grpc_method="BatchClassify", reason="too_large") == before + 2


def test_a_passed_deadline_is_deadline_exceeded(srv: Running) -> None:
    status, _, body = post(srv, "ShuangkouService/ClassifyPlay", b'{"play": {"cardsText": "33"}}',
                           headers={"Connect-Timeout-Ms": "0"})
    assert status == 504 and json.loads(body)["code"] == "deadline_exceeded"
    assert metric_value(srv.scrape(), "grpc_server_handled_total", grpc_method="ClassifyPlay",
                        grpc_code="DEADLINE_EXCEEDED") >= 1


def test_http_calls_count_in_the_grpc_series(srv: Running) -> None:
    def handled() -> float:
        return metric_value(srv.scrape(), "grpc_server_handled_total",
                            grpc_service="shuangkou.v1.ShuangkouService",
                            grpc_method="GetServerInfo", grpc_code="OK")

    before = handled()
    requests = metric_value(srv.scrape(), "shuangkou_http_requests_total", protocol="connect")
    call_json(srv, "ShuangkouService/GetServerInfo", service_pb2.GetServerInfoRequest())
    srv.stub.GetServerInfo(service_pb2.GetServerInfoRequest(), timeout=TIMEOUT)
    assert handled() == before + 2
    assert metric_value(srv.scrape(), "shuangkou_http_requests_total",
                        protocol="connect") == requests + 1
    text = generate_latest(srv.registry).decode()
    assert 'shuangkou_http_requests_total{protocol="grpc_web"}' in text


def _envelope(message: Any) -> bytes:
    data = json_format.MessageToJson(message).encode()
    return struct.pack(">BI", 0, len(data)) + data


def test_score_replays_streams_over_connect(srv: Running) -> None:
    """The bidirectional stream, half-duplex over HTTP/1.1: the enveloped requests, then one
    enveloped result per request and the end-of-stream message; a bad line is answered
    in-band as on gRPC."""
    from grpc_helpers import REPLAY
    good = service_pb2.ScoreReplaysRequest(replay_json=json.dumps(REPLAY))
    bad = service_pb2.ScoreReplaysRequest(replay_json="{")
    status, headers, body = post(srv, "ShuangkouService/ScoreReplays",
                                 _envelope(good) + _envelope(bad) + _envelope(good),
                                 content_type="application/connect+json")
    assert status == 200 and headers["Content-Type"] == "application/connect+json"
    frames = []
    while body:
        flags, size = struct.unpack(">BI", body[:5])
        frames.append((flags, json.loads(body[5:5 + size])))
        body = body[5 + size:]
    assert [f for f, _ in frames] == [0, 0, 0, 2] and frames[-1][1] == {}
    replies = [json_format.ParseDict(m, service_pb2.ScoreReplaysResponse()) for _, m in frames[:3]]
    want = list(srv.stub.ScoreReplays(iter([good, bad, good]), timeout=TIMEOUT))
    assert replies == want and replies[1].HasField("error")


def test_cors_for_the_configured_origins_only(srv: Running) -> None:
    def preflight(origin: str) -> tuple[int, Message]:
        request = urllib.request.Request(
            f"{srv.http_url}/shuangkou.v1.RoundService/StartRound", method="OPTIONS",
            headers={"Origin": origin, "Access-Control-Request-Method": "POST",
                     "Access-Control-Request-Headers": "content-type, x-grpc-web, x-evil"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as resp:
                return resp.status, resp.headers
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers

    status, headers = preflight("http://page.example")
    assert status == 204 and headers["Access-Control-Allow-Origin"] == "http://page.example"
    assert headers["Access-Control-Allow-Headers"] == "content-type, x-grpc-web"
    assert preflight("http://elsewhere.example")[0] == 403
    _, headers, _ = post(srv, "ShuangkouService/GetServerInfo", b"{}",
                         headers={"Origin": "http://page.example"})
    assert "Grpc-Status-Details-Bin" in headers["Access-Control-Expose-Headers"]
    _, headers, _ = post(srv, "ShuangkouService/GetServerInfo", b"{}",
                         headers={"Origin": "http://elsewhere.example"})
    assert "Access-Control-Allow-Origin" not in headers


def test_unknown_paths_and_methods(srv: Running) -> None:
    assert post(srv, "ShuangkouService/NoSuchMethod", b"{}")[0] == 404
    assert post(srv, "NoService/ClassifyPlay", b"{}")[0] == 404
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{srv.http_url}/", timeout=TIMEOUT)
    assert caught.value.code == 404


def test_stream_cap_is_shared_with_grpc() -> None:
    """max_streams counts the streams of both ports: with gRPC's one slot held, an HTTP
    ScoreReplays is refused RESOURCE_EXHAUSTED and counted."""
    import threading
    with running_server(http=True, max_streams=1) as srv:
        release = threading.Event()

        def held() -> Iterator[service_pb2.ScoreReplaysRequest]:
            release.wait(TIMEOUT)
            return
            yield

        stream = srv.stub.ScoreReplays(held(), timeout=TIMEOUT)
        import time
        deadline = time.monotonic() + TIMEOUT
        while metric_value(srv.scrape(), "grpc_server_started_total",
                           grpc_method="ScoreReplays") < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        status, _, body = post(srv, "ShuangkouService/ScoreReplays", b"",
                               content_type="application/connect+json")
        release.set()
        list(stream)
        end = json.loads(body[5:])
        assert status == 200 and end["error"]["code"] == "resource_exhausted", body
        assert metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                            grpc_method="ScoreReplays", reason="stream_limit") == 1


# ----------------------------------------------------------------------------- as an attacker

def test_hostile_bodies_are_refused_and_the_server_lives(srv: Running) -> None:
    """100,000 levels of nesting (the native JSON parser would overflow its stack: orjson
    refuses past 1,024 first), a body over http_max_request_bytes (413 before any decoding),
    then an ordinary call still answers."""
    status, _, body = post(srv, "ShuangkouService/ClassifyPlay", b"[" * 100_000)
    assert status == 400 and "depth" in json.loads(body)["message"]
    status, _, body = post(srv, "ShuangkouService/ClassifyPlay", b'{"play": {' * 50_000)
    assert status == 400
    call_json(srv, "ShuangkouService/GetServerInfo", service_pb2.GetServerInfoRequest())


def test_body_over_the_http_limit_is_413() -> None:
    with running_server(http=True, http_max_request_bytes=64 * 1024) as srv:
        status, _, _ = post(srv, "ShuangkouService/ClassifyPlay", b" " * (100 * 1024))
        assert status == 413
        call_json(srv, "ShuangkouService/GetServerInfo", service_pb2.GetServerInfoRequest())


def test_slow_and_idle_clients_hold_no_thread() -> None:
    """64 connections that send half a request and stall, against 4 handler threads: an
    ordinary call still answers within its deadline (the server reads a whole request before a thread
    takes it)."""
    import socket
    with running_server(http=True, threads=4) as srv:
        stalled = []
        try:
            for _ in range(64):
                s = socket.create_connection(("127.0.0.1", srv.http_port), timeout=TIMEOUT)
                s.sendall(b"POST /shuangkou.v1.ShuangkouService/ClassifyPlay HTTP/1.1\r\n"
                          b"Host: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n"
                          b"\r\n{\"play\"")
                stalled.append(s)
            # were the threads held, this call would wait past its TIMEOUT and fail
            call_json(srv, "ShuangkouService/GetServerInfo", service_pb2.GetServerInfoRequest())
        finally:
            for s in stalled:
                s.close()
