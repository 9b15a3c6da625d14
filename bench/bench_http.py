"""The HTTP port against the gRPC port, side by side in one run (docs/BENCHMARKS.md, "The gRPC
and HTTP service").

One ``shuangkou serve --workers 1`` process serves both ports; client processes load one
(protocol, call) at a time for a fixed time, on a bounded number of threads each with one
connection (a gRPC channel, or an HTTP/1.1 keep-alive connection), over loopback:

* ClassifyPlay, the cheapest call: what each transport adds;
* ApplyAction on a mid-round state (a live round's call): what a game server pays;

for gRPC, Connect JSON (what ``curl`` sends), Connect binary, gRPC-Web (binary) and, for
ClassifyPlay (side-effect free), Connect GET (JSON in the query, issue 36). Each line
prints calls/s, the server process's CPU per call (from /proc: the server's own cost, apart
from the clients') and the ratio of calls/s to gRPC's in the same repeat; repeats interleave
the protocols, and the medians are printed.

Usage: ``.venv/bin/python bench/bench_http.py [--seconds 3] [--threads 4] [--clients 2]
[--repeat 3]``
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import re
import statistics
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

ROOT = Path(__file__).resolve().parents[1]

from shuangkou.v1 import (  # noqa: E402
    cards_pb2,
    rounds_pb2,
    rounds_pb2_grpc,
    service_pb2,
    service_pb2_grpc,
)

PROTOCOLS = ("grpc", "connect-json", "connect-proto", "grpc-web", "connect-get")
#: The calls a Connect GET may make (idempotency_level = NO_SIDE_EFFECTS).
GETTABLE = ("ClassifyPlay",)


def requests() -> dict[str, tuple[str, Any]]:
    """The two calls: ClassifyPlay, and ApplyAction on the state after 40 托管 actions."""
    from shuangkou import core

    r = core.Round.deal_seeded("baibian", b"bench_http: a mid-round state")
    for _ in range(40):
        s = core.suggest(r)
        r.play(s.seat, s.cards, s.declaration) if s.kind == "play" else r.pass_turn(s.seat)
    s = core.suggest(r)
    action = rounds_pb2.RoundAction(seat=s.seat, type=1 if s.kind == "play" else 2)
    if s.kind == "play":
        action.cards.cards[:] = s.cards
    return {
        "ClassifyPlay": ("shuangkou.v1.ShuangkouService", service_pb2.ClassifyPlayRequest(
            play=cards_pb2.Cards(cards_text="45678 BJ"))),
        "ApplyAction": ("shuangkou.v1.RoundService", rounds_pb2.ApplyActionRequest(
            state=r.to_bytes(), action=action)),
    }


# ----------------------------------------------------------------------------- clients

def _caller(protocol: str, ports: tuple[int, int], service: str, method: str,
            request: Any) -> Any:
    """A function making one call (raising on any failure), with its own connection."""
    grpc_port, http_port = ports
    if protocol == "grpc":
        channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
        stub = (service_pb2_grpc.ShuangkouServiceStub(channel) if "Shuangkou" in service
                else rounds_pb2_grpc.RoundServiceStub(channel))
        rpc = getattr(stub, method)
        return lambda: rpc(request, timeout=10)
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=10)
    path, verb = f"/{service}/{method}", "POST"
    body: bytes | None
    if protocol == "connect-get":
        path += "?" + urllib.parse.urlencode(
            {"encoding": "json", "message": json_format.MessageToJson(request, indent=None)})
        verb, body, headers = "GET", None, {}
    elif protocol == "connect-json":
        body, headers = json_format.MessageToJson(request).encode(), {
            "Content-Type": "application/json"}
    elif protocol == "connect-proto":
        body, headers = request.SerializeToString(), {"Content-Type": "application/proto"}
    else:
        data = request.SerializeToString()
        body = struct.pack(">BI", 0, len(data)) + data
        headers = {"Content-Type": "application/grpc-web+proto", "X-Grpc-Web": "1"}

    def call() -> None:
        conn.request(verb, path, body, headers)
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200 or (protocol == "grpc-web" and b"grpc-status:0" not in data
                                  and b"grpc-status: 0" not in data):
            raise RuntimeError(f"{protocol} {method}: HTTP {resp.status} {data[:200]!r}")
    return call


def _client(protocol: str, ports: tuple[int, int], method: str, seconds: float, threads: int,
            out: Any) -> None:
    service, request = requests()[method]
    counts = [0] * threads
    errors: list[str] = []
    start = threading.Barrier(threads + 1)

    def run(i: int) -> None:
        call = _caller(protocol, ports, service, method, request)
        call()                                   # connect and warm up outside the timing
        start.wait()
        end = time.perf_counter() + seconds
        try:
            while time.perf_counter() < end:
                call()
                counts[i] += 1
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            errors.append(str(exc))

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    start.wait()
    for t in pool:
        t.join()
    out.put((sum(counts), errors[:1]))


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(pid: int, ports: tuple[int, int], protocol: str, method: str, seconds: float,
         threads: int, clients: int) -> tuple[float, float]:
    """(calls/s, server CPU µs per call) of one protocol and call."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_client, args=(protocol, ports, method, seconds, threads, out))
             for _ in range(clients)]
    for p in procs:
        p.start()
    time.sleep(0.5)                              # clients connect and warm up
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    results = [out.get(timeout=seconds + 60) for _ in procs]
    cpu1, t1 = cpu_seconds(pid), time.perf_counter()
    for p in procs:
        p.join(30)
    errors = [e for _, errs in results for e in errs]
    if errors:
        raise SystemExit(f"bench_http: {errors[0]}")
    calls = sum(n for n, _ in results)
    return calls / seconds, 1e6 * (cpu1 - cpu0) / max(calls, 1) * min(1.0, seconds / (t1 - t0))


