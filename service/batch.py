"""``shuangkou score-replays``: validate and score JSONL replays in bulk.

Reads replays (one JSON document per line, docs/replays.md) from files or stdin and writes
one JSON record per input line to stdout, in input order::

    {"ok": true, "kind": "double", "finish_order": [0, 2], "final": [8, -8, 8, -8], ...}
    {"ok": false, "error": {"action": 17, "reason": "seat 2 does not hold 7S (...)"}}

``error.action`` (0-based index into the replay's ``actions``) is absent when the replay is
malformed as a whole. An invalid replay never stops the batch. The work is spread over a
process pool (``--jobs``, default: every core) in chunks: workers read their byte range of
an input file themselves (stdin is read by the parent and shipped in chunks of lines), and
a bounded number of chunks is in flight. A progress bar with rate and ETA goes to stderr
when stderr is a terminal, and a summary always. ``--server`` sends the replays to a
running service instead (service.remote), with the same output.

Inputs may be files (plain or ``.gz``), globs and directories. ``--output FILE --resume``
continues an interrupted run from the records already in FILE. With ``--output-dir`` the
input is an archive scored partition by partition, on a local pool, a Dask cluster
(``--dask``) or one shard of a Kubernetes Indexed Job (``--shard``): service.archive.

Exit status: 0 when every replay scored, 1 when some records are errors, 2 on bad usage or
an unreadable input file, 3 when a server (or a Dask scheduler) cannot be reached or fails.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from .records import Block, RemoteFailure, error_record, result_record, score_line, score_lines

__all__ = ["main", "score_line", "score_lines", "score_range", "error_record", "result_record",
           "Block"]

DEFAULT_CHUNK = 200          # replays per task sent to a worker
WINDOW_PER_JOB = 4           # chunks in flight per worker (bounds memory on huge inputs)
PROGRESS_INTERVAL = 0.2      # seconds between progress-bar redraws
SAMPLE_BYTES = 1 << 16       # read to estimate a file's line length (chunk sizes in bytes)


# ----------------------------------------------------------------------------- records
# The record shapes live in service.records (shared with service.remote and the archive
# backends); the names stay importable from here.

# ----------------------------------------------------------------------------- input

Task = tuple[Callable[..., Block], tuple[Any, ...]]


def _split_lines(data: bytes) -> list[str]:
    """Lines of ``data`` split on ``\\n`` only (a lone ``\\r`` stays inside its line; a
    ``\\r\\n`` ending loses the ``\\r`` as JSON whitespace would anyway)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()            # the data ends with a newline
    return [raw.decode("utf-8", errors="replace") for raw in lines]


def score_range(path: str, start: int, end: int, partial_deal: bool = False) -> Block:
    """Score the lines of ``path`` in the byte range [start, end) (a worker's unit of work
    for files: the parent never reads or ships the replays)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    return score_lines(_split_lines(data), partial_deal)


def _ranges(path: str, chunk_lines: int) -> Iterator[tuple[int, int]]:
    """Byte ranges of about ``chunk_lines`` lines each, cut at newlines."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        sample = f.read(SAMPLE_BYTES)
        per_line = len(sample) / max(sample.count(b"\n"), 1)
        step = max(int(per_line * chunk_lines), 1024)
        start = 0
        while start < size:
            f.seek(min(start + step, size))
            f.readline()                       # move to the end of the line we landed in
            end = min(f.tell(), size)
            yield start, end
            start = end


