"""The fair-play panel's commands (from the repository root)::

    .venv/bin/python -m research.fairplay generate DIR [--kinds NAME ...] [--matches 8]
        [--rounds 50] [--variants ID ...] [--reference rule|search] [--seed 1]
    .venv/bin/python -m research.fairplay review DIR [--kinds NAME ...] [--limit N] [-j 1]
        [--rollouts 2000] [--decoys 3] [--fair-deals 12] [--seed 0]
    .venv/bin/python -m research.fairplay study DIR [--kinds NAME ...] [--sizes 10 20 50]
        [--matches 2000] [--thrown-matches 400] [--permutations 2000] [--seed 1]
        [--variants ID ...] [--signals NAME ...] [--json FILE]
    .venv/bin/python -m research.fairplay keep DIR --into research/results/fairplay

``generate`` writes the archive (research/fairplay/archive.py: replays, their notes,
labels.json), every kind or those named; ``review`` reviews it as ``review-replays
--fair-play`` does (research/fairplay/reviewed.py), resumable, kinds interleaved; ``study``
prints per signal the power and the false-positive rates over resampled matches
(research/fairplay/power.py); ``keep`` gzips the reviewed rounds and the labels into a
folder (what research/results/fairplay holds), and ``study`` reads such a folder as well.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import time
from pathlib import Path

from research.panel import VARIANTS
from shuangkou.core.review import ReviewBudget

from .archive import LABELS, generate
from .kinds import KINDS, REFERENCES, SIGNALS
from .power import DEFAULT_SIZES, study
from .reviewed import FAIR_REVIEW, REVIEWED, review_archive


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m research.fairplay",
                                 description="the fair-play panel: archive, review, study")
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write the archive of rounds")
    g.add_argument("dir", type=Path)
    g.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    g.add_argument("--matches", type=int, default=8)
    g.add_argument("--rounds", type=int, default=50, help="rounds per match")
    g.add_argument("--variants", nargs="*", default=VARIANTS, choices=VARIANTS)
    g.add_argument("--reference", default="rule", choices=list(REFERENCES))
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--progress", action="store_true")
    r = sub.add_parser("review", help="review the archive with fair play")
    r.add_argument("dir", type=Path)
    r.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    r.add_argument("--limit", type=int, help="review the first N rounds of each kind")
    r.add_argument("-j", "--jobs", type=int, default=1)
    r.add_argument("--rollouts", type=int, default=FAIR_REVIEW.rollouts)
    r.add_argument("--decoys", type=int, default=FAIR_REVIEW.decoys)
    r.add_argument("--fair-deals", type=int, default=FAIR_REVIEW.fair_deals)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--progress", action="store_true")
    s = sub.add_parser("study", help="power and false positives over resampled matches")
    s.add_argument("dir", type=Path)
    s.add_argument("--kinds", nargs="*", choices=list(KINDS))
    s.add_argument("--sizes", nargs="*", type=int, default=list(DEFAULT_SIZES))
    s.add_argument("--matches", type=int, default=2000,
                   help="resampled matches per kind, signal and size")
    s.add_argument("--thrown-matches", type=int, default=400,
                   help="resampled matches for thrown rounds (a permutation test each)")
    s.add_argument("--permutations", type=int, default=2000)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--variants", nargs="*", choices=VARIANTS,
                   help="only the rounds of these variants (default: all)")
    s.add_argument("--signals", nargs="*", default=list(SIGNALS), choices=SIGNALS)
    s.add_argument("--json", type=Path, help="also write the figures as JSON")
    k = sub.add_parser("keep", help="gzip the reviewed rounds and labels into a folder")
    k.add_argument("dir", type=Path)
    k.add_argument("--into", type=Path, required=True)
    args = ap.parse_args(argv)
    t = time.process_time()
    if args.command == "generate":
        done = generate(args.dir, args.kinds, matches=args.matches, rounds=args.rounds,
                        variants=args.variants, reference=args.reference, seed=args.seed,
                        progress=args.progress)
        print(f"{sum(done.values())} rounds of {len(done)} kinds in {args.dir} "
              f"({time.process_time() - t:.1f} s of CPU)")
    elif args.command == "review":
        budget = ReviewBudget(rollouts=args.rollouts, decoys=args.decoys,
                              fair_deals=args.fair_deals)
        have = review_archive(args.dir, args.kinds, budget=budget, seed=args.seed,
                              jobs=args.jobs, limit=args.limit, progress=args.progress)
        print(f"{sum(have.values())} rounds reviewed of {len(have)} kinds in "
              f"{args.dir / REVIEWED}")
    elif args.command == "study":
        study(args.dir, args.kinds, sizes=args.sizes, matches=args.matches,
              thrown_matches=args.thrown_matches, permutations=args.permutations,
              seed=args.seed, variants=args.variants, signals=args.signals,
              json_out=args.json)
    else:
        keep(args.dir, args.into)


def keep(folder: Path, into: Path) -> None:
    """Gzip ``folder``'s reviewed rounds (and copy its labels) into ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / LABELS, into / LABELS)
    for path in sorted((folder / REVIEWED).glob("*.jsonl")):
        target = into / f"{path.name}.gz"
        with path.open("rb") as src, gzip.GzipFile(target, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        print(f"{target}: {target.stat().st_size:,} bytes", file=sys.stdout)


if __name__ == "__main__":
    main()
