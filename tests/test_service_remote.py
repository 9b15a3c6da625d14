"""service.remote: replays scored through ScoreReplays on two local servers give the same
records, in the same order, as the local scorer (service.batch)."""

from __future__ import annotations

import json

import grpc
import pytest
from grpc_helpers import metric_value, running_server

from core_ext.generate import generate_replay
from service.batch import score_line
from service.remote import score_remote


def _lines() -> list[str]:
    lines = []
    for i, variant in enumerate(["baibian", "huopin", "fengkuang_crazy", "qianbian",
                                 "bianfeng", "bianfeng_lishui", "fengkuang"] * 3):
        replay = generate_replay(variant, i, escape_prob=0.3)
        lines.append(json.dumps(replay))
        if i % 5 == 0:     # a move out of turn
            bad = dict(replay, actions=replay["actions"][:3] + replay["actions"][4:])
            lines.append(json.dumps(bad))
    lines += ["", "{not json", "[]", json.dumps({"variant": "nope", "hands": [],
                                                  "actions": []}), "   "]
    return lines


def test_remote_matches_local_in_order() -> None:
    lines = _lines()
    local = [score_line(line) for line in lines]
    with running_server() as one, running_server() as two:
        target = f"ipv4:127.0.0.1:{one.port},127.0.0.1:{two.port}"
        records = list(score_remote(iter(lines), target, streams=2, window=3, chunk=2))
        texts = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
        assert texts == local
        assert any(not r["ok"] and "action" in r["error"] for r in records)
        assert any(r["ok"] for r in records)
        started = [metric_value(s.scrape(), "grpc_server_started_total",
                                grpc_method="ScoreReplays") for s in (one, two)]
        replies = [metric_value(s.scrape(), "grpc_server_msg_sent_total",
                                grpc_method="ScoreReplays") for s in (one, two)]
    assert sum(started) == -(-sum(1 for line in lines if line.strip()) // 2)   # chunks of 2
    assert sum(replies) == sum(1 for line in lines if line.strip())
    assert all(n >= 1 for n in started), started     # round_robin used both servers


def test_remote_empty_input_and_errors() -> None:
    with running_server() as srv:
        assert list(score_remote([], f"127.0.0.1:{srv.port}")) == []
        with pytest.raises(ValueError):
            list(score_remote(["{}"], f"127.0.0.1:{srv.port}", streams=0))
    with pytest.raises(grpc.RpcError):     # nobody listens there any more
        list(score_remote(["{}"], f"127.0.0.1:{srv.port}", timeout=5))
