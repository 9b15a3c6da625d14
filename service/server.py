"""Server assembly and lifecycle, split as in the gRPC examples.

* :func:`create_server` builds a server (service, health, optional reflection, metrics
  interceptor with the stream cap, limits, keepalive, TLS) bound to the configured address
  and returns ``(server, port)``;
* :func:`serve` runs one server process until SIGTERM/SIGINT, then shuts down gracefully:
  health NOT_SERVING, ``stop(grace)`` so in-flight RPCs finish, then returns 0 (the CLI exits
  at once even if a handler thread is still computing, so shutdown never outlasts grace);
* :func:`serve_workers` runs ``--workers N`` processes sharing the port (SO_REUSEPORT), the
  pattern of the gRPC multiprocessing example, with metrics aggregated across processes. It
  replaces a worker that dies (restart with backoff) or stops answering its own health
  check on a private loopback port (killed, then replaced).

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
import time
import types
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from shuangkou.v1 import rounds_pb2, service_pb2, service_pb2_grpc

from .config import Config
from .limits import Limits
from .round_servicer import ROUND_SERVICE_NAME, register_round_service
from .servicer import SERVICE_NAME, ShuangkouServicer
from .version import version

__all__ = ["create_server", "serve", "serve_workers", "run", "SERVICE_NAME", "HealthServicer",
           "load_house_variants"]

log = logging.getLogger(__name__)
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
#: Consecutive missed health checks after which a worker counts as hung and is replaced.
MISSED_CHECKS = 3
#: Restart backoff of a worker that keeps dying: doubles from the first to the last value.
RESTART_BACKOFF = (0.5, 30.0)


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
        ("grpc.so_reuseport", 1 if config.reuse_port or config.workers > 1 else 0),
        ("grpc.keepalive_time_ms", ms(config.keepalive_time)),
        ("grpc.keepalive_timeout_ms", ms(config.keepalive_timeout)),
        # Clients may keep idle channels alive with pings every 10 s or more (the default
        # policy answers a client's keepalive on an idle channel with GOAWAY too_many_pings).
        ("grpc.http2.min_ping_interval_without_data_ms", ms(min(config.keepalive_time, 10))),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
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


def create_server(config: Config, *, health_servicer: health.HealthServicer | None = None,
                  metrics: Any = None) -> tuple[grpc.Server, int]:
    """A bound, not yet started server for ``config``, and the port it is bound to.

    ``health_servicer``: pass one to control serving status (it starts NOT_SERVING for
    every service until :func:`set_serving`); ``metrics``: a :class:`shuangkou.service.metrics.Metrics`
    (a private registry is made when None).
    """
    if metrics is None:
        from prometheus_client import CollectorRegistry

        from .metrics import Metrics
        metrics = Metrics(CollectorRegistry())
    from .metrics import MetricsInterceptor

    metrics.init_series(service_pb2.DESCRIPTOR.services_by_name["ShuangkouService"])
    metrics.init_series(rounds_pb2.DESCRIPTOR.services_by_name["RoundService"])
    interceptor = MetricsInterceptor(metrics, max_message_bytes=config.max_message_bytes,
                                     max_streams=config.stream_cap)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=config.threads, thread_name_prefix="rpc"),
        interceptors=[interceptor], options=server_options(config))
    limits = Limits(max_cards=config.max_cards, max_batch=config.max_batch,
                    enumeration_cap=config.enumeration_cap,
                    max_message_bytes=config.max_message_bytes)
    service_pb2_grpc.add_ShuangkouServiceServicer_to_server(ShuangkouServicer(limits, metrics),
                                                            server)
    register_round_service(server, limits)
    health_servicer = health_servicer or HealthServicer()
    if type(health_servicer).List is health_pb2_grpc.HealthServicer.List:  # type: ignore[attr-defined]
        # A plain grpcio HealthServicer (tests, embedders): give it our List too, rather
        # than gRPC's UNIMPLEMENTED with an ERROR traceback in the log.
        health_servicer.List = types.MethodType(HealthServicer.List, health_servicer)  # type: ignore[attr-defined]
    for name in ("", SERVICE_NAME, ROUND_SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    if config.reflection:
        reflection.enable_server_reflection(
            (SERVICE_NAME, ROUND_SERVICE_NAME, HEALTH_SERVICE, reflection.SERVICE_NAME), server)
    credentials = server_credentials(config)
    try:
        port = (server.add_secure_port(config.address, credentials) if credentials
                else server.add_insecure_port(config.address))
    except RuntimeError as exc:      # grpcio raises when the address cannot be bound
        raise OSError(f"cannot listen on {config.address}: {exc} (setting port, flag --port)"
                      ) from None
    if port == 0:
        raise OSError(f"cannot listen on {config.address} (setting port, flag --port)")
    return server, port


def set_serving(health_servicer: health.HealthServicer) -> None:
    for name in ("", SERVICE_NAME, ROUND_SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)


def load_house_variants(files: Sequence[str]) -> list[str]:
    """Register the house variants of ``files`` (replacing any registered before); their ids.

    Raises core.VariantError naming the file when one is invalid or its id is taken.
    """
    from shuangkou.core.errors import VariantError
    from shuangkou.core.variants import register_variants, unregister_variants

    unregister_variants()
    ids: list[str] = []
    for path in files:
        try:
            ids += [v.id for v in register_variants([path])]
        except VariantError as exc:
            unregister_variants()
            raise VariantError(f"house variants {path!r}: {exc}", getattr(exc, "field", None)
                               ) from None
    return ids


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
          stop: threading.Event | None = None,
          report: Connection | None = None) -> int:
    """Run one server process until SIGTERM/SIGINT (or ``stop``), then drain; returns 0.

    ``multiprocess``: a ``--workers`` child (metrics go to the shared directory and the
    supervisor serves them; ``report`` receives the child's private health-check port).
    ``ready`` is called with the bound port once serving.
    """
    from prometheus_client import CollectorRegistry

    from .metrics import Metrics, start_metrics_server

    house = load_house_variants(config.variants)
    registry = None if multiprocess else CollectorRegistry()
    metrics = Metrics(registry)
    httpd = None
    if registry is not None:
        registry.register(SingleProcess())
    if registry is not None and config.metrics_port:
        httpd = start_metrics_server(config.metrics_port, config.metrics_host, registry)
    stop = stop or _stop_signals()
    health_servicer = HealthServicer()
    server, port = create_server(config, health_servicer=health_servicer, metrics=metrics)
    # A --workers child also listens on a loopback port of its own, in plaintext, so that
    # the supervisor can health-check this process (the shared port reaches any worker).
    check_port = server.add_insecure_port("127.0.0.1:0") if report is not None else 0
    server.start()
    set_serving(health_servicer)
    metrics.mark_up()
    log.info("serving shuangkou.v1 on %s:%d (pid %d, version %s%s)%s%s", config.host, port,
             os.getpid(), version(), ", TLS" + (" with client certificates"
                                                if config.tls_client_ca else "")
             if config.tls_cert else "",
             f", metrics on {config.metrics_host}:{httpd.port}" if httpd else "",
             f", house variants {', '.join(house)}" if house else "")
    if report is not None:
        report.send(check_port)
    if ready:
        ready(port)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        log.info("draining: NOT_SERVING, up to %gs for in-flight RPCs", config.grace)
        health_servicer.enter_graceful_shutdown()
        # After grace, stop() cancels what is left; a handler still computing is abandoned
        # (the CLI exits the process without waiting for it).
        server.stop(config.grace).wait(config.grace + 5)
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


@dataclass
class _Slot:
    """One worker position: the current process, its health-check port and its record."""

    index: int
    proc: Any = None
    conn: Connection | None = None
    check_port: int = 0
    started: float = 0.0
    missed: int = 0
    failures: int = 0               # consecutive early deaths: the backoff exponent
    restart_at: float = 0.0
    healthy: bool = False
    pending: Any = field(default=None, repr=False)   # the in-flight health check future
    channel: grpc.Channel | None = field(default=None, repr=False)
    stub: Any = field(default=None, repr=False)


class Supervisor:
    """Starts, watches and replaces the workers of ``serve_workers``."""

    def __init__(self, config: Config, worker_main: Callable[..., int], metrics_dir: str):
        self.config = config
        self.worker_main = worker_main
        self.metrics_dir = metrics_dir
        self.ctx = multiprocessing.get_context("spawn")   # no gRPC state crosses over
        self.slots = [_Slot(i) for i in range(config.workers)]
        self.restarts = {"died": 0, "hung": 0}
        self.lock = threading.Lock()

    # -- metrics: a collector on the supervisor's registry, read at scrape time
    def collect(self) -> Iterator[Any]:
        with self.lock:
            up = sum(s.healthy for s in self.slots)
            restarts = dict(self.restarts)
        return worker_families(up, len(self.slots), restarts)

    def start(self, slot: _Slot) -> BaseProcess:
        """Start ``slot``'s worker process; returns it."""
        parent, child = self.ctx.Pipe(duplex=False)
        proc = self.ctx.Process(target=self.worker_main, args=(self.worker_config, child),
                                name=f"worker-{slot.index}")
        proc.start()
        child.close()
        slot.proc, slot.conn, slot.check_port = proc, parent, 0
        slot.started, slot.missed, slot.healthy = time.monotonic(), 0, False
        return proc

    def retire(self, slot: _Slot, reason: str) -> None:
        """Record a lost worker and schedule its replacement with backoff."""
        proc = slot.proc
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        if proc.pid:
            from .metrics import mark_process_dead
            mark_process_dead(proc.pid, self.metrics_dir)
        if slot.conn is not None:
            slot.conn.close()
        if slot.channel is not None:
            slot.channel.close()
        slot.channel = slot.stub = slot.pending = None
        lived = time.monotonic() - slot.started
        slot.failures = 0 if lived > 60 else slot.failures + 1
        first, last = RESTART_BACKOFF
        delay = min(last, first * 2 ** max(0, slot.failures - 1))
        with self.lock:
            self.restarts[reason] += 1
            slot.healthy = False
        slot.proc, slot.conn, slot.restart_at = None, None, time.monotonic() + delay
        log.error("worker %d (pid %s) %s: replacing it in %.1fs", slot.index, proc.pid,
                  f"exited with status {proc.exitcode}" if reason == "died"
                  else f"missed {MISSED_CHECKS} health checks: killed", delay)

    def check(self) -> None:
        """One round: collect finished health checks, start new ones, act on misses."""
        interval = self.config.worker_check_interval
        for slot in self.slots:
            if slot.proc is None:
                continue
            if not slot.proc.is_alive():
                self.retire(slot, "died")
                continue
            if slot.check_port == 0:
                if slot.conn is not None and slot.conn.poll():
                    with contextlib.suppress(EOFError, OSError):
                        slot.check_port = slot.conn.recv()
                elif time.monotonic() - slot.started > 60 + MISSED_CHECKS * interval:
                    self.retire(slot, "hung")           # never came up
                continue
            future = slot.pending
            if future is not None:
                if not future.done():
                    continue
                slot.pending = None
                try:
                    ok = future.result().status == health_pb2.HealthCheckResponse.SERVING
                except grpc.RpcError:
                    ok = False
                slot.missed = 0 if ok else slot.missed + 1
                with self.lock:
                    slot.healthy = ok
                if slot.missed >= MISSED_CHECKS:
                    self.retire(slot, "hung")
                    continue
            if slot.stub is None:
                slot.channel = grpc.insecure_channel(f"127.0.0.1:{slot.check_port}")
                slot.stub = health_pb2_grpc.HealthStub(slot.channel)
            slot.pending = slot.stub.Check.future(health_pb2.HealthCheckRequest(),
                                             timeout=interval)

    @property
    def worker_config(self) -> Config:
        return self.config.with_(metrics_port=0)

    def run(self, stop: threading.Event) -> None:
        """Watch and replace the workers (started by :meth:`start`) until ``stop``."""
        next_check = 0.0
        while not stop.wait(0.1):
            now = time.monotonic()
            for slot in self.slots:
                if slot.proc is None and now >= slot.restart_at:
                    proc = self.start(slot)
                    log.info("worker %d restarted (pid %d)", slot.index, proc.pid)
            if now >= next_check:
                self.check()
                next_check = now + min(self.config.worker_check_interval, 0.5)

    def stop(self) -> int:
        """SIGTERM every worker, wait up to grace (+ margin), kill stragglers; exit status."""
        status = 0
        live = [s.proc for s in self.slots if s.proc is not None]
        for p in live:
            if p.is_alive() and p.pid:
                os.kill(p.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.config.grace + 5
        for p in live:
            p.join(max(0.0, deadline - time.monotonic()))
            if p.is_alive():
                log.error("worker pid %d did not stop in time: killing it", p.pid)
                p.kill()
                p.join()
                status = 1
            elif p.exitcode:
                status = 1
            if p.pid:
                from .metrics import mark_process_dead
                mark_process_dead(p.pid, self.metrics_dir)
        return status



class SingleProcess:
    """The same worker series for a one-process server (always 1 up, never restarted), so
    dashboards and alerts read the same names in both modes."""

    def collect(self) -> Iterator[Any]:
        return worker_families(1, 1, {"died": 0, "hung": 0})


def worker_families(up: int, configured: int, restarts: dict[str, int]) -> Iterator[Any]:
    """``shuangkou_workers_up``, ``shuangkou_workers_configured``,
    ``shuangkou_worker_restarts_total``."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    yield GaugeMetricFamily("shuangkou_workers_up", "Server processes answering their "
                            "health check.", value=up)
    yield GaugeMetricFamily("shuangkou_workers_configured", "Server processes configured "
                            "(--workers).", value=configured)
    c = CounterMetricFamily("shuangkou_worker_restarts", "Workers replaced, by reason "
                            "(died: exited; hung: missed health checks).", labels=["reason"])
    for reason, n in restarts.items():
        c.add_metric([reason], n)
    yield c


def serve_workers(config: Config, worker_main: Callable[..., int],
                  ready: Callable[[int], None] | None = None) -> int:
    """Run ``config.workers`` processes of ``worker_main`` on one port; aggregate metrics.

    ``worker_main(config, report)`` runs :func:`serve` with ``report`` (a pipe for its
    private health-check port). The supervisor serves ``/metrics`` from prometheus_client's
    multiprocess directory, which ``PROMETHEUS_MULTIPROC_DIR`` must name before
    prometheus_client is first imported (the CLI sets it), plus its own worker gauges. On
    SIGTERM/SIGINT it forwards SIGTERM to the workers and waits for them to drain.
    """
    from .metrics import multiprocess_registry, start_metrics_server

    load_house_variants(config.variants)       # fail here, once, rather than in every worker
    metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    stop = _stop_signals()
    with _reserve_port(config.host, config.port) as port:
        supervisor = Supervisor(config.with_(port=port), worker_main, metrics_dir)
        httpd = None
        if config.metrics_port:
            registry = multiprocess_registry(metrics_dir)
            registry.register(supervisor)
            httpd = start_metrics_server(config.metrics_port, config.metrics_host, registry)
        for slot in supervisor.slots:
            supervisor.start(slot)
        runner = threading.Thread(target=supervisor.run, args=(stop,), name="supervisor",
                                  daemon=True)
        runner.start()
        log.info("serving shuangkou.v1 on %s:%d with %d workers (pids %s), version %s%s",
                 config.host, port, config.workers,
                 ", ".join(str(s.proc.pid) for s in supervisor.slots if s.proc), version(),
                 f", metrics on {config.metrics_host}:{httpd.port}" if httpd else "")
        if ready:
            ready(port)
        try:
            stop.wait()
        finally:
            runner.join(5)
            status = supervisor.stop()
            if httpd is not None:
                httpd.shutdown()
    return status


def run(config: Config, worker_main: Callable[..., int]) -> int:
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
