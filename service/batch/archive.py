"""Score a replay archive into an output directory: partitions, exactly once, resumable.

``shuangkou score-replays INPUT... --output-dir OUT`` (with ``--dask``, ``--shard`` or the
local process pool) runs here. The layout of ``OUT``::

    manifest.json            the plan: inputs, partition size, every partition (written once)
    parts/00000-000000.jsonl one record per input line of the partition, in line order
    parts/00000-000000.done  the partition's counts; its presence marks the partition complete
    summary.json             totals of the whole archive (when every partition is complete)

What a line becomes, what a partition counts and what the summary adds are the run's
:class:`Job`: scoring here, reviewing in :mod:`~shuangkou.service.batch.review` (``shuangkou
review-replays``); the partitions, the files, exactly once, the backends and the merge are
the same for both.

Each record names its source first: ``{"file": "a.jsonl.gz", "line": 17, "ok": ...}``
(``line`` is 1-based). A partition's ``.jsonl`` and then its ``.done`` are each written to a
temporary name and renamed, so a partition is either complete or absent: a worker killed
mid-partition leaves at most a temporary file (ignored, removed by ``--merge``), the retry
(Dask's, or the next run's) writes the same bytes under the same name, and no line is
recorded twice. The merged order is the partition ids' order (inputs in the order given, a
glob's or directory's files sorted by path, then lines): ``cat OUT/parts/*.jsonl``.
"""

from __future__ import annotations

import collections
import json
import os
import re
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from ..inputs import MANIFEST, PARTS, SUMMARY, InputFile, Line, LongLine, expand
from . import pool
from .partitions import Partition, plan, plan_digest, read_partition, read_sequential
from .progress import Progress
from .records import dumps, record_of

__all__ = ["ArchiveError", "Job", "Run", "SCORE", "Stats", "prepare", "score_partition", "score_task",
           "tasks_of", "run_local", "run_dask", "summarize", "merge", "format_summary",
           "DEFAULT_PARTITION_LINES"]

# 10,000 lines are ~4 s of scoring per core (~2,800 replays/s); the overhead per partition
# (a Dask round trip, reading, writing) stays under 5 % of that: bench/bench_replays.py --dask.
DEFAULT_PARTITION_LINES = 10_000
FORMAT = 1
TOP_REASONS = 10


class ArchiveError(Exception):
    """A run that cannot start or finish (bad inputs, a foreign output directory)."""


class ClusterError(Exception):
    """The Dask scheduler cannot be reached (exit status 3, like an unreachable server)."""


@dataclass
class Run:
    """A planned run: its inputs, partitions and output directory, and what it computes."""

    outdir: str
    files: list[InputFile]
    parts: list[Partition]
    partition_lines: int
    partial_deal: bool
    digest: str
    job: Job

    def part_path(self, part: Partition, ext: str) -> str:
        return os.path.join(self.outdir, PARTS, f"{part.id}.{ext}")

    def complete(self, part: Partition) -> bool:
        return os.path.exists(self.part_path(part, "done"))


# ----------------------------------------------------------------------------- files

