"""Bursts against a real server (docs/reliability.md, "Bursts"): thousands of ApplyAction calls
issued at once, and what came back — answered, refused RESOURCE_EXHAUSTED and counted, or
lost — reconciled with the server's own metrics. Prints one line per burst.

    .venv/bin/python bench/bench_burst.py                 # ~1 minute on 2 cores
    .venv/bin/python bench/bench_burst.py --calls 3000    # one burst size

The first server runs as gRPC would on its own (its pending-call limit at gRPC's default
soft limit of 1,000, no queue limit of ours): the excess comes back CANCELLED and no metric
sees it. The second runs with the shipped settings, the third with a short queue, so that
the refusals show: RESOURCE_EXHAUSTED at once, each counted.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from grpc_helpers import (  # noqa: E402
    ServerProcess,
    apply_request,
    burst,
    free_port,
    metric_value,
    scrape,
)

APPLY = "/shuangkou.v1.RoundService/ApplyAction"


def _peak_rss_mib(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmHWM:\s+(\d+) kB", text)
    return int(match.group(1)) / 1024 if match else 0.0


def _checks(port: int, stop: threading.Event, worst: list[float]) -> None:
    """Health Check every 20 ms while the burst runs; the slowest answer."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = health_pb2_grpc.HealthStub(channel).Check
        while not stop.is_set():
            t0 = time.perf_counter()
            check(health_pb2.HealthCheckRequest(), timeout=30)
            worst[0] = max(worst[0], time.perf_counter() - t0)
            stop.wait(0.02)


def one(calls: int, label: str, *settings: str) -> None:
    metrics_port = free_port()
    server = ServerProcess("--port", "0", "--metrics-port", str(metrics_port), *settings)
    try:
        server.wait_serving()
        request = apply_request()
        before = scrape(metrics_port)
        stop, worst = threading.Event(), [0.0]
        checker = threading.Thread(target=_checks, args=(server.port, stop, worst))
        checker.start()
        got = burst(server.port, APPLY, request, calls)
        stop.set()
        checker.join()
        after = scrape(metrics_port)
        peak = _peak_rss_mib(server.proc.pid)
    finally:
        server.stop()

    def delta(name: str, **labels: str) -> int:
        labels = {"grpc_method": "ApplyAction", **labels}
        return round(metric_value(after, name, **labels) - metric_value(before, name, **labels))

    ok, refused = got.codes["OK"], got.codes["RESOURCE_EXHAUSTED"]
    other = {k: v for k, v in got.codes.items() if k not in ("OK", "RESOURCE_EXHAUSTED")}
    print(f"{label}: {calls:,} ApplyAction at once -> {ok:,} OK + {refused:,} "
          f"RESOURCE_EXHAUSTED (counted overloaded: {delta('shuangkou_requests_rejected_total', reason='overloaded'):,})"
          f" + {sum(other.values()):,} other {other or ''}; the server saw "
          f"{delta('grpc_server_started_total'):,}; {got.seconds:.2f} s; slowest Health/Check "
          f"{worst[0] * 1000:.0f} ms; server peak RSS {peak:.0f} MiB")


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--calls", type=int, nargs="+", default=[3000, 10000, 20000],
                        help="burst sizes (default 3,000 10,000 20,000)")
    args = parser.parse_args()
    for n in args.calls:
        one(n, "gRPC's own shedding (max_pending_requests 1,000, no queue limit)",
            "--max-pending-requests", "1000", "--max-queued-calls", "1000000")
        one(n, "shipped settings (threads 32, max_queued_calls 1,024, max_pending_requests "
               "10,000)")
        one(n, "a short queue (threads 4, max_queued_calls 64)", "--threads", "4",
            "--max-queued-calls", "64")
