"""The Connect seam: each method of the HTTP port is the gRPC method it stands for.

Every method is the gRPC method handler of the same servicer instance (as the generated
registration builds it, :class:`~shuangkou.service.api.shuangkou.Collect`), wrapped by the
same :class:`~shuangkou.service.interceptor.MetricsInterceptor` — one stream cap for both
ports, the ``grpc_server_*`` series labelled alike, the same admission — and called by
connectrpc's WSGI application of its service as an endpoint (:func:`endpoints`).

:class:`CallContext` gives that handler the face of a ``grpc.ServicerContext`` over the
Connect request: its deadline (from ``connect-timeout-ms`` or ``grpc-timeout``, else the
server's ``default_deadline``), whether the client hung up, and aborts — a ``ConnectError``
carrying the very ``google.rpc.Status`` that :mod:`shuangkou.service.errors` built, its
code, message and detail bytes (gRPC-Web: the ``grpc-status-details-bin`` trailer as on
gRPC; Connect JSON: ``details[].value``, with ``details[].debug`` the detail as JSON).

What the server knows of a call beyond the Connect request is its :class:`Call`, which the
bridge (:mod:`~shuangkou.service.http.bridge`) makes and sets as :data:`current` on the
handler thread that runs it.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn, cast

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError, ErrorDetail
from google.protobuf import descriptor_pool, message_factory
from google.rpc import status_pb2

from ..api.shuangkou import Collect
from ..errors import connect_code, grpc_code
from .codec import schema

if TYPE_CHECKING:
    from connectrpc.request import RequestContext

    from ..interceptor import MetricsInterceptor

__all__ = ["Call", "CallContext", "connect_error", "current", "endpoints"]

_DETAILS_KEY = "grpc-status-details-bin"


class Call:
    """One HTTP call as the pool thread running it sees it (:data:`current`, read by
    :class:`CallContext`): the server's default deadline, whether admission refused it as
    overloaded, and whether its client hung up."""

    __slots__ = ("deadline", "overloaded", "gone", "_peer", "code", "trace_id", "reached")

    def __init__(self, deadline: float | None, overloaded: bool,
                 peer: socket.socket | None = None) -> None:
        self.deadline, self.overloaded, self.gone = deadline, overloaded, False
        self._peer = peer
        self.code = self.trace_id = ""      # as the interceptor saw the call end
        self.reached = False                # whether the method ran (refusals.Refusals)

    def hung_up(self) -> bool:
        """Whether the client is gone: as the event loop saw it, or as the connection says
        now. The search asks between deals; while its threads hold the GIL the event loop
        can learn of a hang-up seconds late, so the call's thread looks at the connection
        itself (a peek at a duplicate of its socket: end of file is a hang-up)."""
        if self.gone or self._peer is None:
            return self.gone
        try:
            self.gone = not self._peer.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.gone = True
        return self.gone

    def close(self) -> None:
        if self._peer is not None:
            self._peer.close()


#: The :class:`Call` the handler thread is running (``current.call``; None between calls).
current = threading.local()


class _Detail(ErrorDetail):
    """A status detail as sent (its bytes unchanged), readable through the detail types."""

    def value(self, desc_or_registry: Any = None) -> Any:
        return super().value(desc_or_registry or schema())


def connect_error(status: grpc.Status) -> ConnectError:
    """The ``ConnectError`` of a gRPC status built by :mod:`shuangkou.service.errors`: the
    same code and message, and the ``google.rpc.Status`` details as they are."""
    from protobuf.wkt import Any as AnyMessage

    details: list[ErrorDetail] = []
    for key, value in status.trailing_metadata or ():
        if key == _DETAILS_KEY:
            details = [_Detail(AnyMessage(type_url=d.type_url, value=d.value))
                       for d in status_pb2.Status.FromString(cast(bytes, value)).details]
    return ConnectError(Code(connect_code(status.code)), status.details or "", details)


class CallContext:
    """What the servicers and the interceptor use of a ``grpc.ServicerContext``, over a
    Connect request: the deadline, the status set so far, aborts (as ``ConnectError``)."""

    __slots__ = ("_ctx", "_code", "_call", "_deadline")

    def __init__(self, ctx: RequestContext[Any, Any]) -> None:
        self._ctx = ctx
        self._code: grpc.StatusCode | None = None
        # The server's side of the call (none for a context made outside the HTTP server):
        # whether the client is gone, and the default deadline of a call that set none.
        self._call: Call | None = getattr(current, "call", None)
        self._deadline = (self._call.deadline if self._call is not None
                          and ctx.timeout_ms is None else None)
        if self._call is not None:      # the method runs: its refusals are the interceptor's
            self._call.reached = True

    @property
    def overloaded(self) -> bool:
        """Whether admission refused this call as overloaded before it was queued."""
        return self._call is not None and self._call.overloaded

    def time_remaining(self) -> float | None:
        left = self._ctx.timeout_ms
        if left is not None:
            return max(0.0, left / 1000)
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def is_active(self) -> bool:
        """Until the deadline, or until the client hangs up."""
        if self._call is not None and self._call.hung_up():
            return False
        left = self.time_remaining()
        return left is None or left > 0

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self._code = code
        raise ConnectError(Code(connect_code(code)), details)

    def abort_with_status(self, status: grpc.Status) -> NoReturn:
        self._code = status.code
        raise connect_error(status)

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._ctx.request_headers.items())

    def peer(self) -> str:
        return self._ctx.client_address or ""

    # --- for the access line and the trace span (issue 36)

    @property
    def protocol(self) -> str:
        """``grpc-web`` or ``connect`` (JSON or binary, POST or GET): the span's protocol."""
        content_type = self._ctx.request_headers.get("content-type", "")
        return "grpc-web" if content_type.startswith("application/grpc-web") else "connect"

    def ended_with(self, code: str, trace_id: str = "") -> None:
        """The gRPC code the call ended with (and its trace), for the request's access
        line (:class:`~shuangkou.service.http.access.Seen`)."""
        if self._call is not None:
            self._call.code, self._call.trace_id = code, trace_id


