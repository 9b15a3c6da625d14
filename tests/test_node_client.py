"""The Node.js example client (examples/node) against a real server on a loopback port.

`npm ci` installs the locked @grpc/grpc-js and @grpc/proto-loader; the client loads the
protos from ../../protos, so these tests also prove the .proto files work outside Python
(proto-loader resolves the imports, enum values and oneofs on its own).
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from grpc_helpers import free_port
from node_fixtures import EXAMPLE, NODE, NPM

pytestmark = pytest.mark.skipif(
    NODE is None or NPM is None, reason="node and npm are needed for the Node.js client example")



STEPS = ("classify", "enumerate", "score")


def run_client(*args: str) -> tuple[int, dict[str, Any]]:
    """Exit status and JSON output of one client run."""
    done = subprocess.run(
        [NODE, "client.mjs", *args], cwd=EXAMPLE, capture_output=True, text=True, timeout=60,
    )
    assert done.stdout, f"exit {done.returncode}, no output\n{done.stderr}"
    out = json.loads(done.stdout)
    failed = any("error" in out[step] for step in STEPS)
    assert done.returncode == (1 if failed else 0), done.stderr
    return done.returncode, out


def answer(out: dict[str, Any], step: str) -> dict[str, Any]:
    """One step's response, which must not be an error."""
    error = out[step].get("error")
    assert error is None, f"{step}: {error}"
    return out[step]


def card_text(card: str) -> str:
    return card.removeprefix("CARD_")


@pytest.fixture(scope="module")
def following(node_installed: Path, node_server: str) -> dict[str, Any]:
    """7777+BJ classified; 7 7 8 following 6 6; the default round summary scored."""
    _, out = run_client(node_server, "--play", "7777 BJ", "--hand", "7 7 8", "--to-beat", "6 6")
    assert out["address"] == node_server and out["variant"] == "baibian"
    return out


def test_lock_file_pins_the_grpc_packages(node_installed: Path) -> None:
    lock = json.loads((EXAMPLE / "package-lock.json").read_text())
    packages = lock["packages"]
    for name in ("@grpc/grpc-js", "@grpc/proto-loader"):
        locked = packages[f"node_modules/{name}"]["version"]
        actual = json.loads((node_installed / name / "package.json").read_text())["version"]
        assert actual == locked


def test_classify_seed_example(following: dict[str, Any]) -> None:
    # §7 seed example: 7777+BJ reads as 77777, a 5-bomb (star 5) of sevens (rank position 4).
    classify = answer(following, "classify")
    reading = classify["reading"]
    assert (reading["kind"], reading["cardCount"], reading["star"], reading["top"]) == (
        "KIND_BOMB", 5, 5, 4)
    assert reading["isBomb"] and "77777" in reading["text"]
    assert reading["wilds"] == [4]
    assert classify["readings"][0] == reading
    assert sorted(map(card_text, classify["cards"])) == sorted(["7", "7", "7", "7", "BJ"])


def test_score_round_summary(following: dict[str, Any]) -> None:
    # Default summary: seats 0 and 2 finish 1st and 2nd (双扣), seat 0 played 7777777.
    # §10: M = 8 for the winners' 7 stars; base 4 4 -4 -4; contribution 7 -> (+12, -4).
    result = answer(following, "score")["result"]
    assert result["kind"] == "WIN_KIND_DOUBLE"
    assert (result["winningTeam"], result["star"], result["multiplier"]) == (0, 7, 8)
    assert [s["final"] for s in result["seats"]] == [4 * 8 + 12, -4 * 8 - 4,
                                                    4 * 8 - 4, -4 * 8 - 4]
    assert [s.get("place") for s in result["seats"]] == [1, 4, 2, 3]
    assert result["total"] == 0


def test_enumerate_following_a_pair(following: dict[str, Any]) -> None:
    # Following a pair of sixes with 7 7 8: the pair of sevens is the only legal play.
    enumerate_ = answer(following, "enumerate")
    assert [p["text"] for p in enumerate_["plays"]] == ["7 7"]
    (play,) = enumerate_["plays"]
    assert (play["reading"]["kind"], play["reading"]["top"]) == ("KIND_PAIR", 4)
    assert enumerate_["nextPageToken"] == "" and enumerate_["pagesRead"] == 1
    assert enumerate_["total"] == 1
    assert {c["kind"]: c["count"] for c in enumerate_["counts"] if c["count"]} == {
        "KIND_PAIR": 1}
    assert enumerate_["bestBomb"] is None


def test_enumerate_leading_is_capped_and_drawn_from_the_hand(
    node_installed: Path, node_server: str
) -> None:
    hand = "3 4 5 6 7 7 7 7 8 9 BJ"
    _, out = run_client(f"dns:///{node_server}", "--hand", hand, "--page-size", "5")
    enumerate_ = answer(out, "enumerate")
    plays = enumerate_["plays"]
    assert len(plays) == 5 and enumerate_["nextPageToken"]
    assert enumerate_["total"] == sum(c["count"] for c in enumerate_["counts"]) > 5
    held = Counter(hand.split())
    for play in plays:
        used = Counter(play["text"].split())
        assert not used - held, f"{play['text']} is not drawn from {hand}"
        assert play["reading"]["cardCount"] == sum(used.values())
    # The strongest bomb in the hand: 7777 with the wild BJ, a 5-bomb.
    best = enumerate_["bestBomb"]
    assert (best["kind"], best["cardCount"], best["top"]) == ("KIND_BOMB", 5, 4)


def test_bad_play_reports_invalid_argument_and_goes_on(node_installed: Path, node_server: str) -> None:
    status, out = run_client(node_server, "--play", "7 8", "--hand", "7 7 8")
    assert status == 1
    error = out["classify"]["error"]
    assert error["code"] == "INVALID_ARGUMENT" and error["message"]
    assert "error" not in out["score"]


def test_unreachable_server_is_unavailable(node_installed: Path) -> None:
    status, out = run_client(f"127.0.0.1:{free_port()}", "--deadline-ms", "2000")
    assert status == 1
    assert {out[step]["error"]["code"] for step in STEPS} <= {"UNAVAILABLE", "DEADLINE_EXCEEDED"}


def test_bad_arguments_exit_2(node_installed: Path) -> None:
    done = subprocess.run([NODE, "client.mjs", "--page-size", "-3"], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--page-size" in done.stderr


def test_pages_concatenate_to_the_whole_list(node_installed: Path, node_server: str) -> None:
    """Following next_page_token page by page (AIP-158) reads every legal play, in order,
    past any page size: the same list as one page large enough to hold them all."""
    hand = "3 4 5 6 7 7 7 7 8 9 BJ"
    _, whole = run_client(node_server, "--hand", hand, "--page-size", "1000")
    _, paged = run_client(node_server, "--hand", hand, "--page-size", "7", "--pages", "1000")
    want = answer(whole, "enumerate")
    got = answer(paged, "enumerate")
    assert want["nextPageToken"] == "" and got["nextPageToken"] == ""
    assert [p["text"] for p in got["plays"]] == [p["text"] for p in want["plays"]]
    assert got["pagesRead"] == -(-len(want["plays"]) // 7) > 1
