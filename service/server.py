"""Server assembly and lifecycle, split as in the gRPC examples.

* :func:`create_handlers` builds what every transport serves: one instance of each servicer
  behind one metrics interceptor (the limits, the stream cap);
* :func:`create_server` builds a gRPC server (those handlers, health, optional reflection,
  keepalive, TLS) bound to the configured address and returns ``(server, port)``; the HTTP
  port (:mod:`shuangkou.service.http`) serves the same handlers;
* :func:`serve` runs one server process until SIGTERM/SIGINT, then shuts down gracefully:
  health NOT_SERVING, ``stop(grace)`` so in-flight RPCs finish, then returns 0 (the CLI exits
  at once even if a handler thread is still computing, so shutdown never outlasts grace);
* start-up that the ``--workers`` supervisor shares (house variants, stop signals) is
  :mod:`shuangkou.service.startup`'s; ``shuangkou serve`` chooses one process or the
  supervisor (:func:`shuangkou.service.cli.run`).

Logging is configured by the CLI only.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, cast

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection, reflection_pb2

from shuangkou.v1 import rounds_pb2, service_pb2

from .admission import CallPool, CallStart
from .api.rounds import ROUND_SERVICE_NAME, RoundServicer, register_round_service
from .api.shuangkou import SERVICE_NAME, ShuangkouServicer, register_shuangkou_service
from .config import Config, load_state_keys
from .heap import keep_heap_pad
from .lane import Lane
from .limits import Limits
from .startup import check_bindable, load_house_variants, stop_signals, wait_for_stop
from .version import version

__all__ = ["create_server", "create_handlers", "Handlers", "serve", "SERVICE_NAME",
           "HealthServicer", "set_serving", "set_service_serving", "enable_reflection",
           "health_statuses"]

log = logging.getLogger(__name__)
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
#: The services whose handlers CallStart marks (and gives the default deadline).
API_SERVICES = (SERVICE_NAME, ROUND_SERVICE_NAME)


class HealthServicer(health.HealthServicer):
    """grpcio's health service plus ``List`` (every registered service and its status)."""

    # grpcio's own state, set by its __init__ (typeshed's stub leaves both out).
    _lock: threading.RLock
    _server_status: dict[str, int]

    # The List RPC (in the installed grpcio-health-checking) is newer than typeshed's
    # types-grpcio-health-checking, which has neither its messages nor its servicer
    # method: hence Any here and the three attr-defined ignores.
    def List(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        with self._lock:
            return health_pb2.HealthListResponse(statuses={  # type: ignore[attr-defined]
                name: health_pb2.HealthCheckResponse(status=status)
                for name, status in self._server_status.items()})


def health_statuses(servicer: health.HealthServicer) -> dict[str, str]:
    """Each service's gRPC health status by name (``""``: the server as a whole), as
    ``Health/List`` reports them; what the HTTP port's ``/readyz`` answers from."""
    state = cast(HealthServicer, servicer)      # grpcio's own state, ours or a plain one
    with state._lock:
        return {name: health_pb2.HealthCheckResponse.ServingStatus.Name(status)
                for name, status in state._server_status.items()}


def server_options(config: Config) -> list[tuple[str, int]]:
    """Channel arguments: message limits, keepalive and connection lifetime."""
    def ms(seconds: float) -> int:
        return int(seconds * 1000)

    options = [
        # The transport admits up to twice the limit so the interceptor sees, counts and
        # refuses an oversized request itself (gRPC's own refusal is invisible to metrics).
        ("grpc.max_receive_message_length", min(2 * config.max_message_bytes, 2**31 - 1)),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # Off by default so that a second server on the same port fails loudly.
        ("grpc.so_reuseport", 1 if config.shares_ports else 0),
        ("grpc.keepalive_time_ms", ms(config.keepalive_time)),
        ("grpc.keepalive_timeout_ms", ms(config.keepalive_timeout)),
        # Clients may keep idle channels alive with pings every 10 s or more (the default
        # policy answers a client's keepalive on an idle channel with GOAWAY too_many_pings).
        ("grpc.http2.min_ping_interval_without_data_ms", ms(min(config.keepalive_time, 10))),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        # Calls that arrived but are not yet taken in (the server's loop is busy): past the
        # soft limit gRPC drops new ones at random, past the hard one all, as CANCELLED and
        # unseen by the server; far above what a burst leaves there, so that admission
        # refuses the excess explicitly (max_queued_calls, docs/operations.md "Overload").
        ("grpc.server.max_pending_requests", config.max_pending_requests),
        ("grpc.server.max_pending_requests_hard_limit", 2 * config.max_pending_requests),
    ]
    if config.max_connection_idle:
        options.append(("grpc.max_connection_idle_ms", ms(config.max_connection_idle)))
    if config.max_connection_age:
        options += [("grpc.max_connection_age_ms", ms(config.max_connection_age)),
                    ("grpc.max_connection_age_grace_ms", ms(config.max_connection_age))]
    return options


def _read(path: str, setting: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise OSError(f"cannot read {setting} file {path!r}: {exc.strerror}") from None


def server_credentials(config: Config) -> grpc.ServerCredentials | None:
    """TLS (and with ``tls_client_ca``, mTLS) credentials from PEM files; None for plaintext."""
    if not config.tls_cert:
        return None
    cert, key = _read(config.tls_cert, "tls_cert"), _read(config.tls_key, "tls_key")
    ca = _read(config.tls_client_ca, "tls_client_ca") if config.tls_client_ca else None
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=ca,
                                       require_client_auth=ca is not None)


@dataclass(frozen=True)
class Handlers:
    """What both transports serve: the servicers, and the interceptor that counts and admits
    every call (one ``max_streams`` cap across gRPC and HTTP)."""

    metrics: Any
    interceptor: Any
    pool: CallPool          # gRPC's handler threads (admission counts who waits for one)
    lane: Lane              # the searches' and reviews' threads (service/lane.py)
    shuangkou: ShuangkouServicer
    rounds: RoundServicer

    @property
    def servicers(self) -> dict[str, Any]:
        return {"shuangkou": self.shuangkou, "rounds": self.rounds}


def create_handlers(config: Config, metrics: Any = None) -> Handlers:
    """The servicers of ``config``'s limits behind one metrics interceptor (writing the
    access lines when ``access_log`` is set); ``metrics``: a
    :class:`shuangkou.service.metrics.Metrics` (a private registry is made when None)."""
    if metrics is None:
        from prometheus_client import CollectorRegistry

        from .metrics import Metrics
        metrics = Metrics(CollectorRegistry())
    from .interceptor import MetricsInterceptor

    metrics.init_series(service_pb2.DESCRIPTOR.services_by_name["ShuangkouService"])
    metrics.init_series(rounds_pb2.DESCRIPTOR.services_by_name["RoundService"])
    metrics.init_round_series()
    pool = CallPool(config.threads, thread_name_prefix="rpc")
    access = None
    if config.access_log:
        from .logs import AccessLog
        access = AccessLog(config.access_log, metrics.access_dropped.labels)
    interceptor = MetricsInterceptor(metrics, max_message_bytes=config.max_message_bytes,
                                     max_streams=config.stream_cap, pool=pool,
                                     max_queued_calls=config.max_queued_calls, access=access)
    # Only the API services' handlers are marked started (CallStart): a reflection call
    # that never reached CallStart must not be taken for one that expired.
    pool.on_expired = functools.partial(interceptor.count_expired, API_SERVICES)
    limits = Limits(max_cards=config.max_cards, max_batch=config.max_batch,
                    enumeration_cap=config.enumeration_cap,
                    max_message_bytes=config.max_message_bytes,
                    search_max_rollouts=config.search_max_rollouts,
                    search_max_seconds=config.search_max_seconds,
                    review_max_rollouts=config.review_max_rollouts,
                    review_max_seconds=config.review_max_seconds)
    # one lane for both servicers and both ports (the HTTP side runs the same servicers)
    lane = Lane.of(config, metrics)
    return Handlers(metrics, interceptor, pool, lane, ShuangkouServicer(limits, metrics, lane),
                    RoundServicer(limits, metrics, load_state_keys(config), lane))


def create_server(config: Config, *, health_servicer: health.HealthServicer | None = None,
                  metrics: Any = None, handlers: Handlers | None = None
                  ) -> tuple[grpc.Server, int]:
    """A bound, not yet started gRPC server for ``config``, and the port it is bound to.

    ``health_servicer``: pass one to control serving status (it starts NOT_SERVING for
    every service until :func:`set_serving`); ``handlers``: from :func:`create_handlers`
    (made from ``metrics`` when None), to share with the HTTP port.
    """
    handlers = handlers or create_handlers(config, metrics)
    # Inside the counting interceptor: marks the handlers' start (the pool counts the calls
    # that expired before theirs did) and gives a call without a deadline the default.
    start = CallStart(config.default_deadline, API_SERVICES)
    server = grpc.server(handlers.pool, interceptors=[handlers.interceptor, start],
                         options=server_options(config))
    register_shuangkou_service(server, handlers.shuangkou)
    register_round_service(server, handlers.rounds)
    health_servicer = health_servicer or HealthServicer()
    if type(health_servicer).List is health_pb2_grpc.HealthServicer.List:  # type: ignore[attr-defined]
        # A plain grpcio HealthServicer (tests, embedders): give it our List too, rather
        # than gRPC's UNIMPLEMENTED with an ERROR traceback in the log.
        health_servicer.List = types.MethodType(HealthServicer.List, health_servicer)  # type: ignore[attr-defined]
    for name in ("", SERVICE_NAME, ROUND_SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if config.reflection:
        enable_reflection((SERVICE_NAME, ROUND_SERVICE_NAME, HEALTH_SERVICE), server)
    credentials = server_credentials(config)
    setting = "setting port, flag --port"
    check_bindable(config.host, config.port, reuse_port=config.shares_ports,
                   address=config.address, setting=setting)
    try:
        port = (server.add_secure_port(config.address, credentials) if credentials
                else server.add_insecure_port(config.address))
    except RuntimeError as exc:      # taken between the check and gRPC's bind: gRPC's words
        raise OSError(f"cannot listen on {config.address}: {exc} ({setting})") from None
    if port == 0:
        raise OSError(f"cannot listen on {config.address} ({setting})")
    return server, port


#: Server reflection's current name (current grpcurl and Postman ask for it first);
#: grpcio-reflection 1.85, the newest, serves only v1alpha.
REFLECTION_V1 = "grpc.reflection.v1.ServerReflection"


def enable_reflection(service_names: tuple[str, ...], server: grpc.Server) -> None:
    """Server reflection for ``service_names`` as ``grpc.reflection.v1`` and ``v1alpha``.

    v1 is v1alpha renamed (grpc/grpc "server-reflection.md": same messages, same field
    numbers), so grpcio's v1alpha servicer answers v1 too: its messages are the v1 messages'
    bytes. The v1 file is added to the default descriptor pool so that reflection describes
    itself under both names."""
    _add_reflection_v1_file()
    names = (*service_names, reflection.SERVICE_NAME, REFLECTION_V1)
    reflection.enable_server_reflection(names, server)
    servicer = reflection.ReflectionServicer(names)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(REFLECTION_V1, {
        "ServerReflectionInfo": grpc.stream_stream_rpc_method_handler(
            servicer.ServerReflectionInfo,
            request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
            response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)}),))


