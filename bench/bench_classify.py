"""Classification throughput in every form a user sends, valid and invalid, single and batch.

    .venv/bin/python bench/bench_classify.py [--plays 100000] [--ref-plays 3000] [--seed 1]
                                             [--repeats 3] [--passes 3] [--against REV]

The mix: for every variant, plays drawn from that variant's real deck by the seeded
generator of tests/randomplays.py (sub-hands of random deals, sets of one rank, runs, chain
bombs, joker plays, near misses; about 40 % contain jokers), at most 10 cards; the *valid*
ones (a reading exists) and the *invalid* ones (real cards that form no play) apart. Every
play in a timed loop is distinct in its list position and nothing is cached: each call
parses and classifies from scratch. Lines, plays per second (best of ``--repeats`` loops):

* ``tokens``: ``classify(["7S", "7H", "BJ"], v)``; ``codes``: a list of card codes;
* ``text``: one string, suited tokens (``"7S 7H BJ"``); ``runs``: ranks as the README writes
  them (``"45678 BJ"``, ``"7777 SJ"``: rank runs, jokers apart);
* ``half invalid``: the valid plays and as many invalid ones alternating, as text, each
  call in ``try``/``except`` (an invalid play raises InvalidPlay with its reason);
* ``batch``: ``classify_batch`` over packed codes; ``batch half invalid``: the same
  alternation packed; ``… errors read``: and every error looked up (its exception built).

With ``--against REV`` (a git revision, built once under build/baseline/, or another
build's python) every pass runs in a fresh process of each build, alternating, on the same
plays, and each line shows the median of the paired ratios this/base (bench/baseline.py).
The brute-force reference (``--ref-plays``) runs in this build only.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from array import array
from pathlib import Path
from typing import Any

import baseline

ROOT = Path(__file__).resolve().parents[1]
MAX_CARDS = 10
FORMS = ("tokens", "codes", "text", "runs", "half invalid", "batch", "batch half invalid",
         "batch half invalid, errors read")


def make_mix(variant: str, n: int, seed: int) -> tuple[list[list[int]], list[list[int]]]:
    """n valid and n invalid plays (codes) of at most MAX_CARDS cards."""
    sys.path[:0] = [str(ROOT / "tests")]
    from randomplays import PlayMaker

    core = baseline.core()
    maker = PlayMaker(variant, random.Random(seed))
    valid: list[list[int]] = []
    invalid: list[list[int]] = []
    while len(valid) < n or len(invalid) < n:
        cards = maker.play()
        if not 1 <= len(cards) <= MAX_CARDS:
            continue
        try:
            core.classify(cards, variant)
        except core.InvalidPlay:
            if len(invalid) < n:
                invalid.append(cards)
        except ValueError:
            continue
        else:
            if len(valid) < n:
                valid.append(cards)
    return valid, invalid


def runs_text(core: Any, cards: list[int]) -> str:
    """A play as the README writes it: its natural ranks as one run, then the jokers."""
    names = core.format_cards(sorted(cards))
    ranks = "".join(t[0] for t in names if t not in ("SJ", "BJ"))
    return " ".join([ranks] * bool(ranks) + [t for t in names if t in ("SJ", "BJ")])


def best_of(repeats: int, fn: Any) -> float:
    """Smallest wall time of `repeats` runs (the least disturbed by other load)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def measure(mixes: dict[str, list[list[list[int]]]], repeats: int) -> dict[str, float]:
    """Plays per second of every form, every variant, in this interpreter's build."""
    out: dict[str, float] = {}
    for variant, (valid, invalid) in mixes.items():
        out.update(measure_variant(variant, valid, invalid, repeats))
    return out


