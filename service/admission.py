"""Admission control: what the server refuses before a servicer runs, or instead of a reply.

gRPC would otherwise fail these invisibly or as INTERNAL:

* a request over ``max_message_bytes`` (the transport admits up to twice that, so that the
  refusal is seen here; beyond, gRPC itself refuses before any server code runs), or one
  that does not decode: the decoder hands on a :class:`RejectedMessage` in its place;
* a reply over ``max_message_bytes``;
* more than ``max_streams`` streaming calls at once, so held streams never take every
  handler thread from unary calls and health checks;
* a call arriving while ``max_queued_calls`` calls already wait for a handler thread
  (:class:`CallPool` counts them): refused at once, from threads of their own
  (:attr:`Admission.refusals`), never queued behind the work it would add to. Health checks
  have a thread of their own too (:attr:`Admission.probes`).

A call that waited for a handler thread until its deadline passed (or its client left) is
ended by gRPC without running any handler or interceptor: :class:`CallPool` sees it on its
thread and reports it (reason ``expired``), :class:`CallStart` marking the calls whose
handler did start. CallStart also gives a unary call without a deadline the server's
``default_deadline``.

Below all of these, gRPC's C core keeps the calls that arrived but that the server has not
yet taken in (``max_pending_requests``, a channel argument): past that it drops new calls
itself, at random, then all of them past twice that — the clients see ``CANCELLED`` and the
server never sees the call. The limit is set far above what the server takes in during a
burst, so that the refusals happen here, explicitly and counted.

Deciding and enforcing are this module's job: :class:`Admission` decides each limit and
ends a refused call (:meth:`Admission.refuse`, through :func:`shuangkou.service.errors.refuse`:
INVALID_ARGUMENT for a request that does not decode, RESOURCE_EXHAUSTED for the rest), after
telling the caller's ``count`` the reason. Which calls pass through it, and the counting, are
the interceptor's (:mod:`shuangkou.service.interceptor`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any, NoReturn

import grpc

from .errors import refuse

__all__ = ["Admission", "CallPool", "RejectedMessage", "REJECT_REASONS", "Count",
           "CallStart"]

#: Why a request never reached (or a reply never left) the servicer, as counted in
#: ``shuangkou_requests_rejected_total``. ``malformed``: a call the HTTP port refused for its
#: form before any handler ran (a bad deadline header, an envelope that runs past the body,
#: two messages on a one-request call ...: :mod:`shuangkou.service.http.refusals`). The last
#: three are the lane's and the caps' on one call's cost
#: (:data:`shuangkou.service.lane.REASONS`), given by its methods only.
REJECT_REASONS = ("undecodable", "too_large", "reply_too_large", "stream_limit", "overloaded",
                  "expired", "malformed", "lane_full", "over_cap", "cap_reached")


#: Told the reason of each refusal before the call ends (the interceptor's counter).
Count = Callable[[str], None]


class RejectedMessage:
    """What the request deserializer hands on instead of a message it refused.

    A request-streaming servicer method marked ``accepts_rejected_messages = True`` receives
    these in its request iterator (already counted) and can answer them in-band, keeping the
    stream alive; any other method's call is ended with the refusal's status.
    """

    __slots__ = ("reason", "detail")

    def __init__(self, reason: str, detail: str) -> None:
        self.reason, self.detail = reason, detail


class CallPool(futures.ThreadPoolExecutor):
    """The handler threads, counting the calls handed to them that have not started yet
    (gRPC submits every call it takes in, and every submitted call starts, so the count
    never drifts), and reporting to ``on_expired`` each gRPC call that a thread took but
    whose handler never ran (:func:`expired_call`): gRPC ends a call whose deadline passed
    or whose client cancelled while it waited without running any handler, so no
    interceptor would see it. A handler's start is marked by :class:`CallStart`."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "") -> None:
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix)
        self._lock = threading.Lock()
        self.waiting = 0
        #: Called with (grpc_type, "/service/Method") of each call that expired unseen.
        self.on_expired: Callable[[str, str], None] | None = None

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        with self._lock:
            self.waiting += 1

        def started() -> Any:
            with self._lock:
                self.waiting -= 1
            report = self.on_expired
            if report is None:
                return fn(*args, **kwargs)
            _started.ran = False
            try:
                return fn(*args, **kwargs)
            finally:
                if not _started.ran and (expired := expired_call(args)) is not None:
                    report(*expired)
        return super().submit(started)


