"""What the HTTP port refuses before a method runs, and how each refusal is counted: as gRPC
counts the refusals of admission (started, handled with its code, rejected for its reason).

* :class:`BodyLimits`: the largest body each method takes (the bridge refuses one over it,
  413, before it is read or as it arrives);
* :func:`form_refusal`: a call whose form the port does not take, refused before connectrpc
  reads it so that the refusal is counted — gRPC over HTTP/1.1, a deadline header its
  protocol does not allow, a message flagged compressed without an encoding;
* :class:`Refusals`: the count, and connectrpc's interceptor for what connectrpc itself
  refuses before it calls the method.

A path that is no method (404) or an HTTP method the RPC does not take (405) is answered
(:mod:`~shuangkou.service.http.conventions`), not counted: gRPC counts no call it cannot
route either.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import grpc
from connectrpc.code import Code
from connectrpc.errors import ConnectError

from shuangkou.v1 import rounds_pb2, service_pb2

from ..errors import bounded, http_error
from ..metrics import RPC_TYPES
from .conventions import ACCEPT_POST
from .seam import Call, current

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment
    from connectrpc.request import RequestContext

    from ..interceptor import MetricsInterceptor

__all__ = ["BodyLimits", "Refusals", "form_refusal", "METHODS"]

#: Every method of the port by path: its ``grpc_type`` label, and whether its request is a
#: stream.
METHODS: dict[str, tuple[str, bool]] = {
    f"/{service.full_name}/{method.name}": (
        RPC_TYPES[(method.client_streaming, method.server_streaming)], method.client_streaming)
    for file in (service_pb2, rounds_pb2) for service in file.DESCRIPTOR.services_by_name.values()
    for method in service.methods}
_UNCOMPRESSED = "a message flagged compressed, but the request names no encoding"


@dataclass(frozen=True)
class BodyLimits:
    """The largest request body each path of the port takes: ``max_request_bytes`` for a
    method whose request is a stream (ScoreReplays); for any other — one message — twice
    ``max_message_bytes``, as gRPC's transport admits, so that the codec's refusal of a
    message over the limit (its JSON may be longer than its binary form) is counted as on
    gRPC; a path that is no method, the same. The bridge refuses a body over it (413)
    before reading it, or as it arrives."""

    max_message_bytes: int
    max_request_bytes: int

    def __call__(self, path: str) -> tuple[int, str]:
        """The limit of ``path``'s body in bytes, and the setting it comes from."""
        method = METHODS.get(path)
        if (method is not None and method[1]) or \
                self.max_request_bytes <= 2 * self.max_message_bytes:
            return self.max_request_bytes, "http_max_request_bytes"
        return 2 * self.max_message_bytes, "twice max_message_bytes"


class Refusals:
    """The calls the HTTP port refuses before their method runs, counted as gRPC counts the
    refusals of admission (:meth:`MetricsInterceptor.count_refused`): reason ``too_large``
    (RESOURCE_EXHAUSTED) for a body over its method's limit (the bridge) or a message over
    ``read_max_bytes`` once decompressed, ``malformed`` (INVALID_ARGUMENT) for the rest — a
    deadline header or a content type the port does not read, a message flagged compressed
    without an encoding (:func:`form_refusal`), and what connectrpc refuses before it calls
    the method: an envelope that runs past the body, two messages (or none) on a
    one-request call, a client's frame flagged as trailers. (connectrpc calls some of these
    UNIMPLEMENTED or INTERNAL; each is the client's mistake, and they are answered
    INVALID_ARGUMENT.)

    It is connectrpc's metadata interceptor for the last group: it starts before a request
    is read, and its end hears of an error raised before the method was called
    (:attr:`Call.reached`)."""

    def __init__(self, interceptor: MetricsInterceptor) -> None:
        self._interceptor = interceptor

    def count(self, path: str, code: grpc.StatusCode, reason: str,
              seconds: float = 0.0) -> None:
        method = METHODS.get(path)
        if method is not None:
            self._interceptor.count_refused(path, method[0], code, reason, seconds)

    # --- connectrpc's MetadataInterceptorSync

    def on_start_sync(self, ctx: RequestContext[Any, Any]) -> float:
        return time.perf_counter()

    def on_end_sync(self, t0: float, ctx: RequestContext[Any, Any],
                    error: Exception | None) -> None:
        call: Call | None = getattr(current, "call", None)
        if error is None or call is None or call.reached or not isinstance(error, ConnectError):
            return
        too_large = error.code is Code.RESOURCE_EXHAUSTED
        code = grpc.StatusCode.RESOURCE_EXHAUSTED if too_large \
            else grpc.StatusCode.INVALID_ARGUMENT
        self.count(f"/{ctx.method.service_name}/{ctx.method.name}", code,
                   "too_large" if too_large else "malformed", time.perf_counter() - t0)
        call.code = code.name                  # for the access line
        if error.code not in (Code.RESOURCE_EXHAUSTED, Code.INVALID_ARGUMENT):
            raise ConnectError(Code.INVALID_ARGUMENT, error.message) from error


