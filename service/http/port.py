"""The HTTP port assembled: :func:`create_http_server` builds an :class:`HttpServer` from the
servicers gRPC serves — each service's Connect application (connectrpc's, generated from the
protos) over their endpoints (:mod:`~shuangkou.service.http.seam`) and the codecs, in the
:class:`~shuangkou.service.http.app.HttpApp`, behind the
:class:`~shuangkou.service.http.bridge.Bridge`, on the
:class:`~shuangkou.service.http.edge.EdgeServer` — bound, not yet started.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent import futures
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shuangkou.v1 import rounds_connect, rounds_pb2_grpc, service_connect, service_pb2_grpc

from ..startup import bind_error
from .app import HttpApp
from .bridge import Bridge
from .codec import Codec
from .edge import EdgeLimits, EdgeServer, listening_socket, log
from .refusals import BodyLimits, Refusals
from .seam import endpoints

if TYPE_CHECKING:
    from ..config import Config
    from ..interceptor import MetricsInterceptor
    from ..metrics import Metrics

__all__ = ["HttpServer", "create_http_server"]


@dataclass(frozen=True)
class HttpServer:
    """The HTTP port: an :class:`~shuangkou.service.http.app.HttpApp` behind the bridge,
    served by uvicorn."""

    app: HttpApp
    edge: EdgeServer

    @property
    def port(self) -> int:
        return self.edge.port

    def start(self) -> None:
        self.edge.start()

    def answers(self) -> bool:
        """Whether the port answers (:meth:`EdgeServer.answers
        <shuangkou.service.http.edge.EdgeServer.answers>`): what readiness follows."""
        return self.edge.answers()

    def drain(self, grace: float) -> None:
        """Stop accepting connections, let requests in flight finish (up to ``grace``
        seconds), then close every connection."""
        self.edge._server.should_exit = True
        if not self.app.wait_idle(grace):
            log.warning("HTTP: %d request(s) still in flight after %gs", self.app.in_flight,
                        grace)
        self.stop()

    def stop(self) -> None:
        self.edge.stop()


def create_http_server(config: Config, servicers: Mapping[str, Any],
                       interceptor: MetricsInterceptor, metrics: Metrics,
                       pool: Executor | None = None, *,
                       health: Callable[[], Mapping[str, str]] | None = None) -> HttpServer:
    """The HTTP port of ``config`` serving ``servicers`` (``{"shuangkou": ..., "rounds":
    ...}``, the instances gRPC serves) through ``interceptor``, on ``pool`` (gRPC's handler
    threads, so that one queue bound holds for both ports; its own when None); bound, not
    yet started. ``health``: the gRPC health statuses by service, for ``/readyz``
    (:func:`shuangkou.service.server.health_statuses`)."""
    admission = interceptor.admission
    codecs = [Codec(admission, json=False), Codec(admission, json=True)]
    # connectrpc refuses a message over twice the limit itself (as gRPC's transport does);
    # below that the codec measures it, so that the refusal is counted.
    read_max = min(2 * config.max_message_bytes, config.http_max_request_bytes)
    refusals = Refusals(interceptor)
    apps = [
        service_connect.ShuangkouServiceWSGIApplication(
            endpoints(servicers["shuangkou"],
                      service_pb2_grpc.add_ShuangkouServiceServicer_to_server, interceptor),
            interceptors=[refusals], read_max_bytes=read_max, codecs=codecs),
        rounds_connect.RoundServiceWSGIApplication(
            endpoints(servicers["rounds"], rounds_pb2_grpc.add_RoundServiceServicer_to_server,
                      interceptor),
            interceptors=[refusals], read_max_bytes=read_max, codecs=codecs),
    ]
    app = HttpApp(apps, metrics, config.http_cors_origins, refusals)
    if pool is None:
        pool = admission.pool or futures.ThreadPoolExecutor(config.threads,
                                                            thread_name_prefix="http")
    bridge = Bridge(app, pool, admission,
                    BodyLimits(config.max_message_bytes, config.http_max_request_bytes),
                    config.default_deadline, metrics, health, interceptor.access, refusals)
    try:
        sock = listening_socket(config.http_host, config.http_port,
                                reuse_port=config.shares_ports)
    except OSError as exc:
        raise bind_error(config.http_address, exc, "setting http_port, flag --http-port; "
                         "--no-http disables HTTP") from None
    # the readiness probe's own way in (EdgeServer.answers), on loopback
    try:
        probe = listening_socket("127.0.0.1", 0)
    except OSError:                             # a host without IPv4
        probe = listening_socket("::1", 0)
    return HttpServer(app, EdgeServer(bridge, sock, EdgeLimits.of(config, metrics),
                                      grace=config.grace, probe=probe))
