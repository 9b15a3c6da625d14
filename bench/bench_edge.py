"""The HTTP edge's candidate servers side by side (docs/decisions.md "HTTP edge").

For each candidate, one server process serves gRPC (grpcio, as always) and the HTTP port on
that server: ``uvicorn`` (the choice: httptools' parser, service/http/edge.py's limits),
``hypercorn`` and ``granian`` (its embedded ASGI mode; both serving the same ASGI bridge
of service/http/bridge.py; ``pip install hypercorn granian``) and ``waitress`` (the WSGI
application as before issue 33; ``pip install waitress``). Then:

* robustness: 550 connections that send nothing and 550 that send half a request head and
  then a byte a second are opened; meanwhile 5 ordinary HTTP calls (GetServerInfo) each
  get 1 s: answered (any status) or refused (the connection refused or reset) counts, a
  call still waiting after 1 s does not;
* speed: ClassifyPlay calls/s over gRPC and over Connect JSON (bench_http.py's clients,
  one after the other, interleaved over the repeats), and their ratio.

Usage: ``.venv/bin/python bench/bench_edge.py [--candidates uvicorn,hypercorn,granian,waitress]
[--seconds 3] [--repeat 3]``

``--abuse``: instead, issue 62's figures against one ``shuangkou serve`` (the hostile clients
of tests/hostile_http.py): twenty 32 MiB request heads at once (their answers, and the
server's peak RSS over its idle RSS), eight 63 MiB bodies at once to a unary method by
Content-Length and eight chunked (answers, peak RSS), and a reconnect flood of 1,500
connections for 12 s while another client calls every 0.25 s (2 s each) and the API
service's gRPC health is asked as often (answered calls, health, the connections the flood
opened and lost). ``--heads``, ``--head-mib``, ``--bodies``, ``--body-mib``, ``--flood``
and ``--flood-seconds`` scale it down.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

CANDIDATES = ("uvicorn", "hypercorn", "granian", "waitress")


# ----------------------------------------------------------------------------- the server

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(candidate: str) -> None:
    """The server process: prints ``PORTS grpc http``, serves until stdin closes."""
    from grpc_health.v1 import health
    from prometheus_client import CollectorRegistry

    from shuangkou.service.config import Config
    from shuangkou.service.http.port import create_http_server
    from shuangkou.service.metrics import Metrics
    from shuangkou.service.server import create_handlers, create_server, set_serving

    config = Config(host="127.0.0.1", port=0, metrics_port=0, http=True,
                    http_host="127.0.0.1", http_port=_free_port())
    metrics = Metrics(CollectorRegistry())
    handlers = create_handlers(config, metrics)
    checks = health.HealthServicer()
    server, port = create_server(config, health_servicer=checks, handlers=handlers)
    web = create_http_server(config, handlers.servicers, handlers.interceptor, metrics)
    server.start()
    set_serving(checks)
    http_port = config.http_port
    if candidate == "uvicorn":
        web.start()
        http_port = web.port
    else:
        web.edge._sock.close()
        threading.Thread(target=_run_other, args=(candidate, web, config), daemon=True).start()
        _wait_listening(http_port)
    print(f"PORTS {port} {http_port}", flush=True)
    sys.stdin.read()


def _run_other(candidate: str, web: Any, config: Any) -> None:
    bridge = web.edge.app
    if candidate == "waitress":
        from waitress.server import create_server as waitress_server

        waitress_server(web.app, host="127.0.0.1", port=config.http_port,
                        threads=config.threads, connection_limit=1000,
                        channel_timeout=300).run()
    elif candidate == "hypercorn":
        from hypercorn.asyncio import serve as hypercorn_serve
        from hypercorn.config import Config as HypercornConfig

        hc = HypercornConfig()
        hc.bind = [f"127.0.0.1:{config.http_port}"]
        hc.keep_alive_timeout = config.http_keepalive_timeout
        hc.read_timeout = int(config.http_header_timeout)
        hc.accesslog = hc.errorlog = None
        async def run() -> None:     # a shutdown trigger of its own: no signal handlers
            await hypercorn_serve(bridge, hc, shutdown_trigger=asyncio.Event().wait)
        asyncio.run(run())
    elif candidate == "granian":
        from granian.constants import HTTPModes, Interfaces
        from granian.http import HTTP1Settings
        from granian.server.embed import Server

        server = Server(bridge, address="127.0.0.1", port=config.http_port,
                        interface=Interfaces.ASGINL, http=HTTPModes.http1,
                        http1_settings=HTTP1Settings(
                            header_read_timeout=int(config.http_header_timeout * 1000)),
                        backpressure=config.http_max_connections, log_enabled=False)
        asyncio.run(server.serve())
    else:
        raise SystemExit(f"unknown candidate {candidate!r}")


def _wait_listening(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"bench_edge: nothing listens on {port}")


def start(candidate: str) -> tuple[subprocess.Popen[str], tuple[int, int]]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve", candidate], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORTS"):
        proc.kill()
        raise SystemExit(f"bench_edge: {candidate} did not start")
    _, grpc_port, http_port = line.split()
    return proc, (int(grpc_port), int(http_port))


# ----------------------------------------------------------------------------- robustness

def _probe(port: int) -> tuple[str, float]:
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1.0)
    try:
        conn.request("POST", "/shuangkou.v1.ShuangkouService/GetServerInfo", b"{}",
                     {"Content-Type": "application/json"})
        status = conn.getresponse().status
        return f"HTTP {status}", time.monotonic() - t0
    except TimeoutError:
        return "no answer in 1 s", time.monotonic() - t0
    except OSError as exc:
        return f"refused ({type(exc).__name__})", time.monotonic() - t0
    finally:
        conn.close()


def flood(port: int, idle: int = 550, slow: int = 550) -> list[tuple[str, float]]:
    """Five probes while ``idle`` + ``slow`` connections hold the port."""
    socks: list[socket.socket] = []
    stop = threading.Event()
    try:
        for i in range(idle + slow):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=2)
            except OSError:
                continue
            if i >= idle:
                try:
                    s.sendall(b"POST /shuangkou.v1.ShuangkouService/GetServerInfo HTTP/1.1\r\n")
                except OSError:
                    pass
            socks.append(s)

        def drip() -> None:               # the slow ones: a header byte a second
            while not stop.wait(1.0):
                for s in socks[idle:]:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
        threading.Thread(target=drip, daemon=True).start()
        time.sleep(1.0)
        results = []
        for _ in range(5):
            results.append(_probe(port))
            time.sleep(0.5)
        return results
    finally:
        stop.set()
        for s in socks:
            s.close()


# ----------------------------------------------------------------------------- abuse (issue 62)

def abuse(args: argparse.Namespace) -> None:
    """Issue 62's figures against one ``shuangkou serve`` (module docstring)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_helpers import ServerProcess, free_port, metric_value, rss_mib, scrape
    from hostile_http import at_once, huge_body, huge_head, ordinary_calls, reconnect_flood

    mib = 1024 * 1024
    metrics = free_port()
    srv = ServerProcess("--port", "0", "--metrics-port", str(metrics))
    try:
        srv.wait_serving()
        pid, port = srv.proc.pid, srv.http_port
        assert port is not None

        def peak_from_now() -> float:
            Path(f"/proc/{pid}/clear_refs").write_text("5")     # VmHWM restarts at VmRSS
            return rss_mib(pid)

        def answers(statuses: list[int]) -> str:
            return ", ".join(f"{s or 'none'} x {statuses.count(s)}"
                             for s in sorted(set(statuses)))

        idle = peak_from_now()
        t0 = time.monotonic()
        statuses = at_once(args.heads, lambda: huge_head(port, args.head_mib * mib))
        print(f"heads: {args.heads} x {args.head_mib} MiB at once: {answers(statuses)} in "
              f"{time.monotonic() - t0:.1f} s; RSS idle {idle:.0f} MiB, peak "
              f"+{rss_mib(pid, 'VmHWM') - idle:.1f} MiB", flush=True)
        for chunked in (False, True):
            idle = peak_from_now()
            t0 = time.monotonic()
            statuses = at_once(args.bodies, lambda chunked=chunked: huge_body(
                port, args.body_mib * mib, chunked=chunked))
            print(f"bodies ({'chunked' if chunked else 'Content-Length'}): {args.bodies} x "
                  f"{args.body_mib} MiB at once to ClassifyPlay: {answers(statuses)} in "
                  f"{time.monotonic() - t0:.1f} s; RSS idle {idle:.0f} MiB, peak "
                  f"{rss_mib(pid, 'VmHWM'):.0f} MiB", flush=True)
        before = scrape(metrics)
        flood = reconnect_flood(port, args.flood, args.flood_seconds)
        try:
            time.sleep(min(1.5, args.flood_seconds / 8))
            calls: dict[str, Any] = {}
            caller = threading.Thread(target=lambda: calls.update(got=ordinary_calls(
                port, args.flood_seconds * 0.75, interval=0.25, timeout=2.0)))
            caller.start()
            health: list[int] = []
            with grpc.insecure_channel(f"127.0.0.1:{srv.port}") as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                while caller.is_alive():
                    try:
                        health.append(stub.Check(health_pb2.HealthCheckRequest(
                            service="shuangkou.v1.ShuangkouService"), timeout=2).status)
                    except grpc.RpcError:
                        health.append(-1)
                    time.sleep(0.25)
            caller.join()
            opened = flood.opened()
        finally:
            flood.stop()
        after = scrape(metrics)
        got = calls["got"]
        serving = health.count(health_pb2.HealthCheckResponse.SERVING)

        def grew(name: str) -> int:
            return int(metric_value(after, name, port="api") - metric_value(before, name,
                                                                           port="api"))
        print(f"reconnect flood: {args.flood:,} connections for {args.flood_seconds:g} s, "
              f"{opened:,} opened; another client's calls {got.answered}/{got.made} answered "
              f"(slowest {got.slowest * 1e3:.0f} ms); API health SERVING {serving}/"
              f"{len(health)} checks; connections evicted {grew('shuangkou_http_evicted_total'):,}"
              f", refused {grew('shuangkou_http_refused_total'):,}", flush=True)
    finally:
        srv.stop()