def _chunks(lines: Iterable[str], chunk_lines: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= chunk_lines:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _file_lines(path: str) -> Iterator[str]:
    """The lines of a file (``-``: stdin; ``.gz``: gunzipped), split on ``\\n`` only."""
    import gzip

    if path == "-":
        stream: IO[bytes] | gzip.GzipFile | None = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
        if stream is None:     # a text stand-in for stdin (tests): newlines are \n already
            for line in sys.stdin:
                yield line.rstrip("\n")
            return
    else:
        stream = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")  # noqa: SIM115
    try:
        for raw in stream:      # binary iteration splits on b"\n" only
            yield from _split_lines(raw)
    finally:
        if path != "-":
            stream.close()


def _lines(paths: Sequence[str], skip: int = 0) -> Iterator[str]:
    """Every input line, after the first ``skip`` (for --server and --resume)."""
    for p in paths or ["-"]:
        for line in _file_lines(p):
            if skip:
                skip -= 1
                continue
            yield line


def _tasks(paths: Sequence[str], chunk_lines: int, partial: bool) -> Iterator[Task]:
    for p in paths or ["-"]:
        if p == "-" or p.endswith(".gz"):
            for chunk in _chunks(_file_lines(p), chunk_lines):
                yield score_lines, (chunk, partial)
        else:
            for start, end in _ranges(p, chunk_lines):
                yield score_range, (p, start, end, partial)


def _expand(specs: Sequence[str]) -> list[str]:
    """Files, globs and directories → files (``-`` kept), as the archive backends see them."""
    from .partitions import expand

    out: list[str] = []
    for spec in specs:
        out.extend(["-"] if spec == "-" else [f.name for f in expand([spec])])
    return out


def _count_lines(paths: Sequence[str]) -> int | None:
    """Lines in the input files (for the ETA), or None when reading stdin or gzip."""
    if not paths or any(p == "-" or p.endswith(".gz") for p in paths):
        return None
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            last = b"\n"
            while block := f.read(1 << 20):
                total += block.count(b"\n")
                last = block[-1:]
            total += last != b"\n"
    return total


def _resume_point(path: str) -> int:
    """Records already in ``path`` (complete lines; a torn last line is cut off)."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            keep = data.rfind(b"\n") + 1
            if keep != len(data):
                f.truncate(keep)
            return data.count(b"\n")
    except FileNotFoundError:
        return 0


# ----------------------------------------------------------------------------- progress

@dataclass
class _Progress:
    """Counts records; draws a bar with rate and ETA on a terminal."""

    stream: IO[str]
    total: int | None
    draw: bool
    done: int = 0
    ok: int = 0
    internal: int = 0
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    start: float = field(default_factory=time.perf_counter)
    last_draw: float = 0.0

    def add(self, block: Block) -> None:
        self.done += block.lines
        self.ok += block.ok
        self.internal += block.internal
        self.kinds.update(block.kinds)
        if self.draw:
            now = time.perf_counter()
            if now - self.last_draw >= PROGRESS_INTERVAL:
                self.last_draw = now
                self._bar(now)

    def _bar(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.done / elapsed
        if self.total:
            frac = min(self.done / self.total, 1.0)
            filled = int(frac * 30)
            eta = (self.total - self.done) / rate if rate else 0.0
            text = (f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} "
                    f"{frac:6.1%}  {rate:,.0f}/s  ETA {_clock(eta)} ")
        else:
            text = f"\r{self.done} replays  {rate:,.0f}/s  {_clock(elapsed)} "
        self.stream.write(text)
        self.stream.flush()

    def finish(self, where: str) -> None:
        elapsed = time.perf_counter() - self.start
        if self.draw:
            self._bar(time.perf_counter())
            self.stream.write("\n")
        bad = self.done - self.ok
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        self.stream.write(
            f"score-replays: {self.done} replays, {self.ok} scored"
            + (f" ({kinds})" if kinds else "")
            + f", {bad} rejected" + (f" ({self.internal} internal errors)" if self.internal else "")
            + f"; {elapsed:.2f} s, {self.done / elapsed if elapsed else 0:,.0f} replays/s, "
            f"{where}\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600:d}:{s // 60 % 60:02d}:{s % 60:02d}"


# ----------------------------------------------------------------------------- running

EXIT_OK, EXIT_REJECTED, EXIT_USAGE, EXIT_UNREACHABLE = 0, 1, 2, 3


def _local(tasks: Iterator[Task], jobs: int) -> Iterator[Block]:
    if jobs <= 1:
        for fn, args in tasks:
            yield fn(*args)
        return
    import multiprocessing

    from shuangkou import core  # noqa: F401 - imported once here, inherited by the forked workers

    with multiprocessing.Pool(jobs) as pool:
        pending: collections.deque[Any] = collections.deque()
        for fn, args in tasks:
            pending.append(pool.apply_async(fn, args))
            if len(pending) >= jobs * WINDOW_PER_JOB:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def _remote(lines: Iterable[str], target: str, jobs: int) -> Iterator[Block]:
    from shuangkou.service.remote import score_remote  # the gRPC client (imported only when used)

    for rec in score_remote(lines, target, jobs):
        block = Block()
        record = json.loads(rec) if isinstance(rec, str) else rec
        block.text = block.add(record) + "\n"
        yield block


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shuangkou score-replays",
        description="Validate and score replays (JSON lines, docs/replays.md). One JSON "
                    "record per input line goes to stdout, in order; progress and a summary "
                    "go to stderr. With --output-dir (and --dask or --shard) an archive is "
                    "scored into partition files, resumably (docs/archives.md).")
    p.add_argument("files", nargs="*", metavar="INPUT",
                   help="JSONL files (.gz too), globs or directories ('-' or none: stdin)")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                   help="worker processes (default: every core, %(default)s here); with "
                        "--server: concurrent streams")
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK, metavar="N",
                   help="replays per task sent to a worker (default %(default)s)")
    p.add_argument("--partial-deal", action="store_true",
                   help="accept hands that are only part of the deck (puzzles, tests)")
    p.add_argument("--no-progress", action="store_true",
                   help="never draw the progress bar (it is drawn only on a terminal)")
    p.add_argument("--server", metavar="TARGET",
                   help="score on running services: host:port[,host:port...] or a gRPC "
                        "target (dns:///name:port) instead of locally")
    p.add_argument("--output", metavar="FILE",
                   help="write the records to FILE instead of stdout")
    p.add_argument("--resume", action="store_true",
                   help="with --output: keep FILE's complete records and score only the "
                        "input lines after them")
    archive = p.add_argument_group("archives (docs/archives.md)")
    archive.add_argument("-o", "--output-dir", metavar="DIR",
                         help="score into DIR: one JSONL per partition, a manifest and "
                              "summary.json; a rerun finishes only incomplete partitions")
    archive.add_argument("--dask", metavar="ADDRESS",
                         help="score the partitions on a Dask cluster: a scheduler address "
                              "(tcp://host:8786) or local[:N] (a local cluster of N workers)")
    archive.add_argument("--shard", metavar="I/N",
                         help="score only shard I of N (every N-th partition from I; e.g. "
                              "$JOB_COMPLETION_INDEX/N in a Kubernetes Indexed Job)")
    archive.add_argument("--partition-lines", type=int, metavar="N",
                         help="lines per partition (default 10000)")
    archive.add_argument("--merge", action="store_true",
                         help="after sharded runs: check every partition of --output-dir "
                              "and write its summary (no scoring)")
    return p


def _fail(message: str, status: int) -> int:
    print(f"shuangkou score-replays: {message}", file=sys.stderr)
    return status


def _archive_main(args: argparse.Namespace, draw: bool) -> int:
    from . import archive

    outdir = args.output_dir
    try:
        if args.merge:
            summary, missing = archive.merge(outdir)
            if summary is None:
                return _fail(f"{len(missing)} partitions of {outdir} are not complete "
                             f"(first: {', '.join(missing[:5])}); rerun their shards", EXIT_USAGE)
            sys.stderr.write(archive.format_summary(summary, outdir))
            return EXIT_OK if summary["rejected"] == 0 else EXIT_REJECTED
        run = archive.prepare(args.files, outdir,
                              args.partition_lines or archive.DEFAULT_PARTITION_LINES,
                              args.partial_deal)
    except OSError as exc:
        return _fail(f"cannot read {exc.filename or ''}: {exc.strerror or exc}", EXIT_USAGE)
    except archive.ArchiveError as exc:
        return _fail(str(exc), EXIT_USAGE)
    parts = run.parts
    if args.shard:
        index, count = archive.parse_shard(args.shard)
        parts = archive.shard_of(parts, index, count)
    pending = [p for p in parts if not run.complete(p)]
    already = len(parts) - len(pending)
    client = None
    try:
        if args.dask:
            client = archive.dask_client(args.dask)
            n = len(client.scheduler_info()["workers"])
            backend = f"dask {args.dask}, {n} worker{'s' if n != 1 else ''}"
            results = archive.run_dask(run, pending, client)
        else:
            backend = f"{args.jobs} local process{'es' if args.jobs > 1 else ''}"
            results = archive.run_local(run, pending, args.jobs)
        if args.shard:
            backend += f", shard {args.shard}"
        this_run = archive.execute(pending, results, backend, already, draw)
    except archive.ClusterError as exc:
        return _fail(str(exc), EXIT_UNREACHABLE)
    except archive.ArchiveError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except Exception as exc:  # noqa: BLE001 - e.g. OSError, Dask's KilledWorker: one line
        if not (args.dask or isinstance(exc, OSError)):
            raise
        return _fail(f"{type(exc).__name__}: {exc} (rerun the same command to finish the "
                     "remaining partitions)", EXIT_USAGE)
    finally:
        if client is not None:
            cluster = client.cluster
            client.close()
            if cluster is not None:
                cluster.close()
    if args.shard:
        stats, _ = archive.summarize(run, parts)
        print(f"score-replays: shard {args.shard}: {len(parts)} partitions, {stats.lines} "
              f"lines ({stats.ok} scored); {this_run['lines']} lines in "
              f"{this_run['seconds']:.2f} s this run; merge with --merge --output-dir "
              f"{outdir}", file=sys.stderr)
        return EXIT_OK if stats.ok == stats.lines else EXIT_REJECTED
    summary = archive.write_summary(run, this_run)
    if summary is None:    # a partition vanished under us: say so, the rerun finishes it
        return _fail("some partitions are not complete; rerun the same command", EXIT_USAGE)
    sys.stderr.write(archive.format_summary(summary, outdir))
    return EXIT_OK if summary["rejected"] == 0 else EXIT_REJECTED


def main(argv: list[str] | None = None) -> int:
    """Run the batch scorer; returns the exit status (0 ok, 1 some rejected, 2 bad usage or
    input, 3 a server or scheduler that cannot be reached or failed)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.chunk_size < 1 or (args.partition_lines or 1) < 1:
        parser.error("--jobs, --chunk-size and --partition-lines must be at least 1")
    if args.server and args.partial_deal:
        parser.error("--partial-deal is a replay field with --server: put "
                     "\"partial_deal\": true in the replays")
    archive_flags = [f for f, v in (("--dask", args.dask), ("--shard", args.shard),
                                    ("--merge", args.merge),
                                    ("--partition-lines", args.partition_lines)) if v]
    if archive_flags and not args.output_dir:
        parser.error(f"{archive_flags[0]} needs --output-dir")
    if args.output_dir and (args.server or args.output or args.resume):
        parser.error("--output-dir does not combine with --server, --output or --resume")
    if args.dask and args.shard:
        parser.error("--dask and --shard are two ways to spread the work: choose one")
    if args.shard:
        from .archive import parse_shard
        try:
            parse_shard(args.shard)
        except ValueError as exc:
            parser.error(str(exc))
    if args.server:
        from .remote import parse_targets
        try:
            parse_targets(args.server)
        except ValueError as exc:
            parser.error(str(exc))
    if args.resume and not args.output:
        parser.error("--resume needs --output FILE (the records to resume from)")
    if args.output_dir and not args.merge and (not args.files or "-" in args.files):
        parser.error("--output-dir scores files, globs or directories (not stdin)")
    draw = not args.no_progress and sys.stderr.isatty()
    if args.output_dir:
        return _archive_main(args, draw)
    try:
        files = _expand(args.files)
        total = _count_lines(files) if draw else None
    except OSError as exc:
        return _fail(f"cannot read {exc.filename}: {exc.strerror}", EXIT_USAGE)
    skip = _resume_point(args.output) if args.resume else 0
    if total is not None:
        total = max(total - skip, 0)
    out = open(args.output, "a" if args.resume else "w", encoding="utf-8") if args.output \
        else sys.stdout  # noqa: SIM115
    progress = _Progress(sys.stderr, total, draw)
    if args.server:
        blocks = _remote(_lines(files, skip), args.server, args.jobs)
        where = f"server {args.server}, {args.jobs} streams"
    elif skip:
        tasks = ((score_lines, (chunk, args.partial_deal))
                 for chunk in _chunks(_lines(files, skip), args.chunk_size))
        blocks = _local(tasks, args.jobs)
        where = f"{args.jobs} worker{'s' if args.jobs > 1 else ''}, resumed after {skip}"
    else:
        blocks = _local(_tasks(files, args.chunk_size, args.partial_deal), args.jobs)
        where = f"{args.jobs} worker{'s' if args.jobs > 1 else ''}"
    try:
        for block in blocks:
            out.write(block.text)
            progress.add(block)
        out.flush()
    except BrokenPipeError:       # `... | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_REJECTED
    except Exception as exc:
        out.flush()
        if isinstance(exc, RemoteFailure):   # the servers failed (unreachable, gone): say so
            return _fail(f"server {exc} (after {progress.done} records"
                         + ("; rerun with --output FILE --resume to continue)" if args.output
                            else ")"), EXIT_UNREACHABLE)
        if args.server:
            return _fail(f"server {args.server} failed after {progress.done} records: "
                         f"{type(exc).__name__}: {exc}", EXIT_UNREACHABLE)
        if isinstance(exc, OSError):   # an input file vanished or became unreadable
            return _fail(f"cannot read {exc.filename}: {exc.strerror}", EXIT_USAGE)
        raise
    finally:
        if out is not sys.stdout:
            out.close()
    progress.finish(where)
    return EXIT_OK if progress.ok == progress.done else EXIT_REJECTED


if __name__ == "__main__":
    sys.exit(main())
