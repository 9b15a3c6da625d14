"""Review archives (service.batch.review) and the replay's ``players``: the players field
checked and carried, the per-player and per-partnership sums and their intervals, and
``review-replays`` runs — exactly once, resumable, shards merged equal to one run — on the
machinery of score archives (tests/test_archive.py).

The archive tests run a stand-in review (:func:`stand_in_review`: deterministic figures
from the replay, errors from the scorer) so that they test the archive, not the search;
tests/test_review_bench.py runs the real review.
"""

from __future__ import annotations

import json
import math
import os
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import review_stand_in
from test_archive import Cluster, make_archive, sources

from shuangkou.core.generate import generate_replay
from shuangkou.core.replay import (
    MAX_PLAYER_CHARS,
    ReplayError,
    check_players,
    parse_replay,
    score_replay,
)
from shuangkou.service.batch import review as rb
from shuangkou.service.batch.records import score_line

NAMES = ["ann", "bo", "cy", "di", "ed", "fay"]


# ----------------------------------------------------------------------------- players

def _named(i: int, variant: str = "bianfeng") -> dict[str, Any]:
    doc = generate_replay(variant, i)
    rng = random.Random(i)
    doc["players"] = rng.sample(NAMES, 4)
    return doc


def test_players_are_carried_and_never_scored() -> None:
    doc = _named(3)
    plain = {k: v for k, v in doc.items() if k != "players"}
    assert parse_replay(doc).players == tuple(doc["players"])
    assert parse_replay(plain).players is None
    assert score_replay(doc).to_dict() == score_replay(plain).to_dict()
    assert score_line(json.dumps(doc)) == score_line(json.dumps(plain))


@pytest.mark.parametrize(("players", "says"), [
    (["a", "b", "c"], "players must list 4 player ids"),
    ("abcd", "players must list 4 player ids"),
    (["a", "b", "c", 4], "players[3] must be a non-empty string"),
    (["a", "", "c", "d"], "players[1] must be a non-empty string"),
    (["a", "b", "x" * (MAX_PLAYER_CHARS + 1), "d"], f"at most {MAX_PLAYER_CHARS}"),
    (["a", "b\n", "c", "d"], "unprintable character U+000A"),
    (["a", "b", "c\u202e", "d"], "unprintable character U+202E"),
    (["a", "b", "a", "d"], "'a' is named at dealt seats 0 and 2"),
])
def test_bad_players_are_clear_errors(players: Any, says: str) -> None:
    doc = generate_replay("bianfeng", 1) | {"players": players}
    for check in (score_replay, parse_replay):
        with pytest.raises(ReplayError) as info:
            check(doc)
        assert says in info.value.detail and info.value.field == "players"
        assert info.value.action is None
    assert check_players(["张三", "b", "x" * MAX_PLAYER_CHARS, "d d"]) is not None


def test_players_in_the_grpc_replay() -> None:
    from shuangkou.service.api.results import replay_record
    from shuangkou.service.errors import BadInput
    from shuangkou.service.limits import Limits
    from shuangkou.v1 import cards_pb2, scoring_pb2

    doc = generate_replay("bianfeng", 2)
    hands = [cards_pb2.Cards(cards_text=" ".join(h)) for h in doc["hands"]]
    msg = scoring_pb2.Replay(hands=hands, leader=doc["leader"], players=["a", "b", "c", "d"])
    assert replay_record(msg, "bianfeng", Limits()).players == ("a", "b", "c", "d")
    assert replay_record(scoring_pb2.Replay(hands=hands), "bianfeng", Limits()).players is None
    del msg.players[2:]
    msg.players.extend(["a", "d"])
    with pytest.raises(BadInput) as info:
        replay_record(msg, "bianfeng", Limits())
    assert "named at dealt seats 0 and 2" in str(info.value)


# ----------------------------------------------------------------------------- a stand-in

@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "shuangkou.core.review", review_stand_in)


# ----------------------------------------------------------------------------- the sums

def _record(decisions: list[tuple[int, bool, float, float | None, bool]],
            players: list[str] | None) -> dict[str, Any]:
    return {"ok": True, "players": players, "decisions": [
        {"seat": s, "forced": f, "loss": x, "stake": x + 2.0, "oracle_gain": g, "best": 0,
         "candidates": [{"taken": t}], "verdict": "blunder" if x > 6 else "good",
         "agrees_first": t, "agrees_top3": True} for s, f, x, g, t in decisions]}


