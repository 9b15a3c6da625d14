"""Health over HTTP, and readiness that follows the HTTP server.

``/healthz`` and ``/readyz`` (:func:`probe`, answered by the bridge on the event loop) are
for load balancers and orchestrators that do not speak gRPC health (docs/operations.md
"Health over HTTP"). :class:`Readiness` takes the service's gRPC health to NOT_SERVING
while the HTTP server does not answer its own probe
(:meth:`~shuangkou.service.http.edge.EdgeServer.answers`: ``/healthz`` through a loopback
socket of its own, so that a flood of the port never moves it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import grpc
import orjson

from ..errors import http_error
from .edge import log

if TYPE_CHECKING:
    from ..metrics import Metrics

__all__ = ["PROBES", "probe", "Readiness"]

#: The probes of the HTTP port (docs/operations.md "Health over HTTP"), for load balancers
#: and orchestrators that do not speak gRPC health.
PROBES = ("/healthz", "/readyz")
_PROBE_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


def probe(path: str, method: str, health: Callable[[], Mapping[str, str]] | None
          ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The answer to a probe: ``/healthz`` (liveness) 200 whenever the process answers;
    ``/readyz`` 200 when every service's gRPC health (``health()``, the statuses by service
    name, ``""`` the server as a whole) is SERVING, else 503 — the state gRPC health
    clients see, NOT_SERVING while draining or while the HTTP server does not answer its
    own probe (:class:`Readiness`). Without ``health`` (an embedder's server) ready is live.
    Not counted in ``shuangkou_http_requests_total``, which counts API calls by protocol."""
    if method not in ("GET", "HEAD"):
        line, fields, body = http_error("", 405, grpc.StatusCode.UNIMPLEMENTED,
                                        f"{path} answers GET (or HEAD)", [("Allow", "GET, HEAD")])
        return int(line[:3]), [(k.lower().encode(), v.encode()) for k, v in fields], body
    if path == "/healthz" or health is None:
        return 200, _PROBE_HEADERS, b'{"status":"SERVING"}'
    services = dict(health())
    ready = bool(services) and all(s == "SERVING" for s in services.values())
    return (200 if ready else 503), _PROBE_HEADERS, orjson.dumps(
        {"status": "SERVING" if ready else "NOT_SERVING", "services": services})


class Readiness:
    """Asks ``answers`` (:meth:`~shuangkou.service.http.port.HttpServer.answers`) every
    ``interval`` seconds; ``on_change(ready)`` when the answer changes, so that a pod
    whose HTTP server is broken — its event loop stuck, its listener closed — leaves the
    load balancer, while one that a client floods stays in it (the question goes through a
    loopback socket of the server's own, never through the port's queue of connections)."""

    def __init__(self, answers: Callable[[], bool], on_change: Callable[[bool], None],
                 metrics: Metrics | None = None, interval: float = 2.0) -> None:
        self.probe, self._on_change, self._interval = answers, on_change, interval
        self._gauge = metrics.http_ready if metrics else None
        self._stop = threading.Event()
        self.ready = True
        if self._gauge is not None:
            self._gauge.set(1)
        self._thread = threading.Thread(target=self._loop, name="http-ready", daemon=True)

    def start(self) -> Readiness:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            ready = self.probe()
            if ready != self.ready and not self._stop.is_set():
                self.ready = ready
                if self._gauge is not None:
                    self._gauge.set(int(ready))
                log.warning("HTTP server %s: the service is %s", "answers again" if ready
                            else "does not answer its loopback probe within 1 s",
                            "SERVING" if ready else "NOT_SERVING")
                self._on_change(ready)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
