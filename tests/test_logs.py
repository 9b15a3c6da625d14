"""Logs (service/logs.py): the text format escapes what clients wrote, the JSON format is one
object a line, and the access log writes one line per call over gRPC and HTTP, bounded by
its token buckets, the rest counted and summarised."""

from __future__ import annotations

import json
import logging
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_helpers import ServerProcess, cards, metric_value, running_server

from shuangkou.service.logs import (
    ACCESS_LOGGER,
    AccessLog,
    JsonFormatter,
    LineBound,
    TextFormatter,
    bound_lines,
)
from shuangkou.v1 import service_pb2
from shuangkou.v1.variants_pb2 import RuleSet

HOSTILE = "x\x1b]0;owned\x07\x1b[2J\u202eevil\nFAKE 00:00 INFO line"


def record(message: str, *args: Any, exc: bool = False, **extra: Any) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError(HOSTILE)
        except ValueError:
            exc_info = sys.exc_info()
    rec = logging.LogRecord("shuangkou.test", logging.WARNING, __file__, 1, message, args,
                            exc_info)
    rec.__dict__.update(extra)
    return rec


def test_text_format_escapes_control_characters_and_keeps_one_line() -> None:
    line = TextFormatter().format(record("client sent %s", HOSTILE))
    first, *rest = line.split("\n")
    assert rest == [] and "\x1b" not in line and "\u202e" not in line
    assert r"\x1b]0;owned\x07\x1b[2J\u202eevil\x0aFAKE" in first
    assert " WARNING " in first and "shuangkou.test: client sent x" in first


def test_text_format_keeps_a_traceback_on_its_lines_escaped() -> None:
    line = TextFormatter().format(record("failed", exc=True))
    assert line.splitlines()[1] == "Traceback (most recent call last):"
    assert "\x1b" not in line and "\u202e" not in line and r"\u202eevil" in line


def test_json_format_is_one_object_a_line_with_the_fields() -> None:
    line = JsonFormatter().format(record("client sent %s", HOSTILE, exc=True, peer="1.2.3.4",
                                         bytes_in=5))
    assert "\n" not in line and "\x1b" not in line and "\u202e" not in line
    doc = json.loads(line)
    assert doc["message"] == f"client sent {HOSTILE}"      # JSON gives it back as it was
    assert (doc["level"], doc["logger"], doc["peer"], doc["bytes_in"]) == (
        "WARNING", "shuangkou.test", "1.2.3.4", 5)
    assert doc["time"].endswith("Z") and len(doc["time"]) == len("2026-01-01T00:00:00.000Z")
    assert doc["exception"].startswith("Traceback") and isinstance(doc["pid"], int)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Counted:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def __call__(self, outcome: str) -> Any:
        counts = self.counts

        class Child:
            def inc(self) -> None:
                counts[outcome] = counts.get(outcome, 0) + 1
        return Child()


class Captured:
    """The records the test's call phase logged so far, as a list."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self._caplog = caplog

    def __iter__(self) -> Iterator[logging.LogRecord]:
        return iter(self._caplog.records)

    def __getitem__(self, index: int) -> logging.LogRecord:
        return self._caplog.records[index]


@pytest.fixture
def access_lines(caplog: pytest.LogCaptureFixture) -> Captured:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    return Captured(caplog)


def test_access_log_is_bounded_per_outcome_and_summarises_the_rest(
        access_lines: Captured) -> None:
    clock, dropped = Clock(), Counted()
    access = AccessLog(3, dropped, clock=clock)

    def calls(n: int, code: str) -> None:
        for _ in range(n):
            access.call("/s.S/M", "grpc", code, 0.001, "ipv4:1.2.3.4:5", 10, 20)

    calls(10, "OK")
    calls(5, "INVALID_ARGUMENT")        # a flood of successes does not hide the errors
    lines = [r for r in access_lines if getattr(r, "access", False)]
    assert [r.code for r in lines] == ["OK"] * 3 + ["INVALID_ARGUMENT"] * 3
    assert dropped.counts == {"ok": 7, "error": 2}
    assert not [r for r in access_lines if hasattr(r, "access_dropped")]   # not yet due
    clock.now += 1.0          # a second on: the tokens are back, and a summary is due
    calls(1, "OK")
    (summary,) = [r for r in access_lines if hasattr(r, "access_dropped")]
    assert summary.levelno == logging.WARNING and summary.access_dropped == 9
    assert "… 9 access lines dropped over" in summary.getMessage()
    assert access_lines[-1].code == "OK"          # the line itself after its summary
    calls(10, "OK")           # under a steady flood: one summary a second, not one a line
    clock.now += 0.5
    calls(10, "OK")
    assert len([r for r in access_lines if hasattr(r, "access_dropped")]) == 1
    access.flush()            # at shutdown: what is left
    assert [r.access_dropped for r in access_lines if hasattr(r, "access_dropped")] == [9, 17]


def test_client_caused_lines_are_bounded_per_kind_and_summarised(
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 62: the other lines a client can cause, bounded as the access lines are, per
    logger and kind of line (a flood of one kind does not hide another), the rest counted
    by logger and summarised once a second."""
    clock, dropped = Clock(), Counted()
    logger = logging.getLogger("shuangkou.test.bound")
    bound = LineBound(2, dropped, clock=clock)
    logger.addFilter(bound)
    try:
        with caplog.at_level(logging.WARNING, logger=logger.name):
            for i in range(6):
                logger.warning("garbage from %s", i)
            logger.error("a traceback of ours")          # another kind: its own bucket
            clock.now += 1.0
            logger.warning("garbage from %s", "late")    # back, and the summary is due
    finally:
        logger.removeFilter(bound)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:3] == ["garbage from 0", "garbage from 1", "a traceback of ours"]
    (summary,) = [r for r in caplog.records if hasattr(r, "lines_dropped")]
    assert summary.lines_dropped == 4 and "… 4 lines of this logger dropped" in \
        summary.getMessage()
    assert messages[-1] == "garbage from late"
    assert dropped.counts == {"shuangkou.test.bound": 4}


