"""复盘 (core.review): what a review costs, and whether it is right.

    .venv/bin/python bench/bench_review.py cost [--rounds 4] [--variants ID ...]
        [--policies rule random search] [--rollouts N] [--oracle]
    .venv/bin/python bench/bench_review.py search [--rounds 3] [--repeat 3]
    .venv/bin/python bench/bench_review.py validity [--deals 10] [--rollouts N]
        [--variant baibian] [--policies NAME ...] [--confirm 12] [--confirm-deals 200]
        [--other team] [--seed 1] [--json]

``cost`` reviews whole rounds at a rollout budget (default: the review's own,
``DEFAULT_REVIEW``) and prints, per variant and the policy that played the rounds
(tests/review_rounds.py: ``rule`` the rule policy, ``random`` uniformly random legal play,
``search`` the 托管 search at 200 rollouts, in all four seats): the decisions per round and
those evaluated (the rest are forced: one legal action), the CPU seconds per round (mean and
the slowest round) and per evaluated decision, and what the budget buys: the mean loss per
evaluated decision and the median standard error of a decision's loss (σ; the verdicts
count a loss only beyond 2σ, docs/review.md). Only the review is timed (``time.process_time``
of this process), not the play of the rounds. Target: ≤ 10 s of CPU per round at the default
budget, on every variant.

``search`` times the 托管 search (``_search.search``, 600 rollouts, ``mix``, width 6) on fixed
positions — every 10th action of ``--rounds`` rule-policy rounds of baibian, qianbian, huopin
and bianfeng — best of ``--repeat``, with a digest of its answers: the search and the review
share their deal loop, and a change to it must leave the search's answers and speed as they
were (run it on both builds). Then the same with racing (docs/decisions.md 72), interleaved,
and how many answers racing left as they were.

``validity`` (issue 35's validity figures) makes four checks, each printed as a table
(``--json``: one JSON object instead):

1. **Policies of known strength.** Every deal is played twice by each policy — its team at
   seats 0/2, then at 1/3 — against the rule policy: ``random`` (uniform legal play), the
   panel's styles (research/panel: written apart from the rule policy and the search's
   rollout models), ``rule`` (the rule policy) and ``search`` (the mixture search at the
   托管 budget's 600 rollouts, no time cap, so that the rounds are reproducible). The
   policy's **strength** is its team's points per round in those rounds (stake 1); each
   round is then reviewed at ``--rollouts`` per decision (the review's default budget) and
   the policy's **mean loss per unforced decision** and its **loss share** (losses over
   stakes, docs/review.md "Comparing players") are taken over its own seats' decisions. A
   review that measures play orders the policies by loss as their strength orders them:
   Spearman's rank correlation between each and the strength is printed (−1: the same order
   reversed, which is the aim: more loss, fewer points).
2. **Search near zero, random far from it**: the same table's first and last rows.
3. **Verdicts confirmed under another model.** For the ``--confirm`` largest losses among the
   decisions reviewed as mistakes or blunders (the best alternative not taken), the position is played on from what
   the seat could see: ``--confirm-deals`` deals of the cards it could not see (the unseen
   cards redealt to the other seats, each keeping its count), each played twice — the
   action taken, then the review's best alternative — to the round's end with every seat
   played by the panel style ``--other`` (not a model the review's rollouts use). The
   alternative's gain there (paired, with its standard error) beside the review's loss:
   confirmed when the gain is positive.
4. **Deterministic**: the first round reviewed twice gives the same review.

docs/BENCHMARKS.md ("Is the review right") gives the figures with the command that
made them; the suite runs it small (tests/test_bench.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from review_rounds import POLICIES, played  # noqa: E402

from research.panel import (  # noqa: E402
    PANEL,
    Player,
    interval,
    random_action,
    rule_player,
    search_player,
    team_points,
)
from shuangkou import core  # noqa: E402
from shuangkou.core import Action, Declaration, Round  # noqa: E402
from shuangkou.core._search import search  # noqa: E402
from shuangkou.core.cards import SEATS  # noqa: E402
from shuangkou.core.generate import deal  # noqa: E402
from shuangkou.core.replay import parse_replay  # noqa: E402
from shuangkou.core.review import DEFAULT_REVIEW, ReviewBudget, review  # noqa: E402
from shuangkou.core.rollouts import ChoiceRule, choose  # noqa: E402
from shuangkou.core.variants import get_variant  # noqa: E402

VARIANTS = [v.id for v in core.list_variants()]
SEARCH_ROLLOUTS = 200      # the 托管 search that plays the "search" rounds


def cost(variants: list[str], policies: list[str], rounds: int, rollouts: int,
         oracle: bool, race: bool | None, fair: bool) -> None:
    budget = ReviewBudget(rollouts=rollouts)
    if race is not None:
        budget = replace(budget, race=race)
    print(f"review at {rollouts} rollouts per decision ({budget.model} model"
          f"{', racing' if budget.race else ''}){', with the oracle' if oracle else ''}"
          f"{f', with fair play ({budget.decoys} decoys, {budget.fair_deals} deals a view)' if fair else ''}"
          "; CPU seconds of this process")
    print(f"{'variant':<18} {'policy':<7} {'rounds':>6} {'decisions':>9} {'evaluated':>9} "
          f"{'s/round':>8} {'max s':>6} {'ms/evaluated':>12} {'mean loss':>9} "
          f"{'median σ':>8}")
    worst = (0.0, "")
    for v in variants:
        for policy in policies:
            cpu: list[float] = []
            losses: list[float] = []
            sigmas: list[float] = []
            decisions = 0
            for seed in range(rounds):
                doc = played(v, seed, policy, rollouts=SEARCH_ROLLOUTS)
                t0 = time.process_time()
                rv = review(doc, budget=budget, seed=seed, oracle=oracle, fair=fair)
                cpu.append(time.process_time() - t0)
                decisions += len(rv.decisions)
                losses += [d.loss for d in rv.decisions if not d.forced]
                sigmas += [d.loss_se for d in rv.decisions if not d.forced and d.loss > 0]
            evaluated = len(losses)
            mean = sum(cpu) / rounds
            print(f"{v:<18} {policy:<7} {rounds:>6} {decisions / rounds:>9.1f} "
                  f"{evaluated / rounds:>9.1f} {mean:>8.2f} {max(cpu):>6.2f} "
                  f"{1000 * sum(cpu) / max(evaluated, 1):>12.1f} "
                  f"{sum(losses) / max(evaluated, 1):>9.2f} "
                  f"{statistics.median(sigmas) if sigmas else 0.0:>8.2f}", flush=True)
            worst = max(worst, (max(cpu), f"{v}, {policy}"))
    print(f"slowest round: {worst[0]:.2f} s of CPU ({worst[1]}); target <= 10 s")


def _first(r: Round, race: bool) -> tuple[Any, ...]:
    """The action the search plays at ``r`` (600 rollouts, the mixture, width 6, its choice
    at one standard error), as (cards, reading, declared)."""
    ev = search(r, rollouts=600, seed=1, model="mix", width=6, race=race)
    c = ev.candidates[choose(ev, ChoiceRule("value", 1.0))]
    return (c.cards, c.reading, c.declared)


def search_speed(rounds: int, repeat: int) -> None:
    states = []
    for v in ("baibian", "qianbian", "huopin", "bianfeng"):
        for seed in range(rounds):
            typed = parse_replay(played(v, seed, "rule"))
            r = typed.start()
            for i, action in enumerate(typed.actions):
                if i % 10 == 0 and not r.is_over:
                    states.append(r.copy())
                r.apply(action)
    best = {False: float("inf"), True: float("inf")}
    answers: dict[bool, list[object]] = {}
    for _ in range(repeat):
        for race in (False, True):      # interleaved: the host's load falls on both alike
            t0 = time.process_time()
            answers[race] = [_first(s, race) for s in states]
            best[race] = min(best[race], time.process_time() - t0)
    for race in (False, True):
        digest = hashlib.sha256(repr(answers[race]).encode()).hexdigest()[:12]
        print(f"{len(states)} positions, 600 rollouts each{', racing' if race else ''}: "
              f"best of {repeat} {best[race]:.2f} s CPU, "
              f"{1000 * best[race] / len(states):.2f} ms per position; answers {digest}")
    same = sum(a == b for a, b in zip(answers[False], answers[True], strict=True))
    print(f"racing: {best[True] / best[False]:.2f}x the CPU, the same answer at {same} of "
          f"{len(states)} positions")


# ----------------------------------------------------------------------------- validity

VALIDITY_POLICIES = ["random", *PANEL, "rule", "search"]
#: the search player's rollouts (the mixture, no time cap): 托管's budget when the review's
#: validity was measured (docs/BENCHMARKS.md "Is the review right"), kept so that those
#: figures stay reproducible; 托管's own budget is core.suggest.TUOGUAN
SEARCH_ROLLOUTS = 600


def player(name: str) -> Player:
    if name == "random":
        return random_action
    if name == "rule":
        return rule_player
    if name == "search":
        return search_player("mix", SEARCH_ROLLOUTS, 0.0)
    return PANEL[name]


# ----------------------------------------------------------------------------- rounds

def start(vid: str, rng: random.Random) -> tuple[Round, dict[str, Any]]:
    """A shuffled deal with the partner named (nobody moves: table seat = dealt seat), and
    the replay's header."""
    v = get_variant(vid)
    hands = deal(v, rng)
    leader = rng.randrange(SEATS)
    partner = (leader + 2) % SEATS
    header = {"variant": vid, "hands": hands, "leader": leader, "partner": partner}
    return Round.deal(v, hands, leader, partner=partner), header


