"""The lane for expensive work and the caps on one call's cost (issue 61; service/lane.py,
service/costs.py, docs/operations.md "The lane for searches and reviews").

Against real servers (port 0, loopback, bounded counts and times): a burst of reviews past
the lane's bounds is refused RESOURCE_EXHAUSTED with the bound named, and counted; cheap
calls and probes answer on both ports while reviews fill the lane; a client that hangs up
frees its place and stops its work; the caps refuse (or cut) as documented. Below them, the
lane itself with a stand-in context, its sizing from the cores (CPU affinity, a cgroup
quota) and the cost model's arithmetic.

Latency bounds here are sanity bounds against a hang (a cheap call once waited 10 s behind
a burst of reviews), not targets: those are bench/bench_lane.py's.
"""

from __future__ import annotations

import contextvars
import http.client
import json
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_helpers import REPLAY, Running, metric_value, rich_error, running_server
from grpc_status import rpc_status

from shuangkou import core
from shuangkou.core.generate import deal
from shuangkou.core.replay import parse_replay
from shuangkou.core.suggest import TUOGUAN, Budget
from shuangkou.core.variants import list_variants, variant_from_mapping
from shuangkou.service import lane as lane_module
from shuangkou.service.config import Config, ConfigError
from shuangkou.service.costs import (
    DEAREST,
    RATES,
    TimeLimit,
    cards_in_play,
    decisions,
    fair_rollouts,
    review_cost,
    rollout_seconds,
    search_cost,
)
from shuangkou.service.errors import OverCap, Refused, RequestEnded
from shuangkou.service.lane import REVIEW_ROUND, Lane, cgroup_cpus, lane_threads
from shuangkou.v1 import (
    cards_pb2,
    rounds_pb2,
    rounds_pb2_grpc,
    service_pb2,
    variants_pb2,
)

DOC = core.generate_replay("baibian", 3)        # 148 decisions
DECISIONS = sum("escape" not in a for a in DOC["actions"])
#: The largest review the shipped review_max_rollouts accepts of DOC: tens of CPU-seconds.
LARGEST = 1_000_000 // DECISIONS


def review_request(rollouts: int, doc: Any = DOC, **fields: Any) -> service_pb2.ReviewRoundRequest:
    return service_pb2.ReviewRoundRequest(replay_json=json.dumps(doc), rollouts=rollouts,
                                          **fields)


def outcome(call: Any) -> tuple[str, str, str]:
    """(code, ErrorInfo reason, message) of a finished gRPC future ("OK", "", "")."""
    try:
        call.result()
        return "OK", "", ""
    except grpc.RpcError as exc:
        err = rich_error(exc)
        return err.code.name, err.reason, err.message


def metadata(exc: grpc.RpcError) -> dict[str, str]:
    from google.rpc import error_details_pb2

    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return dict(info.metadata)
    return {}


def lane_gauge(srv: Running, state: str) -> float:
    return metric_value(srv.scrape(), "shuangkou_lane_calls", state=state)


