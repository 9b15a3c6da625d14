"""What the access log and tracing cost a call (docs/BENCHMARKS.md, "The gRPC and HTTP service").

One ``shuangkou serve`` process per setting, loaded with unary ClassifyPlay calls over gRPC
and Connect JSON from client threads of this process for a fixed time; printed per setting:
calls a second and the server's CPU per call (the steadier figure on a shared host), and
the ratio of that CPU to the plain server's. Settings:

* ``plain``: no access log, tracing off (the defaults);
* ``access, all kept``: ``--access-log 1000000 --log-format json`` (every call one line,
  written to a pipe this process drains);
* ``access, bucket full``: ``--access-log 1`` (nearly every line refused by the bucket and
  counted: the cost of the bound itself);
* ``tracing``: ``--tracing``, every call sampled, spans exported by OTLP/gRPC to a
  collector this process runs (it counts the spans it receives); needs the otel extra.

Settings alternate within each repeat; medians are printed. Then the start-up cost: the
import time of the modules ``shuangkou serve`` imports that this work added, and whether a
server with tracing off imports anything of OpenTelemetry.

Usage: ``.venv/bin/python bench/bench_logs.py [--seconds 3] [--threads 4] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shuangkou.v1 import cards_pb2, service_pb2, service_pb2_grpc, variants_pb2  # noqa: E402

PLAY = service_pb2.ClassifyPlayRequest(rule_set=variants_pb2.RuleSet(id="baibian"),
                                       play=cards_pb2.Cards(cards_text="4 5 6 7 8 BJ"))
JSON_PLAY = json.dumps({"ruleSet": {"id": "baibian"}, "play": {"cardsText": "4 5 6 7 8 BJ"}}
                       ).encode()
SETTINGS: dict[str, tuple[str, ...]] = {
    "plain": (),
    "access, all kept": ("--access-log", "1000000", "--log-format", "json"),
    "access, bucket full": ("--access-log", "1", "--log-format", "json"),
    "tracing": ("--tracing",),
}


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Collector:
    """An OTLP/gRPC trace collector on loopback that counts the spans it receives."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1 import (
            trace_service_pb2,
            trace_service_pb2_grpc,
        )

        self.spans = 0
        outer = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):  # type: ignore[misc]
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                outer.spans += sum(len(s.spans) for r in request.resource_spans
                                   for s in r.scope_spans)
                return trace_service_pb2.ExportTraceServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()


class Server:
    def __init__(self, args: tuple[str, ...], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1",
             "--port", "0", "--http-host", "127.0.0.1", "--http-port", "0", "--metrics-port",
             "0", "--grace", "1", *args], cwd=ROOT, env={**os.environ, **env},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        self.lines = 0
        for line in self.proc.stderr:
            m = re.search(r"serving shuangkou\.v1 on [\d.]+:(\d+).*HTTP \(Connect, gRPC-Web\) "
                          r"on [\d.]+:(\d+)", line)
            if m:
                self.port, self.http_port = int(m.group(1)), int(m.group(2))
                threading.Thread(target=self._drain, daemon=True).start()
                return
        raise SystemExit(f"bench_logs: the server did not start ({' '.join(args)})")

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for _ in self.proc.stderr:
            self.lines += 1

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def load(server: Server, seconds: float, threads: int) -> tuple[float, float]:
    """(calls/s, server CPU µs per call) of ClassifyPlay, half the threads over gRPC and half
    over Connect JSON."""
    stop = threading.Event()
    counts = [0] * threads

    def run(i: int) -> None:
        if i % 2 == 0:
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = service_pb2_grpc.ShuangkouServiceStub(channel)
                while not stop.is_set():
                    stub.ClassifyPlay(PLAY, timeout=10)
                    counts[i] += 1
        else:
            url = f"http://127.0.0.1:{server.http_port}/shuangkou.v1.ShuangkouService/ClassifyPlay"
            while not stop.is_set():
                with urllib.request.urlopen(urllib.request.Request(
                        url, JSON_PLAY, {"Content-Type": "application/json"}), timeout=10) as r:
                    r.read()
                counts[i] += 1

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    time.sleep(0.3)                       # connected and warm
    n0, cpu0, t0 = sum(counts), cpu_seconds(server.proc.pid), time.perf_counter()
    time.sleep(seconds)
    n1, cpu1, t1 = sum(counts), cpu_seconds(server.proc.pid), time.perf_counter()
    stop.set()
    for t in pool:
        t.join(30)
    calls = n1 - n0
    return calls / (t1 - t0), 1e6 * (cpu1 - cpu0) / max(calls, 1)