def measure_variant(variant: str, valid: list[list[int]], invalid: list[list[int]],
                    repeats: int) -> dict[str, float]:
    core = baseline.core()
    classify, classify_batch, error = core.classify, core.classify_batch, core.ShuangkouError
    out: dict[str, float] = {}
    forms: dict[str, list[Any]] = {
        "tokens": [core.format_cards(p) for p in valid],
        "codes": valid,
        "text": [" ".join(core.format_cards(p)) for p in valid],
        "runs": [runs_text(core, p) for p in valid],
    }
    for form, plays in forms.items():
        def single(plays: list[Any] = plays) -> None:
            for p in plays:
                classify(p, variant)
        out[f"{variant} {form}"] = len(plays) / best_of(repeats, single)
    mixed = [p for pair in zip(valid, invalid, strict=True) for p in pair]
    mixed_text = [" ".join(core.format_cards(p)) for p in mixed]

    def half_invalid() -> None:
        for p in mixed_text:
            try:
                classify(p, variant)
            except error:
                pass
    out[f"{variant} half invalid"] = len(mixed) / best_of(repeats, half_invalid)
    for name, plays in (("batch", valid), ("batch half invalid", mixed)):
        buf = bytes(c for p in plays for c in p)
        lengths = array("i", (len(p) for p in plays))

        def batch(buf: bytes = buf, lengths: array[int] = lengths) -> None:
            classify_batch(buf, lengths, variant)

        def batch_read(buf: bytes = buf, lengths: array[int] = lengths) -> None:
            for _ in classify_batch(buf, lengths, variant).errors.values():
                pass
        out[f"{variant} {name}"] = len(plays) / best_of(repeats, batch)
        if name != "batch":
            out[f"{variant} {name}, errors read"] = len(plays) / best_of(repeats, batch_read)
    return out


def reference_rates(mixes: dict[str, Any], n: int, repeats: int) -> dict[str, float]:
    sys.path[:0] = [str(ROOT / "tests")]
    from reference import classify_ref

    core = baseline.core()
    out = {}
    for variant, (valid, _) in mixes.items():
        texts = [" ".join(core.format_cards(p)) for p in valid[:n]]
        out[variant] = len(texts) / best_of(repeats, lambda t=texts, v=variant: [
            classify_ref(x, v) for x in t])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plays", type=int, default=100_000, help="valid (and invalid) plays per variant")
    ap.add_argument("--ref-plays", type=int, default=3_000, help="plays per variant (reference)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3, help="timed loops per figure (best)")
    ap.add_argument("--passes", type=int, default=3, help="fresh processes per build")
    baseline.add_argument(ap)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        mixes = json.loads(Path(args.worker).read_text())
        print(json.dumps(measure(mixes, args.repeats)))
        return

    core = baseline.core()
    mixes = {v: make_mix(v, args.plays, args.seed) for v in core.BUILTIN}
    interpreters = baseline.builds(args.against)
    results = baseline.alternate(__file__, ["--repeats", str(args.repeats)], interpreters,
                                 args.passes, mixes)
    print(f"plays per variant: {args.plays} valid + {args.plays} invalid, <= {MAX_CARDS} cards; "
          f"best of {args.repeats} loops, median of {args.passes} passes per build\n")
    med = {line: statistics.median(p[line] for p in results["this"]) for line in results["this"][0]}
    print(f"{'variant':<16}" + "".join(f"{f:>12}" for f in ("tokens", "text", "runs", "half inv.",
                                                           "batch", "b. half inv.")) +
          f"{'text/tok':>9}{'runs/tok':>9}{'inv/valid':>10}{'b.inv/b':>8}")
    cols: list[list[float]] = []
    for v in mixes:
        row = [med[f"{v} {f}"] for f in ("tokens", "text", "runs", "half invalid", "batch",
                                         "batch half invalid")]
        ratios = [row[1] / row[0], row[2] / row[0], row[3] / row[1], row[5] / row[4]]
        cols.append(row + ratios)
        print(f"{v:<16}" + "".join(f"{x:>12,.0f}" for x in row)
              + "".join(f"{r:>{w}.2f}x" for r, w in zip(ratios, (8, 8, 9, 7), strict=True)))
    m = [statistics.median(c) for c in zip(*cols, strict=True)]
    print(f"{'median':<16}" + "".join(f"{x:>12,.0f}" for x in m[:6])
          + "".join(f"{r:>{w}.2f}x" for r, w in zip(m[6:], (8, 8, 9, 7), strict=True)))
    print("(half inv. / text: the alternating mix against all-valid text; b.inv/b: the packed "
          "mix against all-valid batches)")
    if args.ref_plays:
        ref = reference_rates(mixes, args.ref_plays, args.repeats)
        print("\nthis build vs the brute-force reference (tests/reference.py), text tokens:")
        for v, r in ref.items():
            print(f"{v:<16} ref {r:>9,.0f}/s  core/ref {med[f'{v} tokens'] / r:>6,.0f}x")
    if "base" in results:
        print(f"\nagainst {args.against} (plays/s; this/base above 1 is faster):")
        baseline.report(results, "plays/s")


if __name__ == "__main__":
    main()
