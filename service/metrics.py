"""Prometheus metrics: the standard gRPC server series (via a server interceptor) and the
service's domain counters.

Nothing is registered at import: the CLI builds a :class:`Metrics` on a registry of its
choice (a private ``CollectorRegistry`` in one process; ``None`` in ``--workers`` mode, where
prometheus_client's multiprocess mode writes every process's values to a shared directory
that the supervisor exposes through a ``MultiProcessCollector``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    multiprocess,
    start_http_server,
)

__all__ = ["Metrics", "MetricsInterceptor", "start_metrics_server", "multiprocess_registry"]

GRPC_LABELS = ("grpc_type", "grpc_service", "grpc_method")
# Rules queries take microseconds; the default buckets start at 5 ms.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SIZE_BUCKETS = (0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10_000, 50_000, 100_000)


class Metrics:
    """Every metric of one server process, registered on ``registry`` (None: multiprocess)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        kw: dict[str, Any] = {"registry": registry}
        self.started = Counter("grpc_server_started", "RPCs started on the server.",
                               GRPC_LABELS, **kw)
        self.handled = Counter("grpc_server_handled", "RPCs completed on the server, by status.",
                               (*GRPC_LABELS, "grpc_code"), **kw)
        self.handling = Histogram("grpc_server_handling_seconds",
                                  "Response latency of RPCs handled by the server.",
                                  GRPC_LABELS, buckets=LATENCY_BUCKETS, **kw)
        self.received = Counter("grpc_server_msg_received", "Messages received from clients.",
                                GRPC_LABELS, **kw)
        self.sent = Counter("grpc_server_msg_sent", "Messages sent to clients.",
                            GRPC_LABELS, **kw)
        self.plays_classified = Counter("shuangkou_plays_classified",
                                        "Plays classified, by variant and primary type "
                                        "(kind 'invalid' for plays with no reading).",
                                        ("variant", "kind"), **kw)
        self.enumeration_size = Histogram("shuangkou_enumeration_plays",
                                          "Legal plays listed per EnumerateLegalPlays call.",
                                          ("variant",), buckets=SIZE_BUCKETS, **kw)
        self.rounds_scored = Counter("shuangkou_rounds_scored",
                                     "Rounds settled, by variant, kind of win and input.",
                                     ("variant", "kind_of_win", "source"), **kw)
        self.replays_rejected = Counter("shuangkou_replays_rejected",
                                        "Replays or summaries refused as invalid, by reason.",
                                        ("variant", "reason"), **kw)
        self.worker_up = Gauge("shuangkou_worker_up", "1 per live server process (pid label in "
                               "--workers mode).", multiprocess_mode="liveall", **kw)

    def mark_up(self) -> None:
        self.worker_up.set(1)


def multiprocess_registry(path: str) -> CollectorRegistry:
    """A registry aggregating every worker's values from prometheus_client's directory."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)
    return registry


def start_metrics_server(port: int, host: str, registry: CollectorRegistry) -> Any:
    """Serve ``/metrics`` over HTTP; returns the HTTP server (call ``shutdown()`` to stop)."""
    httpd, _thread = start_http_server(port, addr=host, registry=registry)
    return httpd


# ----------------------------------------------------------------------------- interceptor

_TYPES = {
    (False, False): "unary",
    (True, False): "client_stream",
    (False, True): "server_stream",
    (True, True): "bidi_stream",
}


def _final_code(context: grpc.ServicerContext, failed: bool) -> str:
    code = context.code()
    if code is not None:
        return code.name
    if failed:
        return "UNKNOWN"
    if not context.is_active():   # the client went away, or the deadline passed
        return "DEADLINE_EXCEEDED" if context.time_remaining() <= 0 else "CANCELLED"
    return "OK"


class MetricsInterceptor(grpc.ServerInterceptor):
    """Counts started/handled RPCs, messages and latency for every method of the server."""

    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics
        self._cache: dict[tuple[str, int], grpc.RpcMethodHandler] = {}

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Any],
                          details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        handler = continuation(details)
        if handler is None:
            return None
        key = (details.method, id(handler))
        wrapped = self._cache.get(key)
        if wrapped is None:
            wrapped = self._wrap(details.method, handler)
            if len(self._cache) < 1024:
                self._cache[key] = wrapped
        return wrapped

    def _wrap(self, full_method: str, handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
        service, _, method = full_method.lstrip("/").rpartition("/")
        labels = (_TYPES[(handler.request_streaming, handler.response_streaming)],
                  service or "unknown", method)
        m = self._m
        started, received, sent = (c.labels(*labels) for c in (m.started, m.received, m.sent))
        handling = m.handling.labels(*labels)

        def finish(context: grpc.ServicerContext, t0: float, failed: bool) -> None:
            m.handled.labels(*labels, _final_code(context, failed)).inc()
            handling.observe(time.perf_counter() - t0)

        def count_in(requests: Iterable[Any]) -> Iterator[Any]:
            for request in requests:
                received.inc()
                yield request

        def unary_in(request: Any) -> Any:
            received.inc()
            return request

        if not handler.response_streaming:
            inner = handler.unary_unary or handler.stream_unary
            take = count_in if handler.request_streaming else unary_in

            def call_unary(request: Any, context: grpc.ServicerContext) -> Any:
                started.inc()
                t0 = time.perf_counter()
                failed = True
                try:
                    response = inner(take(request), context)
                    failed = False
                    if context.code() in (None, grpc.StatusCode.OK):
                        sent.inc()
                    return response
                finally:
                    finish(context, t0, failed)

            factory = (grpc.stream_unary_rpc_method_handler if handler.request_streaming
                       else grpc.unary_unary_rpc_method_handler)
            return factory(call_unary, request_deserializer=handler.request_deserializer,
                           response_serializer=handler.response_serializer)

        inner_stream = handler.unary_stream or handler.stream_stream
        take_s = count_in if handler.request_streaming else unary_in

        def call_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            started.inc()
            t0 = time.perf_counter()
            failed = True
            try:
                for response in inner_stream(take_s(request), context):
                    sent.inc()
                    yield response
                failed = False
            except GeneratorExit:    # the client cancelled: not a server failure
                failed = False
                raise
            finally:
                finish(context, t0, failed)

        factory_s = (grpc.stream_stream_rpc_method_handler if handler.request_streaming
                     else grpc.unary_stream_rpc_method_handler)
        return factory_s(call_stream, request_deserializer=handler.request_deserializer,
                         response_serializer=handler.response_serializer)


def mark_process_dead(pid: int, path: str | None = None) -> None:
    """Drop a finished worker's live gauges (multiprocess mode)."""
    multiprocess.mark_process_dead(pid, path or os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
