"""Inputs of an archive run and their split into partitions on line boundaries.

An archive is a list of inputs: files, globs and directories, each plain JSONL or gzipped
(``.gz``). :func:`expand` turns the arguments into files in a fixed order (the arguments in
turn; a glob's or a directory's files sorted by path), and :func:`plan` cuts every file
into partitions of ``partition_lines`` lines (the last one of a file shorter). The plan is a
pure function of the files' contents and ``partition_lines``, so every run, every shard and
every retry cuts the same partitions: that is what makes a partition's output name stable
and the run resumable and exactly once.

Lines are split on ``\\n`` only (a ``\\r\\n`` ending loses its ``\\r``; a lone ``\\r`` stays
inside its line), a last line without a newline counts, and bytes that are not UTF-8 become
U+FFFD. A plain file's partition is a byte range the worker seeks to; a gzipped file's is a
line range; a gzip stream cannot be sought, so one task reads a gzipped file once and
scores its partitions in turn (:func:`read_sequential`).
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import IO

__all__ = ["InputFile", "Partition", "expand", "plan", "read_partition", "read_sequential",
           "plan_digest", "INPUT_SUFFIXES"]

INPUT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
_BLOCK = 1 << 20


@dataclass(frozen=True)
class InputFile:
    """One input file: the path as named (in records), its absolute path (read by workers)."""

    name: str
    path: str
    size: int
    gz: bool


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


def _is_input(path: str) -> bool:
    return path.endswith(INPUT_SUFFIXES)


def expand(specs: Sequence[str]) -> list[InputFile]:
    """The files named by ``specs`` (files, globs, directories), in order, each once.

    A directory contributes its JSONL files (``*.jsonl``, ``*.ndjson``, ``*.json``, each
    optionally ``.gz``) at any depth, sorted; a glob its matches, sorted. A file named
    directly is taken whatever its name. Raises FileNotFoundError for a spec matching nothing.
    """
    files: list[InputFile] = []
    seen: set[str] = set()

    def add(name: str) -> None:
        path = os.path.abspath(name)
        if path not in seen:
            seen.add(path)
            files.append(InputFile(name, path, os.path.getsize(path), name.endswith(".gz")))

    for spec in specs:
        if os.path.isdir(spec):
            found = sorted(os.path.join(d, f) for d, _, names in os.walk(spec)
                           for f in names if _is_input(f))
            for name in found:
                add(name)
        elif os.path.exists(spec):
            with open(spec, "rb"):       # unreadable: fail now, naming it
                pass
            add(spec)
        elif glob.has_magic(spec):
            matches = sorted(m for m in glob.glob(spec, recursive=True) if os.path.isfile(m))
            if not matches:
                raise FileNotFoundError(2, "no file matches", spec)
            for name in matches:
                add(name)
        else:
            raise FileNotFoundError(2, "No such file or directory", spec)
    return files


def _open(f: InputFile) -> IO[bytes] | gzip.GzipFile:
    return gzip.open(f.path, "rb") if f.gz else open(f.path, "rb")  # noqa: SIM115


def _cuts(f: InputFile, partition_lines: int) -> Iterator[tuple[int, int]]:
    """(byte offset after the line, lines so far) at every ``partition_lines``-th line end,
    then at the end of the file (offsets are of the decompressed stream for gzip)."""
    lines = offset = 0
    tail = b"\n"
    with _open(f) as stream:
        while block := stream.read(_BLOCK):
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


def plan_digest(files: Sequence[InputFile], partition_lines: int, partial_deal: bool) -> str:
    """A fingerprint of what a run computes: resuming with other inputs must be refused."""
    key = json.dumps([[(f.name, f.size) for f in files], partition_lines, partial_deal])
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _split(data: bytes) -> list[str]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()                     # the range ends with a newline
    return [(raw[:-1] if raw.endswith(b"\r") else raw).decode("utf-8", errors="replace")
            for raw in lines]


def _raw_lines(stream: IO[bytes] | gzip.GzipFile) -> Iterator[bytes]:
    """The lines of a stream, read in bulk, split on ``\\n`` only (without it)."""
    tail = b""
    while block := stream.read(_BLOCK):
        lines = (tail + block).split(b"\n")
        tail = lines.pop()
        yield from lines
    if tail:
        yield tail


def read_sequential(f: InputFile, parts: Sequence[Partition]) -> Iterator[tuple[Partition,
                                                                                list[str]]]:
    """Each of ``parts`` (partitions of ``f`` in line order) with its lines, in one pass over
    the file: how a gzipped file, which cannot be sought, is read."""
    with _open(f) as stream:
        raw = _raw_lines(stream)
        line_no = 1
        for part in parts:
            for _ in range(part.first_line - line_no):    # lines of partitions not asked for
                next(raw, None)
            chunk = [x for _, x in zip(range(part.lines), raw, strict=False)]
            line_no = part.first_line + len(chunk)
            lines = [(x[:-1] if x.endswith(b"\r") else x).decode("utf-8", errors="replace")
                     for x in chunk]
            if len(lines) != part.lines:
                raise OSError(f"{f.name}: partition {part.id} has {len(lines)} lines, planned "
                              f"{part.lines} (the file changed during the run)")
            yield part, lines


def read_partition(f: InputFile, part: Partition) -> list[str]:
    """The partition's lines (without their newlines)."""
    if part.start is not None and part.end is not None:
        with open(f.path, "rb") as stream:
            stream.seek(part.start)
            data = stream.read(part.end - part.start)
        lines = _split(data)
    else:
        ((_, lines),) = read_sequential(f, [part])
    if len(lines) != part.lines:   # the file changed since it was planned
        raise OSError(f"{f.name}: partition {part.id} has {len(lines)} lines, planned "
                      f"{part.lines} (the file changed during the run)")
    return lines