def _write_atomic(path: str, write: Callable[[IO[str]], object]) -> None:
    """Write ``path`` under a unique temporary name, fsync, rename: all or nothing.

    What is written is JSON, non-ASCII kept: a lone surrogate (which no UTF-8 file can hold;
    a partition's counts of an older run may have read one from an archive) goes out as its
    JSON escape, ``\\ud800`` (``backslashreplace`` writes exactly that), never as a crash."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.tmp.{socket.gethostname()}.{os.getpid()}."
                               f"{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "w", encoding="utf-8", errors="backslashreplace") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _manifest(run: Run) -> dict[str, Any]:
    manifest = {"format": FORMAT, "digest": run.digest, "partition_lines": run.partition_lines,
                "partial_deal": run.partial_deal,
                "files": [{"name": f.name, "size": f.size, "gz": f.gz} for f in run.files],
                "partitions": [p.to_dict() for p in run.parts]}
    settings = run.job.settings()
    if settings is not None:       # a scoring run's manifest is what it always was
        manifest["job"] = {"name": run.job.name, **settings}
    return manifest


def prepare(specs: Sequence[str], outdir: str, partition_lines: int = DEFAULT_PARTITION_LINES,
            partial_deal: bool = False, job: Job | None = None) -> Run:
    """Expand the inputs and plan the partitions, or reuse the plan of ``outdir``'s manifest.

    Raises FileNotFoundError/OSError for an input that cannot be read, ArchiveError when
    ``outdir`` holds the output of a different run (other inputs, sizes, settings or job).
    """
    job = job or SCORE
    files = expand(specs, [outdir])    # never its own output, when it sits among the inputs
    if not files:
        raise ArchiveError("no input files (directories hold no *.jsonl / *.jsonl.gz)")
    digest = plan_digest(files, partition_lines, partial_deal, job.settings())
    os.makedirs(os.path.join(outdir, PARTS), exist_ok=True)
    path = os.path.join(outdir, MANIFEST)
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        if old.get("digest") != digest:
            raise ArchiveError(
                f"{outdir} holds the output of another run (other inputs, file sizes, "
                "--partition-lines, --partial-deal or another job or its settings); use a "
                "new --output-dir")
        parts = [Partition(**p) for p in old["partitions"]]
        return Run(outdir, files, parts, partition_lines, partial_deal, digest, job)
    run = Run(outdir, files, plan(files, partition_lines), partition_lines, partial_deal,
              digest, job)
    # Every shard of a Kubernetes job may get here at once: they write identical bytes.
    _write_atomic(path, lambda out: json.dump(_manifest(run), out, indent=1))
    return run


# ----------------------------------------------------------------------------- scoring

# The particulars of a rejection reason: card tokens as the core writes them (format_cards:
# 7S, TS, 10S, SJ, BJ and rank-only cards 7, T, K; describe(): rank strings such as TTTT,
# 456789, 9TJQK) and numbers. A rank-only card such as 7 reads exactly like a number, so
# both get the one mark, and a group of them (a play's cards: "7S 7H", "SJ SJ") is one
# mark: "seat 2 plays 7 7", "seat 1 plays TS TH" and "seat 3 plays SJ SJ" count together.
_TOKEN = r"(?:(?:10|[2-9TJQKA])[SHDC]|[SB]J|(?:10|[2-9TJQKA])+|\d+)"
_PARTICULARS = re.compile(rf"\b{_TOKEN}(?: {_TOKEN})*\b")


def reason_template(reason: str) -> str:
    """A rejection reason with its particulars (cards, numbers) blanked to ``N``, for
    grouping."""
    return _PARTICULARS.sub("N", reason)


def _variant_of(line: Line, record: dict[str, Any]) -> str:
    """The variant a line names, for the summary's counts per variant. A rejected line is
    read by the core's own parser (orjson): a line the core found no JSON in (a lone
    surrogate such as ``"\\ud800"``, which Python's json reads as a string no UTF-8 file
    can hold) is "(not JSON)" here too."""
    if record["ok"]:
        return str(record.get("variant", "?"))
    if isinstance(line, LongLine):
        return "(line too long)"
    if not line.strip():
        return "(empty line)"
    try:
        doc = orjson.loads(line)
    except (orjson.JSONDecodeError, UnicodeEncodeError):
        return "(not JSON)"
    variant = doc.get("variant") if isinstance(doc, dict) else None
    if isinstance(variant, str):
        return variant
    if isinstance(variant, dict):
        return f"custom:{variant.get('id', '?')}"
    return "(none)"


@dataclass
class Stats:
    """The counts of some partitions: what the summary adds up. A job that counts more
    (:mod:`~shuangkou.service.batch.review`) extends it through :meth:`add_ok`,
    :meth:`merge_more`, :meth:`more_dict` and :meth:`load_more`."""

    lines: int = 0
    ok: int = 0
    internal: int = 0
    seconds: float = 0.0                     # scoring time, summed over partitions
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    variants: dict[str, collections.Counter[str]] = field(default_factory=dict)
    reasons: dict[str, list[Any]] = field(default_factory=dict)   # template -> [count, example]

    def add_record(self, file: str, line_no: int, line: Line, record: dict[str, Any]) -> None:
        self.lines += 1
        variant = self.variants.setdefault(_variant_of(line, record), collections.Counter())
        if record["ok"]:
            self.ok += 1
            self.add_ok(record, file, line_no)
            variant["scored"] += 1
            return
        variant["rejected"] += 1
        error = record["error"]
        self.internal += bool(error.get("internal"))
        entry = self.reasons.setdefault(reason_template(error["reason"]), [0, None])
        entry[0] += 1
        if entry[1] is None:
            entry[1] = {"file": file, "line": line_no, **error}

    def add_ok(self, record: dict[str, Any], file: str, line: int) -> None:
        """Count what a job keeps of a line's record that did not fail (``file`` and
        ``line``: where it came from)."""
        self.kinds[record["kind"]] += 1

    def merge(self, other: Stats) -> None:
        self.lines += other.lines
        self.ok += other.ok
        self.internal += other.internal
        self.seconds += other.seconds
        self.kinds.update(other.kinds)
        for v, counts in other.variants.items():
            self.variants.setdefault(v, collections.Counter()).update(counts)
        for reason, (count, example) in other.reasons.items():
            entry = self.reasons.setdefault(reason, [0, example])
            entry[0] += count
        self.merge_more(other)

    def merge_more(self, other: Stats) -> None:
        """Add the counts a job keeps beyond these (none for scoring)."""

    def more_dict(self) -> dict[str, Any]:
        """The counts a job keeps beyond these, for the ``.done`` file (none for scoring)."""
        return {}

    def load_more(self, d: dict[str, Any]) -> None:
        """Read back what :meth:`more_dict` wrote."""

    def to_dict(self) -> dict[str, Any]:
        return {"lines": self.lines, "ok": self.ok, "internal": self.internal,
                "seconds": round(self.seconds, 6), "kinds": dict(self.kinds),
                "variants": {v: dict(c) for v, c in self.variants.items()},
                "reasons": self.reasons, **self.more_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Stats:
        stats = cls(d["lines"], d["ok"], d["internal"], d["seconds"],
                    collections.Counter(d["kinds"]),
                    {v: collections.Counter(c) for v, c in d["variants"].items()},
                    {r: list(e) for r, e in d["reasons"].items()})
        stats.load_more(d)
        return stats


class Job:
    """What an archive run computes: the record of each input line, the counts a partition
    keeps (a :class:`Stats`) and the job's part of the summary. This one scores
    (``score-replays``); :class:`~shuangkou.service.batch.review.ReviewJob` reviews. An
    instance travels to every Dask worker with each task: small, picklable, immutable."""

    name = "score-replays"
    done = "scored"                 # what happened to a line that did not fail
    default_partition_lines = DEFAULT_PARTITION_LINES
    stats_type: type[Stats] = Stats

    def settings(self) -> dict[str, Any] | None:
        """What the run computes beyond its inputs: in the manifest and its fingerprint, so
        that a run with other settings is refused (None: nothing, as for scoring)."""
        return None

    def with_settings(self, settings: dict[str, Any]) -> Job:
        """The job a manifest's ``job`` entry (its :meth:`settings`) describes."""
        return self

    def record(self, line: Line, partial_deal: bool) -> dict[str, Any]:
        """One input line's record (without its source); never raises."""
        return record_of(line, partial_deal)

    def summary(self, stats: Stats) -> dict[str, Any]:
        """The job's fields of ``summary.json``."""
        return {"kinds": dict(sorted(stats.kinds.items()))}

    def headline(self, summary: dict[str, Any]) -> str:
        """What follows "N scored" in the printed summary's first line."""
        kinds = ", ".join(f"{k} {n:,}" for k, n in summary["kinds"].items())
        return f" ({kinds})" if kinds else ""

    def details(self, summary: dict[str, Any]) -> list[str]:
        """The job's lines of the printed summary, after the rejection reasons."""
        return []


