"""``shuangkou score-replays``: validate and score JSONL replays in bulk.

Reads replays (one JSON document per line, docs/replays.md) from files or stdin and writes
one JSON record per input line to stdout, in input order::

    {"ok": true, "kind": "double", "finish_order": [0, 2], "final": [8, -8, 8, -8], ...}
    {"ok": false, "error": {"action": 17, "reason": "seat 2 does not hold 7S (...)"}}

``error.action`` (0-based index into the replay's ``actions``) is absent when the replay is
malformed as a whole. An invalid replay never stops the batch. The work is spread over a
process pool (``--jobs``, default: every core) in chunks; a progress bar with rate and ETA
goes to stderr when stderr is a terminal, and a summary always. ``--server`` sends the
replays to a running service instead (service.remote), with the same output.

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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["main", "score_line", "score_lines", "error_record", "result_record"]

DEFAULT_CHUNK = 200          # replays per task sent to a worker
WINDOW_PER_JOB = 4           # chunks in flight per worker (bounds memory on huge inputs)
PROGRESS_INTERVAL = 0.2      # seconds between progress-bar redraws


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


def score_line(line: str, partial_deal: bool = False) -> str:
    """Score one JSONL line; returns the output record as one JSON line (no newline)."""
    from core_ext.errors import ShuangkouError
    from core_ext.replay import ReplayError, score_replay

    text = line.strip()
    if not text:
        rec = error_record("empty line (expected one replay JSON object)")
    else:
        try:
            rec = result_record(score_replay(text, partial_deal=partial_deal).to_dict())
        except ReplayError as exc:
            rec = error_record(exc.reason, exc.action)
        except ShuangkouError as exc:
            rec = error_record(str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug must not stop a batch of 100k
            rec = error_record(f"internal error: {type(exc).__name__}: {exc}")
            rec["error"]["internal"] = True
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"))


def score_lines(lines: Sequence[str], partial_deal: bool = False) -> list[str]:
    """Score a chunk of lines (the unit of work of a pool worker)."""
    return [score_line(line, partial_deal) for line in lines]


# ----------------------------------------------------------------------------- input

def _open_inputs(paths: Sequence[str]) -> list[IO[str]]:
    if not paths:
        return [sys.stdin]
    streams = []
    for p in paths:
        streams.append(sys.stdin if p == "-" else open(p, encoding="utf-8"))  # noqa: SIM115
    return streams


def _lines(streams: Iterable[IO[str]]) -> Iterator[str]:
    for stream in streams:
        for line in stream:
            yield line.rstrip("\n")


def _chunks(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


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

    def add(self, record: str) -> None:
        self.done += 1
        if record.startswith('{"ok":true'):
            self.ok += 1
            at = record.find('"kind":"')
            if at >= 0:
                self.kinds[record[at + 8:record.find('"', at + 8)]] += 1
        elif '"internal":true' in record:
            self.internal += 1
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

    def finish(self, jobs: int, where: str) -> None:
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

def _local(chunks: Iterator[list[str]], jobs: int, partial: bool) -> Iterator[str]:
    if jobs <= 1:
        for chunk in chunks:
            yield from score_lines(chunk, partial)
        return
    import multiprocessing

    with multiprocessing.Pool(jobs) as pool:
        pending: collections.deque[Any] = collections.deque()
        for chunk in chunks:
            pending.append(pool.apply_async(score_lines, (chunk, partial)))
            if len(pending) >= jobs * WINDOW_PER_JOB:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()


def _remote(lines: Iterator[str], target: str, jobs: int) -> Iterator[str]:
    from service.remote import score_remote  # the gRPC client (imported only when used)

    for rec in score_remote(lines, target, jobs):
        yield rec if isinstance(rec, str) else json.dumps(rec, ensure_ascii=False,
                                                          separators=(",", ":"))


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
    """Run the batch scorer; returns the exit status (0 ok, 1 some rejected, 2 usage)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.chunk_size < 1:
        parser.error("--jobs and --chunk-size must be at least 1")
    if args.server and args.partial_deal:
        parser.error("--partial-deal is a replay field with --server: put "
                     "\"partial_deal\": true in the replays")
    try:
        streams = _open_inputs(args.files)
        total = _count_lines(args.files)
    except OSError as exc:
        print(f"shuangkou score-replays: cannot read {exc.filename}: {exc.strerror}",
              file=sys.stderr)
        return 2
    out = sys.stdout
    progress = _Progress(sys.stderr, total,
                         draw=not args.no_progress and sys.stderr.isatty())
    lines = _lines(streams)
    if args.server:
        records = _remote(lines, args.server, args.jobs)
        where = f"server {args.server}, {args.jobs} streams"
    else:
        records = _local(_chunks(lines, args.chunk_size), args.jobs, args.partial_deal)
        where = f"{args.jobs} worker{'s' if args.jobs > 1 else ''}"
    try:
        for record in records:
            out.write(record)
            out.write("\n")
            progress.add(record)
    except BrokenPipeError:       # `... | head`: stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as exc:      # the server failed (unreachable, deadline): say so
        if not args.server:
            raise
        out.flush()
        print(f"shuangkou score-replays: server {args.server} failed after "
              f"{progress.done} records: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        for s in streams:
            if s is not sys.stdin:
                s.close()
    out.flush()
    progress.finish(args.jobs, where)
    return 0 if progress.ok == progress.done else 1


if __name__ == "__main__":
    sys.exit(main())
