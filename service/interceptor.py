"""The server's one interceptor: every call of every method counted in the ``grpc_server_*``
series of :class:`~shuangkou.service.metrics.Metrics` (started, handled by status, latency,
messages each way), and passed through :class:`~shuangkou.service.admission.Admission` on
the way (message size both ways, ``max_streams``, ``max_queued_calls``), whose refusals count
in ``shuangkou_requests_rejected_total{reason}``. The HTTP side's calls go through the same
(:meth:`MetricsInterceptor.wrap`), so both ports share one stream cap and one set of series.

Each call of the API (not the health checks) is also where its trace span starts and ends
(:mod:`shuangkou.service.tracing`, when tracing is on) and, on gRPC, where its access line is
written (:class:`~shuangkou.service.logs.AccessLog`, when ``access_log`` is set; the HTTP
side writes its own, with the HTTP status, from the code noted here).

What each limit is, and how a refused call ends, is admission's; here only which calls
pass through it and what is counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import grpc

from . import tracing
from .admission import Admission, CallPool, Count, RejectedMessage
from .errors import ended, status_code
from .metrics import RPC_TYPES, Metrics

if TYPE_CHECKING:
    from .logs import AccessLog

__all__ = ["MetricsInterceptor", "HEALTH_SERVICE"]

HEALTH_SERVICE = "grpc.health.v1.Health"

#: A method handler of any service: the interceptor passes every message type through.
_RpcHandler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"   # generic in the stubs only
_CODES = {c.name: c.value[0] for c in grpc.StatusCode}


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


def _size(request: Any) -> int:
    """A request message's size on the wire, for the access line (gRPC decodes messages on
    its polling thread, where no handler sees the bytes); 0 for one refused undecoded."""
    return 0 if isinstance(request, RejectedMessage) else cast(int, request.ByteSize())


class MetricsInterceptor(grpc.ServerInterceptor):
    """Counts started/handled RPCs, messages and latency for every method of the server, and
    applies its :attr:`admission` before the servicer runs and to every reply."""

    def __init__(self, metrics: Metrics, *, max_message_bytes: int = 2**31 - 1,
                 max_streams: int | None = None, pool: CallPool | None = None,
                 max_queued_calls: int | None = None, access: AccessLog | None = None) -> None:
        self._m = metrics
        self.access = access
        self.admission = Admission(max_message_bytes=max_message_bytes,
                                   max_streams=max_streams, pool=pool,
                                   max_queued_calls=max_queued_calls)
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
        side's calls (:mod:`shuangkou.service.http.seam`, with a handler that has no serializers
        and a context of its own), as gRPC's are in :meth:`intercept_service`."""
        return self._wrap(full_method, handler, http=True)[0]

    def wrap_both(self, full_method: str, handler: _RpcHandler
                  ) -> tuple[_RpcHandler, _RpcHandler | None]:
        """:meth:`wrap`'s handler, and the one refusing the method as overloaded (counted
        as gRPC's refusals are; None for health checks): the HTTP side decides overload
        before it queues a call for a handler thread, as :meth:`intercept_service` does."""
        return self._wrap(full_method, handler, http=True)

    def count_expired(self, services: tuple[str, ...], kind: str, full_method: str) -> None:
        """A call of one of ``services`` that gRPC ended unseen, because its deadline passed
        (or its client cancelled) while it waited for a handler thread (reported by
        :class:`~shuangkou.service.admission.CallPool`): counted as refused, reason
        ``expired``, the only trace such a call leaves."""
        service, _, method = full_method.lstrip("/").rpartition("/")
        if service in services:
            self._m.rejected.labels(kind, service, method, "expired").inc()

    def count_refused(self, full_method: str, grpc_type: str, code: grpc.StatusCode,
                      reason: str, seconds: float = 0.0) -> None:
        """A call of ``full_method`` that the HTTP port refused before any handler ran (a
        body over the method's limit, framing its protocol does not allow, a bad deadline
        header: :mod:`shuangkou.service.http.refusals`): counted as this interceptor counts the
        refusals of admission — started, handled with ``code``, its latency, and rejected
        for ``reason`` (one of :data:`~shuangkou.service.admission.REJECT_REASONS`)."""
        service, _, method = full_method.lstrip("/").rpartition("/")
        labels = (grpc_type, service or "unknown", method)
        m = self._m
        m.started.labels(*labels).inc()
        m.handled.labels(*labels, code.name).inc()
        m.handling.labels(*labels).observe(seconds)
        m.rejected.labels(*labels, reason).inc()

    def _wrap(self, full_method: str, handler: _RpcHandler,
              http: bool = False) -> tuple[_RpcHandler, _RpcHandler | None]:
        service, _, method = full_method.lstrip("/").rpartition("/")
        labels = (RPC_TYPES[(handler.request_streaming, handler.response_streaming)],
                  service or "unknown", method)
        m = self._m
        admission = self.admission
        started, handling = m.started.labels(*labels), m.handling.labels(*labels)
        handled: dict[str, Any] = {}      # by status code: its labelled child, found once
        # Spans and access lines: every call but the health checks (a probe every few
        # seconds per pod would drown the calls); counted in the metrics all the same.
        observed = service != HEALTH_SERVICE
        access = self.access if observed and not http else None

        def begin(context: grpc.ServicerContext) -> Any:
            """The call's span (None: tracing off), current until :func:`finish`."""
            if not observed or not tracing.enabled():
                return None
            return tracing.start_call(full_method, context.invocation_metadata(),
                                      cast(Any, context).protocol if http else "grpc")

        def finish(context: grpc.ServicerContext, t0: float, failed: bool, span: Any = None,
                   sizes: list[int] | None = None) -> None:
            code = _final_code(context, failed)
            child = handled.get(code)
            if child is None:
                child = handled[code] = m.handled.labels(*labels, code)
            child.inc()
            seconds = time.perf_counter() - t0
            handling.observe(seconds)
            trace = tracing.end_call(span, code, _CODES.get(code, 2)) if span is not None \
                else ""
            if http:        # the HTTP side's access line (service/http/access.py) names the code
                note = getattr(context, "ended_with", None)
                if note is not None:
                    note(code, trace)
            elif access is not None:
                received, sent = sizes or (0, 0)
                access.call(full_method, "grpc", code, seconds, context.peer(), received, sent,
                            trace_id=trace)

        def rejected(reason: str) -> None:
            m.rejected.labels(*labels, reason).inc()

        def overloaded(request: Any, context: grpc.ServicerContext) -> Any:
            """The whole call when the server is overloaded: counted, refused at once."""
            started.inc()
            t0 = time.perf_counter()
            span = begin(context)
            try:
                admission.refuse(context, admission.overload, rejected)
            finally:
                finish(context, t0, True, span)

        overloaded.experimental_thread_pool = admission.refusals  # type: ignore[attr-defined]
        shapes = {(False, False): grpc.unary_unary_rpc_method_handler,
                  (True, False): grpc.stream_unary_rpc_method_handler,
                  (False, True): grpc.unary_stream_rpc_method_handler,
                  (True, True): grpc.stream_stream_rpc_method_handler}
        shape = shapes[(handler.request_streaming, handler.response_streaming)]
        refusing: _RpcHandler | None = None if service == HEALTH_SERVICE else shape(overloaded)
        return self._counting(handler, labels, begin, finish, rejected, service,
                              access is not None), refusing

    def _counting(self, handler: _RpcHandler, labels: tuple[str, str, str],
                  begin: Callable[[grpc.ServicerContext], Any], finish: Callable[..., None],
                  rejected: Count, service: str, measured: bool) -> _RpcHandler:
        """``handler`` counted, its messages admitted both ways (health checks on their own
        thread); ``measured``: the bytes of its messages told to ``finish`` (the access
        line)."""
        m = self._m
        admission = self.admission
        started, received, sent = (c.labels(*labels) for c in (m.started, m.received, m.sent))

        def checked(request: Any, context: grpc.ServicerContext) -> Any:
            received.inc()
            return admission.request(request, context, rejected)

        in_band = getattr(handler.stream_stream or handler.stream_unary,
                          "accepts_rejected_messages", False)

        def count_in(requests: Iterable[Any], context: grpc.ServicerContext,
                     sizes: list[int] | None) -> Iterator[Any]:
            for request in requests:
                if sizes is not None:
                    sizes[0] += _size(request)
                if in_band and isinstance(request, RejectedMessage):
                    received.inc()
                    rejected(request.reason)
                    yield request
                else:
                    yield checked(request, context)

        to_wire = admission.serializer(handler.response_serializer)

        def check_out(response: Any, context: grpc.ServicerContext,
                      sizes: list[int] | None) -> Any:
            """The reply serialized once (the bytes pass through ``to_wire`` untouched),
            refused when over the limit, counted."""
            data = admission.reply(response, to_wire, context, rejected)
            sent.inc()
            if sizes is not None and isinstance(data, bytes):
                sizes[1] += len(data)
            return data

        # The HTTP side's handlers, with no deserializer, pass their messages on.
        decode = admission.decoder(handler.request_deserializer)
        if not handler.response_streaming and not handler.request_streaming:
            # gRPC sets exactly the behaviour that matches the two streaming flags.
            inner = cast(Callable[[Any, grpc.ServicerContext], Any], handler.unary_unary)

            def call_unary(request: Any, context: grpc.ServicerContext) -> Any:
                started.inc()
                t0 = time.perf_counter()
                sizes = [_size(request), 0] if measured else None
                span = begin(context)
                failed = True
                try:
                    response = inner(checked(request, context), context)
                    if status_code(context) in (None, grpc.StatusCode.OK):
                        response = check_out(response, context, sizes)
                    failed = False
                    return response
                finally:
                    finish(context, t0, failed, span, sizes)

            if service == HEALTH_SERVICE:   # probes never wait behind a burst of calls
                call_unary.experimental_thread_pool = admission.probes  # type: ignore[attr-defined]
            return grpc.unary_unary_rpc_method_handler(
                call_unary, request_deserializer=decode, response_serializer=to_wire)

        if not handler.response_streaming:      # client streaming: one reply
            inner_cs = cast(Callable[[Iterator[Any], grpc.ServicerContext], Any],
                            handler.stream_unary)

            def call_client_stream(requests: Any, context: grpc.ServicerContext) -> Any:
                started.inc()
                t0 = time.perf_counter()
                sizes = [0, 0] if measured else None
                span = begin(context)
                failed = True
                try:
                    with admission.stream(context, rejected):
                        response = inner_cs(count_in(requests, context, sizes), context)
                        if status_code(context) in (None, grpc.StatusCode.OK):
                            response = check_out(response, context, sizes)
                    failed = False
                    return response
                finally:
                    finish(context, t0, failed, span, sizes)

            return grpc.stream_unary_rpc_method_handler(
                call_client_stream, request_deserializer=decode, response_serializer=to_wire)

        inner_stream = cast(Callable[[Any, grpc.ServicerContext], Iterator[Any]],
                            handler.unary_stream or handler.stream_stream)
        if getattr(inner_stream, "experimental_non_blocking", False):
            return self._wrap_non_blocking(handler, decode, started, sent, finish, checked)

        def call_stream(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
            started.inc()
            t0 = time.perf_counter()
            sizes = [0 if handler.request_streaming else _size(request), 0] if measured \
                else None
            span = begin(context)
            failed = True
            try:
                with admission.stream(context, rejected):
                    arg = (count_in(request, context, sizes) if handler.request_streaming
                           else checked(request, context))
                    for response in inner_stream(arg, context):
                        yield check_out(response, context, sizes)
                failed = False
            except GeneratorExit:    # the client cancelled: not a server failure
                failed = False
                raise
            finally:
                finish(context, t0, failed, span, sizes)

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
