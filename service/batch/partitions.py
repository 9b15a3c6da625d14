"""The plan of an archive run: every input file cut into partitions on line boundaries.

:func:`plan` cuts every file (:func:`~shuangkou.service.inputs.expand` gives them in a
fixed order) into partitions of ``partition_lines`` lines (the last one of a file shorter).
The plan is a pure function of the files' contents and ``partition_lines``, so every run,
every shard and every retry cuts the same partitions: that is what makes a partition's
output name stable and the run resumable and exactly once.

A plain file's partition is a byte range the worker seeks to; a gzipped file's is a line
range; a gzip stream cannot be sought, so one task reads a gzipped file once and scores its
partitions in turn (:func:`read_sequential`). Lines are split by
:mod:`shuangkou.service.inputs`, as everywhere in the batch scorer.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass

from ..inputs import BLOCK, InputFile, Line, open_input, read_range, stream_lines

__all__ = ["Partition", "plan", "read_partition", "read_sequential", "plan_digest"]


@dataclass(frozen=True)
class Partition:
    """Lines ``first_line`` .. ``first_line + lines - 1`` (1-based) of one input file.

    ``start``/``end``: their byte range in a plain file (None for gzip). ``id`` names the
    output file; ids sort in the merged order (file order, then line order).
    """

    id: str
    file: int           # index into the plan's files
    first_line: int
    lines: int
    start: int | None
    end: int | None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def _cuts(f: InputFile, partition_lines: int) -> Iterator[tuple[int, int]]:
    """(byte offset after the line, lines so far) at every ``partition_lines``-th line end,
    then at the end of the file (offsets are of the decompressed stream for gzip)."""
    lines = offset = 0
    tail = b"\n"
    with open_input(f.path, f.gz) as stream:
        while block := stream.read(BLOCK):
            pos = 0
            while True:
                need = partition_lines - lines % partition_lines
                # find the need-th newline from pos (count first: most blocks hold no cut)
                if block.count(b"\n", pos) < need:
                    lines += block.count(b"\n", pos)
                    break
                for _ in range(need):
                    pos = block.index(b"\n", pos) + 1
                lines += need
                yield offset + pos, lines
            offset += len(block)
            tail = block[-1:]
    if tail != b"\n":
        lines += 1           # a last line without a newline
    yield offset, lines


def plan(files: Sequence[InputFile], partition_lines: int) -> list[Partition]:
    """Cut every file into partitions of ``partition_lines`` lines (reads each file once)."""
    if partition_lines < 1:
        raise ValueError("partition_lines must be at least 1")
    parts: list[Partition] = []
    for i, f in enumerate(files):
        prev_off = prev_lines = 0
        n = 0
        for off, lines in _cuts(f, partition_lines):
            if lines == prev_lines:
                continue       # the end of a file whose last partition is full
            parts.append(Partition(f"{i:05d}-{n:06d}", i, prev_lines + 1, lines - prev_lines,
                                   None if f.gz else prev_off, None if f.gz else off))
            prev_off, prev_lines, n = off, lines, n + 1
    return parts


def plan_digest(files: Sequence[InputFile], partition_lines: int, partial_deal: bool,
                settings: dict[str, object] | None = None) -> str:
    """A fingerprint of what a run computes: resuming with other inputs must be refused.
    ``settings``: the job's, beyond scoring (a scoring run's fingerprint is unchanged)."""
    plain: list[object] = [[(f.name, f.size) for f in files], partition_lines, partial_deal]
    key = json.dumps(plain if settings is None else [*plain, settings], sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def read_sequential(f: InputFile, parts: Sequence[Partition]) -> Iterator[tuple[Partition,
                                                                                Iterator[Line]]]:
    """Each of ``parts`` (partitions of ``f`` in line order) with its lines, in one pass over
    the file: how a gzipped file, which cannot be sought, is read. A partition's lines are
    read as they are taken; what the taker leaves (a partition already complete) is read
    past before the next."""
    with open_input(f.path, f.gz) as stream:
        lines = stream_lines(stream)
        line_no = 1
        for part in parts:
            for _ in itertools.islice(lines, part.first_line - line_no):
                pass                                     # lines of partitions not asked for
            chunk = _checked(f, part, itertools.islice(lines, part.lines))
            yield part, chunk
            for _ in chunk:
                pass
            line_no = part.first_line + part.lines


def read_partition(f: InputFile, part: Partition) -> Iterator[Line]:
    """The partition's lines (without their newlines), read as they are taken: one line at
    a time is held, however long the partition."""
    if part.start is not None and part.end is not None:
        return _checked(f, part, read_range(f.path, part.start, part.end))
    return (line for _, lines in read_sequential(f, [part]) for line in lines)


def _checked(f: InputFile, part: Partition, lines: Iterator[Line]) -> Iterator[Line]:
    """``lines``, then OSError if they were not the partition's count (the file changed
    since it was planned)."""
    count = 0
    for line in lines:
        count += 1
        yield line
    if count != part.lines:
        raise OSError(f"{f.name}: partition {part.id} has {count} lines, planned "
                      f"{part.lines} (the file changed during the run)")
