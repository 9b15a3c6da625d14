"""Replay validation + scoring throughput (docs/replays.md).

1. In-process: replays validated and scored per second per core (CPU time, best of
   ``--repeat`` passes) for every variant, from parsed dicts and from JSON text.
2. The batch CLI end to end (``shuangkou score-replays FILE --jobs J``, output to /dev/null)
   on a file of ``--file-replays`` replays (10,000 generated ones, all seven variants in
   turn, 5 % escapes, repeated), with 1 and 2 workers: wall rate, and replays per CPU-second
   of the CLI and its workers against in-process ``score_replay`` on the same file in the
   same run (the issue-12 target: at least 0.8x).
3. ``--dask``: a local Dask cluster of two workers (``--dask local:2 --output-dir``) against
   the single-process CLI on the same file (ratio), and the overhead per partition; with
   ``--growth 10000,100000,1000000`` the wall time by archive size.
4. ``--cli-against [REV]``: only the CLI (``--jobs 1``) against in-process scoring of the
   same file (before and after it, averaged), in fresh processes, per CPU-second and wall clock (the issue-20 targets: at
   least 0.9x and 0.8x), with REV's build alternating; ``--house``: on replays of a heavy
   house variant given inline (:data:`HOUSE`) instead of the built-ins.

Files are generated once and cached under ``/tmp/shuangkou-bench``.

Run: ``.venv/bin/python bench/bench_replays.py [--replays 1000] [--file-replays 100000]
[--dask] [--growth 10000,100000]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from shuangkou import core  # noqa: E402
from shuangkou.core.generate import generate_replay  # noqa: E402
from shuangkou.core.replay import score_replay  # noqa: E402

CACHE = Path("/tmp/shuangkou-bench")
VARIANTS = list(core.BUILTIN)
FILE_ESCAPE_PROB = 0.05


#: A heavy house variant (three decks, 40-card hands, chains from two links): its rounds
#: run ~150 actions, about twice a built-in's cost to score, and each line carries the
#: variant inline, as a platform scoring its own house rules sends it.
HOUSE = {"id": "house_heavy", "extends": "qianbian", "decks": 3, "joker_copies": 2,
         "hand_size": 40, "chain_min_links": 2}


def _generate(args: tuple[str | dict, int, float]) -> str:
    variant, seed, escape_prob = args
    if isinstance(variant, dict):
        from shuangkou.core.variants import variant_from_mapping
        variant = variant_from_mapping(variant)
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
    except core.ShuangkouError as exc:
        print(f"  rejected: {exc}", file=sys.stderr)
        return True
    return False


def _score_or_error(doc: object) -> None:
    try:
        score_replay(doc)  # type: ignore[arg-type]
    except core.ShuangkouError:
        pass


def in_process(n: int, repeat: int, workers: int) -> None:
    print(f"\nin-process: {n} generated replays per variant (no escapes), score_replay, "
          f"CPU time, best of {repeat}\n")
    print("dict/s, text/s: score_replay of a parsed document, of its JSON text; +record/s: of"
          " the text, then its\nrecord as JSON the old way (to_dict, orjson.dumps); json/s:"
          " score_replay_json, the record's JSON\ntext written by the settlement (what"
          " score-replays stores)\n")
    print(f"{'variant':17s} {'actions':>8s} {'dict/s':>9s} {'text/s':>9s} {'+record/s':>10s} "
          f"{'json/s':>9s} {'actions/s':>11s} {'rejected':>9s}")
    from shuangkou.core.replay import score_replay_json

    def record(text: str) -> None:
        orjson.dumps(score_replay(text).to_dict())

    for v in VARIANTS:
        path = cached_replays(f"inproc-{v}-{n}", [(v, s, 0.0) for s in range(n)], workers)
        texts = path.read_text(encoding="utf-8").splitlines()
        docs = [json.loads(t) for t in texts]
        actions = sum(len(d["actions"]) for d in docs) / len(docs)
        rejected = sum(1 for d in docs if _rejected(d))   # a generated round must validate
        dict_rate = best_rate(_score_or_error, docs, repeat)
        text_rate = best_rate(_score_or_error, texts, repeat)
        record_rate = best_rate(record, texts, repeat)
        json_rate = best_rate(score_replay_json, texts, repeat)
        print(f"{v:17s} {actions:8.1f} {dict_rate:9,.0f} {text_rate:9,.0f} {record_rate:10,.0f} "
              f"{json_rate:9,.0f} {dict_rate * actions:11,.0f} {rejected:9d}")


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds, CPU seconds of the command and its children, the process."""
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):       # done, or done with lines rejected
        print(f"     command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr}",
              file=sys.stderr)
    return wall, _children_cpu() - cpu, proc


