"""How often can a declaration of kind + top (+ star) not tell a play's readings apart?

    .venv/bin/python bench/bench_declarations.py [--plays 20000] [--pairs 5000] [--seed 7]

For every variant, plays drawn by the seeded generator of tests/randomplays.py; a "large
bomb play" is a valid play of 8 or more cards with at least one bomb reading. For each, it
counts the plays where two readings share kind + top, kind + top + star, and the full
:class:`shuangkou.core.Declaration` (kind, top, star, wild placement) — the last must be 0, or
some reading could not be declared (RULES.md §7 rule 4). Figures, not a pass/fail test:
tests/test_properties.py checks that every reading is selectable.

Then the cost of ``core.compare`` (one call, both plays classified once) against the
three calls the ComparePlays servicer made before compare existed (classify current,
classify play, play_reading of play on current), on the same random pairs, best of 3.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from randomplays import PlayMaker  # noqa: E402

from shuangkou import core  # noqa: E402

SELECTORS: dict[str, Callable[[Any], tuple[Any, ...]]] = {
    "kind+top": lambda r: (r.kind, r.top),
    "kind+top+star": lambda r: (r.kind, r.top, r.star),
    "Declaration": lambda r: (r.kind, r.top, r.star, tuple(sorted(r.wilds))),
}


def measure(variant: str, plays: int, seed: int) -> tuple[int, dict[str, int]]:
    maker = PlayMaker(variant, random.Random(seed))
    large = 0
    shared = dict.fromkeys(SELECTORS, 0)
    for _ in range(plays):
        cards = maker.play()
        try:
            readings = core.classify(cards, variant).readings
        except core.ShuangkouError:
            continue
        if len(cards) < 8 or not any(r.is_bomb for r in readings):
            continue
        large += 1
        for name, key in SELECTORS.items():
            shared[name] += max(Counter(map(key, readings)).values()) > 1
    return large, shared


def pairs(variant: str, n: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """n random (play, current) pairs of valid plays."""
    maker = PlayMaker(variant, random.Random(seed))
    out: list[tuple[list[int], list[int]]] = []
    while len(out) < n:
        a, b = maker.play(), maker.play()
        try:
            core.classify(a, variant), core.classify(b, variant)
        except core.ShuangkouError:
            continue
        out.append((a, b))
    return out


def three_calls(play: list[int], current: list[int], variant: str) -> tuple[bool, Any, Any]:
    """What the servicer did before compare: classify both, then play_reading."""
    standing = core.classify(current, variant).primary
    primary = core.classify(play, variant).primary
    try:
        return True, standing, core.play_reading(play, variant, standing)
    except core.IllegalPlay:
        return False, standing, primary


def per_call(fn: Callable[..., Any], work: list[tuple[list[int], list[int]]], variant: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for play, current in work:
            fn(play, current, variant)
        best = min(best, time.perf_counter() - t0)
    return best / len(work)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plays", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--pairs", type=int, default=5000)
    args = ap.parse_args()
    print(f"{'variant':16} {'large bombs':>11}  " + "  ".join(f"{n:>15}" for n in SELECTORS))
    for variant in core.BUILTIN:
        large, shared = measure(variant, args.plays, args.seed)
        cells = "  ".join(f"{shared[n] / max(large, 1):>8.1%} ({shared[n]:>4})"  # none drawn: 0
                          for n in SELECTORS)
        print(f"{variant:16} {large:>11}  {cells}")
    print(f"\n{'variant':16} {'compare µs':>11} {'3 calls µs':>11} {'ratio':>6}")
    for variant in core.BUILTIN:
        work = pairs(variant, args.pairs, args.seed)
        for play, current in work[:200]:      # same answers before timing
            got = core.compare(play, current, variant)
            assert (got.beats, got.current, got.play) == three_calls(play, current, variant)
        new, old = per_call(core.compare, work, variant), per_call(three_calls, work, variant)
        print(f"{variant:16} {new * 1e6:>11.2f} {old * 1e6:>11.2f} {old / new:>5.2f}x")


if __name__ == "__main__":
    main()
