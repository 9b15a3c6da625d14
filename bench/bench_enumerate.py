"""Legal-play enumeration speed: full leading lists, following, and the brute-force ratio.

    .venv/bin/python bench/bench_enumerate.py [--hands 200] [--small 40] [--repeats 5] [--seed 1]
                                              [--passes 3] [--against REV]

Per variant, in one run (so ratios compare like with like on a noisy machine):

* ``lead``: ``legal_plays(hand, variant)`` on random 27-card deals (28 in fengkuang_crazy) —
  the full enumeration, plays held in C (the lazy view); ``lead+objs`` also builds every
  :class:`Play` (``list(...)``); ``count``: ``count_plays``;
* ``follow <type>``: ``legal_plays(hand, variant, target)`` for a single, a pair, a
  straight and a bomb (targets in the middle of the deck);
* worst cases: four jokers (both-wild variants: four wilds), a run of pairs with jokers, a
  run of bombs with jokers, three eight-card bombs with jokers (leading);
* ``ratio``: brute force over every sub-multiset (tests/enum_reference.py, classification
  by ``core.classify``, fresh cache per hand) vs ``legal_plays`` on random 14-card hands
  with 0-4 jokers.

Every timing is the best of ``--repeats`` calls on the same hand (the least disturbed by
other load); the figure printed is the median over hands (and the 90th percentile), the
median of ``--passes`` fresh processes. ``objs/lead`` is the rate of building every Play
over the bare enumeration's. With ``--against REV`` (a git revision, built once under
build/baseline/, or another build's python) the random-deal lines run in both builds,
alternating, on the same hands, and each shows the median of the paired ratios
(bench/baseline.py); the worst cases and the brute-force ratio run in this build only.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import baseline  # noqa: E402

RANKS = "3456789TJQKA2"      # rank characters by position (the core's RANK_CHARS)
# Targets to follow, relative to the deck's lowest rank: (name, offsets, copies each).
TARGETS = (("single", (5,), 1), ("pair", (5,), 2), ("straight", (2, 3, 4, 5, 6), 1),
           ("bomb", (5,), 5))


def best_of(repeats: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def per_hand(hands: list[list[int]], repeats: int, fn: Callable[[list[int]], object]
             ) -> tuple[float, float]:
    """(median, 90th percentile) in µs of the best-of-repeats time per hand."""
    times = sorted(best_of(repeats, lambda h=h: fn(h)) * 1e6 for h in hands)
    return statistics.median(times), times[int(0.9 * (len(times) - 1))]


def worst_hands(variant: str, rng: random.Random) -> dict[str, list[int]]:
    """Hands that maximise the number of plays (all jokers; long runs of pairs/bombs)."""
    from enum_reference import full_deck

    v = baseline.core().get_variant(variant)
    lo = v.lowest_rank

    def shaped(counts: dict[int, int]) -> list[int]:
        deck = full_deck(v)
        hand = []
        for rank, n in counts.items():
            picked = [c for c in deck if (c - 1) // 5 == rank][:n]
            hand += picked
            for c in picked:
                deck.remove(c)
        rng.shuffle(deck)
        return sorted(hand + deck[: v.hand_size - len(hand)])

    jokers = {13: v.joker_copies, 14: v.joker_copies}
    three = {13: 1, 14: 2} if lo == 0 else jokers
    return {
        "four jokers": shaped(jokers),
        "run of pairs": shaped({**{r: 2 if lo == 0 else 3 for r in range(lo, 12)}, **three}),
        "run of bombs": shaped({**{r: 4 for r in range(lo, lo + 6)}, **three}),
        "8-card bombs": shaped({**{r: 8 for r in range(lo, lo + 3)}, **three}),
    }


def random_deals(args: argparse.Namespace) -> dict[str, list[list[int]]]:
    from enum_reference import full_deck

    core = baseline.core()
    out = {}
    for variant in core.BUILTIN:
        v = core.get_variant(variant)
        rng = random.Random(f"{args.seed}/{variant}")
        out[variant] = [sorted(rng.sample(full_deck(v), v.hand_size)) for _ in range(args.hands)]
    return out


def measure(deals: dict[str, list[list[int]]], repeats: int) -> dict[str, float]:
    """The random-deal lines of every variant in this interpreter's build: µs medians."""
    core = baseline.core()
    legal_plays, count_plays = core.legal_plays, core.count_plays
    out: dict[str, float] = {}
    for variant, hands in deals.items():
        v = core.get_variant(variant)
        out[f"{variant} plays"] = statistics.median(len(legal_plays(h, v)) for h in hands)
        lead = per_hand(hands, repeats, lambda h, v=v: legal_plays(h, v))
        objs = per_hand(hands, repeats, lambda h, v=v: list(legal_plays(h, v)))
        out[f"{variant} lead"], out[f"{variant} lead p90"] = lead
        out[f"{variant} lead+objs"], out[f"{variant} lead+objs p90"] = objs
        out[f"{variant} objs/lead rate"] = lead[0] / objs[0]
        out[f"{variant} count"], out[f"{variant} count p90"] = per_hand(
            hands, repeats, lambda h, v=v: count_plays(h, v))
        for name, offsets, n in TARGETS:
            text = " ".join(RANKS[v.lowest_rank + o] * n for o in offsets)
            target = core.classify(text, v).primary
            out[f"{variant} follow {name}"], out[f"{variant} follow {name} p90"] = per_hand(
                hands, repeats, lambda h, t=target, v=v: legal_plays(h, v, t))
    return out