def until(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


# ----------------------------------------------------------------------------- bursts

def test_a_burst_past_the_cost_bound_is_refused_named_and_counted() -> None:
    """One lane thread holding 2 expected CPU-seconds: a review of 1.5 s (its cap) is
    admitted, every other of a burst of 12 refused at once, RESOURCE_EXHAUSTED naming
    lane_backlog; the one admitted runs to its cap (review_max_seconds). What the clients
    saw is what the server counted."""
    with running_server(threads=16, lane_threads=1, lane_backlog=2.0,
                        review_max_seconds=1.5) as srv:
        calls = [srv.stub.ReviewRound.future(review_request(1000), timeout=30)
                 for _ in range(12)]
        got = [outcome(c) for c in calls]
        text = srv.settled("shuangkou_requests_rejected_total", grpc_method="ReviewRound")
    full = [g for g in got if g[1] == "LANE_FULL"]
    assert len(full) == 11 and all(g[0] == "RESOURCE_EXHAUSTED" for g in full), got
    assert all("lane_backlog" in message and "retry" in message for _, _, message in full)
    assert [g[:2] for g in got if g[1] != "LANE_FULL"] == [("RESOURCE_EXHAUSTED",
                                                              "CAP_REACHED")], got
    assert metric_value(text, "shuangkou_requests_rejected_total", grpc_method="ReviewRound",
                        reason="lane_full") == 11
    assert metric_value(text, "shuangkou_requests_rejected_total", grpc_method="ReviewRound",
                        reason="cap_reached") == 1
    assert metric_value(text, "grpc_server_handled_total", grpc_method="ReviewRound",
                        grpc_code="RESOURCE_EXHAUSTED") == 12


def test_a_burst_past_the_call_bound_is_refused_named_and_counted() -> None:
    """However cheap, no more than lane_max_calls calls are in the lane (each holds a
    handler thread while it waits): of 8 searches, 2 are admitted (one runs, one waits)
    and 6 refused naming lane_max_calls."""
    # a deal whose opening lead keeps two candidates in contention for seconds (test_edge.py)
    state = core.Round.deal("baibian", deal("baibian", random.Random(1)), 0).to_bytes()
    request = rounds_pb2.SuggestActionRequest(state=state, search=rounds_pb2.SearchBudget(
        max_ms=1000))
    with running_server(threads=16, lane_threads=1, lane_max_calls=2) as srv:
        stub = rounds_pb2_grpc.RoundServiceStub(srv.channel)
        calls = [stub.SuggestAction.future(request, timeout=30) for _ in range(8)]
        got = [outcome(c) for c in calls]
        text = srv.settled("shuangkou_requests_rejected_total", grpc_method="SuggestAction")
    assert sorted(g[0] for g in got) == ["OK"] * 2 + ["RESOURCE_EXHAUSTED"] * 6, got
    assert all("(lane_max_calls)" in message for _, reason, message in got
               if reason == "LANE_FULL")
    assert metric_value(text, "shuangkou_requests_rejected_total", grpc_method="SuggestAction",
                        reason="lane_full") == 6


def test_cheap_calls_and_probes_answer_during_a_burst_of_reviews() -> None:
    """32 ReviewRounds at the largest budget the server accepts, with long deadlines: the
    lane admits what it holds and refuses the rest; meanwhile ClassifyPlay on both ports,
    gRPC health Check and /readyz all answer, each within 2 s on a loaded host (they once
    waited behind the reviews for every handler thread: ClassifyPlay timed out at 10 s)."""
    with running_server(http=True, threads=32, review_max_seconds=3.0) as srv:
        calls = [srv.stub.ReviewRound.future(review_request(LARGEST), timeout=300)
                 for _ in range(32)]
        assert until(lambda: lane_gauge(srv, "running") >= 1)
        classify = service_pb2.ClassifyPlayRequest(
            rule_set=variants_pb2.RuleSet(id="baibian"), play=cards_pb2.Cards(cards_text="7777"))
        check = health_pb2_grpc.HealthStub(srv.channel).Check
        body = json_format.MessageToJson(classify).encode()

        def readyz() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=5)
            try:
                conn.request("GET", "/readyz")
                assert conn.getresponse().status == 200
            finally:
                conn.close()

        def classify_http() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=5)
            try:
                conn.request("POST", "/shuangkou.v1.ShuangkouService/ClassifyPlay", body,
                             {"Content-Type": "application/json"})
                assert conn.getresponse().status == 200
            finally:
                conn.close()

        probes: dict[str, Callable[[], Any]] = {
            "ClassifyPlay gRPC": lambda: srv.stub.ClassifyPlay(classify, timeout=5),
            "ClassifyPlay HTTP": classify_http,
            "health Check": lambda: check(health_pb2.HealthCheckRequest(), timeout=5),
            "/readyz": readyz}
        worst = dict.fromkeys(probes, 0.0)
        for _ in range(10):
            for name, probe in probes.items():
                t0 = time.perf_counter()
                probe()
                worst[name] = max(worst[name], time.perf_counter() - t0)
            time.sleep(0.05)
        busy = lane_gauge(srv, "running")
        for c in calls:
            c.cancel()
    assert busy >= 1                    # the reviews were still running all along
    assert max(worst.values()) < 2.0, worst
    refused = [outcome(c) for c in calls if c.done() and not c.cancelled()]
    assert any(reason == "LANE_FULL" for _, reason, _ in refused)


