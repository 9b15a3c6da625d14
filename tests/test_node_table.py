"""The Node.js table runner (examples/node/table.mjs) against a real server on a loopback
port: four 托管 seats play a whole round through StartRound / SuggestAction / ApplyAction,
and the settlement it prints equals ScoreRound on the same deal and actions as a replay
(example_fixtures, as for the Java and Go table runners)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from example_fixtures import TABLE_CASES, assert_settles_like_score_round
from node_fixtures import EXAMPLE, NODE, NPM

pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None, reason="node and npm are needed for the Node.js examples")



def run_table(address: str, *args: str) -> dict[str, Any]:
    done = subprocess.run([NODE, "table.mjs", address, *args], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(("variant", "seed", "stake"), TABLE_CASES)
def test_table_settlement_equals_score_round(node_installed: Path, node_server: str, variant: str,
                                             seed: int, stake: int) -> None:
    table = run_table(node_server, "--variant", variant, "--seed", str(seed), "--stake", str(stake))
    assert table["actions"] and all(a["reason"] for a in table["actions"])
    assert_settles_like_score_round(node_server, table)


def test_same_seed_same_round(node_installed: Path, node_server: str) -> None:
    first = run_table(node_server, "--variant", "bianfeng", "--seed", "9")
    again = run_table(node_server, "--variant", "bianfeng", "--seed", "9")
    assert first["actions"] == again["actions"] and first["result"] == again["result"]


def test_bad_arguments_exit_2(node_installed: Path) -> None:
    done = subprocess.run([NODE, "table.mjs", "--variant", "nope"], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "usage" in done.stderr