def step(r: Round, act: Player, rng: random.Random) -> Action:
    """The seat to act takes ``act``'s action; returned as the replay's Action (a play
    declared as the reading that stood, so that the replay is the round played)."""
    seat = r.turn
    assert seat is not None
    trial = r.copy()
    act(trial, rng)
    before, after = list(r.hand(seat)), list(trial.hand(seat))
    for c in after:
        before.remove(c)
    if not before:
        r.pass_turn(seat)
        return Action(seat, "pass")
    standing = trial.standing
    declared = (standing.reading.declaration if standing is not None and standing.seat == seat
                else None)
    cards = tuple(before)
    r.play(seat, cards, declared)
    return Action(seat, "play", cards, declared)


def play_round(vid: str, deal_no: int, seed: int, name: str, team: int
               ) -> tuple[core.Replay, int]:
    """Deal ``deal_no`` played by ``name`` at ``team``'s seats, the rule policy at the
    others: the replay and ``name``'s team's points."""
    r, header = start(vid, random.Random(f"{vid}/{seed}/{deal_no}"))
    ours, theirs = player(name), rule_player
    rng = random.Random(f"{seed}/{deal_no}/{team}")
    actions = []
    while not r.is_over:
        actions.append(step(r, ours if r.turn is not None and r.turn % 2 == team
                            else theirs, rng))
    replay = core.Replay(variant=get_variant(vid), hands=tuple(map(tuple, header["hands"])),
                         leader=header["leader"], revealed=None, partner=header["partner"],
                         teams=None, stake=1, table_fee=0, partial_deal=False,
                         actions=tuple(actions))
    return replay, team_points(r, team)