# ----------------------------------------------------------------------------- hanging up

@pytest.fixture(scope="module")
def one_place() -> Iterator[Running]:
    """A lane of one thread and one place."""
    with running_server(http=True, threads=8, lane_threads=1, lane_max_calls=1,
                        review_max_seconds=60.0) as srv:
        yield srv


def test_a_grpc_client_that_hangs_up_frees_the_lane_and_stops_its_work(
        one_place: Running) -> None:
    srv = one_place
    long = srv.stub.ReviewRound.future(review_request(LARGEST), timeout=120)
    assert until(lambda: lane_gauge(srv, "running") == 1)
    with pytest.raises(grpc.RpcError) as info:          # the lane's one place is taken
        srv.stub.ReviewRound(review_request(24, REPLAY), timeout=30)
    assert rich_error(info.value).reason == "LANE_FULL"
    long.cancel()
    # its work stopped (the core asks `cancelled` between deals), and the place is free
    assert until(lambda: lane_gauge(srv, "running") == 0 and lane_gauge(srv, "waiting") == 0,
                 5.0)
    assert srv.stub.ReviewRound(review_request(24, REPLAY), timeout=30).decisions


def test_an_http_client_that_hangs_up_frees_the_lane_and_stops_its_work(
        one_place: Running) -> None:
    srv = one_place
    body = json_format.MessageToJson(review_request(LARGEST)).encode()
    sock = socket.create_connection(("127.0.0.1", srv.http_port), timeout=10)
    sock.sendall(b"POST /shuangkou.v1.ShuangkouService/ReviewRound HTTP/1.1\r\nHost: t\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(body), body))
    try:
        assert until(lambda: lane_gauge(srv, "running") == 1)
    finally:
        sock.close()
    assert until(lambda: lane_gauge(srv, "running") == 0 and lane_gauge(srv, "waiting") == 0,
                 5.0)
    assert srv.stub.ReviewRound(review_request(24, REPLAY), timeout=30).decisions


def test_a_waiting_call_whose_client_hangs_up_frees_its_place_at_once() -> None:
    with running_server(threads=8, lane_threads=1, lane_max_calls=2, lane_backlog=1000.0,
                        review_max_seconds=60.0) as srv:
        running = srv.stub.ReviewRound.future(review_request(LARGEST), timeout=120)
        assert until(lambda: lane_gauge(srv, "running") == 1)
        waiting = srv.stub.ReviewRound.future(review_request(LARGEST), timeout=120)
        assert until(lambda: lane_gauge(srv, "waiting") == 1)
        waiting.cancel()
        assert until(lambda: lane_gauge(srv, "waiting") == 0, 2.0)
        assert lane_gauge(srv, "running") == 1          # the first goes on
        again = srv.stub.ReviewRound.future(review_request(24, REPLAY), timeout=120)
        assert until(lambda: lane_gauge(srv, "waiting") == 1)      # admitted, waits its turn
        running.cancel()
        assert again.result().decisions


# ----------------------------------------------------------------------------- the caps

@pytest.fixture(scope="module")
def capped() -> Iterator[Running]:
    with running_server(http=True, review_max_rollouts=1000, search_max_rollouts=500_000,
                        search_max_seconds=0.2) as srv:
        yield srv


def test_a_review_over_its_rollouts_cap_is_refused_up_front(capped: Running) -> None:
    """REPLAY has 8 decisions: 200 rollouts a decision make 1,600, over 1,000; 100 make 800
    (1,600 with oracle). INVALID_ARGUMENT on the rollouts field, the cap named (message and
    ErrorInfo.metadata), counted; the same over HTTP (400)."""
    srv = capped
    before = metric_value(srv.scrape(), "shuangkou_requests_rejected_total",
                          grpc_method="ReviewRound", reason="over_cap")
    for request in (review_request(200, REPLAY), review_request(100, REPLAY, oracle=True)):
        with pytest.raises(grpc.RpcError) as info:
            srv.stub.ReviewRound(request, timeout=30)
        err = rich_error(info.value)
        assert (err.code, err.reason, err.fields) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                      "OVER_CAP", ["rollouts"])
        most = 62 if request.oracle else 125
        assert f"(review_max_rollouts): this round allows rollouts {most} at most" \
            in err.message
        assert metadata(info.value) == {"setting": "review_max_rollouts", "limit": "1000"}
    assert srv.stub.ReviewRound(review_request(100, REPLAY), timeout=30).decisions
    conn = http.client.HTTPConnection("127.0.0.1", srv.http_port, timeout=30)
    conn.request("POST", "/shuangkou.v1.ShuangkouService/ReviewRound",
                 json_format.MessageToJson(review_request(200, REPLAY)).encode(),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    error = json.loads(resp.read())
    assert resp.status == 400 and "review_max_rollouts" in error["message"]
    after = srv.settled("shuangkou_requests_rejected_total", grpc_method="ReviewRound")
    assert metric_value(after, "shuangkou_requests_rejected_total", grpc_method="ReviewRound",
                        reason="over_cap") == before + 3


def test_a_reviews_fair_play_views_count_toward_its_cap(capped: Running) -> None:
    """REPLAY's 8 decisions at 24 rollouts make 192; the fair-play views add 2 × (1 + 1) ×
    2 deals × 7 candidates = 56 a decision (640 in all: within 1,000), and with 4 deals 112
    (1,088: over). Past the cap on their account, the field named is fair_deals; when the
    rollouts alone pass it, rollouts, with the most the views leave them."""
    srv = capped
    fits = review_request(24, REPLAY, fair_play=True, decoys=1, fair_deals=2)
    assert len(srv.stub.ReviewRound(fits, timeout=30).decisions) == 8
    for request, field, says in (
            (review_request(24, REPLAY, fair_play=True, decoys=1, fair_deals=4), "fair_deals",
             "and the fair-play views' 112 each make 1,088 rollouts, over this server's cap "
             "of 1,000 (review_max_rollouts): this round allows the fair-play views 101 "
             "rollouts a decision at most: lower fair_deals or decoys"),
            (review_request(200, REPLAY, fair_play=True, decoys=1, fair_deals=2), "rollouts",
             "this round allows rollouts 69 at most")):
        with pytest.raises(grpc.RpcError) as info:
            srv.stub.ReviewRound(request, timeout=30)
        err = rich_error(info.value)
        assert (err.code, err.reason, err.fields) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                      "OVER_CAP", [field])
        assert says in err.message, err.message


