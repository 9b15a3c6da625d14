"""``shuangkou score-replays``: validate and score JSONL replays in bulk.

Reads replays (one JSON document per line, docs/replays.md) from files or stdin and writes
one JSON record per input line to stdout, in input order::

    {"ok": true, "kind": "double", "finish_order": [0, 2], "final": [8, -8, 8, -8], ...}
    {"ok": false, "error": {"action": 17, "reason": "seat 2 does not hold 7S (...)"}}

``error.action`` (0-based index into the replay's ``actions``) is absent when the replay is
malformed as a whole. An invalid replay never stops the batch. The work is spread over a
process pool (``--jobs``, default: every core) in chunks: workers read their byte range of
an input file themselves (stdin is read by the parent and shipped in chunks of lines), and
a bounded number of chunks is in flight (:mod:`~shuangkou.service.batch.pool`). A progress
bar with rate and ETA goes to stderr when stderr is a terminal, and a summary always.
``--server`` sends the replays to a running service instead
(:mod:`~shuangkou.service.batch.remote`), with the same output.

Inputs may be files (plain or ``.gz``), globs and directories; a directory or glob never
yields a run's own output (the ``--output`` file, an archive folder's manifest, summary and
partitions). ``-o/--output FILE --resume`` continues an interrupted run from the records
already in FILE. With ``--output-dir`` the input is an archive scored partition by
partition, on a local pool, a Dask cluster (``--dask``) or one shard of a Kubernetes
Indexed Job (``--shard``): :mod:`~shuangkou.service.batch.archive`.

Exit status (:mod:`~shuangkou.service.exits`, as every command): 0 when every replay scored,
3 when the run is complete and some records are rejections, 2 on bad usage, an unreadable
input file or a server (or a Dask scheduler) that cannot be reached or fails, 70 for a crash.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..exits import Exit
from ..heap import MMAP_CEILING, keep_heap_pad
from ..inputs import (
    Line,
    byte_ranges,
    count_lines,
    expand_names,
    file_lines,
    one_document,
    read_range,
)
from ..shown import shown
from . import pool
from .pages import DEFAULT_LIMIT, Rejected, write_pages
from .progress import Progress
from .records import Block, RemoteFailure, score_lines

if TYPE_CHECKING:   # the archive machinery is imported only by an --output-dir run
    from .archive import Job

__all__ = ["main", "archive_arguments", "archive_main", "check_archive_args", "score_range"]

DEFAULT_CHUNK = 200          # replays per task sent to a worker


# ----------------------------------------------------------------------------- input

def score_range(path: str, start: int, end: int, partial_deal: bool = False) -> Block:
    """Score the lines of ``path`` in the byte range [start, end) (a worker's unit of work
    for files: the parent never reads or ships the replays)."""
    return score_lines(read_range(path, start, end), partial_deal)


def _chunks(lines: Iterable[Line], chunk_lines: int) -> Iterator[list[Line]]:
    chunk: list[Line] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= chunk_lines:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _lines(paths: Sequence[str], skip: int = 0) -> Iterator[Line]:
    """Every input line, after the first ``skip`` (for --server and --resume)."""
    for p in paths or ["-"]:
        for line in file_lines(p):
            if skip:
                skip -= 1
                continue
            yield line


def _tasks(paths: Sequence[str], chunk_lines: int, partial: bool) -> Iterator[pool.Task[Block]]:
    for p in paths or ["-"]:
        if p == "-" or p.endswith(".gz"):
            for chunk in _chunks(file_lines(p), chunk_lines):
                yield score_lines, (chunk, partial)
        else:
            for start, end in byte_ranges(p, chunk_lines):
                yield score_range, (p, start, end, partial)


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


class _Tally:
    """The records written so far, counted for the summary line."""

    def __init__(self) -> None:
        self.done = self.ok = self.internal = 0
        self.kinds: collections.Counter[str] = collections.Counter()

    def add(self, block: Block) -> None:
        self.done += block.lines
        self.ok += block.ok
        self.internal += block.internal
        self.kinds.update(block.kinds)

    def summary(self, seconds: float, where: str) -> str:
        bad = self.done - self.ok
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        return (f"score-replays: {self.done} replays, {self.ok} scored"
                + (f" ({kinds})" if kinds else "")
                + f", {bad} rejected"
                + (f" ({self.internal} internal errors)" if self.internal else "")
                + f"; {seconds:.2f} s, {self.done / seconds if seconds else 0:,.0f} replays/s, "
                f"{where}\n")


# ----------------------------------------------------------------------------- running

def _remote(lines: Iterable[Line], target: str, jobs: int) -> Iterator[Block]:
    from .remote import score_remote  # the gRPC client (imported only when used)

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
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the records to FILE instead of stdout (-o names an output "
                        "FILE in every command; an archive's folder is --output-dir)")
    p.add_argument("--resume", action="store_true",
                   help="with --output: keep FILE's complete records and score only the "
                        "input lines after them")
    views = p.add_argument_group("pages of rejected lines (docs/replays.md)")
    views.add_argument("--view-rejected", metavar="DIR",
                       help="write a page per rejected line into DIR (as `shuangkou view` "
                            "makes it, named by file and line) and DIR/index.html linking them")
    views.add_argument("--view-limit", type=int, metavar="N", default=None,
                       help="pages written at most (default 100)")
    archive_arguments(p, "score", 10_000)
    return p


def archive_arguments(p: argparse.ArgumentParser, verb: str, partition_lines: int) -> None:
    """The archive options (``score-replays`` and ``review-replays`` share them)."""
    archive = p.add_argument_group("archives (docs/archives.md)")
    archive.add_argument("--output-dir", metavar="DIR",
                         help=f"{verb} into DIR: one JSONL per partition, a manifest and "
                              "summary.json; a rerun finishes only incomplete partitions")
    archive.add_argument("--dask", metavar="ADDRESS",
                         help=f"{verb} the partitions on a Dask cluster: a scheduler address "
                              "(tcp://host:8786) or local[:N] (a local cluster of N workers)")
    archive.add_argument("--shard", metavar="I/N",
                         help=f"{verb} only shard I of N (every N-th partition from I; e.g. "
                              "$JOB_COMPLETION_INDEX/N in a Kubernetes Indexed Job)")
    archive.add_argument("--partition-lines", type=int, metavar="N",
                         help=f"lines per partition (default {partition_lines})")
    archive.add_argument("--merge", action="store_true",
                         help="after sharded runs: check every partition of --output-dir "
                              "and write its summary (reading the partitions only)")


def check_archive_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The archive options' rules (exits with a usage error)."""
    archive_flags = [f for f, v in (("--dask", args.dask), ("--shard", args.shard),
                                    ("--merge", args.merge),
                                    ("--partition-lines", args.partition_lines)) if v]
    if archive_flags and not args.output_dir:
        parser.error(f"{archive_flags[0]} needs --output-dir")
    if args.dask and args.shard:
        parser.error("--dask and --shard are two ways to spread the work: choose one")
    if args.shard:
        from .archive import parse_shard
        try:
            parse_shard(args.shard)
        except ValueError as exc:
            parser.error(str(exc))
    if args.output_dir and not args.merge and (not args.files or "-" in args.files):
        parser.error("--output-dir reads files, globs or directories (not stdin)")