def form_refusal(environ: WSGIEnvironment, protocol: str
                 ) -> tuple[str, list[tuple[str, str]], bytes] | None:
    """The answer to a call of a method whose form the port does not take (``protocol`` as
    counted: ``grpc``, ``grpc_web``, ``connect`` ...), refused INVALID_ARGUMENT before
    connectrpc reads it; None when connectrpc may read it."""
    content_type = environ.get("CONTENT_TYPE", "")
    if protocol == "grpc":
        # gRPC needs HTTP/2 and trailers, which this port does not speak: the client is told
        # so (the gRPC spec's 415, invalid_argument as for any content type the port does
        # not read), not answered by a failing handler.
        return http_error(content_type, 415, grpc.StatusCode.INVALID_ARGUMENT,
                          "application/grpc needs HTTP/2: call the gRPC port; this port "
                          "speaks Connect and gRPC-Web", [("Accept-Post", ACCEPT_POST)])
    bad_deadline = _bad_deadline(environ, content_type)
    if bad_deadline is not None:
        return http_error(content_type, 400, grpc.StatusCode.INVALID_ARGUMENT, bad_deadline,
                          in_band=True)
    if _compressed_without_encoding(environ, content_type):
        return http_error(content_type, 400, grpc.StatusCode.INVALID_ARGUMENT, _UNCOMPRESSED,
                          in_band=True)
    return None


def _bad_deadline(environ: WSGIEnvironment, content_type: str) -> str | None:
    """Why the request's deadline header is not one its protocol allows (Connect: 1 to 10
    digits of milliseconds; gRPC-Web: 1 to 8 digits and a unit, H M S m u or n), or None.
    Read here, before connectrpc reads it, so that the refusal is counted."""
    if content_type.startswith("application/grpc-web"):
        value = environ.get("HTTP_GRPC_TIMEOUT")
        if value is None or (1 <= len(value) - 1 <= 8 and value[:-1].isascii()
                             and value[:-1].isdigit() and value[-1] in "HMSmun"):
            return None
        return (f"grpc-timeout {bounded(value, 20)!r} is not a deadline: 1 to 8 digits and a "
                "unit (H, M, S, m, u, n)")
    value = environ.get("HTTP_CONNECT_TIMEOUT_MS")
    if not value or (len(value) <= 10 and value.isascii() and value.isdigit()):
        return None
    return (f"Connect-Timeout-Ms {bounded(value, 20)!r} is not a deadline: 1 to 10 digits of "
            "milliseconds")


class _Peeked:
    """A request body whose first byte was read to be looked at, given back first."""

    __slots__ = ("_first", "_body")

    def __init__(self, first: bytes, body: Any) -> None:
        self._first, self._body = first, body

    def read(self, size: int = -1) -> bytes:
        first, self._first = self._first, b""
        if not first or size == 1:
            return first or cast(bytes, self._body.read(size))
        return first + cast(bytes, self._body.read(size - 1 if size > 0 else size))


def _compressed_without_encoding(environ: WSGIEnvironment, content_type: str) -> bool:
    """Whether an enveloped request (gRPC-Web, Connect streaming) flags its first message
    compressed while naming no encoding: connectrpc would answer INTERNAL, a server fault,
    for what is the client's. Only the first byte is read (and given back)."""
    if content_type.startswith("application/grpc-web"):
        encoding = environ.get("HTTP_GRPC_ENCODING", "identity")
    elif content_type.startswith("application/connect+"):
        encoding = environ.get("HTTP_CONNECT_CONTENT_ENCODING", "identity")
    else:
        return False
    if encoding != "identity":
        return False
    body = environ["wsgi.input"]
    first = body.read(1)
    environ["wsgi.input"] = _Peeked(first, body)
    return bool(first) and bool(first[0] & 1)