# ----------------------------------------------------------------------------- the server

def start_server() -> tuple[subprocess.Popen[str], tuple[int, int]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--port",
         "0", "--http-host", "127.0.0.1", "--http-port", "0", "--metrics-port", "0",
         "--workers", "1", "--grace", "1", "--log-level", "INFO"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    for line in proc.stderr:
        m = re.search(r"serving shuangkou\.v1 on [^ ]+:(\d+).*HTTP \(Connect, gRPC-Web\) on "
                      r"[^ ]+:(\d+)", line)
        if m:
            threading.Thread(target=proc.stderr.read, daemon=True).start()   # drain the log
            return proc, (int(m.group(1)), int(m.group(2)))
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise SystemExit("bench_http: the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=4, help="threads per client process")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    proc, ports = start_server()
    try:
        print(f"{os.cpu_count()} cores; one server process; {args.clients} client processes x "
              f"{args.threads} threads (one connection each); {args.seconds:g} s per line; "
              f"medians of {args.repeat} interleaved repeats")
        for method in ("ClassifyPlay", "ApplyAction"):
            protocols = [p for p in PROTOCOLS if p != "connect-get" or method in GETTABLE]
            rates: dict[str, list[float]] = {p: [] for p in protocols}
            cpus: dict[str, list[float]] = {p: [] for p in protocols}
            ratios: dict[str, list[float]] = {p: [] for p in protocols}
            for _ in range(args.repeat):
                for protocol in protocols:
                    rate, cpu = load(proc.pid, ports, protocol, method, args.seconds,
                                     args.threads, args.clients)
                    rates[protocol].append(rate)
                    cpus[protocol].append(cpu)
                for protocol in protocols:
                    ratios[protocol].append(rates[protocol][-1] / rates["grpc"][-1])
            for protocol in protocols:
                print(f"{method:<13} {protocol:<14} {statistics.median(rates[protocol]):>9,.0f} "
                      f"calls/s  {statistics.median(cpus[protocol]):>6,.0f} µs server CPU/call  "
                      f"{statistics.median(ratios[protocol]):.2f}x gRPC")
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
