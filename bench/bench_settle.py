"""Settlement per call, and the calls around it, on this build and (``--against``) another.

    .venv/bin/python bench/bench_settle.py [--replays 60] [--repeat 5]
                                           [--against OTHER_TREE/.venv/bin/python]

The documents: ``--replays`` generated rounds per variant (seeds 0…, 20 % escapes), made
once by this build. Lines, CPU time per call in µs, best of ``--repeat`` passes:

* ``score_round``: every round's summary (``summarize_replay(...).score_args()``), the
  plain rounds and the escaped ones apart (``baibian`` refuses escapes: left out);
* ``score_replay``: the documents of those summaries (validation move by move +
  settlement);
* ``Round.result()``: settlement alone, on the rounds already folded;
* one applied action: ``Round.play`` / ``pass_turn`` each timed on its own (median, wall
  clock, the in-process core of ApplyAction);
* ``suggest``: the 托管 decision at the 10th action of each round (median of the best of
  3 calls per position).

With ``--against``, every pass runs in a fresh process, alternating between this build and
the other interpreter's (another worktree's ``.venv``: its editable install is its own
tree's build), over the same documents; the last column is this build's time over the
other's (below 1: this build is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
ESCAPE_PROB = 0.2
SUGGEST_AT = 10


def _per_call(fn: Any, items: list[Any], loops: int) -> float:
    """µs of CPU per call of ``fn`` over ``items`` (``loops`` times over)."""
    from shuangkou.core import ShuangkouError

    t = time.process_time_ns()
    for _ in range(loops):
        for x in items:
            try:
                fn(x)
            except ShuangkouError:
                pass
    return (time.process_time_ns() - t) / (loops * len(items)) / 1000


def _apply(rnd: Any, a: Any) -> None:
    """One action of a typed replay (``replay.Action``) applied to its round."""
    if a.kind == "play":
        rnd.play(a.seat, a.cards, a.declare)
    elif a.kind == "pass":
        rnd.pass_turn(a.seat)
    else:
        rnd.escape(a.seat)


def _action_median(docs: list[dict[str, Any]]) -> float:
    """µs of one play or pass, each timed on its own (escapes, a round's last action, are
    left out: baibian refuses them)."""
    from shuangkou.core.replay import parse_replay

    out: list[int] = []
    clock = time.perf_counter_ns
    for doc in docs:
        rep = parse_replay(doc)
        rnd = rep.start()
        for a in rep.actions:
            if a.kind == "escape":
                break
            t = clock()
            _apply(rnd, a)
            out.append(clock() - t)
    return statistics.median(out) / 1000


def _suggest_median(docs: list[dict[str, Any]]) -> float:
    from shuangkou.core import suggest
    from shuangkou.core.replay import parse_replay

    out = []
    for doc in docs:
        rep = parse_replay(doc)
        if len(rep.actions) <= SUGGEST_AT or any(a.kind == "escape"
                                                 for a in rep.actions[:SUGGEST_AT]):
            continue
        rnd = rep.start()
        for a in rep.actions[:SUGGEST_AT]:
            _apply(rnd, a)
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter_ns()
            suggest(rnd)
            best = min(best, time.perf_counter_ns() - t)
        out.append(best)
    return statistics.median(out) / 1000


def one_pass(docs: list[dict[str, Any]]) -> dict[str, float]:
    """One pass of every line over ``docs`` (in this interpreter's build)."""
    from shuangkou.core import BUILTIN, ShuangkouError, score_round
    from shuangkou.core.replay import replay_round, score_replay, summarize_replay

    lines: dict[str, float] = {}
    for v in BUILTIN:
        mine = [d for d in docs if d["variant"] == v]
        plain, escaped, rounds, scored = [], [], [], []
        for d in mine:
            try:
                summary = summarize_replay(d)
            except ShuangkouError:      # baibian's escapes
                continue
            scored.append(d)
            if summary.escaper is None:
                plain.append(summary.score_args())
            elif v != "baibian":
                escaped.append(summary.score_args())
            rounds.append(replay_round(d))
        lines[f"score_round, plain    {v}"] = _per_call(lambda k: score_round(**k), plain, 20)
        if escaped:     # none in baibian
            lines[f"score_round, escaped  {v}"] = _per_call(lambda k: score_round(**k),
                                                            escaped, 20)
        lines[f"score_replay          {v}"] = _per_call(score_replay, scored, 2)
        lines[f"Round.result()        {v}"] = _per_call(lambda r: r.result(), rounds, 20)
    lines["one applied action, median (wall)"] = _action_median(docs)
    lines["suggest at the 10th action, median (wall)"] = _suggest_median(docs)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=60, help="generated rounds per variant")
    ap.add_argument("--repeat", type=int, default=5, help="passes per build")
    ap.add_argument("--against", help="another build's python (e.g. a worktree's .venv)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)   # one pass over this file's documents
    args = ap.parse_args()
    if args.worker:
        docs = json.loads(Path(args.worker).read_text())
        print(json.dumps(one_pass(docs)))
        return

    from shuangkou.core import BUILTIN
    from shuangkou.core.generate import generate_replay

    docs = [generate_replay(v, seed, ESCAPE_PROB) for v in BUILTIN
            for seed in range(args.replays)]
    escapes = sum(1 for d in docs if any(a.get("escape") for a in d["actions"]))
    print(f"{len(docs)} generated rounds ({args.replays} per variant, {escapes} escaped); "
          f"best of {args.repeat} passes per build, µs per call")
    builds = {"this": sys.executable}
    if args.against:
        builds["other"] = args.against
    best: dict[str, dict[str, float]] = {b: {} for b in builds}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "docs.json"
        path.write_text(json.dumps(docs))
        for _ in range(args.repeat):
            for name, python in builds.items():
                # a fresh process per pass, run from outside both trees so that each
                # interpreter imports its own build
                got = subprocess.run([python, str(Path(__file__).resolve()), "--worker",
                                      str(path)], capture_output=True, text=True, check=False,
                                     cwd=tmp, env={**os.environ, "PYTHONPATH": ""})
                if got.returncode:
                    sys.exit(f"{python}: {got.stderr}")
                for line, us in json.loads(got.stdout).items():
                    best[name][line] = min(best[name].get(line, float("inf")), us)
    head = f"{'line':44s} {'this':>9s}"
    if args.against:
        head += f" {'other':>9s} {'this/other':>10s}"
    print(head)
    for line, us in best["this"].items():
        row = f"{line:44s} {us:9.2f}"
        if args.against:
            other = best["other"][line]
            row += f" {other:9.2f} {us / other:10.3f}"
        print(row)
    if args.against:
        ratios = [best["this"][k] / best["other"][k] for k in best["this"]]
        print(f"geometric mean this/other over {len(ratios)} lines: "
              f"{statistics.geometric_mean(ratios):.3f}")


if __name__ == "__main__":
    main()