def _shape_hint(files: Sequence[str], command: str) -> None:
    """When every line was rejected: say so if an input is one replay printed over many
    lines (a file for ``shuangkou score`` / ``review``, not an archive), and what to run."""
    for name in files:
        if lines := one_document(name):
            single = "score" if command == "score-replays" else "review"
            print(shown(f"{command}: {name} is one JSON document over {lines:,} lines, not "
                        f"JSON lines (one replay a line): `shuangkou {single} {name}` takes "
                        f"it as it is; `jq -c . {name}` writes it as one line"),
                  file=sys.stderr)
            return


def _fail(message: str, status: int, command: str = "score-replays") -> int:
    print(f"shuangkou {command}: {shown(message)}", file=sys.stderr)
    return status


def _rejected(args: argparse.Namespace) -> Rejected:
    return Rejected(args.view_limit or DEFAULT_LIMIT)


def _write_pages(args: argparse.Namespace, rejected: Rejected, files: Sequence[str]) -> None:
    """--view-rejected: the pages of the noted lines and their index (one line on stderr)."""
    count, index = write_pages(args.view_rejected, rejected.locate(files), rejected.count,
                               args.partial_deal)
    more = f" (the first {count:,} of {rejected.count:,})" if count < rejected.count else ""
    print(f"score-replays: {count:,} pages of rejected lines{more}: {shown(index)}",
          file=sys.stderr)


