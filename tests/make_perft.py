"""Write or verify the perft fixtures tests/fixtures/perft_<variant>.txt.

Every case (a full hand, a play to beat or ``-``) is counted by two independent methods —
the compiled engine (``core.count_plays``) and the pattern-walking reference
(``enum_reference.by_patterns``, which shares no code with the engine) — and a case is
written only when both agree per type; a disagreement stops the run with a per-type
breakdown. ``--check`` recomputes both for the committed files and compares.

    .venv/bin/python tests/make_perft.py             # regenerate every variant
    .venv/bin/python tests/make_perft.py --check     # verify the committed fixtures
    .venv/bin/python tests/make_perft.py huopin      # one variant
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from enum_reference import (  # noqa: E402
    KINDS,
    Readings,
    by_patterns,
    face,
    full_deck,
    per_kind,
)

from shuangkou import core  # noqa: E402
from shuangkou.core.variants import Variant, get_variant  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
RANKS = core.RANK_CHARS
SJ_CODE, BJ_CODE = 70, 75

# Plays to beat, as rank text relative to the deck's lowest rank (so they exist in every
# deck): offset + pattern. Chosen to cover every type and bombs of several strengths.
TARGETS = (
    ("single", (2,), (1,)),
    ("pair", (3,), (2,)),
    ("triple", (1,), (3,)),
    ("straight", (0, 1, 2, 3, 4), (1, 1, 1, 1, 1)),
    ("straight", (1, 2, 3, 4, 5, 6, 7), (1,) * 7),
    ("pair_chain", (2, 3, 4), (2, 2, 2)),
    ("triple_chain", (0, 1, 2), (3, 3, 3)),
    ("bomb", (4,), (4,)),
    ("bomb", (2,), (6,)),
    ("chain_bomb", (1, 2, 3), (4, 4, 4)),
)


def pick(deck: list[int], rank: int, n: int) -> list[int]:
    """n cards of a rank (or joker) taken from the deck, suits in deck order."""
    got = [c for c in deck if face(c) == rank][:n]
    for c in got:
        deck.remove(c)
    if len(got) < n:
        raise ValueError(f"the deck has fewer than {n} cards of rank {rank}")
    return got


def shaped_hand(v: Variant, counts: dict[int, int], fill: random.Random) -> list[int]:
    """A hand with the given rank counts, topped up with random cards to the hand size."""
    deck = full_deck(v)
    hand = [c for rank, n in counts.items() for c in pick(deck, rank, n)]
    fill.shuffle(deck)
    hand += deck[: v.hand_size - len(hand)]
    return sorted(hand)


def hands(v: Variant) -> list[tuple[str, list[int]]]:
    """The fixture hands of a variant: random deals and the worst cases for enumeration."""
    rng = random.Random(f"perft/{v.id}")
    lo = v.lowest_rank
    out = []
    for i in range(3):
        deck = full_deck(v)
        rng.shuffle(deck)
        out.append((f"random deal {i + 1}", sorted(deck[: v.hand_size])))
    jokers = {13: v.joker_copies, 14: v.joker_copies}
    out.append(("all jokers", shaped_hand(v, jokers, rng)))
    width = 2 if lo == 0 else 3            # pairs over 3..A; triples over 7..A (crazy)
    run = {r: width for r in range(lo, 12)}
    run.update({13: 1, 14: 2} if lo == 0 else jokers)
    out.append(("run of pairs" if width == 2 else "run of triples", shaped_hand(v, run, rng)))
    bombs = {r: 4 for r in range(lo, lo + 6)}
    bombs.update({13: 1, 14: 2} if lo == 0 else jokers)
    out.append(("run of bombs", shaped_hand(v, bombs, rng)))
    eights = {r: 8 for r in range(lo, lo + 3)}
    eights.update({13: 1, 14: 2} if lo == 0 else jokers)
    out.append(("eight-card bombs", shaped_hand(v, eights, rng)))
    return out


def target_text(v: Variant, offsets: tuple[int, ...], sizes: tuple[int, ...]) -> str:
    return " ".join(RANKS[v.lowest_rank + o] * n for o, n in zip(offsets, sizes, strict=True))


def cases(v: Variant) -> list[tuple[str, list[int], str]]:
    out = []
    for name, hand in hands(v):
        out.append((name, hand, "-"))
        for _, offsets, sizes in TARGETS:
            out.append((name, hand, target_text(v, offsets, sizes)))
        out.append((name, hand, "SJ SJ BJ"))
    return out


def count_both(v: Variant, hand: list[int], to_beat: str, read: Readings) -> dict[str, int]:
    target = None if to_beat == "-" else core.classify(to_beat, v).primary
    engine = core.count_plays(hand, v, target)
    patterns = per_kind(by_patterns(hand, v, target, readings=read))
    if engine != patterns:
        rows = "\n".join(f"  {k:13} engine {engine[k]:6}  patterns {patterns[k]:6}"
                         + ("   <--" if engine[k] != patterns[k] else "") for k in KINDS)
        raise SystemExit(f"{v.id}: the two methods disagree on hand "
                         f"{' '.join(core.format_cards(hand))} to_beat {to_beat}\n{rows}")
    return engine


def render(v: Variant, read: Readings) -> str:
    lines = [f"# Perft fixture for {v.id}: legal plays per type (docs/enumeration.md).",
             "# Written by tests/make_perft.py; every count agreed by the compiled engine and",
             "# the pattern-walking reference (tests/enum_reference.py). Do not edit by hand.",
             ""]
    for i, (name, hand, to_beat) in enumerate(cases(v), 1):
        counts = count_both(v, hand, to_beat, read)
        lines += [f"id {i}", f"name {name}", f"hand {' '.join(core.format_cards(hand))}",
                  f"to_beat {to_beat}"]
        lines += [f"{k} {n}" for k, n in counts.items() if n]
        lines += [f"total {sum(counts.values())}", ""]
    return "\n".join(lines)


def parse(text: str) -> list[dict[str, str]]:
    blocks, block = [], {}
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            continue
        if not line.strip():
            if block:
                blocks.append(block)
            block = {}
            continue
        key, _, value = line.partition(" ")
        block[key] = value
    return blocks


def check(v: Variant, read: Readings) -> int:
    path = FIXTURES / f"perft_{v.id}.txt"
    bad = 0
    for case in parse(path.read_text()):
        hand = core.parse_cards(case["hand"], v)
        got = count_both(v, hand, case["to_beat"], read)
        want = {k: int(case.get(k, 0)) for k in KINDS}
        if got != want:
            bad += 1
            print(f"{v.id} case {case['id']}: file {want} recomputed {got}")
    return bad


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="*", help="variant ids (default: all built-ins)")
    parser.add_argument("--check", action="store_true", help="verify instead of writing")
    args = parser.parse_args()
    bad = 0
    for vid in args.variants or list(core.BUILTIN):
        v = get_variant(vid)
        read = Readings(v)
        started = time.perf_counter()
        if args.check:
            bad += check(v, read)
        else:
            FIXTURES.mkdir(exist_ok=True)
            (FIXTURES / f"perft_{v.id}.txt").write_text(render(v, read))
        print(f"{v.id}: {'checked' if args.check else 'written'} in "
              f"{time.perf_counter() - started:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
