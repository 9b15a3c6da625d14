"""Issue 62 against real servers (loopback, bounded): request heads and bodies refused as
they arrive, with memory bounded; a reconnect flood that neither starves another client nor
takes the pod out of readiness, while a broken server does; an ``Upgrade: h2c`` request
served; the lines a client can cause bounded and counted; every refusal of the HTTP port
counted by code and reason; one JSON style for every error body. The hostile clients are
tests/hostile_http.py's (bench/bench_edge.py measures the same)."""

from __future__ import annotations

import http.client
import json
import logging
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_helpers import (
    Running,
    ServerProcess,
    free_port,
    metric_value,
    rss_mib,
    running_server,
    scrape,
)
from hostile_http import (
    at_once,
    huge_body,
    huge_head,
    many_headers,
    ordinary_calls,
    reconnect_flood,
)

MiB = 1024 * 1024
SERVICE = "shuangkou.v1.ShuangkouService"


@pytest.fixture(scope="module")
def server() -> Iterator[Running]:
    with running_server(http=True) as running:
        yield running


def _raw(port: int, data: bytes, *, timeout: float = 5.0) -> bytes:
    """``data`` written to a new connection; everything the server answers until it closes
    (or ``timeout``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass                        # refused before it was read: the answer is in
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return answer


def _post(path: str, body: bytes, content_type: str, *extra: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in (
        f"POST {path} HTTP/1.1", "Host: x", f"Content-Type: {content_type}",
        f"Content-Length: {len(body)}", "Connection: close", *extra))
    return head.encode() + b"\r\n" + body


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def _body(answer: bytes) -> bytes:
    return answer.partition(b"\r\n\r\n")[2]


def _served(*args: str) -> ServerProcess:
    """``shuangkou serve`` in a process of its own, with a metrics port."""
    metrics = free_port()
    srv = ServerProcess("--port", "0", "--metrics-port", str(metrics), *args)
    srv.metrics_port = metrics           # type: ignore[attr-defined]
    srv.wait_serving()
    return srv


def _reset_peak(pid: int) -> float:
    """Restart the process's peak RSS (VmHWM) at its RSS now (Linux clear_refs 5); the RSS."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return rss_mib(pid)


# ----------------------------------------------------------------------------- heads

def test_heads_over_the_limits_are_refused_as_they_arrive() -> None:
    """Twenty 32 MiB heads at once, and one of 100,000 header fields: each answered 431 once
    its head passes the limit, never read whole (peak RSS within 64 MiB of idle), counted."""
    srv = _served()
    try:
        pid, port = srv.proc.pid, srv.http_port
        assert port is not None
        idle = _reset_peak(pid)
        statuses = at_once(20, lambda: huge_head(port, 32 * MiB))
        statuses.append(many_headers(port, 100_000))
        peak = rss_mib(pid, "VmHWM")
        text = scrape(srv.metrics_port)          # type: ignore[attr-defined]
    finally:
        srv.stop()
    assert statuses == [431] * 21
    assert peak - idle < 64, (idle, peak)
    assert metric_value(text, "shuangkou_requests_rejected_total", grpc_method="unknown",
                        reason="head_too_large") == 21


def test_a_head_at_the_limit_is_read(server: Running) -> None:
    """The limits are the documented ones: a head of exactly http_max_head_bytes, and one of
    http_max_headers fields, are served."""
    line = b"POST /shuangkou.v1.ShuangkouService/GetServerInfo HTTP/1.1\r\n"
    fixed = (b"Host: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
             b"Connection: close\r\n")
    pad = 64 * 1024 - len(line) - len(fixed) - len(b"X-Pad: \r\n\r\n")
    exact = line + fixed + b"X-Pad: " + b"p" * pad + b"\r\n\r\n"
    assert len(exact) == 64 * 1024
    assert _status(_raw(server.http_port, exact + b"{}")) == 200
    assert _status(_raw(server.http_port, exact[:-4] + b"p\r\n\r\n{}")) == 431
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(100 - 4))
    assert _status(_raw(server.http_port, line + fixed + fields + b"\r\n{}")) == 200
    assert _status(_raw(server.http_port, line + fixed + fields + b"X-F: v\r\n\r\n{}")) == 431