def archive_main(args: argparse.Namespace, draw: bool, job: Job | None = None) -> int:
    """An ``--output-dir`` run of ``job`` (default: scoring; ``review-replays`` passes its
    own: :mod:`~shuangkou.service.batch.review`) from the parsed arguments."""
    from . import archive

    job = job or archive.SCORE
    client = None
    if args.dask and not args.merge:
        # Reach the cluster before anything is written: a run that cannot start leaves no
        # manifest behind.
        try:
            client = archive.dask_client(args.dask)
        except archive.ClusterError as exc:
            return _fail(str(exc), Exit.USAGE, job.name)
        except archive.ArchiveError as exc:
            return _fail(str(exc), Exit.USAGE, job.name)
    try:
        return _archive_work(args, draw, client, job)
    finally:
        if client is not None:
            cluster = client.cluster
            client.close()
            if cluster is not None:
                cluster.close()


def _archive_work(args: argparse.Namespace, draw: bool, client: Any, job: Job) -> int:
    from . import archive

    outdir = args.output_dir
    try:
        if args.merge:
            summary, missing = archive.merge(outdir, job)
            if summary is None:
                return _fail(f"{len(missing)} partitions of {outdir} are not complete "
                             f"(first: {', '.join(missing[:5])}); rerun their shards",
                             Exit.USAGE, job.name)
            sys.stderr.write(shown(archive.format_summary(summary, outdir, job), lines=True))
            return Exit.OK if summary["rejected"] == 0 else Exit.REJECTED
        run = archive.prepare(args.files, outdir,
                              args.partition_lines or job.default_partition_lines,
                              args.partial_deal, job)
    except OSError as exc:
        return _fail(f"cannot read {exc.filename or ''}: {exc.strerror or exc}", Exit.USAGE,
                     job.name)
    except archive.ArchiveError as exc:
        return _fail(str(exc), Exit.USAGE, job.name)
    parts = run.parts
    if args.shard:
        index, count = archive.parse_shard(args.shard)
        parts = archive.shard_of(parts, index, count)
    pending = [p for p in parts if not run.complete(p)]
    already = len(parts) - len(pending)
    try:
        if client is not None:
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
        return _fail(str(exc), Exit.USAGE, job.name)
    except archive.ArchiveError as exc:
        return _fail(str(exc), Exit.USAGE, job.name)
    except Exception as exc:
        # The machinery failed (a file, a connection, a Dask worker lost: KilledWorker …),
        # not the code: one line, and the rerun finishes. Anything else is a bug: a crash.
        if not (isinstance(exc, (OSError, TimeoutError))
                or type(exc).__module__.partition(".")[0] == "distributed"):
            raise
        return _fail(f"{type(exc).__name__}: {exc} (rerun the same command to finish the "
                     "remaining partitions)", Exit.USAGE, job.name)
    if args.shard:
        stats, _ = archive.summarize(run, parts)
        print(f"{job.name}: shard {args.shard}: {len(parts)} partitions, {stats.lines} "
              f"lines ({stats.ok} {job.done}); {this_run['lines']} lines in "
              f"{this_run['seconds']:.2f} s this run; merge with --merge --output-dir "
              f"{outdir}", file=sys.stderr)
        return Exit.OK if stats.ok == stats.lines else Exit.REJECTED
    summary = archive.write_summary(run, this_run)
    if summary is None:    # a partition vanished under us: say so, the rerun finishes it
        return _fail("some partitions are not complete; rerun the same command", Exit.USAGE,
                     job.name)
    sys.stderr.write(shown(archive.format_summary(summary, outdir, job), lines=True))
    if summary[job.done] == 0:
        _shape_hint([f.name for f in run.files], job.name)
    if getattr(args, "view_rejected", None):
        rejected = _rejected(args)
        rejected.add_archive(run.part_path(p, "jsonl") for p in run.parts)
        _write_pages(args, rejected, [f.name for f in run.files])
    return Exit.OK if summary["rejected"] == 0 else Exit.REJECTED


