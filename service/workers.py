"""``shuangkou serve --workers N``: N server processes sharing the port (SO_REUSEPORT), the
pattern of the gRPC multiprocessing example, under one supervisor.

The supervisor spawns the workers (each runs :func:`shuangkou.service.server.serve`),
aggregates their metrics (prometheus_client's multiprocess directory, plus its own worker
gauges), and replaces a worker that dies (restart with backoff) or stops answering its own
health check on a private loopback port (killed, then replaced). On SIGTERM/SIGINT it
forwards SIGTERM to the workers and waits for them to drain.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .config import Config, load_state_keys
from .startup import bind_error, load_house_variants, stop_signals, wait_for_stop
from .version import version

__all__ = ["serve_workers", "Supervisor", "SingleProcess", "worker_families", "MISSED_CHECKS",
           "RESTART_BACKOFF"]

log = logging.getLogger(__name__)
#: Consecutive missed health checks after which a worker counts as hung and is replaced.
MISSED_CHECKS = 3
#: Restart backoff of a worker that keeps dying: doubles from the first to the last value.
RESTART_BACKOFF = (0.5, 30.0)


@contextlib.contextmanager
def _reserve_port(host: str, port: int, setting: str) -> Iterator[int]:
    """Hold the port with SO_REUSEPORT while the workers bind it (gRPC multiprocessing example)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT) == 0:
        raise OSError("SO_REUSEPORT is not available: --workers needs it")
    try:
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            raise bind_error(f"{host}:{port}", exc, setting) from None
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
            from .exposition import mark_process_dead
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
                from .exposition import mark_process_dead
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
    from .exposition import multiprocess_registry, start_metrics_server

    load_house_variants(config.variants)       # fail here, once, rather than in every worker
    load_state_keys(config)
    metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"]
    stop = stop_signals()
    with contextlib.ExitStack() as held:
        port = held.enter_context(_reserve_port(config.host, config.port,
                                                "setting port, flag --port"))
        # The HTTP port too, so that the workers share one even when it was 0 (any free port).
        http_port = (held.enter_context(_reserve_port(
            config.http_host, config.http_port,
            "setting http_port, flag --http-port; --no-http disables HTTP")) if config.http else 0)
        supervisor = Supervisor(config.with_(port=port, http_port=http_port), worker_main,
                                metrics_dir)
        httpd = None
        if config.metrics_port:
            registry = multiprocess_registry(metrics_dir)
            registry.register(supervisor)
            httpd = start_metrics_server(config.metrics_port, config.metrics_host, registry,
                                         config)
        for slot in supervisor.slots:
            supervisor.start(slot)
        runner = threading.Thread(target=supervisor.run, args=(stop,), name="supervisor",
                                  daemon=True)
        runner.start()
        log.info("serving shuangkou.v1 on %s:%d with %d workers (pids %s), version %s%s%s",
                 config.host, port, config.workers,
                 ", ".join(str(s.proc.pid) for s in supervisor.slots if s.proc), version(),
                 f", HTTP (Connect, gRPC-Web) on {config.http_host}:{http_port}"
                 if config.http else "",
                 f", metrics on {config.metrics_host}:{httpd.port}" if httpd else "")
        if ready:
            ready(port)
        try:
            wait_for_stop(stop, 0.1)
        finally:
            runner.join(5)
            status = supervisor.stop()
            if httpd is not None:
                httpd.shutdown()
    return status