def test_a_review_past_its_time_cap_is_cut() -> None:
    """A client's deadline of 300 s is not the review's: it ends at review_max_seconds
    (0.5 s), RESOURCE_EXHAUSTED naming the cap, counted."""
    with running_server(review_max_seconds=0.5) as srv:
        t0 = time.monotonic()
        with pytest.raises(grpc.RpcError) as info:    # about 4 CPU-seconds of rollouts
            srv.stub.ReviewRound(review_request(1000), timeout=300)
        took = time.monotonic() - t0
        text = srv.settled("shuangkou_requests_rejected_total", grpc_method="ReviewRound")
    err = rich_error(info.value)
    assert (err.code, err.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_REACHED")
    assert "review_max_seconds (0.5 s)" in err.message
    assert metadata(info.value) == {"setting": "review_max_seconds", "limit": "0.5"}
    assert took < 10, took
    assert metric_value(text, "shuangkou_requests_rejected_total", grpc_method="ReviewRound",
                        reason="cap_reached") == 1


def test_a_searchs_caps(capped: Running) -> None:
    """More rollouts than search_max_rollouts, or a longer search.max_ms than
    search_max_seconds: refused up front on the field; a rollout budget alone, with a
    long deadline, searches no longer than the cap."""
    srv = capped
    stub = rounds_pb2_grpc.RoundServiceStub(srv.channel)
    state = core.Round.deal_seeded("baibian", b"lane: the search's caps").to_bytes()
    for search, field, setting in ((rounds_pb2.SearchBudget(rollouts=500_001),
                                    "search.rollouts", "search_max_rollouts"),
                                   (rounds_pb2.SearchBudget(max_ms=201), "search.max_ms",
                                    "search_max_seconds")):
        with pytest.raises(grpc.RpcError) as info:
            stub.SuggestAction(rounds_pb2.SuggestActionRequest(state=state, search=search),
                               timeout=30)
        err = rich_error(info.value)
        assert (err.code, err.reason, err.fields) == (grpc.StatusCode.INVALID_ARGUMENT,
                                                      "OVER_CAP", [field])
        assert setting in err.message and metadata(info.value)["setting"] == setting
    reply = stub.SuggestAction(rounds_pb2.SuggestActionRequest(
        state=state, search=rounds_pb2.SearchBudget(rollouts=500_000)), timeout=300)
    assert 0 < reply.search.elapsed_ms < 1000 and reply.search.rollouts < 500_000
    text = srv.settled("shuangkou_requests_rejected_total", grpc_method="SuggestAction")
    assert metric_value(text, "shuangkou_requests_rejected_total",
                        grpc_method="SuggestAction", reason="over_cap") == 2


def test_the_lanes_series_exist_from_the_start() -> None:
    with running_server(threads=32, lane_threads=3, lane_backlog=10.0) as srv:
        text = srv.scrape()
    rows = [line for line in text.splitlines()
            if line.startswith("shuangkou_requests_rejected_total{")]
    for method in ("ReviewRound", "SuggestAction"):
        for reason in ("lane_full", "over_cap", "cap_reached"):
            assert any(f'grpc_method="{method}"' in row and f'reason="{reason}"' in row
                       and row.endswith(" 0.0") for row in rows), (method, reason)
    assert not any('grpc_method="ClassifyPlay"' in row and 'reason="lane_full"' in row
                   for row in rows)
    assert metric_value(text, "shuangkou_lane_threads") == 3
    assert metric_value(text, "shuangkou_lane_max_calls") == 8
    assert metric_value(text, "shuangkou_lane_max_cost_seconds") == 30
    assert metric_value(text, "shuangkou_lane_cost_seconds") == 0


# ----------------------------------------------------------------------------- the lane itself

class Context:
    """What the lane reads of a call: whether it is active, its time left (none)."""

    def __init__(self) -> None:
        self.active = True

    def is_active(self) -> bool:
        return self.active

    def time_remaining(self) -> float | None:
        return None


def in_background(fn: Callable[[], Any]) -> futures.Future[Any]:
    pool = futures.ThreadPoolExecutor(1)
    future = pool.submit(fn)
    pool.shutdown(wait=False)
    return future


def test_the_lane_admits_by_cost_and_by_calls() -> None:
    lane = Lane(threads=1, max_calls=3, backlog=1.0)
    release = threading.Event()
    try:
        first = in_background(lambda: lane.run(REVIEW_ROUND, Context(), lambda: 0.6,
                                               release.wait))
        assert until(lambda: lane.running == 1)
        with pytest.raises(Refused, match=r"lane_backlog 1 s x 1 lane threads") as info:
            lane.run(REVIEW_ROUND, Context(), lambda: 0.6, lambda: None)
        assert info.value.reason == "LANE_FULL"
        second = in_background(lambda: lane.run(REVIEW_ROUND, Context(), lambda: 0.3,
                                                lambda: "second"))
        third = in_background(lambda: lane.run(REVIEW_ROUND, Context(), lambda: 0.0,
                                               lambda: "third"))
        assert until(lambda: lane.calls == 3)
        with pytest.raises(Refused, match=r"limit of 3 calls \(lane_max_calls\)"):
            lane.run(REVIEW_ROUND, Context(), lambda: 0.0, lambda: None)
        assert lane.cost == pytest.approx(0.9)
        release.set()
        assert (first.result(5), second.result(5), third.result(5)) == (True, "second", "third")
        assert until(lambda: lane.calls == 0) and lane.cost == 0
        # an empty lane admits any one call, whatever it is expected to cost
        assert lane.run(REVIEW_ROUND, Context(), lambda: 50.0, lambda: "alone") == "alone"
    finally:
        release.set()
        lane.shutdown()


def test_the_lane_frees_a_waiting_place_when_its_call_ends() -> None:
    lane = Lane(threads=1, max_calls=3, backlog=10.0)
    release = threading.Event()
    ran = threading.Event()
    try:
        in_background(lambda: lane.run(REVIEW_ROUND, Context(), lambda: 1.0, release.wait))
        assert until(lambda: lane.running == 1)
        gone = Context()
        waiting = in_background(lambda: lane.run(REVIEW_ROUND, gone, lambda: 2.0, ran.set))
        assert until(lambda: lane.calls == 2)
        gone.active = False
        with pytest.raises(RequestEnded):
            waiting.result(5)
        assert lane.calls == 1 and lane.cost == pytest.approx(1.0)
        release.set()
        assert until(lambda: lane.calls == 0)
        assert not ran.is_set()          # its work never started
    finally:
        release.set()
        lane.shutdown()


def test_the_lane_passes_on_errors_and_the_calls_context() -> None:
    lane = Lane(threads=1, max_calls=2, backlog=1.0)
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="none")
    try:
        var.set("the call's")
        assert lane.run(REVIEW_ROUND, Context(), lambda: 0.1, var.get) == "the call's"

        def fail() -> None:
            raise OverCap("too much", "rollouts", "review_max_rollouts", 5)

        with pytest.raises(OverCap):
            lane.run(REVIEW_ROUND, Context(), lambda: 0.1, fail)
        with pytest.raises(OverCap):          # a cost that refuses the call: never admitted
            lane.run(REVIEW_ROUND, Context(), fail, lambda: None)
        assert lane.calls == 0 and lane.cost == 0
    finally:
        lane.shutdown()


# ----------------------------------------------------------------------------- sizing

def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.mark.parametrize(("membership", "files", "cpus"), [
    # cgroup v2: the container's own quota, or a smaller one above it
    ("0::/kubepods/pod1/c1\n", {"kubepods/pod1/c1/cpu.max": "150000 100000\n",
                                "kubepods/cpu.max": "max 100000\n"}, 1.5),
    ("0::/kubepods/pod1/c1\n", {"kubepods/pod1/c1/cpu.max": "max 100000\n",
                                "kubepods/pod1/cpu.max": "100000 100000\n"}, 1.0),
    # a cgroup namespace: the path is not visible, the mount's root is the container's
    ("0::/docker/abc\n", {"cpu.max": "250000 100000\n"}, 2.5),
    ("0::/\n", {"cpu.max": "max 100000\n"}, None),
    # cgroup v1: the cpu controller's quota and period (-1: none)
    ("4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
     {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "50000\n",
      "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"}, 0.5),
    ("4:cpu,cpuacct:/\n", {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
                           "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}, None),
    ("", {}, None),
])
def test_the_cgroup_cpu_quota(tmp_path: Path, membership: str, files: dict[str, str],
                              cpus: float | None) -> None:
    root = tmp_path / "cgroup"
    root.mkdir()
    _tree(root, files)
    (tmp_path / "self").write_text(membership)
    assert cgroup_cpus(root, tmp_path / "self") == cpus
    assert cgroup_cpus(root, tmp_path / "missing") is None


def test_the_lanes_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lane_module, "usable_cores", lambda: 4.7)
    assert lane_threads(Config()) == 4
    assert lane_threads(Config(workers=2)) == 2
    assert lane_threads(Config(workers=8)) == 1
    assert lane_threads(Config(lane_threads=3, workers=2)) == 3
    monkeypatch.setattr(lane_module, "usable_cores", lambda: 0.5)   # half a CPU's quota
    assert lane_threads(Config()) == 1


def test_the_lanes_place_among_the_handler_threads() -> None:
    """The lane's calls and the streams each hold handler threads: together never all."""
    assert Config().lane_call_cap == 8 and Config().stream_cap == 16
    assert Config(lane_max_calls=100).lane_call_cap == 8
    assert Config(threads=4).lane_call_cap == 1
    assert Config(threads=1).lane_call_cap == 1
    assert Config(threads=64, max_streams=8, lane_max_calls=30).lane_call_cap == 28
    for key, value in (("lane_backlog", 0.0), ("lane_max_calls", 0),
                       ("search_max_seconds", 11.0), ("review_max_seconds", 0.0)):
        with pytest.raises(ConfigError, match=key):
            Config(**{key: value})


# ----------------------------------------------------------------------------- the cost model

def test_the_cost_model() -> None:
    r = core.Round.deal_seeded("baibian", b"lane: the cost model, 16+")
    assert cards_in_play(r) == 108 and rollout_seconds("baibian") == RATES["baibian"]
    house = variant_from_mapping({"id": "house", "extends": "huopin", "decks": 4,
                                  "joker_copies": 4, "hand_size": 40})
    assert rollout_seconds(house) == DEAREST == max(RATES.values())
    assert set(RATES) == {v.id for v in list_variants()}
    # 托管: 1,200 rollouts at 108 cards, under its 100 ms
    assert search_cost(r, TUOGUAN) == pytest.approx(1200 * 108 * RATES["baibian"])
    assert search_cost(r, Budget(ms=5000)) == 5.0                   # time alone
    assert search_cost(r, Budget(rollouts=1_000_000, ms=200)) == 0.2
    typed = parse_replay(DOC)
    assert decisions(typed) == DECISIONS
    assert review_cost(typed, 100, True, 6) == pytest.approx(2 * review_cost(typed, 100, False,
                                                                             6))
    one = parse_replay({**DOC, "actions": DOC["actions"][:1]})
    assert typed.actions[0].kind != "escape"
    assert review_cost(one, 100, False, 6) == pytest.approx(100 * 108 * RATES["baibian"])
    # at least two deals of each candidate (6 and the taken action)
    assert review_cost(one, 1, False, 6) == pytest.approx(14 * 108 * RATES["baibian"])
    # the fair-play views: two views, the true hands and each decoy, every candidate a deal
    assert fair_rollouts(3, 12, 6) == 2 * 4 * 12 * 7 == 672
    assert review_cost(one, 100, True, 6, fair_rollouts(3, 12, 6)) == pytest.approx(
        (200 + 672) * 108 * RATES["baibian"])


def test_a_time_limit() -> None:
    assert TimeLimit.of(None, 30.0, "review_max_seconds") == TimeLimit(30.0, 30.0,
                                                                       "review_max_seconds")
    assert TimeLimit.of(None, 30.0, "x").capped
    short = TimeLimit.of(2.0, 30.0, "x")
    assert short.seconds == pytest.approx(1.6) and not short.capped
    assert TimeLimit.of(3600.0, 30.0, "x").capped
    refused = TimeLimit.of(None, 30.0, "review_max_seconds").reached("review")
    assert refused.reason == "CAP_REACHED" and "review_max_seconds (30 s)" in str(refused)
