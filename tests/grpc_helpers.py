"""Helpers for the service tests: in-process servers on 127.0.0.1:0, rich-error decoding, and
``shuangkou serve`` subprocesses whose bound port is read from their log."""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_health.v1 import health
from grpc_status import rpc_status
from prometheus_client import CollectorRegistry, generate_latest

from shuangkou.service.config import Config
from shuangkou.service.metrics import Metrics
from shuangkou.service.server import create_server, set_serving
from shuangkou.v1 import cards_pb2, service_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 10.0   # seconds: every RPC in the tests carries this deadline

# A small hand-made round (partial deal): seat 0 bombs, then everyone sheds one card.
REPLAY = {
    "variant": "baibian", "partial_deal": True, "leader": 0, "stake": 2,
    "hands": ["3S 7777", "4S", "5S 8", "6S"],
    "actions": [{"seat": 0, "play": "7777"}, {"seat": 1, "pass": True},
                {"seat": 2, "pass": True}, {"seat": 3, "pass": True},
                {"seat": 0, "play": "3S"}, {"seat": 1, "play": "4S"},
                {"seat": 2, "play": "5S"}, {"seat": 3, "play": "6S"}],
}


@dataclass
class Running:
    port: int
    channel: grpc.Channel
    stub: service_pb2_grpc.ShuangkouServiceStub
    registry: CollectorRegistry
    health: health.HealthServicer
    server: grpc.Server = field(repr=False)
    http_port: int = 0          # the HTTP port (Connect, gRPC-Web) when started with http=True
    web: Any = field(default=None, repr=False)    # its HttpServer

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def scrape(self) -> str:
        return generate_latest(self.registry).decode()

    def settled(self, name: str, **labels: str) -> str:
        """The exposition once ``name`` stops changing (the server finished a burst)."""
        last, text = -1.0, self.scrape()
        for _ in range(100):
            time.sleep(0.3)
            text = self.scrape()
            now = metric_value(text, name, **labels)
            if now == last:
                break
            last = now
        return text


@contextlib.contextmanager
def running_server(*, http: bool = False, **settings: object) -> Iterator[Running]:
    """An in-process server on 127.0.0.1 (any free port) with its own metrics registry;
    ``http``: the HTTP port too (any free port), serving the same handlers."""
    from shuangkou.service.http.port import create_http_server
    from shuangkou.service.server import create_handlers, health_statuses

    config = Config(**{"host": "127.0.0.1", "port": 0, "metrics_port": 0, "threads": 4,
                       "http": http, "http_host": "127.0.0.1", "http_port": 0, **settings})
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    health_servicer = health.HealthServicer()
    handlers = create_handlers(config, metrics)
    server, port = create_server(config, health_servicer=health_servicer, handlers=handlers)
    web = (create_http_server(config, handlers.servicers, handlers.interceptor, metrics,
                              health=functools.partial(health_statuses, health_servicer))
           if http else None)
    server.start()
    if web is not None:
        web.start()
    set_serving(health_servicer)
    metrics.mark_up()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Running(port, channel, service_pb2_grpc.ShuangkouServiceStub(channel), registry,
                      health_servicer, server, web.port if web else 0, web)
    finally:
        channel.close()
        server.stop(None)
        if web is not None:
            web.stop()
        handlers.lane.shutdown()


def cards(text: str) -> cards_pb2.Cards:
    return cards_pb2.Cards(cards_text=text)


@dataclass
class RichError:
    code: grpc.StatusCode
    message: str
    violations: list[error_details_pb2.BadRequest.FieldViolation]
    reason: str

    @property
    def fields(self) -> list[str]:
        return [v.field for v in self.violations]


def rich_error(exc: grpc.RpcError) -> RichError:
    """Decode the google.rpc.Status details of a failed call."""
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    violations: list[error_details_pb2.BadRequest.FieldViolation] = []
    reason = ""
    if status is not None:
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(bad.field_violations)
            elif detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason = info.reason
    return RichError(exc.code(), exc.details() or "", violations, reason)


def _ephemeral_ports() -> range:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32768, 60999              # Linux's default
    return range(low, high + 1)


def free_port() -> int:
    """A loopback port nothing listens on, for a process started after this returns.

    Taken below the kernel's ephemeral range: a port that ``bind(0)`` handed out could be
    handed out again, before our process binds it, to any other process asking for port 0
    (a server of a second suite running beside this one, a client's outgoing connection),
    and a port out of that range is never given to them. Random, so that a second suite's
    own choices rarely meet ours; checked free by binding it."""
    ephemeral = _ephemeral_ports()
    for _ in range(200):
        port = random.randrange(10_000, min(ephemeral.start, 65_536))
        if port in ephemeral:
            break
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:                # no such range on this host: the kernel's choice
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=TIMEOUT) as resp:
        return resp.read().decode()