# ----------------------------------------------------------------------------- confirmation

def position(replay: core.Replay, index: int) -> Round:
    """The round just before action ``index`` of ``replay``."""
    r = Round.deal(replay.variant, [list(h) for h in replay.hands], replay.leader,
                   partner=replay.partner)
    for a in replay.actions[:index]:
        r.apply(a)
    return r


def redealt(replay: core.Replay, index: int, rng: random.Random) -> Round:
    """:func:`position` with the cards the seat to act could not see dealt again among the
    other seats, each keeping its count: what that seat knows is all that stays."""
    r = position(replay, index)
    seat = r.turn
    assert seat is not None
    others = [s for s in range(SEATS) if s != seat]
    pool = [c for s in others for c in r.hand(s)]
    rng.shuffle(pool)
    hands = [list(h) for h in replay.hands]
    for s in others:   # its dealt hand: the cards it has played, then its new ones
        held = list(r.hand(s))
        played = list(hands[s])
        for c in held:
            played.remove(c)
        hands[s], pool = played + pool[:len(held)], pool[len(held):]
    again = Round.deal(replay.variant, hands, replay.leader, partner=replay.partner)
    for a in replay.actions[:index]:
        again.apply(a)
    return again


def candidate_action(seat: int, c: dict[str, Any]) -> Action:
    """A review's candidate as an Action."""
    if c["kind"] != "play":
        return Action(seat, c["kind"])
    declared = c.get("declare")
    declaration = None
    if isinstance(declared, str):
        declaration = Declaration(declared)
    elif isinstance(declared, dict):
        declaration = Declaration(declared["kind"], declared.get("top"), declared.get("star"),
                                  declared.get("wilds"))
    return Action(seat, "play", tuple(core.parse_cards(list(c["cards"]))), declaration)


