"""The edge: uvicorn serving the port, with the limits of the open internet.

:func:`_protocol_class` is uvicorn's httptools protocol with what it lacks (:class:`EdgeLimits`):
a head's bytes and fields bounded, 431 as they arrive; head and body read timeouts and a
keep-alive idle timeout; a connection cap at which the connection waiting longest for a
request makes room (:class:`_Waiting`), 503 when none waits; an ``Upgrade`` offer declined
and the request served over HTTP/1.1; an answer given before its request was read whole
lingers rather than resetting the connection; each counted. What the edge writes before any
request is parsed is an error of :func:`shuangkou.service.errors.raw_http_error`.

:class:`EdgeServer` runs it on a bound socket (:func:`listening_socket`) from a thread and
event loop of its own, and answers whether it still serves through a loopback socket of its
own (:meth:`EdgeServer.answers`, what readiness follows). It serves the API's ASGI bridge
and, in ``--workers`` mode, the supervisor's ``/metrics``
(:mod:`shuangkou.service.exposition`). The lines a client can cause are bounded
(:data:`CLIENT_LOGGERS`, :func:`shuangkou.service.logs.bound_lines`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import grpc

from ..errors import RETRY_AFTER, raw_http_error

if TYPE_CHECKING:
    from ..config import Config
    from ..metrics import Metrics

__all__ = ["EdgeLimits", "EdgeServer", "listening_socket", "log", "CLIENT_LOGGERS",
           "CLIENT_LINES_PER_SECOND", "UNREAD", "UNREAD_REASONS"]

#: The HTTP port's one logger: every module of shuangkou.service.http writes its lines here.
log = logging.getLogger("shuangkou.service.http")
#: The loggers whose lines a client can cause (the port's own, uvicorn's, asyncio's about a
#: peer gone), and how many lines a second of each kind they may write.
CLIENT_LOGGERS = ("uvicorn.error", "asyncio", log.name)
CLIENT_LINES_PER_SECOND = 10
#: The method labels of a request refused before its method was read (a head too large, a
#: request the parser cannot read), in ``shuangkou_requests_rejected_total``; its reasons.
UNREAD = ("unknown", "unknown", "unknown")
UNREAD_REASONS = ("head_too_large", "malformed")
_BUSY = raw_http_error(503, grpc.StatusCode.UNAVAILABLE, "the server holds its limit of "
                       "connections (http_max_connections); retry", [RETRY_AFTER])
_MALFORMED = raw_http_error(400, grpc.StatusCode.INVALID_ARGUMENT, "not an HTTP/1.1 request "
                            "this port can read")
_SLOW = raw_http_error(408, grpc.StatusCode.DEADLINE_EXCEEDED, "the request did not arrive "
                       "in time (http_header_timeout, http_body_timeout); retry")


@dataclass(frozen=True)
class EdgeLimits:
    """What one HTTP port allows a connection, and where it counts what it cut short
    (``metrics`` None: not counted, the ``--workers`` supervisor's ``/metrics``)."""

    header_timeout: float
    body_timeout: float
    keepalive_timeout: float
    max_connections: int
    metrics: Metrics | None = None
    port: str = "api"
    max_head_bytes: int = 64 * 1024
    max_headers: int = 100

    @classmethod
    def of(cls, config: Config, metrics: Metrics | None = None, port: str = "api"
           ) -> EdgeLimits:
        return cls(config.http_header_timeout, config.http_body_timeout,
                   config.http_keepalive_timeout, config.http_max_connections, metrics, port,
                   config.http_max_head_bytes, config.http_max_headers)


class _Waiting:
    """The connections of one port that wait for a request — idle before their first byte
    or between two requests, or still sending a head — the one waiting longest first. While
    the connection cap is full, a new connection closes the oldest of them (as nginx reuses
    its idle connections) instead of being refused: a client that opens and holds
    connections as fast as it can then only ever closes its own, and another client's
    connection, which sends its request at once, is served."""

    __slots__ = ("_since",)

    def __init__(self) -> None:
        self._since: OrderedDict[Any, None] = OrderedDict()    # the oldest first

    def add(self, connection: Any, *, first: bool = False) -> None:
        """``connection`` waits from now on (``first``: it is the first to make room)."""
        self._since[connection] = None
        self._since.move_to_end(connection, last=not first)

    def remove(self, connection: Any) -> None:
        self._since.pop(connection, None)

    def oldest(self) -> Any:
        return next(iter(self._since), None)


class _HeadTooLarge(Exception):
    """Raised from a parser callback: the head has more header fields than allowed."""


def _without_upgrade(method: bytes, url: bytes, version: str,
                     headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A request head as it was sent, less its offer to change protocols (``Upgrade``,
    ``HTTP2-Settings`` and their ``Connection`` tokens): what the edge parses again to serve
    an ``Upgrade: h2c`` request (``curl --http2`` on plaintext) as HTTP/1.1, as RFC 9110
    7.8 lets a server do."""
    hop = (b"upgrade", b"http2-settings")
    lines = [b"%s %s HTTP/%s\r\n" % (method, url, version.encode("ascii"))]
    for name, value in headers:
        if name in hop:
            continue
        if name == b"connection":
            value = b", ".join(t for t in (v.strip() for v in value.split(b","))
                               if t and t.lower() not in hop)
            if not value:
                continue
        lines.append(b"%s: %s\r\n" % (name, value))
    return b"".join([*lines, b"\r\n"])


def _protocol_class(limits: EdgeLimits,
                    probe: tuple[str, int] | None = None) -> type[Any]:
    """uvicorn's httptools protocol with what it lacks for the open internet: limits on a
    request's head (its bytes and header fields, 431 as they arrive) and deadlines for it
    (from the connection's first byte, or its opening) and its body; a cap on open
    connections, the oldest waiting connection closed to make room (:class:`_Waiting`), a
    503 when none waits; an ``Upgrade`` offer ignored (the request served over HTTP/1.1);
    every connection, refusal, eviction and timeout counted. Connections to the address
    ``probe`` (the process's own readiness probe, :meth:`EdgeServer.answers`) are neither
    capped, closed to make room, nor counted."""
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    m = limits.metrics
    accepted = m.http_connections.labels(limits.port) if m else None
    opened = m.http_open.labels(limits.port) if m else None
    refused = m.http_refused.labels(limits.port) if m else None
    evicted = m.http_evicted.labels(limits.port) if m else None
    unread = {reason: m.rejected.labels(*UNREAD, reason) for reason in UNREAD_REASONS} \
        if m else {}
    timeouts = {phase: m.http_timeouts.labels(limits.port, phase)
                for phase in ("header", "body", "idle")} if m else {}
    waiting = _Waiting()
    head_limit, field_limit = limits.max_head_bytes, limits.max_headers
    too_large = raw_http_error(
        431, grpc.StatusCode.RESOURCE_EXHAUSTED, f"the request head is over the limit of "
        f"{head_limit:,} bytes (http_max_head_bytes) or {field_limit} header fields "
        "(http_max_headers)")

    class EdgeProtocol(HttpToolsProtocol):
        _timer: asyncio.TimerHandle | None = None
        _counted = False
        _bytes = False
        _probe = False
        #: Bytes of the request head being read (None: a body, or a request in flight).
        _head: int | None = 0
        _fields = 0
        _upgrade = False
        _lingering = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            sockname = transport.get_extra_info("sockname")
            self._probe = probe is not None and bool(sockname) and tuple(sockname[:2]) == probe
            if self._probe:
                self._arm("header", limits.header_timeout)
                return
            if accepted is not None:
                accepted.inc()
            if len(self.connections) > limits.max_connections:
                oldest = waiting.oldest()
                if oldest is None:
                    if refused is not None:
                        refused.inc()
                    transport.write(_BUSY)
                    transport.close()
                    return
                oldest.make_room()
            self._counted = True
            if opened is not None:
                opened.inc()
            self._arm("header", limits.header_timeout)
            # Waiting (and so the first to go when room is needed) once the loop has read
            # from it: a connection accepted in a burst has its request read first.
            self.loop.call_soon(self.loop.call_soon, self._settled)

        def _settled(self) -> None:
            if not self.transport.is_closing() and (
                    self.cycle is None or self.cycle.response_complete) and not self.pipeline:
                waiting.add(self)

        def make_room(self) -> None:
            """Closed for a new connection while the cap is full (a head half sent is
            told to retry)."""
            waiting.remove(self)
            if self.transport.is_closing():     # already going (a timeout): its room
                return
            if evicted is not None:
                evicted.inc()
            if self._head and not self._lingering:
                self.transport.write(_BUSY)
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            waiting.remove(self)
            if self._counted and opened is not None:
                opened.dec()
            self._counted = False
            super().connection_lost(exc)

        # ------------------------------------------------------------------ reading

        def data_received(self, data: bytes) -> None:
            if self._lingering:                 # answered: what still comes is dropped
                return
            self._bytes = True
            self._unset_keepalive_if_required()
            views = [memoryview(data)]          # what is left to read, the next last
            while views:
                rest = views.pop()
                while rest:
                    if self._head is None:      # a body: as it comes
                        piece = rest
                    else:       # a head: no more than up to the limit
                        piece = rest[:head_limit - self._head]
                        self._head += len(piece)
                    rest = rest[len(piece):]
                    after = self._feed(piece)
                    if after is None:           # refused: the connection is closing
                        return
                    if self._head is not None and self._head >= head_limit:   # unfinished
                        self._refuse("head_too_large", too_large)
                        return
                    if after:     # an upgrade declined: what followed its head, then the rest
                        views.append(rest)
                        rest = after

        def _feed(self, piece: memoryview) -> memoryview | None:
            """``piece`` to the parser; what it left unread (what followed a head that
            offered another protocol, the offer declined), or None when the request was
            refused."""
            try:
                self.parser.feed_data(piece)
            except httptools.HttpParserUpgrade as upgrade:
                if not self._decline_upgrade():
                    return None
                return piece[upgrade.args[0]:]
            except httptools.HttpParserError as exc:
                cause = exc.__context__ if isinstance(
                    exc, httptools.HttpParserCallbackError) else None
                if isinstance(cause, _HeadTooLarge):
                    self._refuse("head_too_large", too_large)
                    return None
                if cause is None or isinstance(cause, httptools.HttpParserError):
                    log.warning("HTTP %s: a request this port cannot read (%s); answered 400",
                                _client(self.client), cause or exc)
                else:                           # ours, not the client's
                    log.error("HTTP %s: reading a request failed; answered 400",
                              _client(self.client), exc_info=cause)
                self._refuse("malformed", _MALFORMED)
                return None
            return piece[:0]

        def _decline_upgrade(self) -> bool:
            """The head just read offered another protocol (llhttp stops there and would
            take the rest for that protocol): read again without the offer, by a parser of
            its own, so that its body and any request after it are HTTP/1.1's. False when
            it was refused instead (a CONNECT: a tunnel, not a request of this port)."""
            self._upgrade = False
            method = self.parser.get_method()
            if method == b"CONNECT":
                log.warning("HTTP %s: a CONNECT request; answered 400", _client(self.client))
                self._refuse("malformed", _MALFORMED)
                return False
            head = _without_upgrade(method, self.url, self.parser.get_http_version(),
                                    self.headers)
            self.parser = httptools.HttpRequestParser(self)
            self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
            self._head = 0      # the head counted already: its shorter copy is not again
            return self._feed(memoryview(head)) is not None

        def _refuse(self, reason: str, response: bytes) -> None:
            if reason in unread:
                unread[reason].inc()
            self.transport.write(response)
            if reason == "head_too_large":      # a client still sending: let it read this
                self.linger()
            else:
                self.transport.close()

        def linger(self) -> None:
            """Close once the client has read the answer: for an answer given before its
            request was read whole (a head or body over its limit), to a client that is
            likely still sending. Closing at once, with its bytes unread, would reset the
            connection, and the client would see the reset rather than the answer; so the
            edge says it is done (a FIN), drops what still arrives, and closes when the
            client does or ``http_header_timeout`` after the answer (as nginx's lingering
            close). Until then the connection is the first to make room."""
            self._disarm()
            self._unset_keepalive_if_required()
            self._lingering = True
            if self.flow is not None:
                self.flow.resume_reading()
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self._timer = self.loop.call_later(limits.header_timeout, self.transport.close)
            if not self._probe:
                waiting.add(self, first=True)

        def close_after_answer(self) -> None:
            """uvicorn's close after an answer (:class:`_Answering`)."""
            if self.cycle is not None and self.cycle.more_body and not self._lingering \
                    and not self.transport.is_closing():
                self.linger()
            else:
                self.transport.close()

        # ------------------------------------------------------------------ the parser's

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._fields = 0
            # for the bridge's peer (an extension key of ours, beside the ASGI ones)
            cast(dict[str, Any], self.scope)["shuangkou.transport"] = self.transport
            if self._timer is None:            # a kept-alive connection's next request
                self._arm("header", limits.header_timeout)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._fields += 1
            if self._fields > field_limit:
                raise _HeadTooLarge
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._head = None
            if self.parser.should_upgrade():   # read again without the offer: above
                self._upgrade = True
                return
            waiting.remove(self)
            super().on_headers_complete()
            if self.cycle is not None:
                # its close lingers when the request was not read whole: linger()
                self.cycle.transport = cast(asyncio.Transport, _Answering(self))
            self._arm("body", limits.body_timeout)

        def on_message_complete(self) -> None:
            if self._upgrade:
                return
            super().on_message_complete()
            self._disarm()
            # What follows is the next request's head. (Bytes of it that came in the read
            # that ended this request are not counted: a head pipelined behind a body may
            # pass the limit by one read, 256 KiB, before it is refused.)
            self._head = 0

        def on_response_complete(self) -> None:
            if self._lingering:                 # the connection's last answer
                return
            idle = not self.pipeline
            super().on_response_complete()
            if idle and not self.transport.is_closing() and not self._probe:
                waiting.add(self)

        def timeout_keep_alive_handler(self) -> None:
            if not self.transport.is_closing() and "idle" in timeouts:
                timeouts["idle"].inc()
            super().timeout_keep_alive_handler()

        def _arm(self, phase: str, seconds: float) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expired, phase)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self, phase: str) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            # A connection that never sent a byte was idle, not slow.
            phase = phase if self._bytes else "idle"
            if phase in timeouts:
                timeouts[phase].inc()
            if self._bytes and (self.cycle is None or self.cycle.response_complete
                                or not self.cycle.response_started):
                self.transport.write(_SLOW)
            self.transport.close()

    return EdgeProtocol


class _Answering:
    """The transport of one request as uvicorn's answer sees it (its writes go through),
    whose close is the protocol's :meth:`close_after_answer`: an answer given before the
    request was read whole lingers rather than resetting the connection."""

    __slots__ = ("_protocol",)

    def __init__(self, protocol: Any) -> None:
        self._protocol = protocol

    def write(self, data: bytes) -> None:
        self._protocol.transport.write(data)

    def is_closing(self) -> bool:
        return bool(self._protocol.transport.is_closing())

    def close(self) -> None:
        self._protocol.close_after_answer()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._protocol.transport, name)


def _client(address: tuple[str, int] | None) -> str:
    return f"{address[0]}:{address[1]}" if address else "-"


class EdgeServer:
    """uvicorn serving an ASGI application on a bound socket, from a thread (and event
    loop) of its own, with the limits of :class:`EdgeLimits`; with ``probe`` (a loopback
    socket of its own), also there for :meth:`answers`."""

    def __init__(self, app: Any, sock: socket.socket, limits: EdgeLimits, *,
                 grace: float = 5.0, name: str = "http",
                 probe: socket.socket | None = None) -> None:
        import uvicorn

        from ..logs import bound_lines

        self.port: int = sock.getsockname()[1]
        self.app, self.limits = app, limits
        self._sock, self._probe = sock, probe
        self._probe_address: tuple[str, int] | None = (
            tuple(probe.getsockname()[:2]) if probe is not None else None)
        config = uvicorn.Config(
            app, http=_protocol_class(limits, self._probe_address), loop="asyncio",
            lifespan="off", interface="asgi3", ws="none", log_config=None, log_level=None,
            access_log=False, server_header=False, proxy_headers=False,
            timeout_keep_alive=max(1, round(limits.keepalive_timeout)),
            timeout_graceful_shutdown=max(1, round(grace)), backlog=2048,
            h11_max_incomplete_event_size=64 * 1024)
        self._server = uvicorn.Server(config)
        # uvicorn's start-up and shutdown lines ("Started server process ...") say nothing
        # the service's own log line does not; its warnings and errors stay, bounded with
        # every other line a client can cause.
        quiet = logging.getLogger("uvicorn.error")
        if quiet.level == logging.NOTSET:
            quiet.setLevel(logging.WARNING)
        metrics = limits.metrics
        bound_lines(CLIENT_LOGGERS, CLIENT_LINES_PER_SECOND,
                    metrics.log_dropped.labels if metrics is not None else None)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        sockets = [self._sock] if self._probe is None else [self._sock, self._probe]
        asyncio.run(self._server.serve(sockets=sockets))

    def start(self) -> None:
        """Serve; returns once the socket listens (or the server failed)."""
        self._thread.start()
        deadline = time.monotonic() + 10
        while (not self._server.started and self._thread.is_alive()
               and time.monotonic() < deadline):
            time.sleep(0.005)

    def answers(self, timeout: float = 1.0) -> bool:
        """Whether the server answers: it still listens on its port, and a request to its
        probe socket (loopback, of this process alone) is answered within ``timeout``.
        Through a socket of its own, the probe never queues behind the connections of the
        port: a client flooding the port does not make the server look broken, one whose
        event loop is stuck or whose listener closed does."""
        import http.client

        if self._probe_address is None or not self.listening:
            return False
        conn = http.client.HTTPConnection(*self._probe_address, timeout=timeout)
        try:
            conn.request("GET", "/healthz")     # not /readyz: that answers from readiness
            return conn.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    @property
    def listening(self) -> bool:
        """Whether the server accepts connections on its port."""
        servers = getattr(self._server, "servers", [])
        return (self._server.started and not self._server.should_exit
                and any(s.is_serving() for s in servers))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, let calls in flight finish (uvicorn's graceful shutdown), close."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        else:
            self._sock.close()
            if self._probe is not None:
                self._probe.close()


def listening_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A bound TCP socket (``host`` an IPv4 or IPv6 address, brackets allowed); OSError."""
    host = host.strip("[]")
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on connections of a socket that says
    # so, and without it a reply written in two parts waits out the client's delayed ACK
    # (40 ms a call on Linux).
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM,
                         socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock
