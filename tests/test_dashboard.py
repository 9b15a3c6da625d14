"""The Grafana dashboard (deploy/grafana/shuangkou.json): it parses as a dashboard, its queries
parse as PromQL (promtool, where installed), and every metric and label its queries use is
exported by a live `shuangkou serve` that has answered calls of every kind over gRPC and
HTTP, a review among them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_helpers import REPLAY, TIMEOUT, ServerProcess, cards, free_port

from shuangkou.v1 import rounds_pb2, rounds_pb2_grpc, service_pb2, service_pb2_grpc

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "deploy" / "grafana" / "shuangkou.json"
# PromQL words that look like metric names in front of "(" or "{"
FUNCTIONS = {"sum", "rate", "increase", "histogram_quantile", "by", "label_values"}


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return data


def queries() -> list[str]:
    return [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    d = dashboard()
    assert d["uid"] == "shuangkou" and d["title"] and d["schemaVersion"] >= 36
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        grid = p["gridPos"]
        assert 0 <= grid["x"] < 24 and grid["x"] + grid["w"] <= 24 and grid["h"] > 0
        if p["type"] != "row":
            assert p["targets"] and p["datasource"]["uid"] == "${datasource}", p["title"]
    names = {v["name"] for v in d["templating"]["list"]}
    assert names == {"datasource", "job"}
    for q in queries():
        assert q.count("(") == q.count(")") and q.count("{") == q.count("}"), q
        assert 'job=~"$job"' in q, q


def test_the_queries_parse_as_promql(tmp_path: Path) -> None:
    """Every query, with Grafana's variables given values, is PromQL that Prometheus accepts
    (promtool reads each as a recording rule)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    rules = [{"record": f"dashboard:query_{i}",
              "expr": q.replace("$__rate_interval", "5m").replace("$job", "shuangkou")}
             for i, q in enumerate(queries())]
    path = tmp_path / "queries.yaml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric, label names) of each selector, plus the labels its aggregation groups by."""
    found = []
    for name, matchers in re.findall(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}", expr):
        if name not in FUNCTIONS:
            found.append((name, set(re.findall(r"(\w+)\s*[=!]~?", matchers))))
    grouped = {g.strip() for by in re.findall(r"by \(([^)]*)\)", expr) for g in by.split(",")}
    return [(name, labels | (grouped - {"le"}) | ({"le"} if name.endswith("_bucket") else set()))
            for name, labels in found]


@pytest.fixture(scope="module")
def exposition() -> Iterator[dict[str, set[str]]]:
    """The metric names and label names of a live server after calls of every kind."""
    from prometheus_client.parser import text_string_to_metric_families

    metrics_port = free_port()
    process = ServerProcess("--port", "0", "--metrics-port", str(metrics_port), "--workers", "1",
                            "--grace", "2")
    try:
        process.wait_serving()
        exercise(f"127.0.0.1:{process.port}", f"http://127.0.0.1:{process.http_port}")
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                    timeout=TIMEOUT) as resp:
            text = resp.read().decode()
    finally:
        process.stop(15)
    samples: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, set()).update(sample.labels)
    yield samples


def exercise(address: str, http: str) -> None:
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(play=cards("7777 BJ")), timeout=TIMEOUT)
        stub.EnumerateLegalPlays(service_pb2.EnumerateLegalPlaysRequest(hand=cards("33 44")),
                                 timeout=TIMEOUT)
        stub.ScoreRound(service_pb2.ScoreRoundRequest(replay_json=json.dumps(REPLAY)),
                        timeout=TIMEOUT)
        with pytest.raises(grpc.RpcError):
            stub.ScoreRound(service_pb2.ScoreRoundRequest(replay_json="{"), timeout=TIMEOUT)
        # a review at a token budget: its decisions are counted by verdict all the same
        stub.ReviewRound(service_pb2.ReviewRoundRequest(replay_json=json.dumps(REPLAY),
                                                        rollouts=8), timeout=TIMEOUT)
        rounds = rounds_pb2_grpc.RoundServiceStub(channel)
        state = rounds.StartRound(rounds_pb2.StartRoundRequest(seed=bytes(32)),
                                  timeout=TIMEOUT).state
        while not state.view.over:       # a whole round: started, 托管, finished
            hint = rounds.SuggestAction(rounds_pb2.SuggestActionRequest(state=state.data),
                                        timeout=TIMEOUT)
            state = rounds.ApplyAction(rounds_pb2.ApplyActionRequest(
                state=state.data, action=hint.action), timeout=TIMEOUT).state
    request = urllib.request.Request(f"{http}/shuangkou.v1.ShuangkouService/GetServerInfo",
                                     data=b"{}", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=TIMEOUT) as resp:
        assert resp.status == 200


def test_every_metric_the_dashboard_queries_exists(exposition: dict[str, set[str]]) -> None:
    checked = 0
    for expr in queries():
        for name, labels in selectors(expr):
            assert name in exposition, f"the dashboard queries {name}, which is not exported"
            missing = labels - {"job"} - exposition[name]
            assert not missing, f"{name} has no label(s) {missing} (query {expr})"
            checked += 1
    assert checked >= 15


def test_review_panels_name_the_review_verdicts() -> None:
    """The reviews' row: a verdict a query names is one the review gives (an
    ``exposition`` after one review need not hold a blunder), and the blunder share is over
    the non-forced decisions, as the archive review's blunder rate is (docs/archives.md)."""
    from shuangkou.service.api.review import VERDICTS_ON_WIRE

    reviewed = [q for q in queries() if "shuangkou_decisions_reviewed_total" in q]
    assert reviewed
    named = {v for q in reviewed for v in re.findall(r'verdict!?=~?"(\w+)"', q)}
    assert {"blunder", "forced"} <= named <= set(VERDICTS_ON_WIRE)
    (share,) = [q for q in reviewed if 'verdict="blunder"' in q]
    assert share.split(" / ")[1].count('verdict!="forced"') == 1
