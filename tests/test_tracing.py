"""OpenTelemetry tracing (service/tracing.py), through a real in-process server on both
ports, its spans caught by the SDK's in-memory exporter: the caller's W3C ``traceparent``
continued over gRPC metadata and HTTP headers, one SERVER span per call with its code and
status, a child span for a SuggestAction's search; and nothing of OpenTelemetry imported
while tracing is off."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from grpc_helpers import ROOT, cards, running_server

from shuangkou.service import tracing
from shuangkou.v1 import rounds_pb2, rounds_pb2_grpc, service_pb2
from shuangkou.v1.variants_pb2 import RuleSet

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (pip install -e .[test])")
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"
CLASSIFY = "shuangkou.v1.ShuangkouService/ClassifyPlay"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    try:
        yield exporter
    finally:
        tracing.disable()
        provider.shutdown()


def classify(text: str) -> service_pb2.ClassifyPlayRequest:
    return service_pb2.ClassifyPlayRequest(rule_set=RuleSet(id="baibian"), play=cards(text))


def named(exporter: InMemorySpanExporter, name: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_grpc_call_continues_the_callers_trace(spans: InMemorySpanExporter) -> None:
    with running_server() as s:
        s.stub.ClassifyPlay(classify("7777 BJ"), timeout=10,
                            metadata=(("traceparent", TRACEPARENT),))
        with pytest.raises(grpc.RpcError):
            s.stub.ClassifyPlay(classify("7 8"), timeout=10)     # no parent: a trace of its own
    ok, bad = named(spans, CLASSIFY)
    assert f"{ok.context.trace_id:032x}" == TRACE
    assert ok.parent is not None and f"{ok.parent.span_id:016x}" == PARENT
    assert ok.parent.is_remote and ok.kind == SpanKind.SERVER
    assert dict(ok.attributes) == {
        "rpc.system": "grpc", "rpc.service": "shuangkou.v1.ShuangkouService",
        "rpc.method": "ClassifyPlay", "shuangkou.protocol": "grpc", "rpc.grpc.status_code": 0}
    assert ok.status.status_code == StatusCode.UNSET
    # a caller's mistake: its code kept, the server span not failed (RPC conventions)
    assert bad.parent is None and f"{bad.context.trace_id:032x}" != TRACE
    assert bad.attributes["rpc.grpc.status_code"] == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert bad.status.status_code == StatusCode.UNSET


def test_a_server_failure_marks_the_span_error(spans: InMemorySpanExporter,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from shuangkou.service.api.shuangkou import ShuangkouServicer

    def broken(self: Any, request: Any, context: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(ShuangkouServicer, "GetServerInfo", broken)
    with running_server() as s, pytest.raises(grpc.RpcError) as failed:
        s.stub.GetServerInfo(service_pb2.GetServerInfoRequest(), timeout=10,
                             metadata=(("traceparent", TRACEPARENT),))
    (span,) = named(spans, "shuangkou.v1.ShuangkouService/GetServerInfo")
    code = failed.value.code()
    assert span.status.status_code == StatusCode.ERROR
    assert span.status.description == code.name
    assert span.attributes["rpc.grpc.status_code"] == code.value[0]
    assert f"{span.context.trace_id:032x}" == TRACE


def test_http_calls_continue_the_trace_from_the_header(spans: InMemorySpanExporter) -> None:
    with running_server(http=True) as s:
        for content_type, body in (
                ("application/json", json.dumps({"ruleSet": {"id": "baibian"},
                                                 "play": {"cardsText": "7777 BJ"}}).encode()),
                ("application/grpc-web+proto", b"\0" + len(data := classify(
                    "7777 BJ").SerializeToString()).to_bytes(4, "big") + data)):
            with urllib.request.urlopen(urllib.request.Request(
                    f"{s.http_url}/{CLASSIFY}", body,
                    {"Content-Type": content_type, "traceparent": TRACEPARENT}),
                    timeout=10) as answer:
                assert answer.status == 200
    connect, grpc_web = named(spans, CLASSIFY)
    for span, protocol in ((connect, "connect"), (grpc_web, "grpc-web")):
        assert f"{span.context.trace_id:032x}" == TRACE
        assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT
        assert span.attributes["rpc.system"] == "connect_rpc"
        assert span.attributes["shuangkou.protocol"] == protocol
        assert span.attributes["rpc.grpc.status_code"] == 0


def test_a_search_is_a_child_span_of_its_call(spans: InMemorySpanExporter) -> None:
    with running_server() as s:
        rounds = rounds_pb2_grpc.RoundServiceStub(s.channel)
        state = rounds.StartRound(rounds_pb2.StartRoundRequest(seed=bytes(16)), timeout=10).state
        rounds.SuggestAction(rounds_pb2.SuggestActionRequest(
            state=state.data, search=rounds_pb2.SearchBudget(rollouts=40)), timeout=30,
            metadata=(("traceparent", TRACEPARENT),))
        rounds.SuggestAction(rounds_pb2.SuggestActionRequest(state=state.data), timeout=30)
    searched, plain = named(spans, "shuangkou.v1.RoundService/SuggestAction")
    (search,) = named(spans, "shuangkou.search")       # the call without a budget has none
    assert search.parent is not None and search.parent.span_id == searched.context.span_id
    assert search.context.trace_id == searched.context.trace_id
    assert f"{search.context.trace_id:032x}" == TRACE
    assert search.attributes["shuangkou.budget.rollouts"] == 40
    assert search.attributes["shuangkou.search.rollouts"] > 0
    assert plain.context.trace_id != searched.context.trace_id


def test_access_lines_name_the_trace(spans: InMemorySpanExporter,
                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="shuangkou.access")
    with running_server(http=True, access_log=100) as s:
        s.stub.ClassifyPlay(classify("7777 BJ"), timeout=10,
                            metadata=(("traceparent", TRACEPARENT),))
        with urllib.request.urlopen(urllib.request.Request(
                f"{s.http_url}/{CLASSIFY}", b'{"play": {"cardsText": "7777"}}',
                {"Content-Type": "application/json", "traceparent": TRACEPARENT}),
                timeout=10) as answer:
            assert answer.status == 200
    lines = [r for r in caplog.records if getattr(r, "access", False)]
    assert [(r.protocol, r.trace_id) for r in lines] == [("grpc", TRACE), ("connect", TRACE)]


def test_health_checks_are_not_traced(spans: InMemorySpanExporter) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with running_server() as s:
        health_pb2_grpc.HealthStub(s.channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert spans.get_finished_spans() == ()


def test_reflection_calls_are_traced(spans: InMemorySpanExporter) -> None:
    """docs/operations.md: health checks are not traced, reflection is (as any call: a
    grpcurl call without .proto files makes one first)."""
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    with running_server() as s:
        stub = reflection_pb2_grpc.ServerReflectionStub(s.channel)
        replies = list(stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10,
            metadata=(("traceparent", TRACEPARENT),)))
    assert "shuangkou.v1.ShuangkouService" in {
        x.name for x in replies[0].list_services_response.service}
    (span,) = named(spans, "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
    assert f"{span.context.trace_id:032x}" == TRACE and span.kind == SpanKind.SERVER
    assert span.attributes["rpc.grpc.status_code"] == 0


def test_nothing_of_opentelemetry_is_imported_while_tracing_is_off() -> None:
    probe = """
import sys
from shuangkou.service import cli, interceptor, server, tracing
from shuangkou.service.http import port
from shuangkou.service.api import rounds
with tracing.traced("x"):
    pass
assert tracing.start_call("/a.B/C", (), "grpc") is None
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_serve_refuses_tracing_without_the_sdk(tmp_path: Any) -> None:
    """Without the otel extra (hidden here), ``--tracing`` stops the server at start-up
    with status 2 and the install command, before it binds anything."""
    (tmp_path / "opentelemetry").mkdir()     # an empty regular package shadows the SDK's
    (tmp_path / "opentelemetry" / "__init__.py").write_text("")
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
         "from shuangkou.service.cli import main; sys.exit(main(sys.argv[2:]))",
         str(tmp_path), "serve", "--tracing", "--host", "127.0.0.1", "--port", "0", "--metrics-port", "0",
         "--no-http"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'shuangkou[otel]'" in done.stderr