def archive_file(lines: int, workers: int, house: bool = False) -> Path:
    """A JSONL archive of ``lines`` replays: a cached file of 10,000 generated replays (all
    variants in turn, 5 % escapes; ``house``: of :data:`HOUSE` alone) repeated (scoring cost
    does not depend on repeats)."""
    unique = min(lines, 10_000)
    jobs = [(HOUSE if house else VARIANTS[i % len(VARIANTS)], i, FILE_ESCAPE_PROB)
            for i in range(unique)]
    name = "house-" if house else ""
    base = cached_replays(f"{name}replays-{unique}", jobs, workers)
    if lines == unique:
        return base
    path = CACHE / f"{name}archive-{lines}.jsonl"
    if not path.exists():
        data = base.read_bytes()
        tmp = path.with_suffix(".partial")
        with open(tmp, "wb") as out:
            for _ in range(lines // unique):
                out.write(data)
        tmp.rename(path)
    return path


def in_process_file_rate(path: Path, n: int, repeat: int) -> float:
    """Replays per CPU-second of score_replay on the first ``n`` lines of ``path`` (text)."""
    with open(path, encoding="utf-8") as f:
        texts = [next(f).rstrip("\n") for _ in range(n)]
    return best_rate(_score_or_error, texts, repeat)


def cli_path_ratio(path: Path, n: int, repeat: int) -> None:
    """The CLI's code path (``batch.main FILE --jobs 1``, in this process, output to
    /dev/null) against bare ``score_replay`` on the same lines, alternating, CPU time: the
    per-line cost the CLI adds, free of process start-up and of other load."""
    import tempfile

    from shuangkou.service.batch import command as batch

    with open(path, encoding="utf-8") as f:
        texts = [next(f).rstrip("\n") for _ in range(n)]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as tmp:
        tmp.write("\n".join(texts) + "\n")

    def cli() -> None:
        saved, sys.stdout = sys.stdout, open(os.devnull, "w")  # noqa: SIM115
        saved_err, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115
        try:
            batch.main([tmp.name, "--jobs", "1", "--no-progress"])
        finally:
            sys.stdout.close()
            sys.stderr.close()
            sys.stdout, sys.stderr = saved, saved_err

    bare, path_cpu = [], []
    for _ in range(repeat):
        t = time.process_time()
        for x in texts:
            _score_or_error(x)
        bare.append(time.process_time() - t)
        t = time.process_time()
        cli()
        path_cpu.append(time.process_time() - t)
    os.unlink(tmp.name)
    print(f"CLI code path in-process on {n} lines, alternating with bare score_replay, best of "
          f"{repeat}: {n / min(path_cpu):,.0f} vs {n / min(bare):,.0f} replays per CPU-second "
          f"= {min(bare) / min(path_cpu):.2f}x")


def batch_cli(n: int, workers: int, repeat: int) -> None:
    path = archive_file(n, workers)
    size = path.stat().st_size
    base = in_process_file_rate(path, min(n, 2000), repeat)
    print(f"\nbatch CLI: {n} replays ({size / 1e6:.0f} MB, all variants, "
          f"{FILE_ESCAPE_PROB:.0%} escapes): shuangkou score-replays FILE --jobs J > /dev/null")
    print(f"in-process score_replay on the file's first {min(n, 2000)} lines, same run: "
          f"{base:,.0f} replays per CPU-second\n")
    cli_path_ratio(path, min(n, 3000), max(repeat, 3))
    print()
    print(f"{'jobs':>4s} {'wall s':>8s} {'replays/s':>10s} {'per core':>9s} {'CPU s':>7s} "
          f"{'per CPU-s':>10s} {'vs in-process':>13s}")
    for jobs_n in (1, 2):
        cmd = [sys.executable, "-m", "shuangkou.service.cli", "score-replays", str(path),
               "--jobs", str(jobs_n), "--no-progress"]
        wall, cpu, _ = _run(cmd)
        per_cpu = n / cpu
        print(f"{jobs_n:4d} {wall:8.1f} {n / wall:10,.0f} {n / wall / jobs_n:9,.0f} {cpu:7.1f} "
              f"{per_cpu:10,.0f} {per_cpu / base:12.2f}x")


def _archive_run(path: Path, flags: list[str]) -> tuple[float, float, dict]:
    import shutil
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="bench-archive-"))
    try:
        cmd = [sys.executable, "-m", "shuangkou.service.cli", "score-replays", str(path),
               "--output-dir", str(out), "--no-progress", *flags]
        wall, cpu, _ = _run(cmd)
        summary = json.loads((out / "summary.json").read_text())
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return wall, cpu, summary