@functools.cache
def _add_reflection_v1_file() -> None:
    """grpc/reflection/v1/reflection.proto in the default pool, made from v1alpha's file."""
    from google.protobuf import descriptor_pb2, descriptor_pool

    old, new = "grpc.reflection.v1alpha", "grpc.reflection.v1"
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = "grpc/reflection/v1/reflection.proto"
    proto.package = new
    for message in proto.message_type:
        for field in message.field:
            if field.type_name:       # set only for message fields (a descriptor is proto2)
                field.type_name = field.type_name.replace(f".{old}.", f".{new}.")
    for method in proto.service[0].method:
        method.input_type = method.input_type.replace(f".{old}.", f".{new}.")
        method.output_type = method.output_type.replace(f".{old}.", f".{new}.")
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(proto.name)        # an embedder registered the real one
    except KeyError:
        pool.AddSerializedFile(proto.SerializeToString())


def set_serving(health_servicer: health.HealthServicer) -> None:
    for name in ("", SERVICE_NAME, ROUND_SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)


def set_service_serving(health_servicer: health.HealthServicer, serving: bool) -> None:
    """The API services' health (not the overall ``""``, which the ``--workers`` supervisor
    and liveness probes read: a worker whose HTTP port is flooded is not ready, not hung)."""
    status = (health_pb2.HealthCheckResponse.SERVING if serving
              else health_pb2.HealthCheckResponse.NOT_SERVING)
    for name in API_SERVICES:
        health_servicer.set(name, status)