def metric_value(text: str, name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
    return total


@dataclass
class Burst:
    """What a burst of identical calls got back: status codes (with the refusal message)."""

    sent: int
    codes: collections.Counter[str]
    seconds: float
    details: collections.Counter[str] = field(default_factory=collections.Counter)


def apply_request() -> Any:
    """An ApplyAction of a dealt baibian round's first play: any server answers it, again
    and again (the state comes with the request)."""
    import random

    from shuangkou.core import Round
    from shuangkou.core.generate import deal
    from shuangkou.v1 import rounds_pb2, scoring_pb2
    from shuangkou.v1.variants_pb2 import RuleSet

    r = Round.deal("baibian", deal("baibian", random.Random(3)), 0)
    return rounds_pb2.ApplyActionRequest(
        rule_set=RuleSet(id="baibian"), state=r.to_bytes(),
        action=rounds_pb2.RoundAction(seat=r.turn, type=scoring_pb2.ACTION_TYPE_PLAY,
                                      cards=cards_pb2.Cards(cards=[r.hand(r.turn)[0]])))


def burst(port: int, method: str, request: Any, n: int, *, channels: int = 4,
          timeout: float = 60.0) -> Burst:
    """Send ``n`` copies of ``request`` to ``method`` as fast as one thread can issue them
    (over ``channels`` connections), all in flight at once, and wait for every answer."""
    chans = [grpc.insecure_channel(f"127.0.0.1:{port}") for _ in range(channels)]
    try:
        calls = [c.unary_unary(method, request_serializer=type(request).SerializeToString,
                               response_deserializer=None) for c in chans]
        t0 = time.perf_counter()
        futures = [calls[i % channels].future(request, timeout=timeout) for i in range(n)]
        codes: collections.Counter[str] = collections.Counter()
        details: collections.Counter[str] = collections.Counter()
        for f in futures:
            try:
                f.result()
                codes["OK"] += 1
            except grpc.RpcError as exc:
                codes[exc.code().name] += 1
                details[(exc.details() or "")[:60]] += 1
        return Burst(n, codes, time.perf_counter() - t0, details)
    finally:
        for c in chans:
            c.close()


def reconciled(got: Burst, text: str, method: str) -> tuple[dict[str, float], float]:
    """Check that what a burst's clients saw agrees with what the server counted (its
    exposition ``text``, settled): every call answered; OK and the refusals for overload
    exactly, but for answers that left the server (or were counted) after the client's deadline
    (the server's deadline runs from when it reads the call, in a burst later than the
    client's start, and refusals queue for their two threads: 3 % of a burst on a loaded
    2-core machine) — never fewer of either than the clients saw, never more than 10 % of
    the burst; >= 99 % of the calls decided. The refusals are those for overload and, of
    a search or a review, those of its lane (``lane_full``). Returns
    grpc_server_handled_total by code and the calls that expired waiting for a thread."""
    n = got.sent
    handled = {code: metric_value(text, "grpc_server_handled_total", grpc_method=method,
                                  grpc_code=code)
               for code in ("OK", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "CANCELLED")}
    expired = metric_value(text, "shuangkou_requests_rejected_total", grpc_method=method,
                           reason="expired")
    overloaded = sum(metric_value(text, "shuangkou_requests_rejected_total",
                                  grpc_method=method, reason=reason)
                     for reason in ("overloaded", "lane_full"))
    assert sum(got.codes.values()) == n and set(got.codes) <= set(handled), got.codes
    # a refusal is counted before it is sent; one whose call is dead by the time its thread
    # runs it is handled as DEADLINE_EXCEEDED or CANCELLED (service/interceptor.py)
    refused = got.codes["RESOURCE_EXHAUSTED"]
    assert overloaded >= handled["RESOURCE_EXHAUSTED"] >= refused, (got.codes, handled,
                                                                    overloaded)
    late = handled["OK"] - got.codes["OK"], overloaded - refused
    assert min(late) >= 0 and sum(late) <= 0.1 * n, (got.codes, handled, overloaded)
    assert 0.99 * n <= sum(handled.values()) + expired <= n, (got.codes, handled, expired)
    return handled, expired


def serve_refused(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """``shuangkou serve ARGS`` that must stop at start-up: its exit status and stderr."""
    run = subprocess.run(
        [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--port",
         "0", "--metrics-port", "0", *args], cwd=ROOT, env={**os.environ, **(env or {})},
        capture_output=True, text=True, timeout=60)
    return run.returncode, run.stderr


class ServerProcess:
    """``python -m shuangkou.service serve ...`` in a subprocess; ``port`` read from its log."""

    LISTEN = re.compile(r"serving shuangkou\.v1 on [^ ]+:(\d+)")
    HTTP = re.compile(r"HTTP \(Connect, gRPC-Web\) on [^ ]+:(\d+)")

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            # The HTTP port on any free loopback port unless the test names one.
            [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1",
             "--http-host", "127.0.0.1", "--http-port", "0", *args],
            cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        self._port: int | None = None
        self.http_port: int | None = None     # read from the same log line
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            m = self.LISTEN.search(line)
            if m and self._port is None:
                http = self.HTTP.search(line)
                self.http_port = int(http.group(1)) if http else None
                self._port = int(m.group(1))
                self._ready.set()
        self._ready.set()

    @property
    def port(self) -> int:
        if not self._ready.wait(60) or self._port is None:
            raise AssertionError("server did not start:\n" + "".join(self.log))
        return self._port

    def wait_serving(self, timeout: float = 30.0) -> None:
        """Until the health service answers SERVING (the workers may still be starting)."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        deadline = time.monotonic() + timeout
        with grpc.insecure_channel(f"127.0.0.1:{self.port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                try:
                    reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        return
                except grpc.RpcError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError("server never became SERVING:\n" + "".join(self.log))
                time.sleep(0.1)

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("server did not exit after SIGTERM:\n"
                                 + "".join(self.log)) from None
        if code != 0:      # the test asserts the code; its captured stderr shows why
            sys.stderr.write(f"server exited {code}; its log:\n{''.join(self.log)}")
        return code


def outcomes(calls: Iterable[Any]) -> list[str]:
    """How each call (a gRPC future) ended: ``OK`` or its status code's name, in order."""
    codes = []
    for call in calls:
        try:
            call.result()
            codes.append("OK")
        except grpc.RpcError as exc:
            codes.append(exc.code().name)
    return codes


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (/proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int, key: str = "VmRSS") -> float:
    """A memory figure of process ``pid`` in MiB: ``VmRSS`` now, ``VmHWM`` its peak."""
    found = re.search(key + r":\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    return int(found.group(1)) / 1024 if found else 0.0
