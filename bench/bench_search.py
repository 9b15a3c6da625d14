"""托管 by search (core.suggest's search mode): rollout speed and strength.

    .venv/bin/python bench/bench_search.py speed [--rounds 400] [--variants ID ...]
    .venv/bin/python bench/bench_search.py strength --rollouts 600 [--ms 100] [--rounds 2000]
        [--variants ID ...] [--opponent rule|random] [--out FILE] [--seed 1]
    .venv/bin/python bench/bench_search.py latency [--states 40] [--budgets 10 30 100]
        [--rollouts 600 1200]
    .venv/bin/python bench/bench_search.py threads [--threads 1 2] [--seconds 20]
    .venv/bin/python bench/bench_search.py digest [--states 3]
    .venv/bin/python bench/bench_search.py report FILE ...

``speed`` plays whole rounds, deal to settlement, in compiled code (core._search.selfplay)
with uniformly random legal play and with the rule policy in all four seats, per variant:
actions per CPU-second (targets: >= 200,000 random, >= 60,000 rule-policy decisions/s).

``strength`` plays paired deals: every deal three times — the rule policy in all four
seats (the baseline), then the search team at seats 0/2, then at seats 1/3 — with the rule
policy (or uniformly random play) opposite. One JSON line per deal is appended to ``--out``
as it completes; a run that stops resumes where it left (deals already in the file are
skipped), so long runs go in the background with nohup, one process at a time. The search
decides with the budget given (``--rollouts``: deterministic; ``--ms``: a cap in wall time)
and the default seed, as SuggestAction does.

``latency`` times the search under a time budget, as a 托管 call spends it: states of
rule-policy self-play (actions 0, 20, 40 … of fresh deals, every variant), each searched with
``Budget(ms=X)`` for each X, and with the 托管 default (``TUOGUAN``, 1,200 rollouts capped at
100 ms) at each rollout count of ``--rollouts`` (default: the default's own). Printed per
budget: wall time p50 / p99 / max, p99 over the budget (target <= 1.1), and the rollouts a
decision got (median).

``threads`` runs 托管 searches (``TUOGUAN``: 1,200 rollouts, at most 100 ms) in 1, 2 …
threads of this one process at once, each on its own positions, for ``--seconds`` each, and
prints the decisions per second and their ratio to one thread's (target: two threads ≥ 1.8×
one on two cores — the rollouts run without the GIL, core_ext/_rollout.pyx), with the CPU
the process used.

``digest`` prints SHA-256 digests of the search's and the review's answers (public API only:
``suggestions`` at three rollout budgets, every variant, and ``review`` of four rounds with
and without the oracle) — run it on two builds to show a change left the answers as they
were.

``report`` reads such files: per variant and budget the search team's win rate (Wilson 95 %
interval), its points per round over the rule policy (each deal's two rounds against the
baseline's points for the same seats; a normal 95 % interval over deals), and the time of
its searched decisions (median, p99, max).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from research.panel import (  # noqa: E402
    new_round,
    random_action,
    team_points,
    wilson,
)
from shuangkou import core  # noqa: E402
from shuangkou.core import Round  # noqa: E402
from shuangkou.core._search import selfplay  # noqa: E402
from shuangkou.core.variants import get_variant  # noqa: E402

SEATS = 4
VARIANTS = [v.id for v in core.list_variants()]


# ----------------------------------------------------------------------------- speed

def speed(variants: list[str], rounds: int, repeat: int) -> None:
    print(f"{'variant':16} {'random actions/s':>17} {'rule decisions/s':>17} "
          f"{'actions/round':>14}")
    worst = {"random": math.inf, "rule": math.inf}
    for vid in variants:
        rates = {}
        per_round = 0.0
        for policy in ("random", "rule"):
            best = 0.0
            for k in range(repeat):
                t = time.process_time()
                played = selfplay(vid, rounds, policy, 1 + k)
                best = max(best, played.actions / (time.process_time() - t))
                if policy == "rule":
                    per_round = played.actions / played.rounds
            rates[policy] = best
            worst[policy] = min(worst[policy], best)
        print(f"{vid:16} {rates['random']:17,.0f} {rates['rule']:17,.0f} {per_round:14.1f}",
              flush=True)
    print(f"slowest variant: {worst['random']:,.0f} random actions/s (target >= 200,000, "
          f"{worst['random'] / 200_000:.1f}x), {worst['rule']:,.0f} rule decisions/s "
          f"(target >= 60,000, {worst['rule'] / 60_000:.1f}x)")


# ----------------------------------------------------------------------------- strength

def play(r: Round, team: int | None, opponent: str, rollouts: int, ms: float,
         rng: random.Random, times: list[float], cpu: list[float]) -> Round:
    """Play ``r`` out: ``team``'s seats (0: seats 0/2, 1: 1/3) search, the others play
    ``opponent``; team None: the rule policy everywhere (the baseline)."""
    from dataclasses import replace

    from shuangkou.core.suggest import SEARCH24, suggestions
    budget = replace(SEARCH24, rollouts=rollouts, ms=ms)
    while not r.is_over:
        if team is not None and r.turn % 2 == team:
            t, c = time.perf_counter(), time.thread_time()
            ranked = suggestions(r, budget=budget)
            if ranked.width > 1:
                times.append((time.perf_counter() - t) * 1e3)
                cpu.append((time.thread_time() - c) * 1e3)
            take(r, ranked.actions[0])
        elif opponent == "random" and team is not None:
            random_action(r, rng)
        else:
            take(r, core.suggest(r))
    return r


def take(r: Round, s: Any) -> None:
    """The seat to act takes a Suggestion (public API only: the digest runs on any build)."""
    if s.kind == "pass":
        r.pass_turn(s.seat)
    else:
        r.play(s.seat, s.cards, s.declaration)


def strength(args: argparse.Namespace) -> None:
    out = Path(args.out)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            done.add((row["variant"], row["rollouts"], row["ms"], row["opponent"], row["deal"]))
    with out.open("a") as f:
        for vid in args.variants:
            v = get_variant(vid)
            t0 = time.perf_counter()
            for d in range(max(1, args.rounds // 2)):
                key = (vid, args.rollouts, args.ms, args.opponent, d)
                if key in done:
                    continue
                dealt = new_round(v, random.Random(f"{vid}/{args.seed}/{d}"))
                base = play(dealt.copy(), None, "rule", 0, 0, random.Random(0), [], [])
                row: dict[str, Any] = {"variant": vid, "rollouts": args.rollouts,
                                       "ms": args.ms, "opponent": args.opponent, "deal": d,
                                       "baseline": [team_points(base, 0), team_points(base, 1)],
                                       "rounds": []}
                for team in (0, 1):
                    times: list[float] = []
                    cpu: list[float] = []
                    r = play(dealt.copy(), team, args.opponent, args.rollouts, args.ms,
                             random.Random(f"{args.seed}/{d}/{team}"), times, cpu)
                    res = r.result()
                    row["rounds"].append({"team": team, "won": res.winning_team == team,
                                          "points": team_points(r, team),
                                          "opponents": team_points(r, 1 - team),
                                          "ms": [round(x, 2) for x in times],
                                          "cpu_ms": [round(x, 2) for x in cpu]})
                f.write(json.dumps(row) + "\n")
                f.flush()
                if (d + 1) % 50 == 0:
                    print(f"{vid}: {d + 1} deals ({time.perf_counter() - t0:.0f} s)",
                          flush=True)
    report([out])


# ----------------------------------------------------------------------------- latency

def states(per_variant: int) -> list[Round]:
    """Positions of rule-policy self-play: actions 0, 20, 40 … of fresh deals."""
    out = []
    for vid in VARIANTS:
        v = get_variant(vid)
        d = 0
        got = 0
        while got < per_variant:
            r = new_round(v, random.Random(f"latency/{vid}/{d}"))
            d += 1
            while not r.is_over and got < per_variant:
                if r.actions_applied % 20 == 0:
                    out.append(r.copy())
                    got += 1
                take(r, core.suggest(r))
    return out


def latency(per_variant: int, budgets: list[float], counts: list[int] | None) -> None:
    from dataclasses import replace

    from shuangkou.core.suggest import TUOGUAN, Budget, suggestions
    positions = states(per_variant)
    print(f"{len(positions)} positions ({per_variant} per variant); wall time of one search")
    print(f"{'budget':>22} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'p99/budget':>11} "
          f"{'rollouts p50':>13}")
    plans = [(f"{ms:g} ms", Budget(ms=ms), ms) for ms in budgets]
    plans += [(f"{n} r, {TUOGUAN.ms:g} ms" + (" (托管)" if n == TUOGUAN.rollouts else ""),
               replace(TUOGUAN, rollouts=n), TUOGUAN.ms) for n in counts or [TUOGUAN.rollouts]]
    for name, budget, cap in plans:
        times, rollouts = [], []
        for r in positions:
            t = time.perf_counter()
            got = suggestions(r, 1, budget=budget)
            times.append((time.perf_counter() - t) * 1e3)
            rollouts.append(got.rollouts)
        times.sort()
        t99 = times[int(0.99 * (len(times) - 1))]
        print(f"{name:>22} {statistics.median(times):8.1f} {t99:8.1f} {times[-1]:8.1f} "
              f"{t99 / cap:11.2f} {statistics.median(rollouts):13.0f}", flush=True)


# ----------------------------------------------------------------------------- threads, digest

def threads(counts: list[int], seconds: float, per_variant: int) -> None:
    """托管 searches in ``n`` threads of this process at once (module doc)."""
    import os
    import threading

    from shuangkou.core.suggest import TUOGUAN, suggestions
    positions = states(per_variant)
    print(f"{len(positions)} positions; 托管 searches (1,200 rollouts, at most 100 ms), "
          f"{seconds:g} s per row, {os.cpu_count()} CPUs")
    print(f"{'threads':>8} {'decisions':>10} {'decisions/s':>12} {'× one thread':>13} "
          f"{'CPU s / wall s':>15}")
    one = 0.0
    for n in counts:
        done = [0] * n
        stop = time.monotonic() + seconds

        def work(k: int, n: int, stop: float, done: list[int]) -> None:
            i = k
            while time.monotonic() < stop:
                suggestions(positions[i % len(positions)], budget=TUOGUAN, seed=i)
                done[k] += 1
                i += n

        workers = [threading.Thread(target=work, args=(k, n, stop, done)) for k in range(n)]
        t, c = time.monotonic(), time.process_time()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        wall, cpu = time.monotonic() - t, time.process_time() - c
        rate = sum(done) / wall
        one = one or rate
        print(f"{n:8d} {sum(done):10d} {rate:12.1f} {rate / one:12.2f}x {cpu / wall:15.2f}",
              flush=True)


def digest(per_variant: int) -> None:
    """Digests of the search's and the review's answers (module doc)."""
    import hashlib
    from dataclasses import replace

    from shuangkou.core.review import ReviewBudget, review
    from shuangkou.core.suggest import SEARCH24, TUOGUAN, Budget, suggestions
    sys.path.insert(0, str(ROOT))
    from tests.review_rounds import played

    def exact(x: float | None) -> str | None:
        return None if x is None else float(x).hex()

    budgets = {"tuoguan": replace(TUOGUAN, ms=0.0), "search24": replace(SEARCH24, ms=0.0),
               "exact": Budget(rollouts=300, model="sound", exact=12)}
    rows = []
    for i, r in enumerate(states(per_variant)):
        for name, b in budgets.items():
            ranked = suggestions(r, 6, seed=7 + i, budget=b)
            rows.append([name, i, ranked.rollouts, ranked.deals, ranked.width,
                         [[a.kind, list(a.cards), str(a.declaration), a.reason, exact(a.gain),
                           exact(a.wins), a.deals] for a in ranked.actions]])
    reviews = []
    for vid, seed, policy in (("baibian", 1, "rule"), ("huopin", 2, "random"),
                              ("qianbian", 3, "rule"), ("fengkuang_crazy", 4, "random")):
        doc = played(vid, seed, policy)
        for oracle in (False, True):
            d = review(doc, budget=ReviewBudget(rollouts=240), seed=5, oracle=oracle).to_dict()
            d.pop("seconds")
            reviews.append(d)
    decisions = sum(len(d["decisions"]) for d in reviews)
    print(f"search  {len(rows)} searches   "
          f"{hashlib.sha256(json.dumps(rows).encode()).hexdigest()}")
    print(f"review  {decisions} decisions "
          f"{hashlib.sha256(json.dumps(reviews, sort_keys=True).encode()).hexdigest()}")


# ----------------------------------------------------------------------------- report

def report(files: list[Path]) -> None:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for path in files:
        for line in Path(path).read_text().splitlines():
            row = json.loads(line)
            groups.setdefault((row["opponent"], row["rollouts"], row["ms"], row["variant"]),
                              []).append(row)
    print(f"{'opponent':8} {'budget':>14} {'variant':16} {'rounds':>6} {'win':>6} "
          f"{'95% CI':>13} {'pts/round over rule':>20} {'95% CI':>15} "
          f"{'CPU ms p50/p99/max':>18}")
    for (opponent, rollouts, ms, vid), rows in sorted(groups.items(),
                                                      key=lambda kv: (kv[0][0], kv[0][1],
                                                                      kv[0][2],
                                                                      VARIANTS.index(kv[0][3])
                                                                      if kv[0][3] in VARIANTS
                                                                      else 99)):
        rounds = [x for row in rows for x in row["rounds"]]
        wins = sum(x["won"] for x in rounds)
        lo, hi = wilson(wins, len(rounds))
        gains = [sum(x["points"] - row["baseline"][x["team"]] for x in row["rounds"]) / 2
                 for row in rows]
        mean = statistics.fmean(gains)
        half = 1.96 * statistics.stdev(gains) / math.sqrt(len(gains)) if len(gains) > 1 else 0
        times = sorted(t for x in rounds for t in x.get("cpu_ms", x["ms"]))
        budget = f"{rollouts} r" + (f", {ms:g} ms" if ms else "")
        t50 = statistics.median(times) if times else 0
        t99 = times[int(0.99 * (len(times) - 1))] if times else 0
        print(f"{opponent:8} {budget:>14} {vid:16} {len(rounds):6d} {wins / len(rounds):6.1%} "
              f"{lo:6.1%}-{hi:6.1%} {mean:+20.2f} {mean - half:+7.2f}..{mean + half:+6.2f} "
              f"{t50:6.1f}/{t99:5.1f}/{times[-1] if times else 0:5.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--rounds", type=int, default=400)
    sp.add_argument("--repeat", type=int, default=3)
    sp.add_argument("--variants", nargs="*", default=VARIANTS)
    st = sub.add_parser("strength")
    st.add_argument("--rollouts", type=int, default=600)
    st.add_argument("--ms", type=float, default=0.0)
    st.add_argument("--rounds", type=int, default=2000, help="rounds per variant (2 per deal)")
    st.add_argument("--variants", nargs="*", default=VARIANTS)
    st.add_argument("--opponent", choices=["rule", "random"], default="rule")
    st.add_argument("--seed", type=int, default=1)
    st.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "search-strength.jsonl"),
                    help="the results file (appended to; default in $TMPDIR)")
    lt = sub.add_parser("latency")
    lt.add_argument("--states", type=int, default=40, help="positions per variant")
    lt.add_argument("--budgets", nargs="*", type=float, default=[10.0, 30.0, 100.0])
    lt.add_argument("--rollouts", nargs="*", type=int,
                    help="the 托管 budget at these rollout counts (its 100 ms cap kept; "
                         "default: its own)")
    th = sub.add_parser("threads")
    th.add_argument("--threads", nargs="*", type=int, default=[1, 2])
    th.add_argument("--seconds", type=float, default=20.0)
    th.add_argument("--states", type=int, default=6, help="positions per variant")
    dg = sub.add_parser("digest")
    dg.add_argument("--states", type=int, default=3, help="positions per variant")
    rp = sub.add_parser("report")
    rp.add_argument("files", nargs="+", type=Path)
    args = ap.parse_args()
    if args.cmd == "speed":
        speed(args.variants, args.rounds, args.repeat)
    elif args.cmd == "threads":
        threads(args.threads, args.seconds, args.states)
    elif args.cmd == "digest":
        digest(args.states)
    elif args.cmd == "latency":
        latency(args.states, args.budgets, args.rollouts)
    elif args.cmd == "strength":
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        strength(args)
    else:
        report(args.files)


if __name__ == "__main__":
    main()