# ----------------------------------------------------------------------------- bodies

def test_bodies_over_the_methods_limit_are_refused_before_they_are_read() -> None:
    """Eight 63 MiB bodies at once to a unary method (its limit: twice max_message_bytes,
    8 MiB), by Content-Length and chunked: each answered 413 before it is read (chunked: as
    the limit passes), peak RSS under 256 MiB, each counted as gRPC counts a message too
    large."""
    srv = _served()
    try:
        pid, port = srv.proc.pid, srv.http_port
        assert port is not None
        _reset_peak(pid)
        statuses = at_once(8, lambda: huge_body(port, 63 * MiB, chunked=False))
        statuses += at_once(8, lambda: huge_body(port, 63 * MiB, chunked=True))
        peak = rss_mib(pid, "VmHWM")
        text = scrape(srv.metrics_port)          # type: ignore[attr-defined]
    finally:
        srv.stop()
    assert statuses == [413] * 16
    assert peak < 256, peak
    for name, labels in [("grpc_server_started_total", {}),
                         ("grpc_server_handled_total", {"grpc_code": "RESOURCE_EXHAUSTED"}),
                         ("shuangkou_requests_rejected_total", {"reason": "too_large"})]:
        assert metric_value(text, name, grpc_method="ClassifyPlay", **labels) == 16, name


def test_each_method_has_its_body_limit() -> None:
    from shuangkou.service.http.refusals import BodyLimits

    limits = BodyLimits(4 * MiB, 64 * MiB)
    assert limits(f"/{SERVICE}/ClassifyPlay") == (8 * MiB, "twice max_message_bytes")
    assert limits(f"/{SERVICE}/ScoreReplays") == (64 * MiB, "http_max_request_bytes")
    assert limits("/no/such") == (8 * MiB, "twice max_message_bytes")
    assert BodyLimits(64 * MiB, 16 * MiB)(f"/{SERVICE}/ClassifyPlay") == (
        16 * MiB, "http_max_request_bytes")


# ----------------------------------------------------------------------------- floods

def test_a_reconnect_flood_neither_starves_others_nor_takes_the_pod_out() -> None:
    """A client opens, holds and reopens 1,500 connections as fast as it can (past the
    1,000 of http_max_connections). Another client's calls, 2 s each, are answered (at
    least 90 %); the API services stay SERVING all along (the readiness probe's view), the
    pod ready; the connections the flood lost to make room are counted."""
    srv = _served()
    try:
        port = srv.http_port
        assert port is not None
        flood = reconnect_flood(port, 1500, 12.0)
        statuses: list[int] = []
        try:
            time.sleep(1.5)
            calls = {}
            caller = threading.Thread(target=lambda: calls.update(
                got=ordinary_calls(port, 9.0, interval=0.25, timeout=2.0)))
            caller.start()
            with grpc.insecure_channel(f"127.0.0.1:{srv.port}") as channel:
                health = health_pb2_grpc.HealthStub(channel)
                while caller.is_alive():
                    statuses.append(health.Check(health_pb2.HealthCheckRequest(
                        service=SERVICE), timeout=5).status)
                    time.sleep(0.25)
            caller.join()
            opened = flood.opened()
        finally:
            flood.stop()
        text = scrape(srv.metrics_port)          # type: ignore[attr-defined]
    finally:
        srv.stop()
    got = calls["got"]
    assert opened > 2_000, opened                 # it was a flood
    assert got.answered >= 0.9 * got.made, got
    assert statuses and set(statuses) == {health_pb2.HealthCheckResponse.SERVING}, statuses
    assert metric_value(text, "shuangkou_http_ready") == 1
    assert metric_value(text, "shuangkou_http_evicted_total", port="api") > 1_000


