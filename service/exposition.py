"""The ``/metrics`` HTTP endpoint, apart from the metrics it exposes: a Prometheus text
exposition of a registry (the server's own, or in ``--workers`` mode the supervisor's
aggregate of every worker: :func:`multiprocess_registry`), by prometheus_client's ASGI
application on the HTTP edge's server, with the API port's timeouts and cap.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, make_asgi_app, multiprocess

if TYPE_CHECKING:
    from .config import Config
    from .metrics import Metrics

__all__ = ["MetricsHTTPServer", "start_metrics_server", "multiprocess_registry",
           "mark_process_dead"]

log = logging.getLogger(__name__)


class _WorkersCollector(multiprocess.MultiProcessCollector):
    """prometheus_client's aggregate of the workers' files, read again when one pass fails:
    a worker that dies or is replaced while a scrape lists and reads the directory (its
    gauges' files removed by :func:`mark_process_dead`, a new worker's file still being
    laid out) fails that pass alone, and the scrape should not fail with it."""

    def collect(self) -> Any:
        for attempt in range(3):
            try:
                return list(super().collect())  # type: ignore[no-untyped-call]  # untyped upstream
            except (OSError, ValueError, struct.error):
                if attempt == 2:
                    raise
                log.debug("metrics: a worker's file changed during a scrape; reading again")
        return []  # not reached


def multiprocess_registry(path: str) -> CollectorRegistry:
    """A registry aggregating every worker's values from prometheus_client's directory."""
    registry = CollectorRegistry()
    _WorkersCollector(registry, path=path)  # type: ignore[no-untyped-call]  # its __init__
    return registry


class MetricsHTTPServer:
    """``/metrics`` (or ``/``) served by the HTTP edge's server (uvicorn, on a thread of its
    own: :class:`shuangkou.service.http.edge.EdgeServer`) with the same limits as the API's port:
    idle connections cost a file descriptor, never a thread, until the header timeout (or
    the keep-alive timeout between scrapes); past ``max_connections`` a new connection
    closes the one waiting longest for a request, or is answered 503 and closed when none
    waits."""

    def __init__(self, host: str, port: int, registry: CollectorRegistry, *,
                 header_timeout: float = 5.0, body_timeout: float = 5.0,
                 keepalive_timeout: float = 30.0, max_connections: int = 256,
                 metrics: Metrics | None = None) -> None:
        from .http.edge import EdgeLimits, EdgeServer, listening_socket

        sock = listening_socket(host, port)
        limits = EdgeLimits(header_timeout, body_timeout, keepalive_timeout, max_connections,
                            metrics, "metrics")
        self._server = EdgeServer(_app(registry), sock, limits, grace=1.0, name="metrics-http")
        self.port: int = self._server.port
        self._server.start()

    def shutdown(self) -> None:
        self._server.stop(2)


def _app(registry: CollectorRegistry) -> Any:
    """prometheus_client's ASGI application on ``/metrics`` and ``/``; 404 elsewhere."""
    exposition = make_asgi_app(registry)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] in ("/metrics", "/"):
            await exposition(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 404,
                    "headers": [(b"content-type", b"text/plain"), (b"content-length", b"10")]})
        await send({"type": "http.response.body", "body": b"not found\n"})
    return app


def start_metrics_server(port: int, host: str, registry: CollectorRegistry,
                         config: Config | None = None, metrics: Metrics | None = None
                         ) -> MetricsHTTPServer:
    """Serve ``/metrics`` over HTTP with ``config``'s HTTP timeouts and connection cap;
    returns the server (call ``shutdown()`` to stop). ``metrics``: where its connections
    and timeouts count (None in the ``--workers`` supervisor).

    A port already in use raises OSError with one sentence naming the port and its setting.
    """
    limits: dict[str, Any] = {} if config is None else {
        "header_timeout": config.http_header_timeout, "body_timeout": config.http_body_timeout,
        "keepalive_timeout": config.http_keepalive_timeout,
        "max_connections": config.http_max_connections}
    try:
        return MetricsHTTPServer(host, port, registry, metrics=metrics, **limits)
    except OSError as exc:
        why = "it is in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise OSError(f"cannot serve metrics on {host}:{port}: {why} (setting metrics_port, "
                      f"flag --metrics-port; 0 disables metrics)") from None


def mark_process_dead(pid: int, path: str | None = None) -> None:
    """Drop a finished worker's live gauges (multiprocess mode)."""
    multiprocess.mark_process_dead(pid, path or os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