SCORE = Job()


def _done_path(outdir: str, part: Partition) -> str:
    return os.path.join(outdir, PARTS, f"{part.id}.done")


def _load_done(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        done: dict[str, Any] = json.load(f)
    return done


def _score_lines(job: Job, file: InputFile, part: Partition, lines: Iterable[Line],
                 outdir: str, partial_deal: bool, start: float) -> dict[str, Any]:
    """Run ``job`` on a partition's lines, each record written as its line is read (one
    line held at a time), then the partition's counts."""
    stats = job.stats_type()

    def write(out: IO[str]) -> None:
        for k, line in enumerate(lines):
            line_no = part.first_line + k
            record = job.record(line, partial_deal)
            stats.add_record(file.name, line_no, line, record)
            out.write(dumps({"file": file.name, "line": line_no, **record}) + "\n")

    _write_atomic(os.path.join(outdir, PARTS, f"{part.id}.jsonl"), write)
    stats.seconds = time.perf_counter() - start
    result = stats.to_dict()
    _write_atomic(_done_path(outdir, part), lambda out: json.dump(result, out))
    return result


def score_partition(file: InputFile, part: Partition, outdir: str,
                    partial_deal: bool = False, job: Job = SCORE) -> dict[str, Any]:
    """Score (or run ``job`` on) one partition into ``outdir/parts``; returns its counts.

    Idempotent: a partition already complete is not scored again (a retried task, a second
    shard claiming it), and a rerun writes the same bytes under the same name.
    """
    done = _done_path(outdir, part)
    if os.path.exists(done):
        return _load_done(done)
    start = time.perf_counter()
    return _score_lines(job, file, part, read_partition(file, part), outdir, partial_deal,
                        start)


def score_task(file: InputFile, parts: list[Partition], outdir: str,
               partial_deal: bool = False, job: Job = SCORE) -> list[dict[str, Any]]:
    """A worker's task: one partition of a plain file, or the pending partitions of a
    gzipped file scored in one pass over it (each still written, and complete, on its own).
    Returns the counts of each partition."""
    if len(parts) == 1 and not file.gz:
        return [score_partition(file, parts[0], outdir, partial_deal, job)]
    out = []
    start = time.perf_counter()
    for part, lines in read_sequential(file, parts):
        done = _done_path(outdir, part)
        out.append(_load_done(done) if os.path.exists(done) else
                   _score_lines(job, file, part, lines, outdir, partial_deal, start))
        start = time.perf_counter()
    return out


Task = tuple[InputFile, list[Partition], str, bool, Job]


def tasks_of(run: Run, parts: Sequence[Partition]) -> list[Task]:
    """One task per plain-file partition; one per gzipped file (its partitions in order)."""
    tasks: list[Task] = []
    gz: dict[int, list[Partition]] = {}
    for p in parts:
        if run.files[p.file].gz:
            if p.file not in gz:
                gz[p.file] = []
                tasks.append((run.files[p.file], gz[p.file], run.outdir, run.partial_deal,
                              run.job))
            gz[p.file].append(p)
        else:
            tasks.append((run.files[p.file], [p], run.outdir, run.partial_deal, run.job))
    return tasks


# ----------------------------------------------------------------------------- backends

def run_local(run: Run, parts: Sequence[Partition], jobs: int) -> Iterator[dict[str, Any]]:
    """Score ``parts`` on the local process pool; yields each partition's counts."""
    tasks = tasks_of(run, parts)
    for counts in pool.run(((score_task, task) for task in tasks), min(jobs, len(tasks))):
        yield from counts


def dask_client(address: str, timeout: float = 30.0) -> Any:
    """A client of the scheduler at ``address``, or of a new local cluster for
    ``local[:N]`` (N single-threaded worker processes; default: every core)."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - the optional extra
        raise ArchiveError("--dask needs Dask: pip install 'shuangkou[dask]'") from exc
    if address == "local" or address.startswith("local:"):
        n = int(address.partition(":")[2] or os.cpu_count() or 1)
        # No dashboard; the scheduler still serves its small HTTP endpoint (health,
        # metrics), and ``dashboard_address=None`` alone leaves that on 8787, so a second
        # local cluster on the host warned (dask/distributed#8136): a free port instead.
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               dashboard_address=None,
                               scheduler_kwargs={"dashboard_address": ":0"})
        return Client(cluster)
    try:
        return Client(address, timeout=timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler {address}: {exc}") from exc


def run_dask(run: Run, parts: Sequence[Partition], client: Any,
             retries: int = 2) -> Iterator[dict[str, Any]]:
    """Score ``parts`` as Dask tasks; yields each partition's counts as it ends.

    A task (a plain file's partition, or a gzipped file's pending partitions: tasks_of) is
    keyed by the job, the run and its first partition, so it is one task in the scheduler; a worker lost mid-task has its task rescheduled by Dask (up to
    ``distributed.scheduler.allowed-failures`` times), a task that raised is retried
    ``retries`` times, and either way the partition's files are written once, atomically.
    """
    from dask.distributed import as_completed

    futures = [client.submit(score_task, *task,
                             key=f"{run.job.name}-{run.digest}-{task[1][0].id}",
                             pure=False, retries=retries) for task in tasks_of(run, parts)]
    try:
        for future in as_completed(futures):
            yield from future.result()
    finally:
        for future in futures:
            future.release()


def shard_of(parts: Sequence[Partition], index: int, count: int) -> list[Partition]:
    """Shard ``index`` of ``count``: every count-th partition from ``index`` (deterministic,
    balanced to within one partition)."""
    return [p for k, p in enumerate(parts) if k % count == index]


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (``JOB_COMPLETION_INDEX/COMPLETIONS``) → (I, N); ValueError when malformed."""
    index, sep, count = text.partition("/")
    i, n = int(index), int(count)
    if not sep or n < 1 or not 0 <= i < n:
        raise ValueError(f"--shard {text!r}: expected I/N with 0 <= I < N")
    return i, n


# ----------------------------------------------------------------------------- summary

def summarize(run: Run, parts: Iterable[Partition] | None = None) -> tuple[Stats, list[str]]:
    """The counts of the complete partitions among ``parts`` (default: all), and the ids of
    those not complete."""
    total, missing = run.job.stats_type(), []
    for p in run.parts if parts is None else parts:
        try:
            with open(run.part_path(p, "done"), encoding="utf-8") as f:
                total.merge(run.job.stats_type.from_dict(json.load(f)))
        except FileNotFoundError:
            missing.append(p.id)
    return total, missing


def summary_dict(run: Run, stats: Stats, this_run: dict[str, Any]) -> dict[str, Any]:
    """The summary written to ``summary.json``."""
    reasons = sorted(stats.reasons.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return {
        "job": run.job.name, "lines": stats.lines, run.job.done: stats.ok,
        "rejected": stats.lines - stats.ok, "internal_errors": stats.internal,
        "files": len(run.files), "partitions": len(run.parts),
        "partition_lines": run.partition_lines, **run.job.summary(stats),
        "variants": {v: {"lines": c["scored"] + c["rejected"], "scored": c["scored"],
                         "rejected": c["rejected"]} for v, c in sorted(stats.variants.items())},
        "rejections": [{"reason": r, "count": n, "example": ex}
                       for r, (n, ex) in reasons[:TOP_REASONS]],
        "other_rejection_reasons": max(len(reasons) - TOP_REASONS, 0),
        "scoring_seconds": round(stats.seconds, 3),
        "this_run": this_run,
        "output": {"partitions": f"{PARTS}/*.jsonl", "manifest": MANIFEST,
                   "merged_order": "partition ids: inputs as given (globs and directories "
                                   "sorted by path), then line numbers"},
    }


def format_summary(s: dict[str, Any], outdir: str, job: Job | None = None) -> str:
    """The summary for a person (stderr)."""
    job = job or SCORE
    out = [f"{job.name}: {s['lines']:,} lines in {s['files']} files, {s['partitions']} "
           f"partitions: {s[job.done]:,} {job.done}" + job.headline(s)
           + f", {s['rejected']:,} rejected"
           + (f" ({s['internal_errors']} internal errors)" if s["internal_errors"] else "")]
    if s["variants"]:
        out.append("  per variant: " + ", ".join(
            f"{v} {c['lines']:,}" + (f" ({c['rejected']:,} rejected)" if c["rejected"] else "")
            for v, c in s["variants"].items()))
    if s["rejections"]:
        out.append("  top rejection reasons:")
        for r in s["rejections"]:
            ex = r["example"]
            out.append(f"  {r['count']:>9,}  {r['reason']}")
            out.append(f"             e.g. {ex['file']}:{ex['line']}: {ex['reason']}")
    out += job.details(s)
    t = s["this_run"]
    out.append(f"  this run: {t['lines']:,} lines in {t['partitions']} partitions, "
               f"{t['seconds']:.2f} s, {_rate(t['lines_per_second'])} lines/s "
               f"({t['backend']}); {t['already_complete']} partitions were already complete")
    out.append(f"  output: {outdir}/{PARTS}/*.jsonl (merged order: sorted names), "
               f"summary {os.path.join(outdir, SUMMARY)}")
    return "\n".join(out) + "\n"


def _rate(per_second: float) -> str:
    """Lines per second as a person reads them (a review runs well under one a second)."""
    return f"{per_second:,.0f}" if per_second >= 10 or not per_second else f"{per_second:.2f}"


def write_summary(run: Run, this_run: dict[str, Any]) -> dict[str, Any] | None:
    """Write and return the summary when every partition is complete (else None)."""
    stats, missing = summarize(run)
    if missing:
        return None
    summary = summary_dict(run, stats, this_run)
    _write_atomic(os.path.join(run.outdir, SUMMARY),
                  lambda out: json.dump(summary, out, indent=1, ensure_ascii=False))
    return summary


def merge(outdir: str, job: Job | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """The merge step after sharded runs of ``job`` (the one its manifest names): check
    every partition, write the summary, remove temporary files left by killed workers.
    Returns (summary or None, missing ids)."""
    job = job or SCORE
    path = os.path.join(outdir, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError as exc:
        raise ArchiveError(f"{outdir} has no {MANIFEST}: no run wrote there") from exc
    settings = manifest.get("job", {})
    name = settings.get("name", SCORE.name)
    if name != job.name:
        raise ArchiveError(f"{outdir} holds a {name} run: merge it with shuangkou {name} "
                           "--merge")
    job = job.with_settings(settings)
    files = [InputFile(f["name"], f["name"], f["size"], f["gz"]) for f in manifest["files"]]
    run = Run(outdir, files, [Partition(**p) for p in manifest["partitions"]],
              manifest["partition_lines"], manifest["partial_deal"], manifest["digest"], job)
    stats, missing = summarize(run)
    if missing:
        return None, missing
    parts_dir = os.path.join(outdir, PARTS)
    for name in os.listdir(parts_dir):
        if name.startswith(".") and ".tmp." in name:
            os.unlink(os.path.join(parts_dir, name))
    this_run = {"lines": 0, "partitions": 0, "seconds": 0.0, "lines_per_second": 0.0,
                "backend": "merge", "already_complete": len(run.parts)}
    summary = summary_dict(run, stats, this_run)
    _write_atomic(os.path.join(outdir, SUMMARY),
                  lambda out: json.dump(summary, out, indent=1, ensure_ascii=False))
    return summary, []


def execute(parts: Sequence[Partition], results: Iterator[dict[str, Any]], backend: str,
            already_complete: int, draw: bool, stream: IO[str] | None = None) -> dict[str, Any]:
    """Consume a backend's results with progress; returns the ``this_run`` counts."""
    progress = Progress(stream or sys.stderr, sum(p.lines for p in parts), draw, len(parts))
    for stats in results:
        progress.add(stats["lines"], parts=1)
    seconds = progress.finish()
    return {"lines": progress.lines, "partitions": progress.parts, "seconds": round(seconds, 3),
            "lines_per_second": round(progress.lines / seconds, 1) if seconds else 0.0,
            "backend": backend, "already_complete": already_complete}