def confirm(replay: core.Replay, decision: dict[str, Any], other: str, deals: int,
            seed: int) -> tuple[float, float]:
    """The review's best alternative against the action taken, played on by ``other`` in
    every seat on ``deals`` redealt positions: the mean gain of the alternative for the
    seat's team (paired) and its standard error."""
    seat = decision["seat"]
    taken = replay.actions[decision["index"]]
    best = candidate_action(seat, decision["candidates"][decision["best"]])
    act = player(other)
    team = seat % 2
    gains = []
    for k in range(deals):
        rng = random.Random(f"confirm/{seed}/{decision['index']}/{k}")
        dealt = redealt(replay, decision["index"], rng)
        points = []
        for first in (taken, best):
            r = dealt.copy()
            r.apply(first)
            play_rng = random.Random(f"play/{seed}/{decision['index']}/{k}")
            while not r.is_over:
                act(r, play_rng)
            points.append(team_points(r, team))
        gains.append(points[1] - points[0])
    mean = statistics.fmean(gains)
    se = statistics.stdev(gains) / math.sqrt(len(gains)) if len(gains) > 1 else 0.0
    return mean, se


# ----------------------------------------------------------------------------- figures

def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rank correlation (ties ranked by their mean rank)."""
    def ranks(v: Sequence[float]) -> list[float]:
        order = sorted(range(len(v)), key=v.__getitem__)
        out = [0.0] * len(v)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    den = math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))
    return num / den if den else 0.0


def ratio_interval(sums: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Σx/Σs over rounds and the half-width of its cluster-robust 95 % interval (a round is
    one sample; the same estimate as the archive review's, service/batch/review.py)."""
    sx, ss = sum(x for x, _ in sums), sum(s for _, s in sums)
    if not ss:
        return 0.0, 0.0
    q, r = sx / ss, len(sums)
    if r < 2:
        return q, 0.0
    se = math.sqrt(r / (r - 1) * sum((x - q * s) ** 2 for x, s in sums)) / ss
    return q, 1.96 * se


def without_time(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "seconds"}