#: Whether the handler of the call this thread runs has started (:class:`CallStart`).
_started = threading.local()


def expired_call(args: tuple[Any, ...]) -> tuple[str, str] | None:
    """(grpc_type, method) when ``args`` — what grpcio's server submits to its thread pool
    for a call: ``(context.run, _unary_response_in_pool, rpc_event, state, behaviour,
    unary_request, ...)`` — are a call with one request message (only those can end
    without their handler: a request stream always reaches it); else None."""
    if len(args) < 5:
        return None
    run, event, read = args[0], args[1], args[4]
    name = getattr(run, "__name__", "")
    if (name not in ("_unary_response_in_pool", "_stream_response_in_pool")
            or getattr(read, "__name__", "") != "unary_request"):
        return None
    # a registered method's call carries its name as the event's tag, not in call_details
    method = getattr(getattr(event, "call_details", None), "method", b"") or getattr(
        event, "tag", "")
    return ("unary" if name == "_unary_response_in_pool" else "server_stream",
            method.decode("utf-8", "replace") if isinstance(method, bytes) else str(method))


class Admission:
    """The limits of one server: message size both ways, the streams running at once, and
    the calls waiting for a handler thread of ``pool``."""

    def __init__(self, *, max_message_bytes: int = 2**31 - 1,
                 max_streams: int | None = None, pool: CallPool | None = None,
                 max_queued_calls: int | None = None) -> None:
        self.max_message_bytes = max_message_bytes
        self.max_streams = max_streams
        self._streams = None if max_streams is None else threading.BoundedSemaphore(max_streams) \
            if max_streams > 0 else threading.Semaphore(0)
        self.pool, self.max_queued_calls = pool, max_queued_calls
        #: Where refusals run, and health checks: threads of their own, so that neither waits
        #: behind queued work, nor a probe behind refusals (gRPC reads a behaviour's
        #: ``experimental_thread_pool``).
        self.refusals = futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="refuse")
        self.probes = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="health")
        self.overload = RejectedMessage("overloaded", f"the server is busy: {max_queued_calls or 0:,}"
                                        " calls already wait for a handler thread "
                                        "(max_queued_calls); retry with backoff, or scale out")

    def overloaded(self) -> bool:
        """Whether a call arriving now must be refused rather than queued."""
        pool, limit = self.pool, self.max_queued_calls
        return pool is not None and limit is not None and pool.waiting >= limit

    def decoder(self, deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any]:
        """``deserialize`` that returns a :class:`RejectedMessage` for a request over the
        limit or one that does not decode."""
        limit = self.max_message_bytes

        def decode(data: bytes) -> Any:
            if len(data) > limit:
                return self._too_large(len(data))
            if deserialize is None:
                return data
            try:
                return deserialize(data)
            except Exception as exc:  # noqa: BLE001 - any decode failure is the caller's
                return RejectedMessage("undecodable", f"request is not a valid message: "
                                                f"{type(exc).__name__}")
        return decode

    def _too_large(self, size: int) -> RejectedMessage:
        return RejectedMessage("too_large", f"request of {size:,} bytes exceeds the server "
                               f"limit of {self.max_message_bytes:,} (max_message_bytes)")

    @staticmethod
    def serializer(serialize: Callable[[Any], bytes] | None) -> Callable[[Any], bytes] | None:
        """A response serializer that lets bytes through: each reply is serialized once, to
        be measured (:meth:`reply_refusal`), and gRPC is handed those bytes (a reply not
        measured — a failed call's — is still serialized here)."""
        if serialize is None:
            return None

        def to_wire(response: Any) -> bytes:
            return response if type(response) is bytes else serialize(response)
        return to_wire

    def reply_refusal(self, size: int) -> RejectedMessage | None:
        """Why a reply of ``size`` bytes may not leave, or None."""
        limit = self.max_message_bytes
        if size <= limit:
            return None
        return RejectedMessage("reply_too_large", f"the reply is {size:,} bytes, over the "
                               f"server limit of {limit:,} (max_message_bytes); ask for less")

    def enter_stream(self) -> RejectedMessage | None:
        """Take a stream slot; why not, when every one is taken (then nothing is taken)."""
        if self._streams is None or self._streams.acquire(blocking=False):
            return None
        return RejectedMessage("stream_limit", f"the server is running its limit of "
                               f"{self.max_streams} streams (max_streams); retry later")

    def leave_stream(self) -> None:
        """Give back the slot :meth:`enter_stream` took."""
        if self._streams is not None:
            self._streams.release()

    # ------------------------------------------------------------------ enforcing

    @staticmethod
    def refuse(context: grpc.ServicerContext, why: RejectedMessage, count: Count) -> NoReturn:
        """End the call for ``why``, counted first."""
        count(why.reason)
        refuse(context, why.reason, why.detail)

    def request(self, request: Any, context: grpc.ServicerContext, count: Count) -> Any:
        """``request`` as the servicer receives it: the call ends here if the decoder
        refused it."""
        if isinstance(request, RejectedMessage):
            self.refuse(context, request, count)
        return request

    def reply(self, response: Any, serialize: Callable[[Any], bytes] | None,
              context: grpc.ServicerContext, count: Count) -> Any:
        """The reply to send: serialized once by ``serialize`` (a :meth:`serializer`; None
        for the HTTP side, whose codec encodes the message: its binary size is what the
        limit bounds), or the call ends here when it is over the limit."""
        data = serialize(response) if serialize is not None else response
        too_large = self.reply_refusal(len(data) if isinstance(data, bytes) else data.ByteSize())
        if too_large is not None:
            self.refuse(context, too_large, count)
        return data

    @contextlib.contextmanager
    def stream(self, context: grpc.ServicerContext, count: Count) -> Iterator[None]:
        """A stream slot held while the body runs; the call ends here when none is free."""
        full = self.enter_stream()
        if full is not None:
            self.refuse(context, full, count)
        try:
            yield
        finally:
            self.leave_stream()