def serve(config: Config, *, multiprocess: bool = False,
          ready: Callable[[int], None] | None = None,
          stop: threading.Event | None = None,
          report: Connection | None = None) -> int:
    """Run one server process until SIGTERM/SIGINT (or ``stop``), then drain; returns 0.

    ``multiprocess``: a ``--workers`` child (metrics go to the shared directory and the
    supervisor serves them; ``report`` receives the child's private health-check port).
    ``ready`` is called with the bound port once serving.
    """
    from prometheus_client import CollectorRegistry

    from . import tracing
    from .exposition import start_metrics_server
    from .metrics import Metrics
    from .workers import SingleProcess

    house = load_house_variants(config.variants)
    traced = tracing.from_config(config)
    keep_heap_pad()
    registry = None if multiprocess else CollectorRegistry()
    metrics = Metrics(registry)
    httpd = None
    if registry is not None:
        registry.register(SingleProcess())
    if registry is not None and config.metrics_port:
        httpd = start_metrics_server(config.metrics_port, config.metrics_host, registry,
                                     config, metrics)
    stop = stop or stop_signals()
    health_servicer = HealthServicer()
    handlers = create_handlers(config, metrics)
    server, port = create_server(config, health_servicer=health_servicer, handlers=handlers)
    http_server = None
    if config.http:
        from .http.port import create_http_server
        http_server = create_http_server(
            config, handlers.servicers, handlers.interceptor, metrics,
            health=functools.partial(health_statuses, health_servicer))
    # A --workers child also listens on a loopback port of its own, in plaintext, so that
    # the supervisor can health-check this process (the shared port reaches any worker).
    check_port = server.add_insecure_port("127.0.0.1:0") if report is not None else 0
    server.start()
    if http_server is not None:
        http_server.start()
    set_serving(health_servicer)
    http_ready = None
    if http_server is not None:      # not ready while the HTTP server is broken (.answers)
        from .http.probes import Readiness
        http_ready = Readiness(http_server.answers,
                               functools.partial(set_service_serving, health_servicer),
                               metrics).start()
    metrics.mark_up()
    log.info("serving shuangkou.v1 on %s:%d (pid %d, version %s%s)%s%s%s%s", config.host, port,
             os.getpid(), version(), ", TLS" + (" with client certificates"
                                                if config.tls_client_ca else "")
             if config.tls_cert else "",
             f", HTTP (Connect, gRPC-Web) on {config.http_host}:{http_server.port}"
             if http_server else "",
             f", metrics on {config.metrics_host}:{httpd.port}" if httpd else "",
             ", tracing (OTLP)" if traced else "",
             f", house variants {', '.join(house)}" if house else "")
    lane = handlers.lane
    log.info("searches and reviews: %d lane threads, at most %d calls and %g expected "
             "CPU-seconds", lane.threads, lane.max_calls, lane.max_cost)
    if report is not None:
        report.send(check_port)
    if ready:
        ready(port)
    try:
        wait_for_stop(stop, 0.5)
    finally:
        log.info("draining: NOT_SERVING, up to %gs for in-flight RPCs", config.grace)
        if http_ready is not None:
            http_ready.stop()
        health_servicer.enter_graceful_shutdown()
        # After grace, stop() cancels what is left; a handler still computing is abandoned
        # (the CLI exits the process without waiting for it). Both ports drain at once.
        stopped = server.stop(config.grace)
        if http_server is not None:
            http_server.drain(config.grace)
        stopped.wait(config.grace + 5)
        handlers.lane.shutdown()
        if httpd is not None:
            httpd.shutdown()
        if handlers.interceptor.access is not None:
            handlers.interceptor.access.flush()
        tracing.disable()        # the spans still batched are exported
        log.info("stopped")
    return 0
