"""托管 policy (core.suggest): strength by self-play and decision time on full hands.

    .venv/bin/python bench/bench_suggest.py [--rounds 2000] [--variants ID ...] [--seed 1]
                                            [--latency 300] [--opponents random bot]

Strength: every deal is played twice with the teams swapped (the suggest team is seats 0/2,
then 1/3; the leader is drawn per deal), so ``--rounds`` rounds cover ``--rounds / 2`` deals
with seats rotated and the luck of the deal cancels out. Opponents:

* ``random`` chooses uniformly among its legal actions (every legal play, plus pass when
  following);
* ``bot`` is the replay generator's bot (core.generate._Bot): leads low, follows with
  the cheapest beat, bombs often.

Printed per variant and opponent: the suggest team's win rate (its team placed 1st, §9),
its average settlement per round (the team's two final amounts, stake 1; §10), and the
opponents' (the negative of it plus what contributions leave unbalanced).

Decision time: ``suggest`` on ``--latency`` fresh deals per variant, for the leader's first
decision (a full 27/28-card hand leading) and the next seat's answer to it (a full hand
following): median and 99th percentile over deals of the best of ``--repeats`` calls on the
same state (the least disturbed by other load on a shared machine), in milliseconds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from shuangkou import core  # noqa: E402
from shuangkou.core import Round, suggest  # noqa: E402
from shuangkou.core.generate import _Bot, deal  # noqa: E402
from shuangkou.core.variants import Variant, get_variant  # noqa: E402

SEATS = 4


def start(v: Variant, rng: random.Random) -> Round:
    """A shuffled deal; the leader reveals a random card of its hand (teams stated with
    three decks, where the revealed card cannot form them)."""
    hands = deal(v, rng)
    leader = rng.randrange(SEATS)
    if v.decks == 2:
        return Round.deal(v, hands, leader, revealed=[rng.choice(hands[leader])])
    return Round.deal(v, hands, leader, partner=(leader + 2) % SEATS)


def random_action(r: Round, rng: random.Random) -> None:
    plays = r.legal_plays()
    following = r.standing is not None
    pick = rng.randrange(len(plays) + following)
    if pick == len(plays):
        r.pass_turn(r.turn)
    else:
        r.play(r.turn, plays[pick].cards)


def bot_action(r: Round, bot: _Bot) -> None:
    seat, standing = r.turn, r.standing
    hand = list(r.hand(seat))
    if standing is None:
        play = bot.lead(hand)
    else:
        play = bot.follow(hand, standing.reading, standing.seat == (seat + 2) % SEATS)
    if play is None:
        r.pass_turn(seat)
    else:
        r.play(seat, play.cards)


def suggested_action(r: Round) -> None:
    s = suggest(r)
    if s.kind == "pass":
        r.pass_turn(s.seat)
    else:
        r.play(s.seat, s.cards, s.declaration)


def play_round(r: Round, team: int, opponent: str, rng: random.Random) -> Any:
    """Play ``r`` out: seats of ``team`` (0: seats 0/2, 1: seats 1/3) follow the policy."""
    bot = _Bot(r.variant, rng)
    while not r.is_over:
        if r.turn % 2 == team:
            suggested_action(r)
        elif opponent == "random":
            random_action(r, rng)
        else:
            bot_action(r, bot)
    return r.result()


def strength(v: Variant, opponent: str, rounds: int, seed: int) -> tuple[float, float, float]:
    """(win rate, average team settlement, opponents' average) of the suggest team."""
    wins, ours, theirs = 0, 0, 0
    deals = max(1, rounds // 2)
    for d in range(deals):
        dealt = start(v, random.Random(f"{v.id}/{seed}/{d}"))
        for team in (0, 1):
            r = dealt.copy()
            result = play_round(r, team, opponent, random.Random(f"{seed}/{d}/{team}"))
            final = result.final
            wins += result.winning_team == team
            ours += final[team] + final[team + 2]
            theirs += final[1 - team] + final[3 - team]
    n = 2 * deals
    return wins / n, ours / n, theirs / n


def timed(r: Round, repeats: int) -> tuple[float, Any]:
    """The best of ``repeats`` single-call times (ms) of suggest on one state, and its answer
    (suggest is a pure function of the state, so the repeats measure the same work)."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        s = suggest(r)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3, s


def latency(v: Variant, hands: int, seed: int, repeats: int) -> tuple[list[float], list[float]]:
    """Times (ms) of suggest leading and following with a full hand."""
    lead, follow = [], []
    for i in range(hands):
        r = start(v, random.Random(f"latency/{v.id}/{seed}/{i}"))
        ms, s = timed(r, repeats)
        lead.append(ms)
        r.play(s.seat, s.cards, s.declaration)
        follow.append(timed(r, repeats)[0])
    return lead, follow


def p99(times: list[float]) -> float:
    return sorted(times)[int(0.99 * (len(times) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000, help="rounds per variant and opponent")
    ap.add_argument("--variants", nargs="*", default=[v.id for v in core.list_variants()])
    ap.add_argument("--opponents", nargs="*", default=["random", "bot"],
                    choices=["random", "bot"])
    ap.add_argument("--latency", type=int, default=300, help="deals timed per variant")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per state (best)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    print(f"{'variant':16} {'lead p50/p99 ms':>16} {'follow p50/p99 ms':>18}")
    worst = 0.0
    for vid in args.variants:
        lead, follow = latency(get_variant(vid), args.latency, args.seed, args.repeats)
        worst = max(worst, p99(lead), p99(follow))
        print(f"{vid:16} {statistics.median(lead):7.3f}/{p99(lead):7.3f} "
              f"{statistics.median(follow):9.3f}/{p99(follow):7.3f}")
    print(f"worst p99: {worst:.3f} ms (target <= 2 ms)\n")

    print(f"{'variant':16} {'opponent':8} {'rounds':>6} {'win':>7} {'team pts':>9} "
          f"{'opp pts':>8}")
    for opponent in args.opponents:
        for vid in args.variants:
            t0 = time.perf_counter()
            win, ours, theirs = strength(get_variant(vid), opponent, args.rounds, args.seed)
            print(f"{vid:16} {opponent:8} {2 * max(1, args.rounds // 2):6d} {win:7.1%} "
                  f"{ours:+9.2f} {theirs:+8.2f}   ({time.perf_counter() - t0:.0f} s)",
                  flush=True)


if __name__ == "__main__":
    main()