def extremes(variant: str, args: argparse.Namespace) -> tuple[list[Any], tuple[Any, ...]]:
    """One variant's worst-case rows and its brute-force ratio row (this build)."""
    from enum_reference import Readings, brute_force, random_hand

    core = baseline.core()
    v = core.get_variant(variant)
    rng = random.Random(f"{args.seed}/{variant}/extremes")
    worst = []
    for name, hand in worst_hands(variant, rng).items():
        t = best_of(args.repeats, lambda h=hand: core.legal_plays(h, v)) * 1e6
        worst.append((variant, name, len(core.legal_plays(hand, v)), t))
    small = [random_hand(v, rng, 14, jokers=rng.randint(0, 4)) for _ in range(args.small)]
    t_core = sum(best_of(args.repeats, lambda h=h: core.legal_plays(h, v)) for h in small)
    t0 = time.perf_counter()
    for h in small:
        brute_force(h, v, readings=Readings(v))
    t_ref = time.perf_counter() - t0
    return worst, (variant, t_core / len(small) * 1e6, t_ref / len(small) * 1e6, t_ref / t_core)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hands", type=int, default=200, help="random full hands per variant")
    ap.add_argument("--small", type=int, default=40, help="14-card hands for the ratio")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per hand (best)")
    ap.add_argument("--passes", type=int, default=3, help="fresh processes per build")
    ap.add_argument("--seed", type=int, default=1)
    baseline.add_argument(ap)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(measure(json.loads(Path(args.worker).read_text()), args.repeats)))
        return
    deals = random_deals(args)
    results = baseline.alternate(__file__, ["--repeats", str(args.repeats)],
                                 baseline.builds(args.against), args.passes, deals)
    med = {k: statistics.median(p[k] for p in results["this"]) for k in results["this"][0]}
    print(f"hands per variant: {args.hands} random deals, {args.small} 14-card hands for the "
          f"brute-force ratio; best of {args.repeats} per hand; µs median (p90), median of "
          f"{args.passes} passes\n")
    print(f"{'variant':16} {'plays':>6} {'lead':>12} {'lead+objs':>14} {'objs/lead':>9} "
          f"{'count':>12}  " + "  ".join(f"{'follow ' + name:>15}" for name, _, _ in TARGETS))
    worst_rows, ratio_rows = [], []
    for variant in deals:
        def cell(line: str, width: int, v: str = variant) -> str:
            return f"{med[f'{v} {line}']:{width}.1f} ({med[f'{v} {line} p90']:4.0f})"
        print(f"{variant:16} {med[f'{variant} plays']:6.0f} {cell('lead', 6)} "
              f"{cell('lead+objs', 7)} {med[f'{variant} objs/lead rate']:8.2f}x "
              f"{cell('count', 6)}  "
              + "  ".join(cell(f"follow {name}", 8) for name, _, _ in TARGETS))
        worst, ratio = extremes(variant, args)
        worst_rows += worst
        ratio_rows.append(ratio)
    leads = [med[f"{v} lead"] for v in deals]
    print(f"lead: median over the variants {statistics.median(leads):.1f} µs, worst variant "
          f"{max(leads):.1f} µs; objs/lead rate: lowest "
          f"{min(med[f'{v} objs/lead rate'] for v in deals):.2f}x")

    print(f"\nworst cases (leading, best of {args.repeats}):")
    print(f"{'variant':16} {'hand':14} {'plays':>7} {'µs':>9} {'ns/play':>8}")
    for variant, name, n, t in worst_rows:
        print(f"{variant:16} {name:14} {n:7} {t:9.1f} {t * 1e3 / max(n, 1):8.0f}")
    print("\nbrute force vs engine on 14-card hands (leading, per hand):")
    print(f"{'variant':16} {'engine µs':>10} {'brute µs':>12} {'ratio':>9}")
    for variant, engine, ref, ratio in ratio_rows:
        print(f"{variant:16} {engine:10.1f} {ref:12.0f} {ratio:8.0f}x")
    if "base" in results:
        print(f"\nagainst {args.against} (µs; this/base below 1 is faster; objs/lead: above 1 "
              f"is better):")
        keep = {name: [{k: v for k, v in p.items() if not k.endswith(("p90", "plays"))}
                       for p in passes] for name, passes in results.items()}
        baseline.report(keep, "µs per hand", higher_is_better=False)


if __name__ == "__main__":
    main()