def test_readiness_tells_a_broken_server_from_a_full_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection cap full of held connections is a flood, not a broken server: still
    ready, and a call is answered (the oldest idle connection made room for it). An event
    loop that does not answer within a second is broken: not ready, and ready again once it
    answers."""
    from shuangkou.service.http import probes

    changes: list[bool] = []
    with running_server(http=True, http_max_connections=5, http_header_timeout=30) as srv:
        ready = probes.Readiness(srv.web.answers, changes.append, interval=0.2).start()
        held = [socket.create_connection(("127.0.0.1", srv.http_port)) for _ in range(8)]
        try:
            time.sleep(0.3)
            conn = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=5)
            conn.request("POST", f"/{SERVICE}/GetServerInfo", b"{}",
                         {"Content-Type": "application/json"})
            assert conn.getresponse().status == 200
            conn.close()
            time.sleep(0.6)
            assert changes == []                 # still ready
            probe = probes.probe

            def stuck(*args: object) -> object:  # a probe that blocks the event loop
                time.sleep(1.5)
                return probe(*args)              # type: ignore[arg-type]
            monkeypatch.setattr(probes, "probe", stuck)
            time.sleep(1.2)
            monkeypatch.setattr(probes, "probe", probe)
            time.sleep(2.5)
        finally:
            ready.stop()
            for s in held:
                s.close()
        text = srv.scrape()
    assert changes == [False, True]
    # past the cap, a connection made room (the oldest idle one closed) or, while none had
    # waited a turn of the event loop yet, was refused 503; the call made room
    assert metric_value(text, "shuangkou_http_evicted_total", port="api") >= 1
    assert metric_value(text, "shuangkou_http_evicted_total", port="api") + metric_value(
        text, "shuangkou_http_refused_total", port="api") >= 4


# ----------------------------------------------------------------------------- h2c

def test_an_h2c_upgrade_is_served_as_http11(server: Running) -> None:
    """What ``curl --http2`` sends on plaintext: the request served over HTTP/1.1, its body
    read, and a request pipelined in the same write answered too."""
    body = b'{"play": {"cardsText": "33"}}'
    first = _post(f"/{SERVICE}/ClassifyPlay", body, "application/json",
                  "Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c",
                  "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA").replace(
                      b"Connection: close\r\n", b"")
    second = _post(f"/{SERVICE}/ClassifyPlay", body, "application/json")
    answer = _raw(server.http_port, first + second)
    assert answer.count(b"HTTP/1.1 200 OK") == 2, answer
    assert answer.count(b'"text":"pair 33"') >= 2
    curl = shutil.which("curl")
    if curl is None:
        pytest.skip("no curl on this machine")
    done = subprocess.run([curl, "-sS", "--http2", "-H", "Content-Type: application/json",
                           "-d", body, f"{server.http_url}/{SERVICE}/ClassifyPlay"],
                          capture_output=True, timeout=30)
    assert done.returncode == 0 and json.loads(done.stdout)["reading"]["text"] == "pair 33"


# ----------------------------------------------------------------------------- logs

def test_the_lines_a_client_causes_are_bounded_and_counted(
        caplog: pytest.LogCaptureFixture) -> None:
    """300 requests the parser cannot read, then one more a second later: a line each at
    first, then at most 10 a second, and a summary of those left out a second after the
    first; every line left out counted. An h2c upgrade writes none."""
    from shuangkou.service.http.edge import CLIENT_LINES_PER_SECOND

    with running_server(http=True) as srv, caplog.at_level(logging.WARNING):
        t0 = time.monotonic()
        for _ in range(300):
            _raw(srv.http_port, b"GARBAGE \x00\r\n\r\n")
        time.sleep(1.1)
        _raw(srv.http_port, b"GARBAGE \x00\r\n\r\n")
        seconds = time.monotonic() - t0
        for _ in range(20):
            _raw(srv.http_port, _post(f"/{SERVICE}/GetServerInfo", b"{}", "application/json",
                                      "Connection: Upgrade", "Upgrade: h2c"))
        text = srv.scrape()
    lines = [r for r in caplog.records if r.name == "shuangkou.service.http"]
    kept = [r for r in lines if "cannot read" in r.getMessage()]
    summaries = [r for r in lines if "dropped" in r.getMessage()]
    dropped = metric_value(text, "shuangkou_log_lines_dropped_total",
                           logger="shuangkou.service.http")
    assert len(kept) + dropped == 301 and dropped > 0
    assert len(kept) <= CLIENT_LINES_PER_SECOND * (1 + seconds) + 1
    assert 1 <= len(summaries) <= seconds + 1
    assert not [r for r in caplog.records if r.name == "uvicorn.error"]
    assert metric_value(text, "shuangkou_requests_rejected_total", grpc_method="unknown",
                        reason="malformed") == 301


# ----------------------------------------------------------------------------- refusals

_WEB = "application/grpc-web+proto"
_FRAME = b"\x00\x00\x00\x00\x00"                 # an empty GetServerInfoRequest, enveloped
# (path, body, content type, headers, the HTTP status, the code in the answer, reason)
REFUSALS = [
    ("GetServerInfo", b"{}", "application/json", ("Connect-Timeout-Ms: soon",), 400,
     "invalid_argument", "malformed"),
    ("GetServerInfo", _FRAME, _WEB, ("grpc-timeout: 1x",), 200, "3", "malformed"),
    ("GetServerInfo", b"\x00\x00\x00\x00\x09ab", _WEB, (), 200, "3", "malformed"),
    ("GetServerInfo", _FRAME * 2, _WEB, (), 200, "3", "malformed"),
    ("GetServerInfo", b"\x80\x00\x00\x00\x00", _WEB, (), 200, "3", "malformed"),
    ("GetServerInfo", b"\x01\x00\x00\x00\x00", _WEB, (), 200, "3", "malformed"),
    ("GetServerInfo", _FRAME, "application/grpc", (), 415, "invalid_argument", "malformed"),
    ("GetServerInfo", b"{}", "text/plain", (), 415, "invalid_argument", "malformed"),
    ("ClassifyPlay", b" " * (9 * MiB), "application/json", (), 413, "resource_exhausted",
     "too_large"),
]


@pytest.mark.parametrize("case", REFUSALS, ids=lambda c: f"{c[2]}-{c[3]}-{len(c[1])}")
def test_every_refusal_is_counted_by_code_and_reason(server: Running, case: tuple) -> None:
    """Each refusal of a call the port gives before its method runs is counted as gRPC
    counts admission's: started, handled with its code, rejected with its reason."""
    method, body, content_type, headers, status, code, reason = case
    grpc_code = "RESOURCE_EXHAUSTED" if reason == "too_large" else "INVALID_ARGUMENT"
    series = [("grpc_server_started_total", {}),
              ("grpc_server_handled_total", {"grpc_code": grpc_code}),
              ("shuangkou_requests_rejected_total", {"reason": reason})]
    before = server.scrape()
    answer = _raw(server.http_port, _post(f"/{SERVICE}/{method}", body, content_type,
                                          *headers))
    assert _status(answer) == status, answer[:300]
    if content_type == _WEB:
        assert f"grpc-status: {code}".encode() in answer.lower(), answer
    else:
        assert json.loads(_body(answer))["code"] == code
    after = server.scrape()
    for name, labels in series:
        assert metric_value(after, name, grpc_method=method, **labels) == metric_value(
            before, name, grpc_method=method, **labels) + 1, name


