"""Prometheus metrics: the standard gRPC server series (via a server interceptor) and the
service's domain counters.

Nothing is registered at import: the CLI builds a :class:`Metrics` on a registry of its
choice (a private ``CollectorRegistry`` in one process; ``None`` in ``--workers`` mode, where
prometheus_client's multiprocess mode writes every process's values to a shared directory
that the supervisor exposes through a ``MultiProcessCollector``).
"""

from __future__ import annotations

import errno
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol, TypeAlias, cast

import grpc
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["Metrics", "MetricsInterceptor", "MetricsHTTPServer", "RejectedMessage", "start_metrics_server",
           "multiprocess_registry", "REJECT_REASONS"]

#: Why a request never reached (or a reply never left) the servicer, as counted in
#: ``shuangkou_requests_rejected_total``.
log = logging.getLogger(__name__)
REJECT_REASONS = ("undecodable", "too_large", "reply_too_large", "stream_limit")

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
        self.rejected = Counter("shuangkou_requests_rejected",
                                "Requests refused before the servicer saw them, or replies too "
                                "large to send, by method and reason "
                                f"({', '.join(REJECT_REASONS)}).",
                                (*GRPC_LABELS, "reason"), **kw)
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

    def mark_up(self) -> None:
        from .version import build_info

        self.worker_up.set(1)
        self.build_info.labels(**build_info()).set(1)


