"""Server assembly and lifecycle, split as in the gRPC examples.

* :func:`create_server` builds a server (service, health, reflection, metrics interceptor,
  limits) bound to the configured address and returns ``(server, port)``;
* :func:`serve` runs one server process until SIGTERM/SIGINT, then shuts down gracefully:
  health NOT_SERVING, ``stop(grace)`` so in-flight RPCs finish, exit status 0;
* :func:`serve_workers` runs ``--workers N`` processes sharing the port (SO_REUSEPORT), the
  pattern of the gRPC multiprocessing example, with metrics aggregated across processes.

Logging is configured by the CLI only.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from .config import Config
from .gen.shuangkou.v1 import service_pb2, service_pb2_grpc
from .limits import Limits
from .round_servicer import register_round_service
from .servicer import SERVICE_NAME, ShuangkouServicer

__all__ = ["create_server", "serve", "serve_workers", "run", "SERVICE_NAME"]

log = logging.getLogger(__name__)
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name


def create_server(config: Config, *, health_servicer: health.HealthServicer | None = None,
                  metrics: Any = None) -> tuple[grpc.Server, int]:
    """A bound, not yet started server for ``config``, and the port it is bound to.

    ``health_servicer``: pass one to control serving status (it starts NOT_SERVING for
    every service until :func:`set_serving`); ``metrics``: a :class:`service.metrics.Metrics`
    (a private registry is made when None).
    """
    if metrics is None:
        from prometheus_client import CollectorRegistry

        from .metrics import Metrics
        metrics = Metrics(CollectorRegistry())
    from .metrics import MetricsInterceptor

    options = [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        # Off by default so that a second server on the same port fails loudly.
        ("grpc.so_reuseport", 1 if config.reuse_port or config.workers > 1 else 0),
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=config.threads, thread_name_prefix="rpc"),
        interceptors=[MetricsInterceptor(metrics)], options=options)
    limits = Limits(max_cards=config.max_cards, max_batch=config.max_batch,
                    enumeration_cap=config.enumeration_cap)
    service_pb2_grpc.add_ShuangkouServiceServicer_to_server(ShuangkouServicer(limits, metrics),
                                                            server)
    register_round_service(server, limits)
    health_servicer = health_servicer or health.HealthServicer()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (service_pb2.DESCRIPTOR.services_by_name["ShuangkouService"].full_name, HEALTH_SERVICE,
         reflection.SERVICE_NAME), server)
    try:
        port = server.add_insecure_port(config.address)
    except RuntimeError as exc:      # grpcio raises when the address cannot be bound
        raise OSError(f"cannot listen on {config.address}: {exc}") from None
    if port == 0:
        raise OSError(f"cannot listen on {config.address}")
    return server, port


def set_serving(health_servicer: health.HealthServicer) -> None:
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)


def _stop_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (main thread only)."""
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        log.info("received %s: shutting down", signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    return stop


def serve(config: Config, *, multiprocess: bool = False,
          ready: Callable[[int], None] | None = None,
          stop: threading.Event | None = None) -> int:
    """Run one server process until SIGTERM/SIGINT (or ``stop``), then drain; returns 0.

    ``multiprocess``: a ``--workers`` child (metrics go to the shared directory and the
    supervisor serves them). ``ready`` is called with the bound port once serving.
    """
    from prometheus_client import CollectorRegistry

    from .metrics import Metrics, start_metrics_server

    registry = None if multiprocess else CollectorRegistry()
    metrics = Metrics(registry)
    httpd = None
    if registry is not None and config.metrics_port:
        httpd = start_metrics_server(config.metrics_port, config.host, registry)
    stop = stop or _stop_signals()
    health_servicer = health.HealthServicer()
    server, port = create_server(config, health_servicer=health_servicer, metrics=metrics)
    server.start()
    set_serving(health_servicer)
    metrics.mark_up()
    log.info("serving shuangkou.v1 on %s:%d (pid %d)%s", config.host, port, os.getpid(),
             f", metrics on :{config.metrics_port}" if httpd else "")
    if ready:
        ready(port)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        log.info("draining: NOT_SERVING, up to %gs for in-flight RPCs", config.grace)
        health_servicer.enter_graceful_shutdown()
        server.stop(config.grace).wait()
        if httpd is not None:
            httpd.shutdown()
        log.info("stopped")
    return 0


# ----------------------------------------------------------------------------- --workers

@contextlib.contextmanager
def _reserve_port(host: str, port: int) -> Iterator[int]:
    """Hold the port with SO_REUSEPORT while the workers bind it (gRPC multiprocessing example)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 0:
        raise OSError("SO_REUSEPORT is not available: --workers needs it")
    try:
        sock.bind((host.strip("[]"), port))
        yield sock.getsockname()[1]
    finally:
        sock.close()


def serve_workers(config: Config, worker_main: Callable[[Config], int],
                  ready: Callable[[int], None] | None = None) -> int:
    """Run ``config.workers`` processes of ``worker_main`` on one port; aggregate metrics.

    The supervisor serves ``/metrics`` from prometheus_client's multiprocess directory, which
    ``PROMETHEUS_MULTIPROC_DIR`` must name before prometheus_client is first imported (the
    CLI sets it). On SIGTERM/SIGINT it forwards SIGTERM to the workers and waits for them
    to drain.
    """
    from .metrics import mark_process_dead, multiprocess_registry, start_metrics_server

    metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    stop = _stop_signals()
    ctx = multiprocessing.get_context("spawn")   # no gRPC state crosses into the workers
    with _reserve_port(config.host, config.port) as port:
        worker_config = config.with_(port=port, metrics_port=0)
        procs = [ctx.Process(target=worker_main, args=(worker_config,), name=f"worker-{i}")
                 for i in range(config.workers)]
        for p in procs:
            p.start()
        httpd = None
        if config.metrics_port:
            httpd = start_metrics_server(config.metrics_port, config.host,
                                         multiprocess_registry(metrics_dir))
        log.info("serving shuangkou.v1 on %s:%d with %d workers (pids %s)%s", config.host, port,
                 config.workers, ", ".join(str(p.pid) for p in procs),
                 f", metrics on :{config.metrics_port}" if httpd else "")
        if ready:
            ready(port)
        status = 0
        try:
            while not stop.wait(0.5):
                dead = [p for p in procs if not p.is_alive()]
                if dead:
                    log.error("worker pid %d exited with %s: stopping", dead[0].pid,
                              dead[0].exitcode)
                    status = 1
                    break
        finally:
            for p in procs:
                if p.is_alive() and p.pid:
                    os.kill(p.pid, signal.SIGTERM)
            for p in procs:
                p.join(config.grace + 10)
                if p.is_alive():
                    log.error("worker pid %d did not stop in time: killing it", p.pid)
                    p.kill()
                    p.join()
                    status = 1
                elif p.exitcode:
                    status = 1
                if p.pid:
                    mark_process_dead(p.pid, metrics_dir)
            if httpd is not None:
                httpd.shutdown()
    return status


def run(config: Config, worker_main: Callable[[Config], int]) -> int:
    """``shuangkou serve``: one process, or a supervisor of ``config.workers`` processes."""
    if config.workers == 1:
        return serve(config)
    owned = "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    path = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR",
                                 tempfile.mkdtemp(prefix="shuangkou-metrics-"))
    try:
        return serve_workers(config, worker_main)
    finally:
        if owned:
            shutil.rmtree(path, ignore_errors=True)