def test_bound_lines_replaces_its_bound() -> None:
    names = ("shuangkou.test.bound2",)
    first, second = bound_lines(names, 5), bound_lines(names, 7)
    filters = logging.getLogger(names[0]).filters
    assert second in filters and first not in filters
    logging.getLogger(names[0]).removeFilter(second)


def _fields(line: logging.LogRecord) -> dict[str, Any]:
    return {k: getattr(line, k) for k in ("method", "protocol", "code", "peer", "bytes_in",
                                          "bytes_out", "duration_ms")}


def test_access_lines_of_grpc_and_http_calls(access_lines: Captured) -> None:
    request = service_pb2.ClassifyPlayRequest(rule_set=RuleSet(id="baibian"),
                                              play=cards("7777 BJ"))
    with running_server(http=True, access_log=100) as s:
        s.stub.ClassifyPlay(request, timeout=10)
        with pytest.raises(grpc.RpcError):
            s.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
                rule_set=RuleSet(id="baibian"), play=cards("7 8")), timeout=10)
        health_pb2_grpc.HealthStub(s.channel).Check(health_pb2.HealthCheckRequest(),
                                                    timeout=10)
        url = f"{s.http_url}/shuangkou.v1.ShuangkouService/ClassifyPlay"
        body = json.dumps({"ruleSet": {"id": "baibian"}, "play": {"cardsText": "7777 BJ"}})
        with urllib.request.urlopen(urllib.request.Request(
                url, body.encode(), {"Content-Type": "application/json"}), timeout=10) as r:
            answer = r.read()
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(urllib.request.Request(
                f"{s.http_url}/no/%1b%5b2J", b"a=1",      # curl's default content type
                {"Content-Type": "application/x-www-form-urlencoded"}),
                timeout=10)
        missing.value.close()
        for probe in ("/healthz", "/readyz"):   # the probes' requests (whatever they answer)
            try:
                urllib.request.urlopen(f"{s.http_url}{probe}", timeout=10).close()
            except urllib.error.HTTPError as answered:
                answered.close()
        scraped = s.scrape()
    lines = [r for r in access_lines if getattr(r, "access", False)]
    grpc_ok, grpc_bad, http_ok, http_404 = lines      # the health check and probe are not
    method = "/shuangkou.v1.ShuangkouService/ClassifyPlay"
    assert _fields(grpc_ok) | {"duration_ms": 0, "peer": ""} == {
        "method": method, "protocol": "grpc", "code": "OK", "peer": "",
        "bytes_in": request.ByteSize(), "bytes_out": grpc_ok.bytes_out, "duration_ms": 0}
    assert grpc_ok.bytes_out > 0 and grpc_ok.peer.startswith("ipv4:127.0.0.1:")
    assert grpc_ok.duration_ms > 0
    assert (grpc_bad.code, grpc_bad.protocol) == ("INVALID_ARGUMENT", "grpc")
    assert (http_ok.method, http_ok.protocol, http_ok.code, http_ok.status,
            http_ok.http_method) == (method, "connect", "OK", 200, "POST")
    assert (http_ok.bytes_in, http_ok.bytes_out) == (len(body), len(answer))
    assert http_ok.peer.startswith("127.0.0.1:")
    assert (http_404.protocol, http_404.code, http_404.status) == ("http", "", 404)
    assert http_404.method == "/no/\x1b[2J"      # as sent; the formatters escape it
    assert r"/no/\x1b[2J" in TextFormatter().format(http_404)
    assert metric_value(scraped, "shuangkou_access_lines_dropped_total", outcome="ok") == 0


def test_serve_logs_json_lines_with_access_lines() -> None:
    server = ServerProcess("--port", "0", "--metrics-port", "0", "--log-format", "json",
                           "--access-log", "50", "--grace", "1")
    try:
        server.wait_serving()
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            from shuangkou.v1 import service_pb2_grpc

            service_pb2_grpc.ShuangkouServiceStub(channel).ClassifyPlay(
                service_pb2.ClassifyPlayRequest(rule_set=RuleSet(id="baibian"),
                                                play=cards("7777 BJ")), timeout=10)
    finally:
        assert server.stop() == 0
    docs = [json.loads(line) for line in server.log]       # every line is one JSON object
    assert any(d["message"].startswith("serving shuangkou.v1 on") for d in docs)
    (access,) = [d for d in docs if d.get("access")]
    assert (access["logger"], access["method"], access["code"], access["protocol"]) == (
        ACCESS_LOGGER, "/shuangkou.v1.ShuangkouService/ClassifyPlay", "OK", "grpc")
    assert docs[-1]["message"] == "stopped"