def multiprocess_registry(path: str) -> CollectorRegistry:
    """A registry aggregating every worker's values from prometheus_client's directory."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=path)
    return registry


class _Handler(BaseHTTPRequestHandler):
    """One request per connection (HTTP/1.0): GET /metrics (or /) -> the exposition."""

    protocol_version = "HTTP/1.0"
    timeout = 5.0            # a client that stalls mid-request loses its pool thread after this
    registry: CollectorRegistry

    def do_GET(self) -> None:  # noqa: N802 - the http.server protocol
        if self.path.split("?")[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        body = generate_latest(self.registry)
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - scrapes are not logged
        pass


class MetricsHTTPServer:
    """A ``/metrics`` HTTP server whose threads do not grow with the connections.

    prometheus_client's own server spends a thread per connection, so idle connections pin
    threads. Here one selector thread watches every connection and hands a connection to a
    small pool only once its request bytes arrive; idle connections cost a file descriptor
    until ``idle_timeout``, and beyond ``max_connections`` the oldest are closed.
    """

    def __init__(self, host: str, port: int, registry: CollectorRegistry, *, pool: int = 4,
                 idle_timeout: float = 30.0, max_connections: int = 256) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((host.strip("[]"), port))
        except OSError:
            self._sock.close()
            raise
        self._sock.listen(128)
        self._sock.setblocking(False)
        self.port: int = self._sock.getsockname()[1]
        self._handler = type("Handler", (_Handler,), {"registry": registry})
        self._pool = futures.ThreadPoolExecutor(pool, thread_name_prefix="metrics")
        self._idle_timeout = idle_timeout
        self._max = max_connections
        self._sel = selectors.DefaultSelector()
        self._sel.register(self._sock, selectors.EVENT_READ)
        self._open: dict[socket.socket, float] = {}   # idle connection -> when accepted
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="metrics-http", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._once()
            except Exception:  # noqa: BLE001 - the endpoint must outlive one bad connection
                log.exception("metrics HTTP server")

    def _once(self) -> None:
        for key, _ in self._sel.select(timeout=0.5):
            if key.fileobj is self._sock:
                self._accept()
            else:
                conn = key.fileobj
                assert isinstance(conn, socket.socket)
                self._sel.unregister(conn)
                del self._open[conn]
                self._pool.submit(self._serve, conn)
        self._expire(time.monotonic() - self._idle_timeout)

    def _accept(self) -> None:
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:     # e.g. out of file descriptors: try again on the next event
            return
        if len(self._open) >= self._max:    # drop the oldest idle connection
            self._close(next(iter(self._open)))
        self._open[conn] = time.monotonic()
        self._sel.register(conn, selectors.EVENT_READ)

    def _expire(self, before: float) -> None:
        for conn in [c for c, t in self._open.items() if t < before]:
            self._close(conn)

    def _close(self, conn: socket.socket) -> None:
        self._sel.unregister(conn)
        del self._open[conn]
        conn.close()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.setblocking(True)
            self._handler(conn, conn.getpeername(), self)
        except OSError:
            pass
        finally:
            conn.close()

    def shutdown(self) -> None:
        self._stop.set()
        self._thread.join(2)
        for conn in list(self._open):
            self._close(conn)
        self._sel.close()
        self._sock.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def start_metrics_server(port: int, host: str, registry: CollectorRegistry) -> MetricsHTTPServer:
    """Serve ``/metrics`` over HTTP; returns the server (call ``shutdown()`` to stop).

    A port already in use raises OSError with one sentence naming the port and its setting.
    """
    try:
        return MetricsHTTPServer(host, port, registry)
    except OSError as exc:
        why = "it is in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise OSError(f"cannot serve metrics on {host}:{port}: {why} (setting metrics_port, "
                      f"flag --metrics-port; 0 disables metrics)") from None


# ----------------------------------------------------------------------------- interceptor

_TYPES = {
    (False, False): "unary",
    (True, False): "client_stream",
    (False, True): "server_stream",
    (True, True): "bidi_stream",
}


def _final_code(context: grpc.ServicerContext, failed: bool) -> str:
    # A call the client cancelled (or whose deadline passed) is counted as such whatever
    # status the handler tried to set afterwards: an abort on a dead call is not a server error.
    if not context.is_active():
        remaining = context.time_remaining()
        return "DEADLINE_EXCEEDED" if remaining is not None and remaining <= 0 else "CANCELLED"
    code = _status(context)
    if code is not None:
        return code.name
    return "UNKNOWN" if failed else "OK"


def _wire_serializer(serialize: Callable[[Any], bytes] | None
                     ) -> Callable[[Any], bytes] | None:
    """A response serializer that lets bytes through: the interceptor serializes each reply
    once, to measure it, and hands gRPC those bytes (a reply not checked — a failed call's —
    is still serialized here)."""
    if serialize is None:
        return None

    def to_wire(response: Any) -> bytes:
        return response if type(response) is bytes else serialize(response)
    return to_wire


class RejectedMessage:
    """What the request deserializer hands on instead of a message it refused.

    A request-streaming servicer method marked ``accepts_rejected_messages = True`` receives
    these in its request iterator (already counted) and can answer them in-band, keeping the
    stream alive; any other method's call is ended with the refusal's status.
    """

    __slots__ = ("reason", "detail")

    def __init__(self, reason: str, detail: str) -> None:
        self.reason, self.detail = reason, detail


#: A method handler of any service: the interceptor passes every message type through.
_RpcHandler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"   # generic in the stubs only


class _StatusContext(Protocol):
    """``ServicerContext.code()``: grpcio has it (experimental since 1.38), typeshed does not."""

    def code(self) -> grpc.StatusCode | None: ...


def _status(context: grpc.ServicerContext) -> grpc.StatusCode | None:
    """The status code the handler has set so far (None when it has set none)."""
    return cast(_StatusContext, context).code()


class MetricsInterceptor(grpc.ServerInterceptor):
    """Counts started/handled RPCs, messages and latency for every method of the server, and
    guards what gRPC would otherwise fail invisibly or as INTERNAL:

    * a request that does not decode is ``INVALID_ARGUMENT``, one over ``max_message_bytes``
      is ``RESOURCE_EXHAUSTED`` (the transport admits up to twice that so the refusal is
      seen here; beyond, gRPC itself refuses before any server code runs);
    * a reply over ``max_message_bytes`` is ``RESOURCE_EXHAUSTED``, not counted OK;
    * at most ``max_streams`` streaming RPCs run at once; more are ``RESOURCE_EXHAUSTED``, so
      held streams never take every handler thread from unary calls and health checks.

    Each refusal also counts in ``shuangkou_requests_rejected_total{reason}``.
    """

    def __init__(self, metrics: Metrics, *, max_message_bytes: int = 2**31 - 1,
                 max_streams: int | None = None) -> None:
        self._m = metrics
        self._max_bytes = max_message_bytes
        self._streams = None if max_streams is None else threading.BoundedSemaphore(max_streams) \
            if max_streams > 0 else threading.Semaphore(0)
        self.max_streams = max_streams
        self._cache: dict[tuple[str, int], _RpcHandler] = {}

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Any],
                          details: grpc.HandlerCallDetails) -> _RpcHandler | None:
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

    def _decoder(self, deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any]:
        limit = self._max_bytes

        def decode(data: bytes) -> Any:
            if len(data) > limit:
                return RejectedMessage("too_large", f"request of {len(data):,} bytes exceeds the "
                                              f"server limit of {limit:,} (max_message_bytes)")
            if deserialize is None:
                return data
            try:
                return deserialize(data)
            except Exception as exc:  # noqa: BLE001 - any decode failure is the caller's
                return RejectedMessage("undecodable", f"request is not a valid message: "
                                                f"{type(exc).__name__}")
        return decode

    def _wrap(self, full_method: str, handler: _RpcHandler) -> _RpcHandler:
        service, _, method = full_method.lstrip("/").rpartition("/")
        labels = (_TYPES[(handler.request_streaming, handler.response_streaming)],
                  service or "unknown", method)
        m = self._m
        limit = self._max_bytes
        started, received, sent = (c.labels(*labels) for c in (m.started, m.received, m.sent))
        handling = m.handling.labels(*labels)

        handled: dict[str, Any] = {}      # by status code: its labelled child, found once

        def finish(context: grpc.ServicerContext, t0: float, failed: bool) -> None:
            code = _final_code(context, failed)
            child = handled.get(code)
            if child is None:
                child = handled[code] = m.handled.labels(*labels, code)
            child.inc()
            handling.observe(time.perf_counter() - t0)

        def refuse(context: grpc.ServicerContext, reason: str, detail: str) -> None:
            m.rejected.labels(*labels, reason).inc()
            code = (grpc.StatusCode.INVALID_ARGUMENT if reason == "undecodable"
                    else grpc.StatusCode.RESOURCE_EXHAUSTED)
            context.abort(code, detail)

        def checked(request: Any, context: grpc.ServicerContext) -> Any:
            received.inc()
            if isinstance(request, RejectedMessage):
                refuse(context, request.reason, request.detail)
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

        to_wire = _wire_serializer(handler.response_serializer)

        def check_out(response: Any, context: grpc.ServicerContext) -> Any:
            """The reply serialized once (the bytes pass through ``to_wire`` untouched),
            refused when over the limit, counted."""
            data = to_wire(response) if to_wire is not None else response
            size = len(data) if isinstance(data, bytes) else 0
            if size > limit:
                refuse(context, "reply_too_large", f"the reply is {size:,} bytes, over the "
                       f"server limit of {limit:,} (max_message_bytes); ask for less")
            sent.inc()
            return data

        decode = self._decoder(handler.request_deserializer)
        if not handler.response_streaming and not handler.request_streaming:
            # gRPC sets exactly the behaviour that matches the two streaming flags.
            inner = cast(Callable[[Any, grpc.ServicerContext], Any], handler.unary_unary)

            def call_unary(request: Any, context: grpc.ServicerContext) -> Any:
                started.inc()
                t0 = time.perf_counter()
                failed = True
                try:
                    response = inner(checked(request, context), context)
                    if _status(context) in (None, grpc.StatusCode.OK):
                        response = check_out(response, context)
                    failed = False
                    return response
                finally:
                    finish(context, t0, failed)

            return grpc.unary_unary_rpc_method_handler(
                call_unary, request_deserializer=decode, response_serializer=to_wire)

        streams = self._streams

        def admitted(context: grpc.ServicerContext) -> bool:
            if streams is None or streams.acquire(blocking=False):
                return True
            refuse(context, "stream_limit", f"the server is running its limit of "
                   f"{self.max_streams} streams (max_streams); retry later")
            return False

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
                        if _status(context) in (None, grpc.StatusCode.OK):
                            response = check_out(response, context)
                    finally:
                        if streams is not None:
                            streams.release()
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
                    if streams is not None:
                        streams.release()
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


def mark_process_dead(pid: int, path: str | None = None) -> None:
    """Drop a finished worker's live gauges (multiprocess mode)."""
    multiprocess.mark_process_dead(pid, path or os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