def test_figures_are_cluster_ratios_and_merge_exactly() -> None:
    rounds = [_record([(0, False, 1.0, 0.5, False), (0, False, 3.0, -1.0, True),
                       (2, False, 7.0, 2.0, False), (1, True, 0.0, 0.0, True)],
                      ["p", "q", "r", "s"]),
              _record([(0, False, 0.0, 0.0, True), (3, False, 2.0, -0.5, True)],
                      ["p", "s", "r", "q"]),
              _record([(2, False, 4.0, 1.0, False)], ["r", "q", "p", "s"]),
              _record([(1, False, 1.0, None, True)], None)]
    one = rb.ReviewStats()
    for r in rounds:
        one.add_record("f", 1, "", r)
    halves = [rb.ReviewStats(), rb.ReviewStats()]
    for k, r in enumerate(rounds):
        halves[k % 2].add_record("f", 1, "", r)
    merged = rb.ReviewStats.from_dict(halves[0].to_dict())
    merged.merge(rb.ReviewStats.from_dict(json.loads(json.dumps(halves[1].to_dict()))))
    summary, again = rb.ReviewJob().summary(one), rb.ReviewJob().summary(merged)
    assert summary == again
    p = summary["players"]["p"]
    # p: round 1 seat 0 (losses 1, 3), round 2 seat 0 (0), round 3 seat 2 (4)
    per_round = [(4.0, 2), (0.0, 1), (4.0, 1)]
    mean = 8.0 / 4
    ss = sum((x - mean * n) ** 2 for x, n in per_round)
    se = math.sqrt(3 / 2 * ss) / 4
    assert p["decisions"] == 4 and p["rounds"] == 3 and p["mean_loss"] == mean
    assert p["mean_loss_95"] == pytest.approx([mean - 1.959964 * se, mean + 1.959964 * se],
                                              abs=1e-4)
    # the loss share: losses over stakes (each stake its loss + 2 here), per round (x, s)
    share_rounds = [(4.0, 8.0), (0.0, 2.0), (4.0, 6.0)]
    share = 8.0 / 16.0
    ss = sum((x - share * st) ** 2 for x, st in share_rounds)
    se = math.sqrt(3 / 2 * ss) / 16
    assert p["loss_share"] == share
    assert p["loss_share_95"] == pytest.approx([share - 1.959964 * se, share + 1.959964 * se],
                                               abs=1e-4)
    assert p["agree_first"] == 0.5 and p["small_sample"]
    pair = next(f for f in summary["partnerships"] if f["players"] == ["p", "r"])
    # p & r: round 1 seats 0+2 (gains .5 beat, -1, 2 beat), round 3 seats 0+2... r at 0, p at 2
    assert pair["rounds"] == 3 and pair["decisions"] == 5
    assert pair["beats_true_deal"] == pytest.approx(3 / 5)
    assert summary["rounds_without_players"] == 1
    assert summary["decisions"]["decisions"] == 7 and summary["decisions"]["forced"] == 1
    assert rb.wilson(5, 10) == pytest.approx([0.2366, 0.7634], abs=1e-4)


# ----------------------------------------------------------------------------- fair play

def _fair_decision(seat: int, taken: int, tuoguan: int, partner: tuple[float, ...],
                   every: tuple[float, ...], loss: float, stake: float,
                   over_partner: bool | None = None) -> dict[str, Any]:
    """A fair-play decision as the review's JSON form gives it (the regrets: the true view's
    first, then the decoys')."""
    def view(kind: str, regrets: tuple[float, ...]) -> dict[str, Any]:
        return {"kind": kind, "regret": regrets[0], "decoy_regrets": list(regrets[1:]),
                "excess": sum(regrets[1:]) / (len(regrets) - 1) - regrets[0],
                "disagree": True, "follows": regrets[0] == 0.0}
    return {"seat": seat, "forced": False, "deals": 12, "loss": loss, "stake": stake,
            "best": 0, "tuoguan": tuoguan, "oracle_gain": None, "verdict": "good",
            "agrees_first": True, "agrees_top3": True,
            "candidates": [{"taken": k == taken, "hint_rank": k} for k in range(3)],
            "fair": [view("partner", partner), view("all", every)], "over_partner": over_partner}


