"""The fair-play panel's commands (from the repository root)::

    .venv/bin/python -m research.fairplay generate DIR [--kinds NAME ...] [--matches 8]
        [--rounds 50] [--variants ID ...] [--reference rule|search] [--seed 1]
    .venv/bin/python -m research.fairplay review DIR [--kinds NAME ...] [--limit N] [-j 1]
        [-- REVIEW-REPLAYS OPTIONS ...]
    .venv/bin/python -m research.fairplay study DIR [--kinds NAME ...] [--sizes 10 20 50]
        [--matches 2000] [--permutations 2000] [--seed 1]
        [--variants ID ...] [--signals NAME ...] [--json FILE]
    .venv/bin/python -m research.fairplay keep DIR --into research/results/fairplay
    .venv/bin/python -m research.fairplay tells DIR --into research/results/fairplay
        [--kinds NAME ...]
    .venv/bin/python -m research.fairplay agreement research/results/fairplay

``generate`` writes the archive (research/fairplay/archive.py: replays, their notes,
labels.json), every kind or those named; ``review`` reviews it with ``shuangkou review-replays
--fair-play --no-oracle`` (research/fairplay/reviewed.py: slices of every kind in turn,
resumable; options after ``--`` go to the command); ``study``
prints per signal the power and the false-positive rates over resampled matches
(research/fairplay/power.py); ``keep`` writes the reviewed rounds (reduced), the labels
and the review's CPU into a folder, a gzip per kind (what research/results/fairplay holds),
and ``study`` reads such a folder as well; ``tells`` writes the tells of every round of the
archive into such a folder (research/fairplay/told.py: they need no review);
``agreement`` prints each kind's agreement with 托管 and its skill elsewhere from such a
folder (research/fairplay/agreement.py).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

from research.panel import VARIANTS

from .agreement import table
from .archive import LABELS, generate
from .kinds import KINDS, REFERENCES
from .power import CPU, DEFAULT_SIZES, TABLES, study
from .reviewed import REVIEWED, review_archive, review_cpu, reviewed_rounds
from .told import tell_archive


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
    r.add_argument("--progress", action="store_true")
    s = sub.add_parser("study", help="power and false positives over resampled matches")
    s.add_argument("dir", type=Path)
    s.add_argument("--kinds", nargs="*", choices=list(KINDS))
    s.add_argument("--sizes", nargs="*", type=int, default=list(DEFAULT_SIZES))
    s.add_argument("--matches", type=int, default=2000,
                   help="resampled matches per kind, signal and size")
    s.add_argument("--permutations", type=int, default=2000,
                   help="the thrown-round test's deals of the blocks, at most, per match")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--variants", nargs="*", choices=VARIANTS,
                   help="only the rounds of these variants (default: all)")
    s.add_argument("--signals", nargs="*", default=list(TABLES), choices=TABLES)
    s.add_argument("--json", type=Path, help="also write the figures as JSON")
    k = sub.add_parser("keep", help="gzip the reviewed rounds and labels into a folder")
    k.add_argument("dir", type=Path)
    k.add_argument("--into", type=Path, required=True)
    t = sub.add_parser("tells", help="the tells and give-ups of every round of the archive, into a folder")
    t.add_argument("dir", type=Path)
    t.add_argument("--into", type=Path, required=True)
    t.add_argument("--kinds", nargs="*", default=list(KINDS), choices=list(KINDS))
    a = sub.add_parser("agreement", help="each kind's agreement with 托管 and skill elsewhere")
    a.add_argument("dir", type=Path)
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []                   # after --: review-replays' own options
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    args = ap.parse_args(argv)
    if extra and args.command != "review":
        ap.error("options after -- go with review (to review-replays)")
    t = time.process_time()
    if args.command == "generate":
        done = generate(args.dir, args.kinds, matches=args.matches, rounds=args.rounds,
                        variants=args.variants, reference=args.reference, seed=args.seed,
                        progress=args.progress)
        print(f"{sum(done.values())} rounds of {len(done)} kinds in {args.dir} "
              f"({time.process_time() - t:.1f} s of CPU)")
    elif args.command == "review":
        have = review_archive(args.dir, args.kinds, limit=args.limit, jobs=args.jobs,
                              options=extra, progress=args.progress)
        print(f"{sum(have.values())} rounds reviewed of {len(have)} kinds in "
              f"{args.dir / REVIEWED}")
    elif args.command == "study":
        study(args.dir, args.kinds, sizes=args.sizes, matches=args.matches,
              permutations=args.permutations,
              seed=args.seed, variants=args.variants, signals=args.signals,
              json_out=args.json)
    elif args.command == "agreement":
        print("| kind | seat-rounds | departures | agreement, 95 % | loss share elsewhere |")
        print("|---|---|---|---|---|")
        for row in table(args.dir):
            print(f"| `{row['kind']}` | {row['rounds']} | {row['departs']:,} | "
                  f"{row['agreement']:.3f} [{row['low']:.3f}, {row['high']:.3f}] | "
                  f"{row['elsewhere']:.3f} |")
    elif args.command == "tells":
        done = tell_archive(args.dir, args.into, args.kinds)
        print(f"{sum(done.values())} rounds of {len(done)} kinds "
              f"({time.process_time() - t:.1f} s of CPU)")
    else:
        keep(args.dir, args.into)


def keep(folder: Path, into: Path) -> None:
    """Write ``folder``'s reviewed rounds into ``into``, a gzip per kind (each round as
    :func:`~.reviewed.reduce` reads it, with its line and notes), with the labels and the
    review's CPU."""
    into.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(folder / LABELS, into / LABELS)
    cpu, rounds = review_cpu(folder)
    (into / CPU).write_text(json.dumps({"cpu": cpu, "rounds": rounds}) + "\n")
    for kind, rows in reviewed_rounds(folder).items():
        target = into / f"{kind}.jsonl.gz"
        with gzip.GzipFile(target, "wb", mtime=0) as out:
            for row in rows:
                out.write((json.dumps(row, separators=(",", ":")) + "\n").encode())
        print(f"{target}: {len(rows)} rounds, {target.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
