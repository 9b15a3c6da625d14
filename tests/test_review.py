"""复盘 (core_ext/review.py, _search.pyx ``evaluate``): every decision of a replay evaluated
from the deciding seat's view — deterministic for a seed and budget, the taken action always
a candidate, forced decisions marked, losses within their noise of zero or above, blind to
the cards the seat cannot see (a re-deal test as for the search), a round of the search's
play cheap and one of random play costly; the oracle mode; invalid replays refused as
score_replay refuses them; the ``shuangkou review`` command. Tiny budgets keep it fast."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import pytest
from review_rounds import played
from test_suggest import redealt

from shuangkou import core
from shuangkou.core import Round
from shuangkou.core._search import evaluate
from shuangkou.core.errors import DeadlineExceeded, ReplayError, ShuangkouError
from shuangkou.core.fairplay import Regrets
from shuangkou.core.generate import deal
from shuangkou.core.review import (
    DEFAULT_REVIEW,
    NOISE,
    VERDICTS,
    ReviewBudget,
    review,
    verdict,
)
from shuangkou.core.suggest import suggest

TINY = ReviewBudget(rollouts=40)


@pytest.fixture(scope="module")
def rule_round() -> dict[str, Any]:
    return played("baibian", 3, "rule")


@pytest.fixture(scope="module")
def reviewed(rule_round: dict[str, Any]) -> dict[str, Any]:
    return review(rule_round, budget=TINY, seed=7).to_dict()


def test_a_review_is_deterministic_for_a_seed_and_budget(rule_round: dict[str, Any],
                                                         reviewed: dict[str, Any]) -> None:
    again = review(json.dumps(rule_round), budget=TINY, seed=7).to_dict()
    typed = review(core.parse_replay(rule_round), budget=TINY, seed=7).to_dict()
    for d in (again, typed, reviewed):
        d.pop("seconds", None)
    assert again == reviewed and typed == reviewed
    other = review(rule_round, budget=TINY, seed=8).to_dict()
    assert [d["candidates"] for d in other["decisions"]] != \
        [d["candidates"] for d in reviewed["decisions"]]


def test_every_play_and_pass_is_a_decision_with_the_taken_action_among_its_candidates(
        rule_round: dict[str, Any], reviewed: dict[str, Any]) -> None:
    actions = rule_round["actions"]
    assert [d["index"] for d in reviewed["decisions"]] == list(range(len(actions)))
    for d in reviewed["decisions"]:
        a = actions[d["index"]]
        assert d["seat"] == a["seat"]
        taken = [c for c in d["candidates"] if c["taken"]]
        assert len(taken) == 1 and taken[0]["kind"] == d["taken"]["kind"]
        if "play" in a:
            assert taken[0]["cards"] == a["play"] == d["taken"]["cards"]
        else:
            assert d["taken"]["kind"] == "pass"
        assert d["verdict"] in VERDICTS
        assert d["best"] == 0 and d["candidates"][d["best"]]["points"] == max(
            (c["points"] for c in d["candidates"] if c["points"] is not None), default=None)


def test_forced_decisions_are_marked_and_not_searched(reviewed: dict[str, Any]) -> None:
    forced = [d for d in reviewed["decisions"] if d["forced"]]
    assert forced, "a round of the rule policy has passes with nothing that beats"
    for d in forced:
        assert d["verdict"] == "forced" and d["loss"] == 0 and d["deals"] == 0
        assert len(d["candidates"]) == 1 and d["candidates"][0]["points"] is None
    for d in reviewed["decisions"]:
        if not d["forced"]:
            assert len(d["candidates"]) > 1 and d["deals"] >= 2
    seats = reviewed["seats"]
    assert sum(s["decisions"] for s in seats) == len(reviewed["decisions"])
    assert sum(s["forced"] for s in seats) == len(forced)


def test_losses_are_never_below_zero_and_verdicts_count_only_what_beats_the_noise(
        reviewed: dict[str, Any]) -> None:
    for d in reviewed["decisions"]:
        if d["forced"]:
            continue
        taken = next(c for c in d["candidates"] if c["taken"])
        assert d["loss"] == pytest.approx(d["candidates"][0]["points"] - taken["points"])
        assert d["loss"] >= 0 and d["loss_se"] >= 0
        assert d["loss"] == 0 or d["loss_se"] > 0 or taken is d["candidates"][0]
        assert d["verdict"] == verdict(d["loss"], d["loss_se"])
        if d["verdict"] != "good":
            assert d["loss"] > NOISE * d["loss_se"]
        team = d["seat"] % 2
        assert d["eval_team0"] == pytest.approx(taken["points"] * (1 if team == 0 else -1))
    assert verdict(5.0, 3.0) == "good" and verdict(5.0, 1.0) == "mistake"


def test_the_evaluation_sees_only_what_the_seat_sees() -> None:
    """Re-dealing the cards the seat cannot see among the other seats (same counts, same
    history) changes no evaluation: the candidates, their points and standard errors."""
    v = core.get_variant("baibian")
    rng = random.Random("review/fair")
    hands = [list(h) for h in deal(v, rng)]
    r = Round.deal(v, hands, 1, partner=3)
    history: list[Any] = []
    checked = 0
    for step in range(30):
        seat = r.turn
        s = suggest(r)
        if step % 7 == 3:
            rec = r.copy().play(seat, s.cards, s.declaration) if s.kind == "play" else None
            taken = (s.cards, rec.reading if rec else None, s.declaration is not None)
            want = evaluate(r, taken, rollouts=60, seed=3)
            for k in range(2):
                other = redealt(v, hands, 1, history, seat, random.Random(k))
                assert [other.hand(x) for x in range(4)] != [r.hand(x) for x in range(4)]
                got = evaluate(other, taken, rollouts=60, seed=3)
                assert got.candidates == want.candidates
            checked += 1
        history.append((s.seat, list(s.cards)))
        if s.kind == "pass":
            r.pass_turn(s.seat)
        else:
            r.play(s.seat, s.cards)
    assert checked >= 3


def test_the_oracle_evaluates_on_the_true_deal(rule_round: dict[str, Any]) -> None:
    rv = review(rule_round, budget=ReviewBudget(rollouts=20), seed=1, oracle=True).to_dict()
    assert rv["oracle"] is True
    rated = [d for d in rv["decisions"] if not d["forced"]]
    assert rated
    for d in rated:
        assert all(c["true_points"] is not None for c in d["candidates"])
        taken = next(c for c in d["candidates"] if c["taken"])
        assert d["oracle_gain"] == pytest.approx(taken["true_points"]
                                                 - d["candidates"][0]["true_points"])
    assert any(s["oracle_gain"] is not None for s in rv["seats"])
    plain = review(rule_round, budget=ReviewBudget(rollouts=20), seed=1).to_dict()
    assert all(d["oracle_gain"] is None for d in plain["decisions"])
    # the fair evaluation is the same with or without the oracle
    assert [[c["points"] for c in d["candidates"]] for d in plain["decisions"]] == \
        [[c["points"] for c in d["candidates"]] for d in rv["decisions"]]


def test_the_search_loses_little_and_random_play_a_lot() -> None:
    """Rounds of qianbian (where random play is costliest: its wild jokers and chain bombs)
    played by the 托管 search and by uniformly random legal play, reviewed alike: random
    play loses several times more per decision and makes many more mistakes and blunders
    (loss beyond 3 points and beyond the noise). docs/BENCHMARKS.md has the full figures.
    The search plays at 托管's 600 rollouts: with its margin of three standard errors
    (docs/decisions/engineering.md E61) fewer rollouts seldom depart from the rule policy
    at all (at 200 it lost 1.70 a decision here, the rule policy 2.03; at 600, 0.77)."""
    budget = ReviewBudget(rollouts=120)
    loss: dict[str, list[float]] = {"search": [], "random": []}
    bad = dict.fromkeys(loss, 0)
    for seed in (0, 2):
        for policy in loss:
            rv = review(played("qianbian", seed, policy, rollouts=600), budget=budget, seed=2)
            loss[policy] += [d.loss for d in rv.decisions if not d.forced]
            bad[policy] += sum(s.mistakes + s.blunders for s in rv.seats)
    mean = {p: sum(x) / len(x) for p, x in loss.items()}
    assert mean["random"] > 2.5 * mean["search"] and mean["search"] < 1.5
    assert bad["random"] > 3 * bad["search"]


def test_an_invalid_replay_is_refused_as_score_replay_refuses_it(
        rule_round: dict[str, Any]) -> None:
    bad = dict(rule_round, actions=[*rule_round["actions"][:5],
                                    {"seat": (rule_round["actions"][4]["seat"] + 2) % 4,
                                     "pass": True}])
    cases = [bad, "{not json", {"variant": "baibian"}, dict(rule_round, stake=0),
             dict(rule_round, actions=rule_round["actions"][:-1])]
    for doc in cases:
        with pytest.raises(ReplayError) as want:
            core.score_replay(doc)
        with pytest.raises(ReplayError) as got:
            review(doc, budget=TINY)
        assert (str(got.value), got.value.action, got.value.field) == \
            (str(want.value), want.value.action, want.value.field)


def test_budgets_and_bounds() -> None:
    assert DEFAULT_REVIEW.rollouts >= 1 and DEFAULT_REVIEW.model == "mix"
    for bad in ({"rollouts": 0}, {"rollouts": 1.5}, {"model": "panel"}, {"ms": -1},
                {"exact": 99}):
        with pytest.raises(ShuangkouError):
            ReviewBudget(**bad)
    doc = played("huopin", 1, "rule")
    with pytest.raises(ShuangkouError, match="width"):
        ReviewBudget(width=0)
    with pytest.raises(DeadlineExceeded):
        review(doc, budget=ReviewBudget(rollouts=100_000), timeout=0.05)
    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 3

    with pytest.raises(DeadlineExceeded, match="cancelled"):
        review(doc, budget=ReviewBudget(rollouts=100_000), cancelled=cancelled)


def test_the_review_command(tmp_path: Any, rule_round: dict[str, Any]) -> None:
    src = tmp_path / "round.json"
    src.write_text(json.dumps(rule_round))
    run = [sys.executable, "-m", "shuangkou.service", "review"]
    done = subprocess.run([*run, str(src), "--rollouts", "20", "--seed", "4"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("复盘 of a baibian round: 20 rollouts")
    assert sum(" forced" in x for x in lines) >= 1
    assert any(x.startswith("seat 0 ") for x in lines)
    as_json = subprocess.run([*run, "-", "--json", "--rollouts", "20", "--seed", "4"],
                             input=json.dumps(rule_round), capture_output=True, text=True,
                             timeout=120)
    assert as_json.returncode == 0, as_json.stderr
    d = json.loads(as_json.stdout)
    want = review(rule_round, budget=ReviewBudget(rollouts=20), seed=4).to_dict()
    d.pop("seconds"), want.pop("seconds")
    assert d == want
    src.write_text(json.dumps(dict(rule_round, actions=rule_round["actions"][:3])))
    refused = subprocess.run([*run, str(src)], capture_output=True, text=True, timeout=120)
    # bad input, as `shuangkou score` says of the same replay (service/exits.py)
    assert refused.returncode == 1 and "the replay cannot happen" in refused.stderr
    missing = subprocess.run([*run, str(tmp_path / "nope\x1b]0;owned\x07\u202e.json")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    assert "\x1b" not in missing.stderr and "\u202e" not in missing.stderr    # shown()
    assert "\\x1b]0;owned" in missing.stderr


def test_fair_play_regrets_are_against_the_reference(rule_round: dict[str, Any]) -> None:
    """A view's regret is the rule policy's action's points (candidate 0, the first hint)
    minus the taken action's, on the true hands and on each decoy: recomputed here from the
    evaluation's views. A round played by the rule policy carries no evidence at all; a
    random one does, where its choices depart from the reference."""
    from shuangkou.core.fairplay import evidence
    from shuangkou.service.review.fair import evidence_of

    budget = ReviewBudget(rollouts=120, decoys=2, fair_deals=3)
    ruled = review(rule_round, budget=budget, seed=4, fair=True).to_dict()
    rated = [x for x in ruled["decisions"] if x["fair"]]
    assert rated and not any(e.carries for x in rated for e in evidence_of(x))
    typed = core.parse_replay(played("baibian", 3, "random"))
    rnd = typed.start()
    checked = 0
    for action in typed.actions[:40]:
        before = rnd.copy()
        record = rnd.apply(action)
        ev = evaluate(before, (action.cards, record.reading, action.declare is not None),
                      rollouts=60, seed=1, decoys=2, fair_deals=3)
        for e in evidence(ev):
            views = sorted((v for v in ev.views if v.kind == e.kind), key=lambda v: v.decoy)
            got = [v.points[0] - v.points[ev.taken] for v in views]
            assert [e.regret, *e.decoy_regrets] == pytest.approx(got)
            # every candidate's, the taken action's among them and the reference's all 0
            every = [v.points[0] - v.points[k] for k in range(len(ev.candidates)) for v in views]
            assert [x for c in e.candidates for x in (c.regret, *c.decoy_regrets)] == (
                pytest.approx(every))
            assert e.candidates[ev.taken] == Regrets(e.regret, e.decoy_regrets)
            checked += e.carries
    assert checked > 0


def test_a_reviewed_decision_lists_every_candidates_regrets_in_its_own_order() -> None:
    """A review's decision lists each view's candidates' regrets in its candidate order (best
    first by points), the taken action's and the reference's where those candidates stand;
    the JSON form reads back to the same record."""
    from shuangkou.service.review.fair import evidence_of, rule_index, taken_index

    rnd = review(played("baibian", 3, "random"), budget=ReviewBudget(rollouts=60, decoys=2,
                                                                      fair_deals=3),
                 seed=2, fair=True)
    rated = [d for d in rnd.decisions if d.fair]
    assert rated
    for d, as_dict in zip(rnd.decisions, rnd.to_dict()["decisions"], strict=True):
        assert evidence_of(as_dict) == d.fair
        for e in d.fair:
            assert len(e.candidates) == len(d.candidates)
            assert e.candidates[taken_index(d)] == Regrets(e.regret, e.decoy_regrets)
            reference = e.candidates[rule_index(d)]
            assert reference.regret == 0 and set(reference.decoy_regrets) == {0}


def test_the_review_command_with_fair_play(tmp_path: Any) -> None:
    """``review --fair-play``: under each decision the evidence of each view that carried
    some, its tell of the partner's hand, its chance to block and 托管's choice where it is
    not the rule policy's; after the seats, the round's
    fair-play scores and their caveats; ``--json`` the core's review with fair play. The fair-play
    budget without --fair-play, or out of its bounds, is bad usage."""
    from shuangkou.service.review.fair import CAVEATS, engine_tells, evidence_of

    src = tmp_path / "round.json"
    wild = played("baibian", 3, "random")        # departures from the reference: evidence
    src.write_text(json.dumps(wild))
    run = [sys.executable, "-m", "shuangkou.service", "review", str(src), "--rollouts", "120",
           "--seed", "4"]
    fair = ["--fair-play", "--decoys", "2", "--fair-deals", "3"]
    done = subprocess.run([*run, *fair], capture_output=True, text=True, timeout=120)
    as_json = subprocess.run([*run, *fair, "--json"], capture_output=True, text=True,
                             timeout=120)
    assert done.returncode == 0 == as_json.returncode, done.stderr + as_json.stderr
    want = review(wild, budget=ReviewBudget(rollouts=120, decoys=2, fair_deals=3), seed=4,
                  fair=True).to_dict()
    d = json.loads(as_json.stdout)
    d.pop("seconds"), want.pop("seconds")
    assert d == want
    text = done.stdout
    carried = sum(e.carries for x in want["decisions"] for e in evidence_of(x))
    assert text.count("partner's hand: regret") + text.count("every hand: regret") == carried > 0
    told = [engine_tells(x) for x in want["decisions"]]
    assert text.count("托管 would play") == sum(t is not None for t in told) > 0
    tells = [x["tell"] for x in want["decisions"] if x["tell"] is not None]
    assert text.count("tell, follow: ") == sum(t["kind"] == "follow" for t in tells) > 0
    assert text.count("tell, lead: ") == sum(t["kind"] == "lead" for t in tells) > 0
    beats = [x["opponents_tell"] for x in want["decisions"] if x["opponents_tell"] is not None]
    assert text.count("tell, beat: ") == len(beats) > 0
    over = [x["over_partner"] for x in want["decisions"] if x["over_partner"] is not None]
    assert text.count("blocked: played over the partner's") == sum(over)
    assert text.count("could have played over the partner's") == len(over) - sum(over) > 0
    given = [x["concedes"] for x in want["decisions"] if x["concedes"] is not None]
    assert text.count("conceded: passed over the opponents' play") == sum(given)
    assert text.count("could have conceded") == len(given) - sum(given) > 0
    assert text.count("  thrown rounds, ") == 4
    assert "fair play in this round" in text and all(c in text for c in CAVEATS)
    assert text.count("  hand sharing, ") == 2 and text.count("  full sight, ") == 4
    assert text.count("; tells: ") == 6          # the partnerships' and the seats' sight
    plain = subprocess.run(run, capture_output=True, text=True, timeout=120)
    assert "regret" not in plain.stdout and "fair play" not in plain.stdout
    for argv, says in ((["--decoys", "2"], "go with --fair-play"),
                       (["--fair-play", "--fair-deals", "1"], "fair_deals must be")):
        usage = subprocess.run([*run, *argv], capture_output=True, text=True, timeout=120)
        assert usage.returncode == 2 and says in usage.stderr, usage.stderr


def test_players_are_reported_by_table_seat_from_a_document_or_a_record(
        rule_round: dict[str, Any]) -> None:
    """`players` names dealt seats; the review names table seats (after the revealed-card
    swap), the same whether it reads the document or its typed record (ReviewRound's
    message path)."""
    from shuangkou.core.replay import parse_replay

    doc = {**rule_round, "players": ["ann", "bo", "cy", "di"]}
    small = ReviewBudget(rollouts=4)
    from_doc = review(doc, budget=small, seed=2).to_dict()
    from_record = review(parse_replay(doc), budget=small, seed=2).to_dict()
    hand_at = core.score_replay(json.dumps(doc)).hand_at
    assert from_doc["players"] == [doc["players"][hand_at[t]] for t in range(4)]
    assert from_record["players"] == from_doc["players"]
    assert [s["player"] for s in from_doc["seats"]] == from_doc["players"]