def import_cost(runs: int = 5) -> tuple[float, list[str]]:
    """Milliseconds of import of this work's own modules on the serve path (their own time,
    not what they import that serve imports anyway; the median of ``runs``), and the
    opentelemetry modules a server with tracing off has loaded."""
    probe = ("import sys; from shuangkou.service import cli, server, logs, tracing; "
             "import shuangkou.service.http.port; "
             "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))")
    costs, loaded = [], []
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", probe], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, check=True)
        ours = 0
        for line in done.stderr.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)$", line)
            if m and m.group(2) in ("shuangkou.service.logs", "shuangkou.service.tracing"):
                ours += int(m.group(1))
        costs.append(ours / 1e3)
        loaded = json.loads(done.stdout.replace("'", '"'))
    return statistics.median(costs), loaded


def line_cost(n: int = 20_000) -> tuple[float, float]:
    """µs of :meth:`AccessLog.call` in this process for a line the bucket refuses (counted
    in the metric) and for one written as JSON (to /dev/null)."""
    import logging
    import timeit

    from prometheus_client import CollectorRegistry

    from shuangkou.service.logs import AccessLog, JsonFormatter
    from shuangkou.service.metrics import Metrics

    metrics = Metrics(CollectorRegistry())
    logger = logging.getLogger("bench_logs.access")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    with open(os.devnull, "w") as sink:
        handler = logging.StreamHandler(sink)
        handler.setFormatter(JsonFormatter())
        logger.addHandler(handler)
        costs = []
        for rate in (1, 10**9):
            access = AccessLog(rate, metrics.access_dropped.labels, logger=logger)
            seconds = min(timeit.repeat(lambda a=access: a.call(
                "/shuangkou.v1.ShuangkouService/ClassifyPlay", "grpc", "OK", 0.0004,
                "ipv4:127.0.0.1:50000", 22, 153), number=n, repeat=3))
            costs.append(seconds / n * 1e6)
        logger.removeHandler(handler)
    return costs[0], costs[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    settings = dict(SETTINGS)
    collector = None
    env: dict[str, str] = {}
    try:
        collector = Collector()
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector.port}",
               "OTEL_EXPORTER_OTLP_INSECURE": "true", "OTEL_BSP_SCHEDULE_DELAY": "200"}
    except ImportError:
        del settings["tracing"]
        print("tracing: not measured (the otel extra is not installed)")
    rates: dict[str, list[float]] = {s: [] for s in settings}
    cpus: dict[str, list[float]] = {s: [] for s in settings}
    lines: dict[str, int] = dict.fromkeys(settings, 0)
    print(f"{os.cpu_count()} cores; ClassifyPlay from {args.threads} threads (half gRPC, half "
          f"Connect JSON); {args.seconds:g} s per line; medians of {args.repeat} interleaved "
          f"repeats")
    for _ in range(args.repeat):
        for name, flags in settings.items():
            server = Server(flags, env)
            try:
                rate, cpu = load(server, args.seconds, args.threads)
            finally:
                server.stop()
            rates[name].append(rate)
            cpus[name].append(cpu)
            lines[name] += server.lines
    base = statistics.median(cpus["plain"])
    for name in settings:
        cpu = statistics.median(cpus[name])
        print(f"{name:<20} {statistics.median(rates[name]):>8,.0f} calls/s "
              f"{cpu:>7,.0f} µs server CPU/call {cpu / base:>5.2f}x plain; "
              f"{lines[name]:,} log lines")
    if collector is not None:
        time.sleep(0.5)
        print(f"tracing: the collector received {collector.spans:,} spans")
        collector.server.stop(None)
    refused, kept = line_cost()
    print(f"AccessLog.call: {refused:.1f} µs a line the bucket refuses, {kept:.1f} µs a line "
          f"written as JSON")
    ms, loaded = import_cost()
    print(f"serve start-up: service/logs.py + service/tracing.py import in {ms:.2f} ms; "
          f"opentelemetry modules loaded with tracing off: {len(loaded)}")


if __name__ == "__main__":
    main()
