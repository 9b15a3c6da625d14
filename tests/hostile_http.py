"""Hostile clients of the HTTP port, for tests/test_edge_bounds.py and bench/bench_edge.py
(issue 62): request heads and bodies far over any limit, a client that opens, holds and
reopens connections as fast as it can, and an ordinary client's calls meanwhile. Loopback
only; every one bounded in time.

``python tests/hostile_http.py flood PORT CONNECTIONS SECONDS`` runs the reconnect flood in
a process of its own (so that it does not share the measuring client's GIL) and prints how
many connections it opened.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: Writes of a hostile request: small enough that the server's refusal stops the sending.
CHUNK = 64 * 1024
CLASSIFY = "/shuangkou.v1.ShuangkouService/ClassifyPlay"


def _status(answer: bytes) -> int:
    """The status of an HTTP/1.1 answer (0: none)."""
    if not answer.startswith(b"HTTP/1."):
        return 0
    return int(answer.split(b" ", 2)[1])


def _send_then_read(port: int, head: bytes, parts: Callable[[], bytes | None],
                    timeout: float) -> int:
    """Send ``head`` and then ``parts()`` until it returns None, stopping as soon as the
    server answers or stops reading; the status it answered (0: none)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, CHUNK)
    answer = b""
    try:
        sock.sendall(head)
        sock.setblocking(False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                answer += sock.recv(65536)
                break                           # the server answered (or closed)
            except BlockingIOError:
                pass
            part = parts()
            if part is None:
                break
            try:
                sock.settimeout(0.2)
                sock.sendall(part)
            except TimeoutError:
                pass                            # the server stopped reading: its answer?
            except OSError:
                break
            finally:
                sock.setblocking(False)
        sock.settimeout(timeout)
        while b"\r\n\r\n" not in answer:
            more = sock.recv(65536)
            if not more:
                break
            answer += more
    except OSError:
        pass
    finally:
        sock.close()
    return _status(answer)


def huge_head(port: int, size: int, *, timeout: float = 30.0) -> int:
    """A request whose one header is ``size`` bytes long, written 64 KiB at a time while
    the server reads; the status it answered (0: none)."""
    left = [size]

    def parts() -> bytes | None:
        if left[0] <= 0:
            return None
        n = min(CHUNK, left[0])
        left[0] -= n
        return b"a" * n if left[0] else b"a" * (n - 4) + b"\r\n\r\n"
    head = (f"POST {CLASSIFY} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nX-Big: ").encode()
    return _send_then_read(port, head, parts, timeout)


def many_headers(port: int, count: int, *, timeout: float = 30.0) -> int:
    """A request of ``count`` small header fields; the status it answered (0: none)."""
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(count))
    head = (f"POST {CLASSIFY} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\n").encode()
    sent = [False]

    def parts() -> bytes | None:
        if sent[0]:
            return None
        sent[0] = True
        return fields + b"\r\n{}"
    return _send_then_read(port, head, parts, timeout)


def huge_body(port: int, size: int, *, chunked: bool, path: str = CLASSIFY,
              timeout: float = 60.0) -> int:
    """A request of a ``size``-byte body (Content-Length, or chunked in 64 KiB chunks) to
    ``path``; the status it answered (0: none)."""
    left = [size]

    def parts() -> bytes | None:
        if left[0] <= 0:
            return None
        n = min(CHUNK, left[0])
        left[0] -= n
        data = b" " * n
        if not chunked:
            return data
        return b"%x\r\n%s\r\n" % (n, data) + (b"0\r\n\r\n" if not left[0] else b"")
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {size}"
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"{framing}\r\n\r\n").encode()
    return _send_then_read(port, head, parts, timeout)


def at_once(n: int, send: Callable[[], int]) -> list[int]:
    """``send()`` from ``n`` threads at once; their statuses."""
    statuses = [0] * n
    start = threading.Barrier(n)

    def one(i: int) -> None:
        start.wait()
        statuses[i] = send()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return statuses


# ----------------------------------------------------------------------------- the flood

async def _hold(port: int, stop: float, opened: list[int]) -> None:
    """Open a connection, hold it until the server closes it, open the next, until
    ``stop``."""
    while time.monotonic() < stop:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        opened[0] += 1
        try:
            await asyncio.wait_for(reader.read(65536), max(0.01, stop - time.monotonic()))
        except (TimeoutError, OSError):
            pass
        writer.close()


async def _flood(port: int, connections: int, seconds: float) -> int:
    opened = [0]
    stop = time.monotonic() + seconds
    await asyncio.gather(*(_hold(port, stop, opened) for _ in range(connections)))
    return opened[0]


@dataclass
class Flood:
    """The reconnect flood running in a process of its own (:func:`reconnect_flood`)."""

    proc: subprocess.Popen[str]

    def opened(self) -> int:
        """Wait for the flood to end: how many connections it opened."""
        out, _ = self.proc.communicate(timeout=120)
        return int(out.split()[-1]) if out.split() else 0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def reconnect_flood(port: int, connections: int, seconds: float) -> Flood:
    """``connections`` clients that each open a connection, hold it until the server closes
    it and open the next at once, for ``seconds``, in a process of their own."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "flood", str(port),
                             str(connections), str(seconds)],
                            stdout=subprocess.PIPE, text=True)
    return Flood(proc)


@dataclass
class Calls:
    """An ordinary client's calls: how many were made and how many answered 200."""

    made: int = 0
    answered: int = 0
    slowest: float = 0.0
    errors: dict[str, int] = field(default_factory=dict)


def ordinary_calls(port: int, seconds: float, *, interval: float = 0.25,
                   timeout: float = 2.0) -> Calls:
    """A GetServerInfo over a new connection every ``interval`` seconds for ``seconds``,
    each with ``timeout``: answered when it is 200 within the timeout."""
    calls = Calls()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic()
        calls.made += 1
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request("POST", "/shuangkou.v1.ShuangkouService/GetServerInfo", b"{}",
                         {"Content-Type": "application/json"})
            if conn.getresponse().status == 200:
                calls.answered += 1
        except (OSError, http.client.HTTPException) as exc:
            kind = type(exc).__name__
            calls.errors[kind] = calls.errors.get(kind, 0) + 1
        finally:
            conn.close()
        took = time.monotonic() - t0
        calls.slowest = max(calls.slowest, took)
        time.sleep(max(0.0, interval - took))
    return calls


if __name__ == "__main__" and sys.argv[1:2] == ["flood"]:
    print(asyncio.run(_flood(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))),
          flush=True)