def dask_vs_cli(n: int, workers: int, partition_lines: int) -> None:
    """Dask (a local cluster of 2 worker processes) against the single-process CLI."""
    path = archive_file(n, workers)
    print(f"\nDask vs the single-process CLI on {n} lines (--partition-lines "
          f"{partition_lines}); wall time of the whole command\n")
    single, single_cpu, _ = _run([sys.executable, "-m", "shuangkou.service.cli", "score-replays",
                                  str(path), "--jobs", "1", "--no-progress"])
    print(f"  single process (--jobs 1, stdout):      {single:7.1f} s  {n / single:8,.0f}/s  "
          f"CPU {single_cpu:.1f} s")
    wall, cpu, s = _archive_run(path, ["--dask", "local:2", "--partition-lines",
                                     str(partition_lines)])
    run = s["this_run"]
    parts = run["partitions"]
    work = s["scoring_seconds"]
    overhead = max(run["seconds"] * 2 - work, 0.0) / parts
    print(f"  dask local:2 (--output-dir):            {wall:7.1f} s  {n / wall:8,.0f}/s  "
          f"ratio {single / wall:.2f}x the single process; CPU {cpu:.1f} s = "
          f"{cpu / single_cpu:.2f}x the single process's (load {os.getloadavg()[0]:.1f})")
    print(f"    scoring phase {run['seconds']:.1f} s, {parts} partitions, work "
          f"{work / parts:.2f} s each; overhead per partition {overhead:.3f} s = "
          f"{overhead / (work / parts):.1%} of its work (2 workers x phase - work)")


def growth(sizes: list[int], workers: int) -> None:
    print("\nwall time by archive size: score-replays FILE --output-dir D --dask local:2\n")
    print(f"{'lines':>9s} {'wall s':>8s} {'lines/s':>9s}")
    for n in sizes:
        path = archive_file(n, workers)
        wall, _, _ = _archive_run(path, ["--dask", "local:2"])
        print(f"{n:9d} {wall:8.1f} {n / wall:9,.0f}")


