"""Prometheus metrics: the standard gRPC server series and the service's domain counters,
and the interceptor that counts every call (and applies :mod:`shuangkou.service.admission`
on the way).

Nothing is registered at import: the CLI builds a :class:`Metrics` on a registry of its
choice (a private ``CollectorRegistry`` in one process; ``None`` in ``--workers`` mode, where
prometheus_client's multiprocess mode writes every process's values to a shared directory
that the supervisor exposes, :mod:`shuangkou.service.exposition`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeAlias, cast

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .admission import REJECT_REASONS, Admission, CallPool, RejectedMessage
from .errors import ended, refuse, status_code

__all__ = ["Metrics", "MetricsInterceptor"]

GRPC_LABELS = ("grpc_type", "grpc_service", "grpc_method")
HEALTH_SERVICE = "grpc.health.v1.Health"
# Rules queries take microseconds; the default buckets start at 5 ms.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SIZE_BUCKETS = (0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10_000, 50_000, 100_000)

_TYPES = {
    (False, False): "unary",
    (True, False): "client_stream",
    (False, True): "server_stream",
    (True, True): "bidi_stream",
}


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
        self.rounds_started = Counter("shuangkou_rounds_started",
                                      "Live rounds dealt by StartRound, by variant and deal "
                                      "(hands: the caller's; seed: shuffled by the server).",
                                      ("variant", "deal"), **kw)
        self.rounds_finished = Counter("shuangkou_rounds_finished",
                                       "Live rounds ended by an ApplyAction, by variant and "
                                       "kind of win.", ("variant", "kind_of_win"), **kw)
        self.rule_errors = Counter("shuangkou_rule_errors",
                                   "Actions a live round's state forbids (FAILED_PRECONDITION), "
                                   "by RPC and rule (NOT_YOUR_TURN, CARDS_NOT_HELD ...).",
                                   ("grpc_method", "reason"), **kw)
        self.suggestions = Counter("shuangkou_suggestions",
                                   "托管 decisions made by SuggestAction, by variant and action "
                                   "(play, pass, escape).", ("variant", "action"), **kw)
        self.suggest_seconds = Histogram("shuangkou_suggest_seconds",
                                         "Time the 托管 policy took to decide one action, by "
                                         "variant.", ("variant",), buckets=LATENCY_BUCKETS, **kw)
        self.http_requests = Counter("shuangkou_http_requests",
                                     "Requests to the HTTP port, by protocol (connect: JSON or "
                                     "binary; grpc_web; grpc; other: not an RPC's content "
                                     "type).", ("protocol",), **kw)
        self.worker_up = Gauge("shuangkou_worker_up", "1 per live server process (pid label in "
                               "--workers mode).", multiprocess_mode="liveall", **kw)
        self.rejected = Counter("shuangkou_requests_rejected",
                                "Requests refused before the servicer saw them, or replies too "
                                "large to send, by method and reason "
                                f"({', '.join(REJECT_REASONS)}).",
                                (*GRPC_LABELS, "reason"), **kw)
        # --- the HTTP edge (issue 33): connections and what the server cut short
        self.http_connections = Counter("shuangkou_http_connections",
                                        "Connections accepted on the HTTP ports (API and "
                                        "metrics), by port.", ("port",), **kw)
        self.http_open = Gauge("shuangkou_http_open_connections",
                               "HTTP connections open now, by port.", ("port",),
                               multiprocess_mode="livesum", **kw)
        self.http_refused = Counter("shuangkou_http_refused",
                                    "HTTP connections answered 503 and closed at once because "
                                    "http_max_connections were open, by port.", ("port",), **kw)
        self.http_timeouts = Counter("shuangkou_http_timeouts",
                                     "HTTP connections closed by a timeout, by port and phase "
                                     "(header: the request head took over http_header_timeout; "
                                     "body: the body over http_body_timeout; idle: no request "
                                     "for http_keepalive_timeout).", ("port", "phase"), **kw)
        self.http_disconnects = Counter("shuangkou_http_disconnects",
                                        "HTTP calls whose client hung up before the answer "
                                        "(the call ends CANCELLED).", **kw)
        self.http_ready = Gauge("shuangkou_http_ready", "1 while the HTTP port answers a "
                                "loopback probe (the service's gRPC health follows it).",
                                multiprocess_mode="liveall", **kw)
        self.build_info = Gauge("shuangkou_build_info", "Always 1; the labels say which build "
                                "answers.", ("version", "python", "grpcio", "core"),
                                multiprocess_mode="max", **kw)

    def init_series(self, service: Any) -> None:
        """Zero the refusal series of every method of ``service`` (a protobuf ServiceDescriptor)
        so rates and alerts see them before the first refusal."""
        for method in service.methods:
            kind = _TYPES[(method.client_streaming, method.server_streaming)]
            for reason in REJECT_REASONS:
                if reason != "stream_limit" or kind != "unary":
                    self.rejected.labels(kind, service.full_name, method.name, reason)

    def init_round_series(self) -> None:
        """Zero the rule-error series (ApplyAction, SuggestAction, every rule) so that rates
        and alerts see them before the first error."""
        from shuangkou.core.errors import RuleViolation

        for method in ("ApplyAction", "SuggestAction"):
            for reason in RuleViolation.RULE_REASONS:
                self.rule_errors.labels(method, reason)

    def mark_up(self) -> None:
        from .version import build_info

        self.worker_up.set(1)
        self.build_info.labels(**build_info()).set(1)


def _final_code(context: grpc.ServicerContext, failed: bool) -> str:
    # A call the client cancelled (or whose deadline passed) is counted as such whatever
    # status the handler tried to set afterwards: an abort on a dead call is not a server error.
    stop = ended(context)
    if stop is not None:
        return stop.code.name
    code = status_code(context)
    if code is not None:
        return code.name
    return "UNKNOWN" if failed else "OK"


#: A method handler of any service: the interceptor passes every message type through.
_RpcHandler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"   # generic in the stubs only


class MetricsInterceptor(grpc.ServerInterceptor):
    """Counts started/handled RPCs, messages and latency for every method of the server, and
    applies admission control (:class:`~shuangkou.service.admission.Admission`: message
    size both ways, ``max_streams``, ``max_queued_calls``) before the servicer runs; each
    refusal counts in
    ``shuangkou_requests_rejected_total{reason}`` and ends the call through
    :func:`shuangkou.service.errors.refuse` (INVALID_ARGUMENT for a request that does not
    decode, RESOURCE_EXHAUSTED for the rest).
    """

    def __init__(self, metrics: Metrics, *, max_message_bytes: int = 2**31 - 1,
                 max_streams: int | None = None, pool: CallPool | None = None,
                 max_queued_calls: int | None = None) -> None:
        self._m = metrics
        self.admission = Admission(max_message_bytes=max_message_bytes,
                                   max_streams=max_streams, pool=pool,
                                   max_queued_calls=max_queued_calls)
        self.max_streams = max_streams
        # per method and handler: the counting handler, and the one refusing an overload
        self._cache: dict[tuple[str, int], tuple[_RpcHandler, _RpcHandler | None]] = {}

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Any],
                          details: grpc.HandlerCallDetails) -> _RpcHandler | None:
        handler = continuation(details)
        if handler is None:
            return None
        key = (details.method, id(handler))
        pair = self._cache.get(key)
        if pair is None:
            pair = self._wrap(details.method, handler)
            if len(self._cache) < 1024:
                self._cache[key] = pair
        # Decided as gRPC takes the call in, before it queues for a thread (health checks
        # and refusals never queue behind the work: they have threads of their own).
        if pair[1] is not None and self.admission.overloaded():
            return pair[1]
        return pair[0]

    def wrap(self, full_method: str, handler: _RpcHandler) -> _RpcHandler:
        """``handler`` counted and admitted as the method ``/service/Method``: the HTTP
        side's calls (:mod:`shuangkou.service.web`, with a handler that has no serializers
        and a context of its own), as gRPC's are in :meth:`intercept_service`."""
        return self._wrap(full_method, handler)[0]

    def wrap_both(self, full_method: str, handler: _RpcHandler
                  ) -> tuple[_RpcHandler, _RpcHandler | None]:
        """:meth:`wrap`'s handler, and the one refusing the method as overloaded (counted
        as gRPC's refusals are; None for health checks): the HTTP side decides overload
        before it queues a call for a handler thread, as :meth:`intercept_service` does."""
        return self._wrap(full_method, handler)

    def _wrap(self, full_method: str,
              handler: _RpcHandler) -> tuple[_RpcHandler, _RpcHandler | None]:
        service, _, method = full_method.lstrip("/").rpartition("/")
        labels = (_TYPES[(handler.request_streaming, handler.response_streaming)],
                  service or "unknown", method)
        m = self._m
        admission = self.admission
        started, handling = m.started.labels(*labels), m.handling.labels(*labels)
        handled: dict[str, Any] = {}      # by status code: its labelled child, found once

        def finish(context: grpc.ServicerContext, t0: float, failed: bool) -> None:
            code = _final_code(context, failed)
            child = handled.get(code)
            if child is None:
                child = handled[code] = m.handled.labels(*labels, code)
            child.inc()
            handling.observe(time.perf_counter() - t0)

        def refused(context: grpc.ServicerContext, why: RejectedMessage) -> None:
            m.rejected.labels(*labels, why.reason).inc()
            refuse(context, why.reason, why.detail)

        def overloaded(request: Any, context: grpc.ServicerContext) -> Any:
            """The whole call when the server is overloaded: counted, refused at once."""
            started.inc()
            t0 = time.perf_counter()
            try:
                refused(context, admission.overload)
            finally:
                finish(context, t0, True)

        overloaded.experimental_thread_pool = admission.refusals  # type: ignore[attr-defined]
        shapes = {(False, False): grpc.unary_unary_rpc_method_handler,
                  (True, False): grpc.stream_unary_rpc_method_handler,
                  (False, True): grpc.unary_stream_rpc_method_handler,
                  (True, True): grpc.stream_stream_rpc_method_handler}
        shape = shapes[(handler.request_streaming, handler.response_streaming)]
        refusing: _RpcHandler | None = None if service == HEALTH_SERVICE else shape(overloaded)
        return self._counting(handler, labels, finish, refused, service), refusing

    def _counting(self, handler: _RpcHandler, labels: tuple[str, str, str],
                  finish: Callable[[grpc.ServicerContext, float, bool], None],
                  refused: Callable[[grpc.ServicerContext, RejectedMessage], None],
                  service: str) -> _RpcHandler:
        """``handler`` counted, its messages checked both ways (health checks on their own
        thread)."""
        m = self._m
        admission = self.admission
        started, received, sent = (c.labels(*labels) for c in (m.started, m.received, m.sent))

        def checked(request: Any, context: grpc.ServicerContext) -> Any:
            received.inc()
            if isinstance(request, RejectedMessage):
                refused(context, request)
            return request

        in_band = getattr(handler.stream_stream or handler.stream_unary,
                          "accepts_rejected_messages", False)

        def count_in(requests: Iterable[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            for request in requests:
                if in_band and isinstance(request, RejectedMessage):
                    received.inc()
                    m.rejected.labels(*labels, request.reason).inc()
                    yield request
                else:
                    yield checked(request, context)

        to_wire = admission.serializer(handler.response_serializer)

        def check_out(response: Any, context: grpc.ServicerContext) -> Any:
            """The reply serialized once (the bytes pass through ``to_wire`` untouched),
            refused when over the limit, counted."""
            data = to_wire(response) if to_wire is not None else response
            # A handler without a serializer (the HTTP side, whose codec encodes the reply)
            # passes the message on: its binary size is what the limit bounds.
            too_large = admission.reply_refusal(len(data) if isinstance(data, bytes)
                                                else data.ByteSize())
            if too_large is not None:
                refused(context, too_large)
            sent.inc()
            return data

        # A servicer method may read its requests' bytes itself (``request_reader``, the
        # generated class's parse for any request it does not read); the HTTP side's
        # handlers, with no deserializer, pass their messages on.
        behaviour = (handler.unary_unary or handler.unary_stream or handler.stream_unary
                     or handler.stream_stream)
        reader = getattr(behaviour, "request_reader", None)
        decode = admission.decoder(handler.request_deserializer and
                                   (reader or handler.request_deserializer))
        if not handler.response_streaming and not handler.request_streaming:
            # gRPC sets exactly the behaviour that matches the two streaming flags.
            inner = cast(Callable[[Any, grpc.ServicerContext], Any], handler.unary_unary)

            def call_unary(request: Any, context: grpc.ServicerContext) -> Any:
                started.inc()
                t0 = time.perf_counter()
                failed = True
                try:
                    response = inner(checked(request, context), context)
                    if status_code(context) in (None, grpc.StatusCode.OK):
                        response = check_out(response, context)
                    failed = False
                    return response
                finally:
                    finish(context, t0, failed)

            if service == HEALTH_SERVICE:   # probes never wait behind a burst of calls
                call_unary.experimental_thread_pool = admission.probes  # type: ignore[attr-defined]
            return grpc.unary_unary_rpc_method_handler(
                call_unary, request_deserializer=decode, response_serializer=to_wire)

        def admitted(context: grpc.ServicerContext) -> None:
            full = admission.enter_stream()
            if full is not None:
                refused(context, full)

        if not handler.response_streaming:      # client streaming: one reply
            inner_cs = cast(Callable[[Iterator[Any], grpc.ServicerContext], Any],
                            handler.stream_unary)

            def call_client_stream(requests: Any, context: grpc.ServicerContext) -> Any:
                started.inc()
                t0 = time.perf_counter()
                failed = True
                try:
                    admitted(context)
                    try:
                        response = inner_cs(count_in(requests, context), context)
                        if status_code(context) in (None, grpc.StatusCode.OK):
                            response = check_out(response, context)
                    finally:
                        admission.leave_stream()
                    failed = False
                    return response
                finally:
                    finish(context, t0, failed)

            return grpc.stream_unary_rpc_method_handler(
                call_client_stream, request_deserializer=decode, response_serializer=to_wire)

        inner_stream = cast(Callable[[Any, grpc.ServicerContext], Iterator[Any]],
                            handler.unary_stream or handler.stream_stream)
        if getattr(inner_stream, "experimental_non_blocking", False):
            return self._wrap_non_blocking(handler, decode, started, sent, finish, checked)

        def call_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            started.inc()
            t0 = time.perf_counter()
            failed = True
            try:
                admitted(context)
                try:
                    arg = (count_in(request, context) if handler.request_streaming
                           else checked(request, context))
                    for response in inner_stream(arg, context):
                        yield check_out(response, context)
                finally:
                    admission.leave_stream()
                failed = False
            except GeneratorExit:    # the client cancelled: not a server failure
                failed = False
                raise
            finally:
                finish(context, t0, failed)

        factory_s = (grpc.stream_stream_rpc_method_handler if handler.request_streaming
                     else grpc.unary_stream_rpc_method_handler)
        return factory_s(call_stream, request_deserializer=decode, response_serializer=to_wire)

    @staticmethod
    def _wrap_non_blocking(handler: _RpcHandler, decode: Callable[[bytes], Any],
                           started: Any, sent: Any, finish: Callable[..., None],
                           checked: Callable[..., Any]) -> _RpcHandler:
        """A callback-style stream (health ``Watch``) that holds no thread while open: keep it
        so (gRPC looks for ``experimental_non_blocking`` on the behaviour) and count it when
        the call ends rather than when the handler returns. Not under ``max_streams``."""
        # A non-blocking behaviour also takes ``send_response_callback`` and returns None.
        inner = cast(Callable[..., None], handler.unary_stream)

        def call_watch(request: Any, context: grpc.ServicerContext,
                       send_response_callback: Callable[[Any], None]) -> None:
            started.inc()
            t0 = time.perf_counter()
            context.add_callback(lambda: finish(context, t0, False))
            request = checked(request, context)

            def send(response: Any) -> None:
                if response is not None:
                    sent.inc()
                send_response_callback(response)

            inner(request, context, send_response_callback=send)

        call_watch.experimental_non_blocking = True  # type: ignore[attr-defined]
        call_watch.experimental_thread_pool = None  # type: ignore[attr-defined]
        return grpc.unary_stream_rpc_method_handler(
            call_watch, request_deserializer=decode,
            response_serializer=handler.response_serializer)
