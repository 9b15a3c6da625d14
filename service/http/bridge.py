"""The bridge between the edge (ASGI, an event loop) and the application (WSGI, threads).

:class:`Bridge` is the ASGI application uvicorn serves. On the event loop it answers the
probes (:mod:`~shuangkou.service.http.probes`: they answer while every thread works) and
reads a request's body, bounded by its method's limit
(:class:`~shuangkou.service.http.refusals.BodyLimits`: 413 before it is read when its
Content-Length is over it, or as it arrives). It then runs the call — the
:class:`~shuangkou.service.http.app.HttpApp` as WSGI, with its
:class:`~shuangkou.service.http.seam.Call` — on gRPC's handler threads, so that one queue
bound holds for both ports: past ``max_queued_calls`` waiting calls a call is refused
RESOURCE_EXHAUSTED, HTTP 429, from a thread of its own, as gRPC's are. A call without a
deadline gets the server's ``default_deadline``; a call whose client hung up is no longer
active (it ends CANCELLED). A unary answer is sent whole, a stream (ScoreReplays) chunk by
chunk. With ``access_log`` set, each request's access line is written around it
(:mod:`~shuangkou.service.http.access`).
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import sys
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, cast

import grpc

from ..errors import bounded, http_error
from . import probes
from .access import Seen
from .app import Tracked
from .edge import log
from .seam import Call, current

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse

    from ..admission import Admission
    from ..logs import AccessLog
    from ..metrics import Metrics
    from .app import HttpApp
    from .refusals import BodyLimits, Refusals

__all__ = ["Bridge"]

_GONE = b"(the client hung up)"          # what Bridge._body reads of a client gone
#: Chunks of an answer held before it is streamed: a unary gRPC-Web answer is two (the
#: message, the trailers) and goes whole.
_HELD_CHUNKS = 4


class Bridge:
    """The ASGI face of an :class:`~shuangkou.service.http.app.HttpApp`: reads the body on
    the event loop (bounded by its method's limit, ``limits``: refused 413 before it is read
    when its Content-Length is over it, or as it arrives, and counted in ``refusals``), runs
    the call on the handler threads gRPC uses — or, when admission finds
    ``max_queued_calls`` calls already waiting, refuses it at once from a thread of its own,
    as gRPC's are (RESOURCE_EXHAUSTED, HTTP 429, counted) — and watches for the client
    hanging up meanwhile (the call's context
    then reports it gone)."""

    def __init__(self, app: HttpApp, pool: Executor, admission: Admission,
                 limits: BodyLimits, default_deadline: float, metrics: Metrics,
                 health: Callable[[], Mapping[str, str]] | None = None,
                 access: AccessLog | None = None, refusals: Refusals | None = None) -> None:
        self._app, self._pool, self._admission = app, pool, admission
        self._limits, self._default = limits, default_deadline
        self._disconnects = metrics.http_disconnects
        self._health = health
        self._access = access
        self._refusals = refusals

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any],
                       send: Callable[[Any], Any]) -> None:
        if scope["type"] != "http":
            return
        # Probes on the event loop (they answer while every thread works), with no access
        # line, as gRPC health checks get none.
        if scope["path"] in probes.PROBES:
            await _answer(send, *probes.probe(scope["path"], scope["method"], self._health))
            return
        if self._access is None:
            await self._serve(scope, receive, send)
            return
        # --- the access-log hook (issue 36): the request served, what went each way seen
        seen = Seen(receive, send)
        t0 = time.perf_counter()
        try:
            await self._serve(scope, seen.receive, seen.send)
        finally:
            seen.log(self._access, scope, time.perf_counter() - t0)

    async def _serve(self, scope: dict[str, Any], receive: Callable[[], Any],
                     send: Callable[[Any], Any]) -> None:
        t0 = time.perf_counter()
        limit, setting = self._limits(scope["path"])
        body = await self._body(scope, receive, limit)
        if body is _GONE:                        # hung up before its body was in
            self._disconnects.inc()
            return
        if body is None:
            if self._refusals is not None:
                self._refusals.count(scope["path"], grpc.StatusCode.RESOURCE_EXHAUSTED,
                                     "too_large", time.perf_counter() - t0)
            await self._refuse(scope, send, 413, grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"request body over the limit of {limit:,} bytes ({setting})")
            return
        loop = asyncio.get_running_loop()
        overloaded = self._admission.overloaded()
        call = Call(time.monotonic() + self._default if self._default else None, overloaded,
                    _peer(scope))
        scope["shuangkou.call"] = call         # for the access line (access.Seen)
        watch = loop.create_task(_watch(receive, call))
        started = False

        async def sending(message: Any) -> None:
            nonlocal started
            started = True
            await send(message)
        try:      # the watch and the duplicate socket last as long as the answer does
            await self._answer(scope, body, call, loop, sending)
        except Exception:
            if started:
                raise
            # uvicorn's own answer would be a bare "Internal Server Error" page
            log.exception("HTTP %s %s failed", scope["method"], bounded(scope["path"], 256))
            await self._refuse(scope, send, 500, grpc.StatusCode.INTERNAL,
                               "the server failed this call (its log says why)")
        finally:
            watch.cancel()
            call.close()

    async def _refuse(self, scope: dict[str, Any], send: Callable[[Any], Any], status: int,
                      code: grpc.StatusCode, message: str) -> None:
        """:func:`~shuangkou.service.errors.http_error` from the event loop (the request not
        read whole, or the application failed): in the request's protocol, with its CORS
        headers, and the connection closed after it."""
        headers = dict(scope["headers"])
        origin = headers.get(b"origin")
        line, fields, body = http_error(
            headers.get(b"content-type", b"").decode("latin-1"), status, code, message,
            self._app.cors(origin.decode("latin-1") if origin else None), in_band=True)
        await _answer(send, int(line[:3]), [
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in fields),
            (b"connection", b"close")], body)

    async def _answer(self, scope: dict[str, Any], body: bytes, call: Call,
                      loop: asyncio.AbstractEventLoop, send: Callable[[Any], Any]) -> None:
        stream: asyncio.Queue[Any] = asyncio.Queue()
        run = loop.run_in_executor(
            self._admission.refusals if call.overloaded else self._pool, self._run,
            _environ(scope, body), call, loop, stream)
        first = loop.create_task(stream.get())
        await asyncio.wait((run, first), return_when=asyncio.FIRST_COMPLETED)
        whole = not first.done()
        if whole:                        # the whole answer at once: a unary call
            first.cancel()
            status, headers, chunks = await run
        else:                            # a long stream: its head, then chunks as they come
            status, headers, chunks = first.result()
        if call.gone:
            self._disconnects.inc()
            # The server may not know yet (the call's thread saw it first): an answer that
            # goes nowhere, rather than uvicorn's error line for an application that gave none.
            await _answer(send, 499, [(b"connection", b"close")], b"")
            await run
            return
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        if whole:
            data = b"".join(chunks)
            if not any(k == b"content-length" for k, _ in raw):
                raw.append((b"content-length", str(len(data)).encode()))
            await _answer(send, int(status[:3]), raw, data)
            return
        await send({"type": "http.response.start", "status": int(status[:3]), "headers": raw})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        while (chunk := await stream.get()) is not None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        await run

    @staticmethod
    async def _body(scope: dict[str, Any], receive: Callable[[], Any],
                    limit: int) -> bytes | None:
        """The request body; None when it is over ``limit``: as its Content-Length says,
        before it is read (uvicorn holds no more than its 64 KiB high-water mark and one
        read of it, and a client that waits for ``100 Continue`` sends nothing), or as it
        arrives."""
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return _GONE
            part = message.get("body", b"")
            if len(body) + len(part) > limit:
                return None
            body += part
            if not message.get("more_body"):
                return bytes(body)

    def _run(self, environ: dict[str, Any], call: Call, loop: asyncio.AbstractEventLoop,
             stream: asyncio.Queue[Any]) -> tuple[str, list[tuple[str, str]], list[bytes]]:
        """On a handler thread: the WSGI call, its answer returned whole (a unary call's: a
        list, or a gRPC-Web generator of two frames). A longer stream (ScoreReplays) is not
        held: its head and first chunks go to ``stream``, then each chunk as it comes, then
        None."""
        if call.gone:         # hung up while the call waited for a thread: nothing to run
            return "499 Client Closed Request", [], []
        current.call = call
        head: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Any:
            head[:] = [status, headers]
        body: Any = ()
        try:
            body = self._app(environ, cast("StartResponse", start_response))
            listed = body.listed if isinstance(body, Tracked) else body
            if isinstance(listed, list):
                return head[0], head[1], list(listed)
            chunks, held = iter(body), []
            for chunk in chunks:
                held.append(chunk)
                if len(held) == _HELD_CHUNKS:
                    break
            else:
                return head[0], head[1], held
            loop.call_soon_threadsafe(stream.put_nowait, (head[0], head[1], held))
            try:
                for chunk in chunks:
                    if chunk:
                        loop.call_soon_threadsafe(stream.put_nowait, chunk)
            finally:
                loop.call_soon_threadsafe(stream.put_nowait, None)
            return head[0], head[1], []
        finally:
            getattr(body, "close", lambda: None)()
            current.call = None


def _peer(scope: dict[str, Any]) -> socket.socket | None:
    """A duplicate of the call's connection (the edge's protocol puts its transport in the
    scope), for :meth:`Call.hung_up`; None under another server."""
    transport = scope.get("shuangkou.transport")
    raw = transport.get_extra_info("socket") if transport is not None else None
    if raw is None:
        return None
    try:
        return socket.socket(fileno=os.dup(raw.fileno()))
    except OSError:
        return None


async def _watch(receive: Callable[[], Any], call: Call) -> None:
    """Mark ``call`` gone when its client hangs up before the answer (uvicorn reports a
    disconnect to a receive() pending after the body)."""
    message = await receive()
    if message["type"] == "http.disconnect":
        call.gone = True


async def _answer(send: Callable[[Any], Any], status: int, headers: list[tuple[bytes, bytes]],
                  body: bytes) -> None:
    if not any(k == b"content-length" for k, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _environ(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The WSGI environ of an ASGI request (PEP 3333: header values as latin-1 text)."""
    client = scope.get("client") or ("", 0)
    server = scope.get("server") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"], "SCRIPT_NAME": "", "PATH_INFO": scope["path"],
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "SERVER_NAME": server[0], "SERVER_PORT": str(server[1]),
        "REMOTE_ADDR": client[0], "REMOTE_PORT": str(client[1]),
        "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": scope.get("scheme", "http"), "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0), "wsgi.multithread": True, "wsgi.multiprocess": False,
        "wsgi.run_once": False}
    for name, value in scope["headers"]:
        key = name.decode("latin-1").upper().replace("-", "_")
        if key == "CONTENT_LENGTH":
            continue
        if key != "CONTENT_TYPE":
            key = "HTTP_" + key
        text = value.decode("latin-1")
        environ[key] = f"{environ[key]},{text}" if key in environ else text
    return environ