# ----------------------------------------------------------------------------- default deadline

#: grpcio's ``time_remaining()`` of a call without a deadline: its infinite deadline less now.
_NO_DEADLINE = 1e9


class _Deadlined:
    """A servicer context whose deadline is the server's default (the client set none):
    what the handlers read of the deadline; everything else is the call's own context."""

    __slots__ = ("_context", "_deadline")

    def __init__(self, context: Any, deadline: float) -> None:
        self._context, self._deadline = context, deadline

    def time_remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def is_active(self) -> bool:
        return bool(self._context.is_active()) and time.monotonic() < self._deadline

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class CallStart(grpc.ServerInterceptor):
    """The last interceptor before the handlers of ``services``: marks each call's handler
    as started (:class:`CallPool` counts the calls that expired before theirs did), and
    gives a unary call that came without a deadline the server's ``default_deadline`` of
    ``seconds`` (0: none): its work stops then (DEADLINE_EXCEEDED), as it would at a
    deadline of the client's. Inside the metrics interceptor, which counts the call on its
    own context. Streams keep no default: a ScoreReplays stream may run long."""

    def __init__(self, seconds: float, services: tuple[str, ...]) -> None:
        self.seconds = seconds
        self._prefixes = tuple(f"/{s}/" for s in services)
        self._cache: dict[tuple[str, int], Any] = {}

    def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Any],
                          details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if (handler is None or handler.unary_unary is None
                or not details.method.startswith(self._prefixes)):
            return handler
        key = (details.method, id(handler))
        wrapped = self._cache.get(key)
        if wrapped is None:
            wrapped = handler._replace(unary_unary=self._started(handler.unary_unary))
            if len(self._cache) < 1024:
                self._cache[key] = wrapped
        return wrapped

    def _started(self, behaviour: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        seconds = self.seconds

        def call(request: Any, context: Any) -> Any:
            _started.ran = True
            if seconds:
                left = context.time_remaining()
                if left is None or left > _NO_DEADLINE:
                    context = _Deadlined(context, time.monotonic() + seconds)
            return behaviour(request, context)
        return call