def validity(args: argparse.Namespace) -> dict[str, Any]:
    budget = replace(DEFAULT_REVIEW, rollouts=args.rollouts, ms=0.0)
    if args.race is not None:
        budget = replace(budget, race=args.race)
    policies: list[dict[str, Any]] = []
    flagged: list[tuple[float, core.Replay, dict[str, Any]]] = []
    first: tuple[core.Replay, dict[str, Any]] | None = None
    for name in args.policies:
        points, losses, per_round, blunders = [], [], [], 0
        round_sums: list[tuple[float, float]] = []     # per round: (Σ loss, Σ stake)
        agree, cpu = [], 0.0
        for d in range(args.deals):
            for team in (0, 1):
                replay, pts = play_round(args.variant, d, args.seed, name, team)
                points.append(pts)
                c = time.process_time()
                data = review(replay, budget=budget, seed=args.seed).to_dict()
                cpu += time.process_time() - c
                if first is None:
                    first = (replay, data)
                mine = [x for x in data["decisions"]
                        if x["seat"] % 2 == team and x["verdict"] != "forced"]
                losses.extend(x["loss"] for x in mine)
                round_sums.append((sum(x["loss"] for x in mine), sum(x["stake"] for x in mine)))
                per_round.append(statistics.fmean(x["loss"] for x in mine) if mine else 0.0)
                blunders += sum(x["verdict"] == "blunder" for x in mine)
                agree.extend(x["agrees_first"] for x in mine)
                flagged.extend((x["loss"], replay, x) for x in mine
                               if x["verdict"] in ("mistake", "blunder")
                               and not x["candidates"][x["best"]]["taken"])
        strength, strength_half = interval(points)
        loss, loss_half = interval(per_round)
        share, share_half = ratio_interval(round_sums)
        policies.append({
            "policy": name, "rounds": len(points), "decisions": len(losses),
            "points_per_round": strength, "points_half": strength_half,
            "mean_loss": statistics.fmean(losses) if losses else 0.0,
            "loss_half": loss_half, "loss_share": share, "share_half": share_half,
            "stake": sum(s for _, s in round_sums) / max(len(losses), 1),
            "blunders_per_100": 100 * blunders / max(len(losses), 1),
            "agree_first": statistics.fmean(agree) if agree else 0.0,
            "review_cpu_s_per_round": cpu / max(len(points), 1)})
    strength = [p["points_per_round"] for p in policies]
    rho = spearman([p["mean_loss"] for p in policies], strength)
    rho_share = spearman([p["loss_share"] for p in policies], strength)
    rho_agree = spearman([p["agree_first"] for p in policies], strength)
    confirmed = []
    flagged.sort(key=lambda f: -f[0])
    # one position once: the rule policy's two seatings against itself are the same round,
    # and two policies can reach the same position
    seen: set[tuple[Any, ...]] = set()
    distinct = []
    for f in flagged:
        key = (f[1].hands, f[1].leader, f[1].actions[:f[2]["index"] + 1])
        if key not in seen:
            seen.add(key)
            distinct.append(f)
    for loss, replay, x in distinct[:args.confirm]:
        gain, se = confirm(replay, x, args.other, args.confirm_deals, args.seed)
        confirmed.append({"index": x["index"], "seat": x["seat"], "verdict": x["verdict"],
                          "loss": loss, "loss_se": x["loss_se"], "gain": gain, "gain_se": se})
    again = None
    if first is not None:
        again = without_time(review(first[0], budget=budget, seed=args.seed).to_dict()) == \
            without_time(first[1])
    return {"variant": args.variant, "deals": args.deals, "rollouts": args.rollouts,
            "seed": args.seed, "policies": policies, "spearman": rho,
            "spearman_share": rho_share,
            "spearman_agree": rho_agree,
            "confirm_other": args.other, "confirm_deals": args.confirm_deals,
            "confirmed": confirmed, "deterministic": again}


