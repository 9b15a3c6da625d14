"""``/healthz`` and ``/readyz`` on the HTTP port during a burst of searches
(docs/history/benchmarks-notebook.md "HTTP's conventions (issue 36)").

One ``shuangkou serve --threads N`` process; the probes' latency is measured idle, then
while 2N SuggestAction calls (``--search-ms`` each) are under way, beside an API call
(GetServerInfo, POST) made at the same moment: the probes are answered on the event loop.
The searches once held the N handler threads and the call waited for one; since issue 61
they run in the lane for searches and reviews, which admits a few and refuses the rest
(docs/operations.md "The lane for searches and reviews"), and the call does not wait.

Usage: ``.venv/bin/python bench/bench_probes.py [--threads 4] [--search-ms 3000]
[--probes 20]``
"""

from __future__ import annotations

import argparse
import http.client
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from google.protobuf import json_format

ROOT = Path(__file__).resolve().parents[1]

from shuangkou import core  # noqa: E402
from shuangkou.v1 import rounds_pb2  # noqa: E402


def start_server(threads: int) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--port",
         "0", "--http-host", "127.0.0.1", "--http-port", "0", "--metrics-port", "0",
         "--threads", str(threads), "--grace", "1", "--log-level", "INFO"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"HTTP \(Connect, gRPC-Web\) on [^ ]+:(\d+)", line)
        if m:
            threading.Thread(target=proc.stderr.read, daemon=True).start()   # drain the log
            return proc, int(m.group(1))
    proc.kill()
    raise SystemExit("bench_probes: the server did not start")


def call(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, float]:
    """(HTTP status, seconds) of one request on a connection of its own."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    t0 = time.perf_counter()
    try:
        conn.request(method, path, body, {"Content-Type": "application/json"} if body else {})
        resp = conn.getresponse()
        resp.read()
        return resp.status, time.perf_counter() - t0
    finally:
        conn.close()


def probes(port: int, path: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        status, seconds = call(port, "GET", path)
        if status != 200:
            raise SystemExit(f"bench_probes: {path} answered {status}")
        times.append(seconds * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--search-ms", type=int, default=3000)
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    r = core.Round.deal_seeded("baibian", b"bench_probes: a fresh deal")
    search = json_format.MessageToJson(rounds_pb2.SuggestActionRequest(
        state=r.to_bytes(), search=rounds_pb2.SearchBudget(max_ms=args.search_ms))).encode()
    proc, port = start_server(args.threads)
    try:
        def show(label: str, times: list[float]) -> None:
            print(f"{label:<34} median {statistics.median(times):7.1f} ms  "
                  f"max {max(times):7.1f} ms")

        for path in ("/healthz", "/readyz"):
            show(f"{path} idle", probes(port, path, args.probes))
        held = [threading.Thread(target=call, args=(
            port, "POST", "/shuangkou.v1.RoundService/SuggestAction", search))
            for _ in range(2 * args.threads)]
        for t in held:
            t.start()
        time.sleep(0.5)                    # every thread searching, as many calls queued
        waited: list[float] = []
        api = threading.Thread(target=lambda: waited.append(call(
            port, "POST", "/shuangkou.v1.ShuangkouService/GetServerInfo", b"{}")[1]))
        api.start()
        for path in ("/healthz", "/readyz"):
            show(f"{path} during {2 * args.threads} searches", probes(port, path, args.probes))
        api.join()
        for t in held:
            t.join()
        print(f"{'GetServerInfo (POST) meanwhile':<34} {waited[0] * 1e3:,.0f} ms")
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