def _fair_rounds(n: int) -> list[dict[str, Any]]:
    """``n`` rounds of four named players (``p`` and ``r`` partners in every round), their
    decisions' evidence drawn from a seeded generator: ``p`` follows the partner-informed
    best more often than its decoys do; ``q`` has a chance to play over its partner at each
    decision and blocks it at three of four in round 4 only, ``s`` blocks at one in every
    round; both lose every round."""
    rng = random.Random(7)
    rounds = []
    for i in range(n):
        decisions = []
        for k, seat in enumerate((0, 1, 2, 3) * 4):
            thrown = i == 3 and seat == 1
            over = (k < 12 if thrown else False) if seat == 1 else (k < 4) if seat == 3 else None
            loss = round(4 + rng.expovariate(0.2) if thrown else rng.expovariate(0.5), 3)
            decisions.append(_fair_decision(
                seat, rng.randrange(3), rng.randrange(3),
                tuple(0.0 if (seat == 0 and k == 0 and rng.random() < 0.7) else
                      round(rng.expovariate(0.5), 3) for k in range(4)),
                tuple(round(rng.expovariate(0.5), 3) for _ in range(4)), loss,
                loss if thrown else round(loss + rng.expovariate(0.15), 3), over))
        decisions.append({**decisions[0], "forced": True, "deals": 0, "fair": []})
        rounds.append({"ok": True, "players": ["p", "q", "r", "s"], "decisions": decisions,
                       "result": {"final": [5, -30 + i, 25, -1 - i]}})
    return rounds


