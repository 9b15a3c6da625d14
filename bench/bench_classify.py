"""Classification throughput: compiled core vs the brute-force reference, single vs batch.

    .venv/bin/python bench/bench_classify.py [--plays 200000] [--ref-plays 3000] [--seed 1]

The mix: for every variant, plays drawn from that variant's real deck by the seeded
generator of tests/randomplays.py (sub-hands of random deals, sets of one rank, runs, chain
bombs, joker plays, near misses; about 40 % contain jokers), kept when valid and at most 10
cards, given as text tokens (``["7S", "7H", "BJ"]``). Every play in a timed loop is distinct
in its list position and nothing is cached: each call parses and classifies from scratch.
All figures come from one run, so the ratios compare like with like on a noisy machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from randomplays import PlayMaker  # noqa: E402
from reference import classify_ref  # noqa: E402

from shuangkou import core  # noqa: E402

MAX_CARDS = 10


def make_mix(variant: str, n: int, seed: int) -> list[list[str]]:
    """n valid plays of at most MAX_CARDS cards, as text tokens."""
    maker = PlayMaker(variant, random.Random(seed))
    plays: list[list[str]] = []
    while len(plays) < n:
        cards = maker.play()
        if not 1 <= len(cards) <= MAX_CARDS:
            continue
        try:
            core.classify(cards, variant)
        except ValueError:
            continue
        plays.append(core.format_cards(cards))
    return plays


def best_of(repeats: int, fn) -> float:
    """Smallest wall time of `repeats` runs (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plays", type=int, default=200_000, help="plays per variant (core)")
    ap.add_argument("--ref-plays", type=int, default=3_000, help="plays per variant (reference)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    classify = core.classify
    rows = []
    for variant in core.BUILTIN:
        plays = make_mix(variant, args.plays, args.seed)
        jokers = sum(any(t in ("SJ", "BJ") for t in p) for p in plays) / len(plays)

        def single(plays=plays, variant=variant):
            for p in plays:
                classify(p, variant)

        codes = [core.parse_cards(p) for p in plays]
        buf = bytes(c for cs in codes for c in cs)
        lengths = array("i", (len(cs) for cs in codes))

        def batch(buf=buf, lengths=lengths, variant=variant):
            core.classify_batch(buf, lengths, variant)

        ref_plays = plays[: args.ref_plays]

        def reference(ref_plays=ref_plays, variant=variant):
            for p in ref_plays:
                classify_ref(" ".join(p), variant)

        t_single = best_of(args.repeats, single)
        t_batch = best_of(args.repeats, batch)
        t_ref = best_of(args.repeats, reference)
        rate_single = len(plays) / t_single
        rate_batch = len(plays) / t_batch
        rate_ref = len(ref_plays) / t_ref
        rows.append((variant, jokers, rate_single, rate_batch, rate_ref))

    print(f"plays per variant: {args.plays} (reference: {args.ref_plays}), <= {MAX_CARDS} cards, "
          f"text tokens, best of {args.repeats}\n")
    print(f"{'variant':<16} {'jokers':>7} {'single/s':>12} {'batch/s':>13} {'ref/s':>9} "
          f"{'core/ref':>9} {'batch/single':>13}")
    for variant, jokers, s, b, r in rows:
        print(f"{variant:<16} {jokers:>6.0%} {s:>12,.0f} {b:>13,.0f} {r:>9,.0f} {s / r:>8,.0f}x "
              f"{b / s:>12.1f}x")
    med = [statistics.median(col) for col in zip(*[(s, b, r) for _, _, s, b, r in rows], strict=True)]
    print(f"{'median':<16} {'':>7} {med[0]:>12,.0f} {med[1]:>13,.0f} {med[2]:>9,.0f} "
          f"{med[0] / med[2]:>8,.0f}x {med[1] / med[0]:>12.1f}x")


if __name__ == "__main__":
    main()