def main(argv: list[str] | None = None) -> int:
    """Run the batch scorer; returns the exit status (:class:`~shuangkou.service.exits.Exit`:
    0 every line scored, 3 some rejected, 2 bad usage, input or a server or scheduler that
    cannot be reached or failed)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.chunk_size < 1 or (args.partition_lines or 1) < 1:
        parser.error("--jobs, --chunk-size and --partition-lines must be at least 1")
    if args.server and args.partial_deal:
        parser.error("--partial-deal is a replay field with --server: put "
                     "\"partial_deal\": true in the replays")
    check_archive_args(parser, args)
    if args.output_dir and (args.server or args.output or args.resume):
        parser.error("--output-dir does not combine with --server, --output or --resume")
    if args.server:
        from .remote import parse_targets
        try:
            parse_targets(args.server)
        except ValueError as exc:
            parser.error(str(exc))
    if args.resume and not args.output:
        parser.error("--resume needs --output FILE (the records to resume from)")
    if args.output and os.path.isdir(args.output):
        parser.error(f"-o/--output names the records FILE, and {args.output} is a folder; "
                     "an archive is scored into a folder with --output-dir DIR")
    if args.view_rejected and (not args.files or "-" in args.files or args.merge
                               or args.shard):
        parser.error("--view-rejected reads the rejected lines again: give input files "
                     "(not stdin), without --merge or --shard")
    if (args.view_limit or 1) < 1:
        parser.error("--view-limit must be at least 1")
    draw = not args.no_progress and sys.stderr.isatty()
    # blocks of lines and records freed and made again, chunk after chunk
    keep_heap_pad(mmap_below=MMAP_CEILING)
    if args.output_dir:
        return archive_main(args, draw)
    try:
        # the records file is never an input, even inside an input folder (a rerun resumes)
        files = expand_names(args.files, [args.output] if args.output else [])
        total = count_lines(files) if draw else None
    except OSError as exc:
        return _fail(f"cannot read {exc.filename}: {exc.strerror}", Exit.USAGE)
    if args.output and os.path.abspath(args.output) in map(os.path.abspath, files):
        return _fail(f"--output {args.output} is also an input: the records would overwrite "
                     "the replays", Exit.USAGE)
    skip = _resume_point(args.output) if args.resume else 0
    if total is not None:
        total = max(total - skip, 0)
    out = open(args.output, "a" if args.resume else "w", encoding="utf-8") if args.output \
        else sys.stdout  # noqa: SIM115
    progress = Progress(sys.stderr, total, draw)
    tally = _Tally()
    rejected = _rejected(args)
    rejected.seen = skip
    if args.server:
        blocks = _remote(_lines(files, skip), args.server, args.jobs)
        where = f"server {args.server}, {args.jobs} streams"
    elif skip:
        tasks = ((score_lines, (chunk, args.partial_deal))
                 for chunk in _chunks(_lines(files, skip), args.chunk_size))
        blocks = pool.run(tasks, args.jobs)
        where = f"{args.jobs} worker{'s' if args.jobs > 1 else ''}, resumed after {skip}"
    else:
        blocks = pool.run(_tasks(files, args.chunk_size, args.partial_deal), args.jobs)
        where = f"{args.jobs} worker{'s' if args.jobs > 1 else ''}"
    try:
        for block in blocks:
            out.write(block.text)
            tally.add(block)
            if args.view_rejected and block.ok < block.lines:
                rejected.add_records(block.text)
            progress.add(block.lines)
        out.flush()
    except BrokenPipeError:       # `... | head`: exits.guarded stops quietly
        raise
    except Exception as exc:
        out.flush()
        if isinstance(exc, RemoteFailure):   # the servers failed (unreachable, gone): say so
            return _fail(f"{exc} (after {tally.done} records"
                         + ("; rerun with --output FILE --resume to continue)" if args.output
                            else ")"), Exit.USAGE)
        if args.server:
            return _fail(f"server {args.server} failed after {tally.done} records: "
                         f"{type(exc).__name__}: {exc}", Exit.USAGE)
        if isinstance(exc, OSError):   # an input file vanished or became unreadable
            return _fail(f"cannot read {exc.filename}: {exc.strerror}", Exit.USAGE)
        raise
    finally:
        if out is not sys.stdout:
            out.close()
    sys.stderr.write(shown(tally.summary(progress.finish(), where), lines=True))
    if tally.ok == 0:
        _shape_hint(files, "score-replays")
    sys.stderr.flush()
    if args.view_rejected:
        _write_pages(args, rejected, files)
    return Exit.OK if tally.ok == tally.done else Exit.REJECTED


if __name__ == "__main__":
    sys.exit(main())
