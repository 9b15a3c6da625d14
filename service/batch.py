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

Exit status: 0 when every replay scored, 1 when some records are errors, 2 on bad usage, an
unreadable input file or a failed server.
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

__all__ = ["main", "score_line", "score_lines", "score_range", "error_record", "result_record"]

DEFAULT_CHUNK = 200          # replays per task sent to a worker
WINDOW_PER_JOB = 4           # chunks in flight per worker (bounds memory on huge inputs)
PROGRESS_INTERVAL = 0.2      # seconds between progress-bar redraws
SAMPLE_BYTES = 1 << 16       # read to estimate a file's line length (chunk sizes in bytes)


# ----------------------------------------------------------------------------- records

def result_record(result: dict[str, Any]) -> dict[str, Any]:
    """The output record of a scored replay: ``ok`` plus the result's ``to_dict()``."""
    return {"ok": True, **result}


def error_record(reason: str, action: int | None = None) -> dict[str, Any]:
    """The output record of a rejected line."""
    error: dict[str, Any] = {"reason": reason}
    if action is not None:
        error = {"action": action, **error}
    return {"ok": False, "error": error}


def _record(line: str, partial_deal: bool) -> dict[str, Any]:
    from core_ext.errors import ShuangkouError
    from core_ext.replay import ReplayError, score_replay

    text = line.strip()
    if not text:
        return error_record("empty line (expected one replay JSON object)")
    try:
        return result_record(score_replay(text, partial_deal=partial_deal).to_dict())
    except ReplayError as exc:
        return error_record(exc.detail, exc.action)
    except ShuangkouError as exc:
        return error_record(str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug must not stop a batch of 100k
        rec = error_record(f"internal error: {type(exc).__name__}: {exc}")
        rec["error"]["internal"] = True
        return rec


def _dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def score_line(line: str, partial_deal: bool = False) -> str:
    """Score one JSONL line; returns the output record as one JSON line (no newline)."""
    return _dumps(_record(line, partial_deal))


@dataclass
class Block:
    """Records of a chunk of input lines, joined, with the counts the summary needs."""

    text: str = ""            # one record per line, each ending in a newline
    lines: int = 0
    ok: int = 0
    internal: int = 0
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, record: dict[str, Any]) -> str:
        self.lines += 1
        if record["ok"]:
            self.ok += 1
            self.kinds[record["kind"]] += 1
        elif record["error"].get("internal"):
            self.internal += 1
        return _dumps(record)


def score_lines(lines: Sequence[str], partial_deal: bool = False) -> Block:
    """Score a chunk of lines (a pool worker's unit of work for stdin)."""
    block = Block()
    block.text = "".join(block.add(_record(line, partial_deal)) + "\n" for line in lines)
    return block


def score_range(path: str, start: int, end: int, partial_deal: bool = False) -> Block:
    """Score the lines of ``path`` in the byte range [start, end) (a worker's unit of work
    for files: the parent never reads or ships the replays)."""
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(end - start)
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()            # the range ends with a newline
    return score_lines(lines, partial_deal)


# ----------------------------------------------------------------------------- input

Task = tuple[Callable[..., Block], tuple[Any, ...]]


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


def _stdin_chunks(stream: IO[str], chunk_lines: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in stream:
        chunk.append(line.rstrip("\n"))
        if len(chunk) >= chunk_lines:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _tasks(paths: Sequence[str], chunk_lines: int, partial: bool) -> Iterator[Task]:
    for p in paths or ["-"]:
        if p == "-":
            for chunk in _stdin_chunks(sys.stdin, chunk_lines):
                yield score_lines, (chunk, partial)
        else:
            for start, end in _ranges(p, chunk_lines):
                yield score_range, (p, start, end, partial)


def _lines(paths: Sequence[str]) -> Iterator[str]:
    """Every input line (for --server)."""
    for p in paths or ["-"]:
        stream = sys.stdin if p == "-" else open(p, encoding="utf-8", errors="replace")  # noqa: SIM115
        try:
            for line in stream:
                yield line.rstrip("\n")
        finally:
            if stream is not sys.stdin:
                stream.close()


def _check_readable(paths: Sequence[str]) -> None:
    for p in paths:
        if p != "-":
            with open(p, "rb"):
                pass


def _count_lines(paths: Sequence[str]) -> int | None:
    """Lines in the input files (for the ETA), or None when reading stdin."""
    if not paths or "-" in paths:
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

def _local(tasks: Iterator[Task], jobs: int) -> Iterator[Block]:
    if jobs <= 1:
        for fn, args in tasks:
            yield fn(*args)
        return
    import multiprocessing

    with multiprocessing.Pool(jobs) as pool:
        pending: collections.deque[Any] = collections.deque()
        for fn, args in tasks:
            pending.append(pool.apply_async(fn, args))
            if len(pending) >= jobs * WINDOW_PER_JOB:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()


def _remote(lines: Iterable[str], target: str, jobs: int) -> Iterator[Block]:
    from service.remote import score_remote  # the gRPC client (imported only when used)

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
                    "go to stderr.")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="JSONL files of replays ('-' or none: stdin)")
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
                   help="score on a running service (host:port) instead of locally")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the batch scorer; returns the exit status (0 ok, 1 some rejected, 2 failure)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.chunk_size < 1:
        parser.error("--jobs and --chunk-size must be at least 1")
    if args.server and args.partial_deal:
        parser.error("--partial-deal is a replay field with --server: put "
                     "\"partial_deal\": true in the replays")
    draw = not args.no_progress and sys.stderr.isatty()
    try:
        _check_readable(args.files)
        total = _count_lines(args.files) if draw else None
    except OSError as exc:
        print(f"shuangkou score-replays: cannot read {exc.filename}: {exc.strerror}",
              file=sys.stderr)
        return 2
    out = sys.stdout
    progress = _Progress(sys.stderr, total, draw)
    if args.server:
        blocks = _remote(_lines(args.files), args.server, args.jobs)
        where = f"server {args.server}, {args.jobs} streams"
    else:
        blocks = _local(_tasks(args.files, args.chunk_size, args.partial_deal), args.jobs)
        where = f"{args.jobs} worker{'s' if args.jobs > 1 else ''}"
    try:
        for block in blocks:
            out.write(block.text)
            progress.add(block)
    except BrokenPipeError:       # `... | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:
        out.flush()
        if args.server:           # the server failed (unreachable, deadline): say so
            print(f"shuangkou score-replays: server {args.server} failed after "
                  f"{progress.done} records: {type(exc).__name__}: {exc}", file=sys.stderr)
        elif isinstance(exc, OSError):   # an input file vanished or became unreadable
            print(f"shuangkou score-replays: cannot read {exc.filename}: {exc.strerror}",
                  file=sys.stderr)
        else:
            raise
        return 2
    out.flush()
    progress.finish(where)
    return 0 if progress.ok == progress.done else 1


if __name__ == "__main__":
    sys.exit(main())
