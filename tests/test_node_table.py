"""The Node.js table runner (examples/node/table.mjs) against a real server on a loopback
port: four 托管 seats play a whole round through StartRound / SuggestAction / ApplyAction,
and the settlement it prints equals ScoreRound on the same deal and actions as a replay."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_helpers import TIMEOUT
from node_fixtures import EXAMPLE, NODE, NPM

from shuangkou import core
from shuangkou.v1 import (
    cards_pb2,
    readings_pb2,
    scoring_pb2,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None, reason="node and npm are needed for the Node.js examples")



def run_table(address: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([NODE, "table.mjs", address, *args], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def as_replay(table: dict[str, Any]) -> scoring_pb2.Replay:
    """The table's deal and actions as a replay message for ScoreRound."""
    replay = scoring_pb2.Replay(
        hands=[cards_pb2.Cards(cards_text=" ".join(h)) for h in table["hands"]],
        leader=table["leader"], stake=table["stake"])
    if "revealed" in table:
        replay.revealed = core.parse_cards(table["revealed"])[0]
    for team in table.get("teams", []):
        replay.teams.add(seats=team)
    for a in table["actions"]:
        action = replay.actions.add(seat=a["seat"], type=scoring_pb2.ActionType.Value(a["type"]))
        if "cards" in a:
            action.cards.cards_text = " ".join(a["cards"])
        if "declaration" in a:
            d = a["declaration"]
            action.declaration.CopyFrom(readings_pb2.Declaration(
                kind=readings_pb2.Kind.Value(d["kind"]), top=d.get("top"), star=d.get("star")))
    return replay


def score(address: str, variant: str, replay: scoring_pb2.Replay) -> scoring_pb2.RoundResult:
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        return stub.ScoreRound(service_pb2.ScoreRoundRequest(
            rule_set=variants_pb2.RuleSet(id=variant), replay=replay),
                               timeout=TIMEOUT).result


@pytest.mark.parametrize(("variant", "seed", "stake"), [
    ("baibian", 1, 1), ("fengkuang", 2, 5), ("fengkuang_crazy", 5, 3), ("bianfeng", 3, 1),
    ("bianfeng_lishui", 4, 2), ("qianbian", 6, 1), ("huopin", 7, 1),
])
def test_table_settlement_equals_score_round(node_installed: Path, node_server: str, variant: str,
                                             seed: int, stake: int) -> None:
    table = run_table(node_server, "--variant", variant, "--seed", str(seed), "--stake", str(stake))
    got = table["result"]
    assert table["actions"] and all(a["reason"] for a in table["actions"])
    want = score(node_server, variant, as_replay(table))
    assert list(want.hand_at) == table["handAt"]
    assert got["kind"] == scoring_pb2.WinKind.Name(want.kind)
    assert got["finishOrder"] == list(want.finish_order)
    assert got["winningTeam"] == want.winning_team
    assert (got["star"], got["multiplier"], got["stake"]) == (want.star, want.multiplier, stake)
    assert [s["final"] for s in got["seats"]] == [s.final for s in want.seats]
    assert [s["contribution"] for s in got["seats"]] == [s.contribution for s in want.seats]
    assert got["total"] == want.total


def test_same_seed_same_round(node_installed: Path, node_server: str) -> None:
    first = run_table(node_server, "--variant", "bianfeng", "--seed", "9")
    again = run_table(node_server, "--variant", "bianfeng", "--seed", "9")
    assert first["actions"] == again["actions"] and first["result"] == again["result"]


def test_bad_arguments_exit_2(node_installed: Path) -> None:
    done = subprocess.run([NODE, "table.mjs", "--variant", "nope"], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage" in done.stderr
