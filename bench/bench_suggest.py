"""托管 rule policy (core.suggest, no budget): strength by self-play, decision time on full
hands, and what a heavy hand costs — in process and against a real server.

    .venv/bin/python bench/bench_suggest.py [--rounds 2000] [--variants ID ...] [--seed 1]
                                            [--latency 300] [--opponents random bot]
    .venv/bin/python bench/bench_suggest.py --server [--concurrent 6]

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

The heavy hand (issue 19): a 40-card hand with eight wild jokers facing a standing 22222
under a four-deck house variant, 112,343 beating plays. In process: the rule policy's
time, and its 提示 cycle of 32. With ``--server``, against a ``shuangkou serve`` process:
the server's CPU after a 0.3 s deadline for SuggestAction in each mode (rule policy, hint
cycle of 32, search with the 托管 budget), then ``--concurrent`` maximal SuggestActions at
once (hint cycle of 32 with a search of ``--search-ms``, the server's 10 s cap, each) — given up by their clients at 0.3 s, and
answered — with the server's RSS idle, at its peak (VmHWM) and after. The search's own
speed and strength: bench/bench_search.py.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from grpc_helpers import cpu_seconds, outcomes, rss_mib  # noqa: E402

from research.panel import new_round, random_action  # noqa: E402
from shuangkou import core  # noqa: E402
from shuangkou.core import Round, suggest  # noqa: E402
from shuangkou.core.generate import _Bot  # noqa: E402
from shuangkou.core.variants import Variant, get_variant  # noqa: E402

SEATS = 4


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
        dealt = new_round(v, random.Random(f"{v.id}/{seed}/{d}"))
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
        r = new_round(v, random.Random(f"latency/{v.id}/{seed}/{i}"))
        ms, s = timed(r, repeats)
        lead.append(ms)
        r.play(s.seat, s.cards, s.declaration)
        follow.append(timed(r, repeats)[0])
    return lead, follow


def p99(times: list[float]) -> float:
    return sorted(times)[int(0.99 * (len(times) - 1))]


HEAVY = {"id": "edge", "extends": "qianbian", "decks": 4, "joker_copies": 4, "hand_size": 40,
         "chain_min_links": 2}
HEAVY_HAND = "3333 4444 5555 6666 7777 8888 9999 TTT K SJ SJ SJ SJ BJ BJ BJ BJ"


def heavy_round() -> Round:
    from shuangkou.core.variants import variant_from_mapping
    r = Round.deal(variant_from_mapping(HEAVY), ["2 2 2 2 2 3", HEAVY_HAND, "4", "5"], 0,
                   partial_deal=True, partner=2)
    r.play(0, "2 2 2 2 2")
    return r


def heavy_in_process() -> None:
    from shuangkou.core import count_plays
    from shuangkou.core.suggest import suggestions
    r = heavy_round()
    plays = sum(count_plays(list(r.hand(1)), r.variant, r.standing.reading).values())
    for count in (1, 32):
        t = time.process_time()
        got = suggestions(r, count)
        print(f"heavy hand ({plays:,} beating plays): {count} suggestion(s) in "
              f"{(time.process_time() - t) * 1e3:.0f} ms CPU ({len(got.actions)} returned)")


def _idle(pid: int, since: float) -> float:
    """Server CPU seconds from ``since`` (a reading) until it is idle for 0.5 s."""

    last, t0 = since, time.monotonic()
    while time.monotonic() - t0 < 60:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - last < 0.02:
            break
        last = now
    return last - since


def server_bounds(concurrent: int, search_ms: int) -> None:
    import grpc
    from grpc_helpers import ServerProcess

    from shuangkou.v1 import cards_pb2, rounds_pb2, rounds_pb2_grpc, scoring_pb2
    from shuangkou.v1.variants_pb2 import RuleSet

    house = RuleSet(custom_json=json.dumps(HEAVY))
    server = ServerProcess("--port", "0", "--metrics-port", "0")
    try:
        server.wait_serving()
        pid = server.proc.pid
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = rounds_pb2_grpc.RoundServiceStub(channel)
            state = stub.StartRound(rounds_pb2.StartRoundRequest(
                rule_set=house, leader=0, partial_deal=True, partner=2,
                hands=[cards_pb2.Cards(cards_text=h)
                       for h in ("2 2 2 2 2 3", HEAVY_HAND, "4", "5")]), timeout=30).state
            play = rounds_pb2.RoundAction(seat=0, type=scoring_pb2.ACTION_TYPE_PLAY,
                                          cards=cards_pb2.Cards(cards_text="2 2 2 2 2"))
            data = stub.ApplyAction(rounds_pb2.ApplyActionRequest(
                rule_set=house, state=state.data, action=play), timeout=30).state.data
            modes = {"rule policy": {}, "hint cycle of 32": {"count": 32},
                     "search, 托管 budget": {"search": rounds_pb2.SearchBudget()}}
            for name, extra in modes.items():
                request = rounds_pb2.SuggestActionRequest(rule_set=house, state=data, **extra)
                t0, cpu0 = time.monotonic(), cpu_seconds(pid)
                try:
                    stub.SuggestAction(request, timeout=0.3)
                    code = "OK"
                except grpc.RpcError as exc:
                    code = exc.code().name
                wall = time.monotonic() - t0
                at = cpu_seconds(pid)
                print(f"SuggestAction on the heavy hand, {name}, deadline 0.3 s -> {code} in "
                      f"{wall:.2f} s; server CPU {at - cpu0:.2f} s, after the deadline "
                      f"{_idle(pid, at):.2f} s")
            maximal = rounds_pb2.SuggestActionRequest(
                rule_set=house, state=data, count=32,
                search=rounds_pb2.SearchBudget(max_ms=search_ms))
            for deadline in (0.3, 60.0):
                idle = rss_mib(pid, "VmRSS")
                t0 = time.monotonic()
                calls = [stub.SuggestAction.future(maximal, timeout=deadline)
                         for _ in range(concurrent)]
                codes = outcomes(calls)
                at = cpu_seconds(pid)
                after_deadline = _idle(pid, at)
                print(f"{concurrent} maximal SuggestActions at once (32 ranked, search up to "
                      f"{search_ms / 1e3:g} s), deadline {deadline:g} s -> {'/'.join(sorted(set(codes)))} in "
                      f"{time.monotonic() - t0:.2f} s; server CPU after the answers "
                      f"{after_deadline:.2f} s; RSS idle {idle:.0f} MiB, peak "
                      f"{rss_mib(pid, 'VmHWM'):.0f} MiB, after {rss_mib(pid, 'VmRSS'):.0f} MiB")
    finally:
        server.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2000, help="rounds per variant and opponent")
    ap.add_argument("--variants", nargs="*", default=[v.id for v in core.list_variants()])
    ap.add_argument("--opponents", nargs="*", default=["random", "bot"],
                    choices=["random", "bot"])
    ap.add_argument("--latency", type=int, default=300, help="deals timed per variant")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per state (best)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--server", action="store_true",
                    help="only the heavy hand against a real server (CPU after a deadline, RSS)")
    ap.add_argument("--concurrent", type=int, default=6)
    ap.add_argument("--search-ms", type=int, default=10_000,
                    help="--server: the maximal calls' search budget (the server's cap)")
    args = ap.parse_args()
    if args.server:
        server_bounds(args.concurrent, args.search_ms)
        return

    print(f"{'variant':16} {'lead p50/p99 ms':>16} {'follow p50/p99 ms':>18}")
    worst = 0.0
    for vid in args.variants:
        lead, follow = latency(get_variant(vid), args.latency, args.seed, args.repeats)
        worst = max(worst, p99(lead), p99(follow))
        print(f"{vid:16} {statistics.median(lead):7.3f}/{p99(lead):7.3f} "
              f"{statistics.median(follow):9.3f}/{p99(follow):7.3f}")
    print(f"worst p99: {worst:.3f} ms (target <= 2 ms)")
    heavy_in_process()
    print()

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