def test_requests_the_parser_cannot_read_are_counted(server: Running) -> None:
    before = server.scrape()
    for data in (b"GARBAGE\x00\r\n\r\n", b"CONNECT example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n",
                 b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"):
        answer = _raw(server.http_port, data)
        assert _status(answer) == 400, answer
        assert json.loads(_body(answer))["code"] == "invalid_argument"
    assert metric_value(server.scrape(), "shuangkou_requests_rejected_total",
                        grpc_method="unknown", reason="malformed") == metric_value(
        before, "shuangkou_requests_rejected_total", grpc_method="unknown",
        reason="malformed") + 3


# ----------------------------------------------------------------------------- one JSON style

def test_every_error_body_is_written_alike(server: Running) -> None:
    """The port's own errors (a path it does not have, a content type it does not read,
    a request it cannot parse) and a method's are written in one JSON style."""
    answers = [
        _raw(server.http_port, _post("/nowhere", b"{}", "application/json")),
        _raw(server.http_port, _post(f"/{SERVICE}/ClassifyPlay", b"{}", "text/plain")),
        _raw(server.http_port, b"GARBAGE\x00\r\n\r\n"),
        _raw(server.http_port, _post(f"/{SERVICE}/ClassifyPlay",
                                     b'{"play": {"cardsText": "XX"}}', "application/json")),
    ]
    for answer in answers:
        body = _body(answer)
        assert body == json.dumps(json.loads(body), ensure_ascii=False).encode(), body