def validity_report(out: dict[str, Any]) -> None:
    print(f"{out['variant']}: {out['deals']} deals x 2 seatings per policy, each round "
          f"reviewed at {out['rollouts']} rollouts per decision (seed {out['seed']})")
    print(f"{'policy':9} {'rounds':>6} {'decisions':>9} {'points/round (95%)':>22} "
          f"{'mean loss (95%)':>18} {'stake':>6} {'loss share (95%)':>17} {'blunders/100':>12} "
          f"{'= 1st':>6} {'review CPU s':>12}")
    for p in out["policies"]:
        print(f"{p['policy']:9} {p['rounds']:6d} {p['decisions']:9d} "
              f"{p['points_per_round']:+10.2f} ± {p['points_half']:6.2f}    "
              f"{p['mean_loss']:8.2f} ± {p['loss_half']:5.2f} {p['stake']:6.2f} "
              f"{p['loss_share']:9.3f} ± {p['share_half']:5.3f} {p['blunders_per_100']:12.1f} "
              f"{p['agree_first']:6.0%} {p['review_cpu_s_per_round']:12.2f}")
    print(f"Spearman rank correlation of mean loss with points/round: {out['spearman']:+.2f} "
          "(-1: more loss, fewer points, in the same order)")
    print(f"Spearman rank correlation of the loss share with points/round: "
          f"{out['spearman_share']:+.2f} (-1: the aim)")
    print(f"Spearman rank correlation of agreement with the engine's first choice with "
          f"points/round: {out['spearman_agree']:+.2f} (+1: the same order)")
    rows = out["confirmed"]
    print(f"\nlargest losses played on by {out['confirm_other']!r} in every seat, "
          f"{out['confirm_deals']} redealt positions each (gain of the review's best "
          "alternative over the action taken):")
    for c in rows:
        print(f"  action {c['index']:3d} seat {c['seat']} {c['verdict']:9} review loss "
              f"{c['loss']:6.2f} ± {c['loss_se']:4.2f}   gain there {c['gain']:+6.2f} ± "
              f"{c['gain_se']:4.2f}")
    if rows:
        positive = sum(c["gain"] > 0 for c in rows)
        sure = sum(c["gain"] > 2 * c["gain_se"] for c in rows)
        print(f"confirmed: {positive} of {len(rows)} gain under the other model "
              f"({sure} by more than 2 standard errors); mean review loss "
              f"{statistics.fmean(c['loss'] for c in rows):.2f}, mean gain there "
              f"{statistics.fmean(c['gain'] for c in rows):+.2f}")
    print(f"\nthe same round reviewed twice, the same review: {out['deterministic']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cost", help="CPU per reviewed round, per variant")
    c.add_argument("--rounds", type=int, default=4, help="rounds per variant and policy")
    c.add_argument("--variants", nargs="*", default=VARIANTS)
    c.add_argument("--policies", nargs="*", choices=POLICIES, default=list(POLICIES))
    c.add_argument("--rollouts", type=int, default=DEFAULT_REVIEW.rollouts)
    c.add_argument("--oracle", action="store_true", help="also evaluate on the true deal")
    c.add_argument("--race", action=argparse.BooleanOptionalAction, default=None,
                   help="race the candidates (default: the review's own budget's)")
    c.add_argument("--fair-play", action="store_true", help="also the fair-play views")
    s = sub.add_parser("search", help="the 托管 search's CPU and answers on fixed positions")
    s.add_argument("--rounds", type=int, default=3, help="rounds per variant")
    s.add_argument("--repeat", type=int, default=3)
    v = sub.add_parser("validity", help="loss against known strength; verdicts confirmed "
                       "under another model; the same review twice")
    v.add_argument("--deals", type=int, default=10, help="deals per policy (2 rounds each)")
    v.add_argument("--rollouts", type=int, default=DEFAULT_REVIEW.rollouts,
                   help="the review's rollouts per decision (default: the review's)")
    v.add_argument("--variant", default="baibian")
    v.add_argument("--race", action=argparse.BooleanOptionalAction, default=None,
                   help="race the candidates (default: the review's own budget's)")
    v.add_argument("--policies", nargs="*", default=VALIDITY_POLICIES,
                   choices=VALIDITY_POLICIES)
    v.add_argument("--confirm", type=int, default=12,
                   help="largest losses to play on under another model")
    v.add_argument("--confirm-deals", type=int, default=200)
    v.add_argument("--other", default="team", choices=list(PANEL),
                   help="the panel style that plays every seat in the confirmation")
    v.add_argument("--seed", type=int, default=1)
    v.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    args = ap.parse_args()
    if args.cmd == "cost":
        cost(args.variants, args.policies, args.rounds, args.rollouts, args.oracle, args.race,
             args.fair_play)
    elif args.cmd == "search":
        search_speed(args.rounds, args.repeat)
    else:
        out = validity(args)
        if args.json:
            print(json.dumps(out))
        else:
            validity_report(out)


if __name__ == "__main__":
    main()