# ----------------------------------------------------------------------------- main

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--abuse", action="store_true",
                        help="issue 62's figures: heads, bodies, a reconnect flood")
    parser.add_argument("--heads", type=int, default=20)
    parser.add_argument("--head-mib", type=int, default=32)
    parser.add_argument("--bodies", type=int, default=8)
    parser.add_argument("--body-mib", type=int, default=63)
    parser.add_argument("--flood", type=int, default=1500)
    parser.add_argument("--flood-seconds", type=float, default=12.0)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if args.abuse:
        abuse(args)
        return
    from bench_http import load

    print(f"{os.cpu_count()} cores; {args.clients} client processes x {args.threads} threads; "
          f"{args.seconds:g} s per line; medians of {args.repeat} repeats")
    for candidate in args.candidates.split(","):
        proc, ports = start(candidate)
        try:
            probes = flood(ports[1])
            held = sum(1 for what, took in probes if took < 1.0 and "no answer" not in what)
            print(f"{candidate:<10} flood of 1,100: {held}/5 answered or refused within 1 s "
                  f"({', '.join(sorted({w for w, _ in probes}))}; slowest "
                  f"{max(t for _, t in probes) * 1e3:.0f} ms)", flush=True)
            time.sleep(2.0)
            rates: dict[str, list[float]] = {"grpc": [], "connect-json": []}
            for _ in range(args.repeat):
                for protocol in rates:
                    rates[protocol].append(load(proc.pid, ports, protocol, "ClassifyPlay",
                                                args.seconds, args.threads, args.clients)[0])
            ratio = statistics.median(h / g for h, g in zip(rates["connect-json"],
                                                            rates["grpc"], strict=True))
            print(f"{candidate:<10} ClassifyPlay gRPC {statistics.median(rates['grpc']):>7,.0f}"
                  f" calls/s, Connect JSON {statistics.median(rates['connect-json']):>7,.0f} "
                  f"calls/s: {ratio:.2f}x gRPC", flush=True)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    main()