# ----------------------------------------------------------------------------- endpoints

def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def endpoints(servicer: Any, register: Callable[[Any, Any], None],
              interceptor: MetricsInterceptor) -> Any:
    """The snake_case object a generated WSGI application calls: each method the servicer's
    gRPC handler (``register`` is the service's generated ``add_*Servicer_to_server``),
    without serializers (the Connect codec encodes), through the interceptor."""
    collected = Collect()
    register(servicer, collected)
    methods = {}
    for name, handler in collected.handlers.items():
        wrapped, refusing = interceptor.wrap_both(f"/{collected.service}/{name}",
                                                  handler._replace(request_deserializer=None,
                                                                   response_serializer=None))
        behaviour: Any = _behaviour(wrapped)
        if refusing is not None:
            behaviour = _or_refused(behaviour, _behaviour(refusing))
        streaming = wrapped.response_streaming
        reply = message_factory.GetMessageClass(descriptor_pool.Default().FindMethodByName(
            f"{collected.service}.{name}").output_type)
        methods[_snake(name)] = _call_stream(behaviour) if streaming else _call(behaviour,
                                                                                 reply)
    return type("Endpoints", (), {k: staticmethod(v) for k, v in methods.items()})()


def _behaviour(handler: Any) -> Any:
    return (handler.unary_unary or handler.unary_stream or handler.stream_unary
            or handler.stream_stream)


def _or_refused(behaviour: Callable[[Any, Any], Any], refusal: Callable[[Any, Any], Any]
                ) -> Callable[[Any, Any], Any]:
    """``behaviour``, or the interceptor's overload refusal (counted as on gRPC) for a call
    that admission refused before it was queued (:class:`~shuangkou.service.http.bridge.Bridge`)."""
    def call(request: Any, context: CallContext) -> Any:
        return (refusal if context.overloaded else behaviour)(request, context)
    return call


def _requests(requests: Any, context: CallContext) -> Any:
    """A request message, or a request stream whose read errors (a truncated envelope, a
    bad flag) end the call with the code the client is sent, not as a handler failure
    (UNKNOWN in the metrics)."""
    if not isinstance(requests, Iterator):
        return requests

    def read() -> Iterator[Any]:
        try:
            yield from requests
        except ConnectError as exc:
            context._code = grpc_code(exc.code.value)
            raise
    return read()


def _call(behaviour: Callable[[Any, Any], Any], reply: type[Any]) -> Callable[[Any, Any], Any]:
    def call(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        context = CallContext(ctx)
        response = behaviour(_requests(request, context), context)
        if not context.is_active():      # as gRPC: an answer after the deadline is not sent
            raise ConnectError(Code.DEADLINE_EXCEEDED, "the deadline passed")
        # a servicer may answer with the reply's bytes (BatchClassify): the codec wants the
        # message
        return reply.FromString(response) if type(response) is bytes else response
    return call


def _call_stream(behaviour: Callable[[Any, Any], Iterator[Any]]
                 ) -> Callable[[Any, Any], Iterator[Any]]:
    def call(requests: Any, ctx: RequestContext[Any, Any]) -> Iterator[Any]:
        context = CallContext(ctx)
        return behaviour(_requests(requests, context), context)
    return call
