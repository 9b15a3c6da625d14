"""How often can a declaration of kind + top (+ star) not tell a play's readings apart?

    .venv/bin/python bench/bench_declarations.py [--plays 20000] [--seed 7]

For every variant, plays drawn by the seeded generator of tests/randomplays.py; a "large
bomb play" is a valid play of 8 or more cards with at least one bomb reading. For each, it
counts the plays where two readings share kind + top, kind + top + star, and the full
:class:`core_ext.Declaration` (kind, top, star, wild placement) — the last must be 0, or
some reading could not be declared (RULES.md §7 rule 4). Figures, not a pass/fail test:
tests/test_properties.py checks that every reading is selectable.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from randomplays import PlayMaker  # noqa: E402

import core_ext  # noqa: E402

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
            readings = core_ext.classify(cards, variant).readings
        except core_ext.ShuangkouError:
            continue
        if len(cards) < 8 or not any(r.is_bomb for r in readings):
            continue
        large += 1
        for name, key in SELECTORS.items():
            shared[name] += max(Counter(map(key, readings)).values()) > 1
    return large, shared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plays", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    print(f"{'variant':16} {'large bombs':>11}  " + "  ".join(f"{n:>15}" for n in SELECTORS))
    for variant in core_ext.BUILTIN:
        large, shared = measure(variant, args.plays, args.seed)
        cells = "  ".join(f"{shared[n] / large:>8.1%} ({shared[n]:>4})" for n in SELECTORS)
        print(f"{variant:16} {large:>11}  {cells}")


if __name__ == "__main__":
    main()
