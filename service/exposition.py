"""The ``/metrics`` HTTP endpoint, apart from the metrics it exposes: a Prometheus text
exposition of a registry (the server's own, or in ``--workers`` mode the supervisor's
aggregate of every worker: :func:`multiprocess_registry`).
"""

from __future__ import annotations

import errno
import logging
import os
import selectors
import socket
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest, multiprocess
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["MetricsHTTPServer", "start_metrics_server", "multiprocess_registry",
           "mark_process_dead"]

log = logging.getLogger(__name__)


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


def mark_process_dead(pid: int, path: str | None = None) -> None:
    """Drop a finished worker's live gauges (multiprocess mode)."""
    multiprocess.mark_process_dead(pid, path or os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
