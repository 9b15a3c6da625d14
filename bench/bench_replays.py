"""Replay validation + scoring throughput (docs/replays.md).

1. In-process: replays validated and scored per second per core (CPU time, best of
   ``--repeat`` passes) for every variant, from parsed dicts and from JSON text.
2. The batch CLI end to end (``shuangkou score-replays FILE --jobs J``, wall time, output to
   /dev/null) on a file of ``--file-replays`` generated replays (all seven variants in turn,
   5 % escapes), with 1 and 2 workers. The file is generated once and cached under
   ``/tmp/shuangkou-bench``.

Run: ``.venv/bin/python bench/bench_replays.py [--replays 1000] [--file-replays 100000]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import core_ext  # noqa: E402
from core_ext.generate import generate_replay  # noqa: E402
from core_ext.replay import score_replay  # noqa: E402

CACHE = Path("/tmp/shuangkou-bench")
VARIANTS = list(core_ext.BUILTIN)
FILE_ESCAPE_PROB = 0.05


def _generate(args: tuple[str, int, float]) -> str:
    variant, seed, escape_prob = args
    return json.dumps(generate_replay(variant, seed, escape_prob), separators=(",", ":"))


def cached_replays(name: str, jobs: list[tuple[str, int, float]], workers: int) -> Path:
    """Generate the replays once (in parallel) into a cached JSONL file."""
    path = CACHE / f"{name}.jsonl"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    start = time.perf_counter()
    with multiprocessing.Pool(workers) as pool, open(tmp, "w", encoding="utf-8") as out:
        for line in pool.imap(_generate, jobs, chunksize=64):
            out.write(line + "\n")
    tmp.rename(path)
    print(f"generated {len(jobs)} replays into {path} in {time.perf_counter() - start:.0f} s",
          file=sys.stderr)
    return path


def best_rate(fn, items: list, repeat: int) -> float:
    """Items per CPU-second of ``fn`` over ``items``, best of ``repeat`` passes."""
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        for x in items:
            fn(x)
        best = min(best, time.process_time() - t)
    return len(items) / best


def _rejected(doc: object) -> bool:
    try:
        score_replay(doc)  # type: ignore[arg-type]
    except core_ext.ShuangkouError as exc:
        print(f"  rejected: {exc}", file=sys.stderr)
        return True
    return False


def _score_or_error(doc: object) -> None:
    try:
        score_replay(doc)  # type: ignore[arg-type]
    except core_ext.ShuangkouError:
        pass


def in_process(n: int, repeat: int, workers: int) -> None:
    print(f"\nin-process: {n} generated replays per variant (no escapes), score_replay, "
          f"CPU time, best of {repeat}\n")
    print(f"{'variant':17s} {'actions':>8s} {'dict/s':>9s} {'text/s':>9s} {'actions/s':>11s} "
          f"{'rejected':>9s}")
    for v in VARIANTS:
        path = cached_replays(f"inproc-{v}-{n}", [(v, s, 0.0) for s in range(n)], workers)
        texts = path.read_text(encoding="utf-8").splitlines()
        docs = [json.loads(t) for t in texts]
        actions = sum(len(d["actions"]) for d in docs) / len(docs)
        rejected = sum(1 for d in docs if _rejected(d))   # a generated round must validate
        dict_rate = best_rate(_score_or_error, docs, repeat)
        text_rate = best_rate(_score_or_error, texts, repeat)
        print(f"{v:17s} {actions:8.1f} {dict_rate:9,.0f} {text_rate:9,.0f} "
              f"{dict_rate * actions:11,.0f} {rejected:9d}")


def batch_cli(n: int, workers: int) -> None:
    jobs = [(VARIANTS[i % len(VARIANTS)], i, FILE_ESCAPE_PROB) for i in range(n)]
    path = cached_replays(f"replays-{n}", jobs, workers)
    size = path.stat().st_size
    print(f"\nbatch CLI: {n} replays ({size / 1e6:.0f} MB, all variants, "
          f"{FILE_ESCAPE_PROB:.0%} escapes): shuangkou score-replays FILE --jobs J > /dev/null\n")
    print(f"{'jobs':>4s} {'wall s':>8s} {'replays/s':>10s}  summary")
    for jobs_n in (1, 2):
        cmd = [sys.executable, "-m", "service.cli", "score-replays", str(path),
               "--jobs", str(jobs_n), "--no-progress"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False)
        wall = time.perf_counter() - start
        summary = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "?"
        m = re.search(r"(\d+) scored", summary)
        print(f"{jobs_n:4d} {wall:8.1f} {n / wall:10,.0f}  {summary}")
        if proc.returncode not in (0, 1) or not m:
            print(f"     command failed ({proc.returncode}): {' '.join(cmd)}", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replays", type=int, default=1000, help="per variant, in-process")
    p.add_argument("--file-replays", type=int, default=100_000, help="batch CLI file size")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-batch", action="store_true")
    args = p.parse_args()
    workers = os.cpu_count() or 1
    print(f"python {sys.version.split()[0]}, {workers} cores, load {os.getloadavg()[0]:.1f}")
    in_process(args.replays, args.repeat, workers)
    if not args.skip_batch:
        batch_cli(args.file_replays, workers)


if __name__ == "__main__":
    main()