def cli_worker(path: str, lines: int) -> dict[str, float]:
    """In one build: score_replay over the file's lines in process (CPU and wall time, the
    file read and split included), ``score-replays FILE --jobs 1`` of the same build as a
    subprocess (start-up, reading, parsing and writing included), then the in-process loop
    again: its mean of the two runs is what the CLI is compared with (a host that drifts
    during the pass moves both sides alike)."""
    from shuangkou.core import ShuangkouError
    from shuangkou.core.replay import score_replay as score

    def in_process() -> tuple[float, float]:
        c0, t0 = time.process_time(), time.perf_counter()
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    score(line)
                except ShuangkouError:
                    pass
        return time.process_time() - c0, time.perf_counter() - t0

    before = in_process()
    cli_wall, cli_cpu, _ = _run([sys.executable, "-m", "shuangkou.service.cli", "score-replays",
                                 path, "--jobs", "1", "--no-progress"])
    after = in_process()
    cpu, wall = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
    return {"in-process, replays per CPU-second": lines / cpu,
            "CLI --jobs 1, replays per CPU-second": lines / cli_cpu,
            "CLI / in-process, per CPU-second": cpu / cli_cpu,
            "in-process, replays/s (wall)": lines / wall,
            "CLI --jobs 1, replays/s (wall)": lines / cli_wall,
            "CLI / in-process, wall": wall / cli_wall}


def cli_against(n: int, workers: int, passes: int, against: str | None, house: bool) -> None:
    import baseline

    path = archive_file(n, workers, house)
    results = baseline.alternate(__file__, ["--cli-lines", str(n)], baseline.builds(against),
                                 passes, str(path))
    what = f" of the house variant {HOUSE['id']} (inline)" if house else ""
    print(f"\nbatch CLI vs in-process on the same {n:,} lines{what} "
          f"({path.stat().st_size / 1e6:.0f} MB), {passes} passes per build, medians:")
    baseline.report(results, "see each line", width=40)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--replays", type=int, default=1000, help="per variant, in-process")
    p.add_argument("--file-replays", type=int, default=100_000, help="batch CLI file size")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--skip-in-process", action="store_true")
    p.add_argument("--skip-batch", action="store_true")
    p.add_argument("--cli-path-only", action="store_true",
                   help="only the in-process CLI code path vs score_replay ratio")
    p.add_argument("--dask", action="store_true",
                   help="also Dask (local:2) vs the single-process CLI on --file-replays lines")
    p.add_argument("--partition-lines", type=int, default=10_000)
    p.add_argument("--growth", default="",
                   help="comma-separated archive sizes for the wall-time table, e.g. "
                        "10000,100000,1000000 (needs --dask)")
    p.add_argument("--cli-against", nargs="?", const="", metavar="REV",
                   help="only the CLI (--jobs 1) against in-process scoring on --file-replays "
                        "lines, per CPU-second and wall clock, in fresh processes; with REV "
                        "also the build of that revision (bench/baseline.py), alternating")
    p.add_argument("--passes", type=int, default=3, help="passes per build (--cli-against)")
    p.add_argument("--house", action="store_true",
                   help="--cli-against on replays of a heavy house variant (HOUSE) instead")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--cli-lines", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(cli_worker(json.loads(Path(args.worker).read_text()), args.cli_lines)))
        return
    workers = os.cpu_count() or 1
    print(f"python {sys.version.split()[0]}, {workers} cores, load {os.getloadavg()[0]:.1f}")
    if args.cli_against is not None:
        cli_against(args.file_replays, workers, args.passes, args.cli_against or None,
                    args.house)
        return
    if args.cli_path_only:
        cli_path_ratio(archive_file(args.file_replays, workers), min(args.file_replays, 3000),
                       max(args.repeat, 3))
        return
    if not args.skip_in_process:
        in_process(args.replays, args.repeat, workers)
    if not args.skip_batch:
        batch_cli(args.file_replays, workers, args.repeat)
    if args.dask:
        dask_vs_cli(args.file_replays, workers, args.partition_lines)
        if args.growth:
            growth([int(x) for x in args.growth.split(",")], workers)


if __name__ == "__main__":
    main()