def test_fair_play_sums_are_the_cores_signals_and_merge_exactly() -> None:
    """The hand-sharing, full-sight, thrown-round and engine figures are core_ext/fairplay.py's
    signals of each partnership's and player's rounds; partitions merged (through the
    .done file's JSON) give what one run gives."""
    from shuangkou.core import fairplay
    from shuangkou.service.review.fair import evidence_of

    rounds = _fair_rounds(12)
    one = rb.ReviewStats()
    for k, r in enumerate(rounds):
        one.add_record("f", k + 1, "", r)
    thirds = [rb.ReviewStats() for _ in range(3)]
    for k, r in enumerate(rounds):
        thirds[k // 4].add_record("f", k + 1, "", r)
    merged = rb.ReviewStats()
    for part in thirds:
        merged.merge(rb.ReviewStats.from_dict(json.loads(json.dumps(part.to_dict()))))
    job = rb.ReviewJob(fair_play=True)
    summary = job.summary(one)
    assert summary == job.summary(merged)
    fair = summary["fair_play"]
    # hand sharing of p & r: seats 0 and 2 of every round
    def of(r: dict[str, Any], seats: tuple[int, ...]) -> list[fairplay.Evidence]:
        return [e for d in r["decisions"] if d["seat"] in seats for e in evidence_of(d)]

    # each round beyond its table: the other partnership, the seat's two opponents
    want = fairplay.information_signal("partner", [of(r, (0, 2)) for r in rounds],
                                       [[of(r, (1, 3))] for r in rounds])
    [pr] = [f for f in fair["partnerships"] if f["players"] == ["p", "r"]]
    got = pr["hand_sharing"]
    assert (got["evidence"], got["rounds"]) == (want.evidence, 12)
    assert got["estimate"] == round(want.estimate, 4) and got["p"] == float(f"{want.p:.4g}")
    assert got["low"] < got["estimate"] < got["high"]
    assert got["p"] < 0.01 and got["flagged"] and not got["small_sample"]
    # full sight of q: seat 1 of every round
    want = fairplay.information_signal("all", [of(r, (1,)) for r in rounds],
                                       [[of(r, (0,)), of(r, (2,))] for r in rounds])
    assert fair["players"]["q"]["full_sight"]["p"] == float(f"{want.p:.4g}")
    # its second part, the sight tells, has nothing here: the views decide, p as it is
    parts = fair["players"]["q"]["full_sight"]["parts"]
    assert parts["tells"]["rounds"] == 0 and parts["views"]["rounds"] == 12
    # thrown rounds of q: its blocks crowd into round 4 (index 3); r gained most there, and
    # q (table seat 1) ended it on -27. s blocks as often in every round: not flagged
    thrown = fair["players"]["q"]["thrown_rounds"]
    want = fairplay.thrown_signal([fairplay.GiveUps(3 if k == 3 else 0, 4, 0, 0, k - 30)
                                   for k in range(12)])
    assert (thrown["evidence"], thrown["decisions"]) == (12, 48)
    assert thrown["estimate"] == pytest.approx(want.estimate, abs=1e-3) == 1.0
    assert thrown["p"] == float(f"{want.p:.4g}") < 0.01
    assert thrown["note"] == \
        "round 3: 3 of 4 chances blocked, 0 of 0 conceded; r (f line 4; the player's final " \
        "-27) gained most"
    assert thrown["flagged"]
    steady = fair["players"]["s"]["thrown_rounds"]
    assert steady["estimate"] == 0.0 and steady["p"] == 1.0 and not steady["flagged"]
    # engine assistance of s: where 托管's choice (tuoguan) is not the rule policy's (the
    # first hint, candidate 0 here), which it took; and its loss share on its other decisions
    told = [d for r in rounds for d in r["decisions"]
            if d["seat"] == 3 and not d["forced"] and d["tuoguan"] != 0]
    other = [d for r in rounds for d in r["decisions"]
             if d["seat"] == 3 and not d["forced"] and d["tuoguan"] == 0]
    took = sum(d["candidates"][d["tuoguan"]]["taken"] for d in told)
    want = fairplay.engine_signal(took, sum(d["candidates"][0]["taken"] for d in told))
    engine = fair["players"]["s"]["engine"]
    assert engine["decisions"] == want.evidence and engine["p"] == float(f"{want.p:.4g}")
    agreement = engine["agreement"]
    assert agreement["departs"] == len(told) > 0
    assert agreement["share"] == round(took / len(told), 4)
    # its interval: the share as a ratio over rounds (cluster-robust), never narrower than
    # the binomial's
    per = [(sum(d["candidates"][d["tuoguan"]]["taken"] for d in mine), len(mine))
           for r in rounds
           for mine in [[d for d in told if any(d is x for x in r["decisions"])]]]
    share, n = took / len(told), len(per)
    se = max(math.sqrt(n / (n - 1) * sum((e - share * m) ** 2 for e, m in per)) / len(told),
             math.sqrt(max(share * (1 - share), 0.25 / len(told)) / len(told)))
    assert (agreement["low"], agreement["high"]) == (round(max(0, share - 1.96 * se), 4),
                                                     round(min(1, share + 1.96 * se), 4))
    assert agreement["elsewhere"] == round(sum(d["loss"] for d in other)
                                           / sum(d["stake"] for d in other), 4)
    # what chance alone flags among those tested
    assert fair["flags"]["hand_sharing"] == {"tested": 2, "flagged": 1, "by_chance": 0.02}
    # (p and r never had a chance to block: nothing to test)
    assert fair["flags"]["thrown_rounds"] == {"tested": 2, "flagged": 1, "by_chance": 0.02}
    # a run without fair play has none of it, and its .done files no fair sums
    plain = rb.ReviewStats()
    for k, r in enumerate(rounds):
        plain.add_record("f", k + 1, "", {**r, "decisions": [
            {**d, "fair": []} for d in r["decisions"]]})
    assert "fair" not in plain.to_dict()["review"]
    assert rb.ReviewJob().summary(plain)["fair_play"] is None


def test_a_round_counts_beyond_its_table_and_on_its_own() -> None:
    """core_ext/fairplay.py ``beyond_table`` and ``Sums.signal`` (docs/decisions/
    engineering.md E85, E89): a seat is tested on its score less its table's mean (a missing
    score counting 0; its excess less the table's per decision times its own decisions) and
    on its own score, and flagged only when both stand above 0 — what moves every seat of a
    table alike cannot raise a flag, and opponents who score below zero cannot lend one."""
    from shuangkou.core.fairplay import RoundScore, Sums, TableScore, beyond_table
    from shuangkou.service.review.fair import EngineTells, RoundFair

    own, left, right = RoundScore(1.5, 6.0, 4), RoundScore(0.5, 2.0, 2), None
    assert beyond_table(own, (left, right)) == TableScore(
        own, RoundScore(1.5 - 0.25, 6.0 - 0.5 * 4, 4))
    assert beyond_table(None, (left,)) is None
    rng = random.Random(3)
    plain, shifted, table_alone = Sums(), Sums(), Sums()
    for _ in range(30):
        scores = [RoundScore(rng.gauss(0, 1), rng.gauss(0, 3), rng.randint(1, 9))
                  for _ in range(4)]
        moved = [RoundScore(r.score + 0.7, r.excess + 0.4 * r.decisions, r.decisions)
                 for r in scores]
        for into, these in ((plain, scores), (shifted, moved)):
            fair = RoundFair((these[0], these[1]), tuple(these), (EngineTells(0, 0),) * 4)
            into.add(fair.seat_beyond(0))
            assert fair.team_beyond(1) == beyond_table(these[1], (these[0],))
        beyond = fair.seat_beyond(0)
        assert beyond is not None
        table_alone.add(TableScore(beyond.beyond, beyond.beyond))
    a, b, c = plain.signal("all"), shifted.signal("all"), table_alone.signal("all")
    assert a.estimate == pytest.approx(b.estimate) == pytest.approx(c.estimate)
    assert b.z <= c.z + 1e-9 and b.p >= c.p - 1e-12
    # an honest seat (scores about 0) whose opponents score 2 below zero every round: beyond
    # them it stands far above 0, on its own it does not, and it is not flagged
    lent = Sums()
    for _ in range(50):
        mine = RoundScore(rng.gauss(0, 1), 0.0, 5)
        lent.add(beyond_table(mine, (RoundScore(rng.gauss(-2, 1), 0.0, 5),) * 2))
    alone = Sums()
    alone.score, alone.score2, alone.rounds, alone.decisions = (
        lent.score, lent.score2, lent.rounds, lent.decisions)
    alone.own, alone.own2 = lent.score, lent.score2
    assert alone.signal("all").p < 1e-6
    assert lent.signal("all").p > 0.05


def test_hand_sharing_is_the_stronger_of_the_views_and_the_tells() -> None:
    """A partnership's hand sharing (core_ext/fairplay.py ``either``): the views' and the
    tells' tests in ``parts``, the signal the one with the smaller p, that p doubled."""
    from shuangkou.core import fairplay

    rounds = _fair_rounds(12)
    rng = random.Random(5)
    for r in rounds:      # seat 2 (r, p's partner) passes where the partner can beat
        for d in r["decisions"]:
            if not d["forced"]:
                beat = rng.random() < 0.5
                passed = beat if d["seat"] == 2 else rng.random() < 0.5
                d["tell"] = {"kind": "follow", "passed": passed, "value": float(beat),
                             "decoy_values": [float(rng.random() < 0.5) for _ in range(4)]}
    stats = rb.ReviewStats()
    for k, r in enumerate(rounds):
        stats.add_record("f", k + 1, "", r)
    [pr] = [f for f in rb.ReviewJob(fair_play=True).summary(stats)["fair_play"]["partnerships"]
            if f["players"] == ["p", "r"]]
    got, parts = pr["hand_sharing"], pr["hand_sharing"]["parts"]
    assert set(parts) == {"views", "tells"} and parts["tells"]["rounds"] == 12
    stronger = min(parts, key=lambda name: parts[name]["p"])
    assert got["note"] == stronger
    assert got["p"] == pytest.approx(min(1.0, 2 * parts[stronger]["p"]), rel=1e-3)
    assert got["estimate"] == parts[stronger]["estimate"]
    signal = fairplay.either("x", {"a": fairplay.Signal("a", 3, 0, 0, 0, 2.0, 0.02),
                                   "b": fairplay.Signal("b", 0, 0, 0, 0, 0.0, 1.0)})
    assert (signal.p, signal.note) == (0.02, "a")     # a part without evidence counts not


def test_fair_play_small_samples_are_never_flagged() -> None:
    rounds = _fair_rounds(rb.MIN_ROUNDS - 1)
    stats = rb.ReviewStats()
    for k, r in enumerate(rounds):
        stats.add_record("f", k + 1, "", r)
    fair = rb.ReviewJob(fair_play=True).summary(stats)["fair_play"]
    [pr] = [f for f in fair["partnerships"] if f["players"] == ["p", "r"]]
    assert pr["hand_sharing"]["small_sample"] and not pr["hand_sharing"]["flagged"]
    assert all(f["tested"] == 0 == f["flagged"] for f in fair["flags"].values())


# ----------------------------------------------------------------------------- archive runs

@pytest.fixture(scope="module")
def named() -> list[str]:
    return [json.dumps(_named(i, ["bianfeng", "huopin", "fengkuang"][i % 3]))
            for i in range(20)]


def _merged(outdir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for p in sorted((outdir / "parts").glob("*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()]


def _expected(lines: list[str]) -> list[dict[str, Any]]:
    job = rb.ReviewJob(rollouts=8)
    return [job.record(line, False) for line in lines]


def _comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in ("this_run", "scoring_seconds")}


@pytest.mark.usefixtures("stand_in")
def test_review_archive_exactly_once_resume_and_summary(
        tmp_path: Path, named: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    counts = (23, 11)
    lines = make_archive(tmp_path / "in", named, counts)
    out = tmp_path / "out"
    args = [str(tmp_path / "in" / "a.jsonl"), str(tmp_path / "in" / "b"), "--output-dir", str(out),
            "--partition-lines", "6", "-j", "2", "--rollouts", "8"]
    assert rb.main(args) == 3                      # the archive holds malformed lines
    records = _merged(out)
    assert [(r.pop("file"), r.pop("line")) for r in records] == sources(tmp_path / "in", counts)
    assert records == _expected(lines)
    assert all("seconds" not in r for r in records)
    summary = json.loads((out / "summary.json").read_text())
    err = capsys.readouterr().err
    assert summary["job"] == "review-replays" and summary["reviewed"] + summary["rejected"] \
        == len(lines)
    assert set(summary["players"]) == set(NAMES)
    assert "partnerships" in err and "caveats:" in err and "A signal is not proof" in err
    first = (out / "parts" / "00000-000000.jsonl").read_bytes()
    # an interrupted run: two partitions lost; the rerun writes the same bytes
    done = sorted((out / "parts").glob("*.done"))
    done[0].unlink()
    done[3].unlink()
    assert rb.main(args) == 3
    assert "in 2 partitions" in capsys.readouterr().err
    assert (out / "parts" / "00000-000000.jsonl").read_bytes() == first
    assert _comparable(json.loads((out / "summary.json").read_text())) == _comparable(summary)
    # other settings, or the scorer, in the same directory: refused
    assert rb.main([*args, "--seed", "1"]) == 2
    assert "another run" in capsys.readouterr().err
    from shuangkou.service.batch import command
    assert command.main(["--merge", "--output-dir", str(out)]) == 2
    assert "merge it with shuangkou review-replays --merge" in capsys.readouterr().err


@pytest.mark.usefixtures("stand_in")
def test_review_shards_merge_equal_one_run(tmp_path: Path, named: list[str]) -> None:
    counts = (17, 9)
    lines = make_archive(tmp_path / "in", named, counts)
    one, sharded = tmp_path / "one", tmp_path / "sharded"
    base = [str(tmp_path / "in"), "--partition-lines", "4", "-j", "1", "--rollouts", "8"]
    assert rb.main([*base, "--output-dir", str(one)]) == 3
    for i in (2, 0, 1):
        rb.main([*base, "--output-dir", str(sharded), "--shard", f"{i}/3"])
    assert rb.main(["--merge", "--output-dir", str(sharded)]) == 3
    assert _merged(sharded) == _merged(one) and len(_merged(one)) == len(lines)
    assert _comparable(json.loads((sharded / "summary.json").read_text())) == \
        _comparable(json.loads((one / "summary.json").read_text()))


@pytest.mark.usefixtures("stand_in")
def test_fair_play_shards_merge_equal_one_run(tmp_path: Path, named: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """--fair-play over partitions, shards and --merge gives one run's summary; its settings
    are the run's (a rerun without them is another run); the printed summary lists each
    signal with what chance flags."""
    counts = (17, 9)
    make_archive(tmp_path / "in", named, counts)
    one, sharded = tmp_path / "one", tmp_path / "sharded"
    base = [str(tmp_path / "in"), "-j", "1", "--rollouts", "8", "--fair-play", "--decoys",
            "2", "--fair-deals", "4"]
    assert rb.main([*base, "--partition-lines", "26", "--output-dir", str(one)]) == 3
    err = capsys.readouterr().err
    for kind in ("hand sharing, by partnership", "full sight, by player",
                 "thrown rounds, by player", "engine, by player"):
        assert kind in err
    assert "decoys 2, deals a view 4" in err and "What to do with a flag" in err
    for i in (2, 0, 1):
        rb.main([*base, "--partition-lines", "4", "--output-dir", str(sharded),
                 "--shard", f"{i}/3"])
    assert rb.main(["--merge", "--output-dir", str(sharded)]) == 3
    got = json.loads((sharded / "summary.json").read_text())
    want = json.loads((one / "summary.json").read_text())
    assert got["fair_play"] == want["fair_play"] and got["players"] == want["players"]
    assert set(want["fair_play"]["players"]) == set(NAMES)
    assert want["review"]["settings"] == {"rollouts": 8, "width": 6, "seed": 0, "oracle": True,
                                          "fair_play": True, "decoys": 2, "fair_deals": 4,
                                          "fair_sums": rb.FAIR_SUMS}
    record = _merged(one)[0]
    assert record["decisions"] and all(len(d["fair"]) == 2 for d in record["decisions"]
                                       if not d["forced"])
    capsys.readouterr()
    without = [str(tmp_path / "in"), "-j", "1", "--rollouts", "8", "--partition-lines", "26"]
    assert rb.main([*without, "--output-dir", str(one)]) == 2
    assert "another run" in capsys.readouterr().err
    # a run whose partitions keep the fair-play sums as another build did (its settings
    # without fair_sums): merged, it is refused, not misread (resumed, the fingerprint of
    # its settings makes it another run)
    manifest = json.loads((sharded / "manifest.json").read_text())
    del manifest["job"]["fair_sums"]
    (sharded / "manifest.json").write_text(json.dumps(manifest))
    assert rb.main(["--merge", "--output-dir", str(sharded)]) == 2
    assert f"format 1, this build's {rb.FAIR_SUMS}" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["--decoys", "2"], "--decoys and --fair-deals go with --fair-play"),
    (["--fair-deals", "4"], "--decoys and --fair-deals go with --fair-play"),
    (["--fair-play", "--decoys", "0"], "decoys must be an integer 1–"),
    (["--fair-play", "--decoys", "99"], "decoys must be an integer 1–"),
    (["--fair-play", "--fair-deals", "1"], "fair_deals must be an integer 2–10,000"),
])
def test_fair_play_options_out_of_bounds_are_bad_usage(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        rb.main(["x.jsonl", "--output-dir", "unused", *argv])
    assert info.value.code == 2 and says in capsys.readouterr().err


@pytest.fixture(scope="module")
def stand_in_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A real scheduler and two workers (tests/test_archive.py) whose processes review with
    the stand-in: a ``sitecustomize`` on their PYTHONPATH puts it in ``sys.modules``."""
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(
        f"import sys\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "import review_stand_in\nsys.modules['shuangkou.core.review'] = review_stand_in\n")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
        cluster = Cluster()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.mark.usefixtures("stand_in")
def test_review_on_dask_equals_one_process(tmp_path: Path, named: list[str],
                                           stand_in_cluster: Cluster,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    counts = (30, 14, 1)
    make_archive(tmp_path / "in", named, counts)
    base = [str(tmp_path / "in"), "--partition-lines", "5", "--rollouts", "8", "--no-progress"]
    assert rb.main([*base, "--output-dir", str(tmp_path / "dask"), "--dask",
                    stand_in_cluster.address]) == 3
    assert "2 workers" in capsys.readouterr().err
    assert rb.main([*base, "--output-dir", str(tmp_path / "one"), "-j", "1"]) == 3
    assert _merged(tmp_path / "dask") == _merged(tmp_path / "one")
    assert _comparable(json.loads((tmp_path / "dask" / "summary.json").read_text())) == \
        _comparable(json.loads((tmp_path / "one" / "summary.json").read_text()))


def test_review_replays_needs_an_output_dir() -> None:
    for argv in (["x.jsonl"], ["x.jsonl", "--output-dir", "d", "--dask", "local", "--shard", "0/2"],
                 ["x.jsonl", "--output-dir", "d", "--rollouts", "0"]):
        with pytest.raises(SystemExit) as info:
            rb.main(argv)
        assert info.value.code == 2


def test_the_caveats_are_documented() -> None:
    from grpc_helpers import ROOT

    doc = " ".join((Path(ROOT) / "docs" / "archives.md").read_text(encoding="utf-8").split())
    for caveat in rb.CAVEATS:
        name, _, text = caveat.partition(": ")
        assert f"*{name}*: {text}" in doc, name


# ----------------------------------------------------------------------------- the real review

def test_a_cheating_partnership_stands_out(tmp_path: Path) -> None:
    """bench/bench_review_archive.py's archive: ``cheat-a`` & ``cheat-b`` play the best of
    their 提示 on the TRUE deal, the fair pairs the rule policy. Reviewed with the real
    review (a small budget), the cheats' share of decisions that beat the fair best on the
    true deal lies clearly above every fair pair's, and so does their oracle gain; the
    records equal the review of each line in this process."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    try:
        import bench_review_archive as bench
    finally:
        sys.path.pop(0)
    from shuangkou.core.review import ReviewBudget, review

    archive = tmp_path / "rounds.jsonl"
    bench.make(10, archive, seed=1, width=4, variant="bianfeng")
    out = tmp_path / "out"
    assert rb.main([str(archive), "--output-dir", str(out), "-j", "2", "--rollouts", "16",
                    "--partition-lines", "3", "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    pairs = {" & ".join(p["players"]): p for p in summary["partnerships"]}
    cheats = pairs.pop("cheat-a & cheat-b")
    assert set(pairs) == {"fair-1 & fair-2", "fair-3 & fair-4"}
    for fair in pairs.values():
        assert cheats["beats_true_deal_95"][0] > fair["beats_true_deal_95"][1], (cheats, fair)
        assert cheats["mean_oracle_gain"] > fair["mean_oracle_gain"]
    assert cheats["above_archive_rate"] and not any(p["above_archive_rate"]
                                                     for p in pairs.values())
    first = archive.read_text().splitlines()[0]
    expected = review(first, budget=ReviewBudget(rollouts=16), oracle=True).to_dict()
    del expected["seconds"]
    assert _merged(out)[0] == {"file": str(archive), "line": 1, "ok": True, **expected}


def test_fair_play_end_to_end_on_real_reviews(tmp_path: Path) -> None:
    """The real review with fair play (a tiny budget) over rounds random play made
    (tests/review_rounds.py: the rule policy's would carry no evidence, every choice the
    reference), four players in two fixed partnerships: every signal is
    reported for each of them; the records are the review of each line in this process;
    two partitions on two processes, and shards merged, give what one partition gives."""
    from review_rounds import played

    from shuangkou.core.review import ReviewBudget, review

    players = ["ann", "bo", "cy", "di"]
    lines = [json.dumps({**played("bianfeng", seed, "random"), "players": players})
             for seed in range(4)]
    archive = tmp_path / "rounds.jsonl"
    archive.write_text("\n".join(lines) + "\n")
    base = [str(archive), "--rollouts", "60", "--decoys", "2", "--fair-deals", "4",
            "--fair-play", "--no-oracle", "--no-progress"]
    assert rb.main([*base, "--output-dir", str(tmp_path / "one"), "-j", "1"]) == 0
    assert rb.main([*base, "--output-dir", str(tmp_path / "two"), "-j", "2",
                    "--partition-lines", "2"]) == 0
    for i in (1, 0):
        assert rb.main([*base, "--output-dir", str(tmp_path / "shards"), "-j", "1",
                        "--partition-lines", "1", "--shard", f"{i}/2"]) == 0
    assert rb.main(["--merge", "--output-dir", str(tmp_path / "shards")]) == 0
    one = json.loads((tmp_path / "one" / "summary.json").read_text())
    for other in ("two", "shards"):
        summary = json.loads((tmp_path / other / "summary.json").read_text())
        assert _comparable(summary) == _comparable(one) | {
            k: summary[k] for k in ("partitions", "partition_lines")}
    fair = one["fair_play"]
    # the seats follow the revealed card, so who partners whom varies by round
    assert fair["partnerships"] and set(fair["players"]) == set(players)
    for f in fair["partnerships"]:
        assert f["hand_sharing"]["decisions"] > 0 and 0 < f["hand_sharing"]["p"] <= 1
    for f in fair["players"].values():
        assert f["full_sight"]["rounds"] == 4 and f["full_sight"]["small_sample"]
        assert f["full_sight"]["parts"]["tells"]["rounds"] == 4
        thrown = f["thrown_rounds"]      # the rounds with a chance to block; the round of most
        assert thrown["rounds"] <= 4 and (not thrown["note"] or "gained most" in thrown["note"])
        assert f["engine"]["decisions"] >= 0
        for signal in f.values():
            assert signal["low"] <= signal["high"] and not signal["flagged"]
    budget = ReviewBudget(rollouts=60, decoys=2, fair_deals=4)
    expected = review(lines[0], budget=budget, fair=True).to_dict()
    del expected["seconds"]
    assert _merged(tmp_path / "one")[0] == {"file": str(archive), "line": 1, "ok": True,
                                            **expected}
