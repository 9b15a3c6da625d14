"""Figures for docs/reliability.md: the server under held streams, idle metrics connections,
dead and hung workers, and SIGTERM with long work in flight. Prints one line per figure.

    .venv/bin/python bench/bench_abuse.py            # ~1 minute on 2 cores
    .venv/bin/python bench/bench_abuse.py --deadline # CPU after a deadline, peak RSS

``--plays N`` (default 100,000) sets the plays of each large BatchClassify: the three in
flight at SIGTERM and, with ``--deadline``, those sent to the server with the 64 MiB message
limit. A small N (tests/test_bench.py runs both commands with 10,000) runs every figure
in seconds; the figures then show less load.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import signal
import socket
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from grpc_helpers import (  # noqa: E402
    ServerProcess,
    cards,
    cpu_seconds,
    free_port,
    metric_value,
    outcomes,
    rss_mib,
    running_server,
)

from shuangkou.v1 import service_pb2, service_pb2_grpc  # noqa: E402
from shuangkou.v1.variants_pb2 import RuleSet  # noqa: E402


def timings(call, request, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        call(request, timeout=10)
        out.append((time.perf_counter() - t0) * 1000)
    return sorted(out)


def summary(ms: list[float]) -> str:
    return (f"p50 {statistics.median(ms):.2f} ms, p99 {ms[int(len(ms) * 0.99) - 1]:.2f} ms, "
            f"max {ms[-1]:.2f} ms")


def held_streams(streams: int = 64, watches: int = 64, n: int = 300) -> None:
    with running_server(threads=32, max_streams=16) as srv:
        health = health_pb2_grpc.HealthStub(srv.channel)
        check, check_req = health.Check, health_pb2.HealthCheckRequest()
        classify = srv.stub.ClassifyPlay
        play = service_pb2.ClassifyPlayRequest(play=cards("7777 BJ"))
        timings(classify, play, 50)
        base_c, base_h = timings(classify, play, n), timings(check, check_req, n)
        feeds: list[queue.Queue[None]] = [queue.Queue() for _ in range(streams)]
        calls = [srv.stub.ScoreReplays(iter(f.get, None), timeout=60) for f in feeds]
        calls += [health.Watch(check_req, timeout=60) for _ in range(watches)]
        time.sleep(1.0)
        held_c, held_h = timings(classify, play, n), timings(check, check_req, n)
        refused = metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                               reason="stream_limit")
        for f in feeds:
            f.put(None)
        for c in calls:
            c.cancel()
    print(f"ClassifyPlay, no streams:             {summary(base_c)}")
    print(f"ClassifyPlay, {streams} ScoreReplays + {watches} Watch held: {summary(held_c)}")
    print(f"Health/Check, no streams:             {summary(base_h)}")
    print(f"Health/Check, {streams} ScoreReplays + {watches} Watch held: {summary(held_h)}")
    print(f"streams refused RESOURCE_EXHAUSTED (max_streams 16): {refused:.0f} of {streams}")


def idle_metrics_connections(n: int = 1000) -> None:
    port = free_port()
    # The cap above the idle connections (the default, 1,000, would answer the scrape 503,
    # as it should past the cap): what is measured is their cost and a scrape among them.
    server = ServerProcess("--port", "0", "--metrics-port", str(port),
                           "--http-max-connections", str(n + 100))
    try:
        server.wait_serving()
        status = Path(f"/proc/{server.proc.pid}/status")
        threads = lambda: int(re.search(r"Threads:\s+(\d+)", status.read_text()).group(1))  # noqa: E731
        before = threads()
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
        time.sleep(1.0)
        during = threads()
        t0 = time.perf_counter()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            r.read()
        scrape_ms = (time.perf_counter() - t0) * 1000
        for s in idle:
            s.close()
        print(f"server threads with {n} idle metrics connections: {during} (idle server: "
              f"{before}); a scrape meanwhile took {scrape_ms:.1f} ms")
    finally:
        server.stop()


def workers(interval: float = 1.0) -> None:
    port = free_port()
    server = ServerProcess("--workers", "2", "--port", "0", "--metrics-port", str(port),
                           "--worker-check-interval", str(interval))
    url = f"http://127.0.0.1:{port}/metrics"

    def up() -> float:
        with urllib.request.urlopen(url, timeout=10) as r:
            return metric_value(r.read().decode(), "shuangkou_workers_up")

    def wait_up(n: int) -> float:
        t0 = time.monotonic()
        while up() != n:
            time.sleep(0.05)
        return time.monotonic() - t0

    try:
        server.wait_serving()
        wait_up(2)
        for sig, label in ((signal.SIGKILL, "killed (SIGKILL)"), (signal.SIGSTOP,
                                                                   "hung (SIGSTOP)")):
            pids = [int(p) for p in re.findall(r'shuangkou_worker_up\{pid="(\d+)"\} 1',
                                                urllib.request.urlopen(url).read().decode())]
            t0 = time.monotonic()
            os.kill(pids[0], sig)
            while up() == 2 and time.monotonic() - t0 < 30:
                time.sleep(0.05)
            noticed = time.monotonic() - t0
            back = noticed + wait_up(2)
            print(f"worker {label}: workers_up dropped after {noticed:.1f} s, back to 2 after "
                  f"{back:.1f} s (worker_check_interval {interval:g} s)")
            time.sleep(1)
    finally:
        server.stop()


def shutdown_with_long_work(plays: int, grace: float = 1.0) -> None:
    # 64 MiB messages: 100,000 plays are over the batch cap of the default 4 MiB limit
    # (the calls would be refused at once and nothing would be in flight).
    server = ServerProcess("--port", "0", "--metrics-port", "0", "--grace", str(grace),
                           "--max-message-bytes", str(64 * 2**20))
    try:
        server.wait_serving()
        house = json.dumps({"id": "house", "extends": "baibian"})
        request = service_pb2.BatchClassifyRequest(rule_set=RuleSet(custom_json=house),
                                                   plays_text=["3456789TJQKA2 34567"] * plays)
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = service_pb2_grpc.ShuangkouServiceStub(channel)
            futures = [stub.BatchClassify.future(request, timeout=120) for _ in range(3)]
            time.sleep(1.0)
            t0 = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            server.proc.wait(60)
            took = time.monotonic() - t0
            codes = outcomes(futures)
        print(f"SIGTERM with 3 BatchClassify of {plays:,} plays in flight, grace {grace:g} s: "
              f"exited after {took:.2f} s; calls ended {', '.join(codes)}")
    finally:
        server.stop()


_cpu_seconds, _rss_mib = cpu_seconds, rss_mib     # tests/grpc_helpers.py


def _peak_rss(server: ServerProcess, request: service_pb2.BatchClassifyRequest) -> str:
    """Idle, peak and after RSS of a server process answering four such batches at once."""
    pid = server.proc.pid
    idle = _rss_mib(pid, "VmRSS")
    with grpc.insecure_channel(f"127.0.0.1:{server.port}",
                               options=[("grpc.max_receive_message_length", -1)]) as channel:
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        calls = [stub.BatchClassify.future(request, timeout=300) for _ in range(4)]
        codes = outcomes(calls)
    return (f"answers {'/'.join(codes)}; RSS idle {idle:.0f} MiB, peak "
            f"{_rss_mib(pid, 'VmHWM'):.0f} MiB, after {_rss_mib(pid, 'VmRSS'):.0f} MiB")


def deadline_cpu_and_peak_rss(plays: int) -> None:
    """CPU a server spends on a BatchClassify after its 1 s deadline, and peak RSS under four
    concurrent maximal batches: at the default limits (the batch cap derived from the 4 MiB
    message limit) and on a server whose message limit admits ``plays``-play batches
    (100,000 by default)."""
    house = json.dumps({"id": "house", "extends": "baibian"})
    bad = "3456789TJQKA2 34567"   # invalid: the longest per-play answers (an error each)
    server = ServerProcess("--port", "0", "--metrics-port", "0")
    try:
        server.wait_serving()
        from shuangkou.service.limits import Limits
        cap = Limits().batch_cap
        request = service_pb2.BatchClassifyRequest(rule_set=RuleSet(custom_json=house),
                                                   plays_text=[bad] * cap)
        print(f"default limits, 4 x BatchClassify of {cap:,} invalid plays (the cap): "
              + _peak_rss(server, request))
    finally:
        server.stop()
    server = ServerProcess("--port", "0", "--metrics-port", "0",
                           "--max-message-bytes", str(64 * 2**20))
    try:
        server.wait_serving()
        pid = server.proc.pid
        request = service_pb2.BatchClassifyRequest(rule_set=RuleSet(custom_json=house),
                                                   plays_text=[bad] * plays)
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = service_pb2_grpc.ShuangkouServiceStub(channel)
            code = "OK"
            try:
                stub.BatchClassify(request, timeout=1.0)
            except grpc.RpcError as exc:
                code = exc.code().name
            at_deadline = _cpu_seconds(pid)
            last, t0 = at_deadline, time.monotonic()
            while True:                  # until the process is idle for a second
                time.sleep(1.0)
                now = _cpu_seconds(pid)
                if now - last < 0.05 or time.monotonic() - t0 > 60:
                    break
                last = now
            print(f"--max-message-bytes 64 MiB: BatchClassify of {plays:,} plays (house variant), "
                  f"deadline 1 s -> {code}; server CPU after the deadline: "
                  f"{last - at_deadline:.2f} s")
        print(f"--max-message-bytes 64 MiB, 4 x BatchClassify of {plays:,} invalid plays: "
              + _peak_rss(server, request))
    finally:
        server.stop()


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--deadline", action="store_true",
                        help="only the CPU after a deadline and the peak RSS figures")
    parser.add_argument("--plays", type=int, default=100_000,
                        help="plays per large BatchClassify (default 100,000)")
    args = parser.parse_args()
    if args.deadline:
        deadline_cpu_and_peak_rss(args.plays)
        sys.exit(0)
    held_streams()
    idle_metrics_connections()
    workers()
    shutdown_with_long_work(args.plays)
