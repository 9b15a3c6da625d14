"""What the commands read: input files (plain or gzipped, globs, directories, stdin), THE line
splitter every reader uses, and one replay of a file or of an archive's line
(:func:`read_replay`) — for the batch scorer (``score-replays``, ``review-replays``:
service/batch/) and the commands of one round (``score``, ``review``, ``view``) alike, which
is why it sits under neither (the batch imports the view's page, never the reverse).

A line ends at ``\\n``. The ``\\r`` of a CRLF ending is dropped (JSON whitespace either way,
so a replay reads the same with it or without it); a lone ``\\r`` stays inside its line;
a last line without a newline counts; bytes that are not UTF-8 become U+FFFD; a line over
:data:`MAX_LINE_BYTES` is read past without being held and becomes a :class:`LongLine` (a
rejected record). The local pool, the archive partitions and ``--server`` all split with
:func:`_lines`, so one input gives the same lines on every path.
"""

from __future__ import annotations

import fnmatch
import functools
import glob
import gzip
import os
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO

import orjson

__all__ = ["InputFile", "INPUT_SUFFIXES", "MANIFEST", "SUMMARY", "PARTS", "MAX_LINE_BYTES",
           "Line", "LongLine", "expand", "expand_names", "is_output_folder", "open_input",
           "split_lines", "stream_lines", "file_lines", "read_range", "byte_ranges",
           "count_lines", "read_replay", "json_lines", "one_document"]

INPUT_SUFFIXES = (".jsonl", ".ndjson", ".json", ".jsonl.gz", ".ndjson.gz", ".json.gz")
# What an archive run writes into its --output-dir (:mod:`~shuangkou.service.batch.archive`):
# named here, where the input scans skip them, so that a run's output is never its input.
MANIFEST = "manifest.json"
SUMMARY = "summary.json"
PARTS = "parts"
BLOCK = 1 << 20              # bytes read at a time
#: The longest input line (and single replay file) read, 1 MiB: a replay is a few KB (the
#: longest of 2,100 generated rounds, 300 a variant with escapes and four 128-character
#: player ids, is 5.3 KB; a house variant inline adds under 1 KB), so this leaves some 170
#: times that and bounds what one line can cost. A longer line is read past, never held,
#: and rejected (:class:`LongLine`). It is the block size too: a line that ends in the
#: block it began in is never over the limit.
MAX_LINE_BYTES = BLOCK
SAMPLE_BYTES = 1 << 16       # read to estimate a file's line length (chunk sizes in bytes)


@dataclass(frozen=True)
class InputFile:
    """One input file: the path as named (in records), its absolute path (read by workers)."""

    name: str
    path: str
    size: int
    gz: bool


def _is_input(path: str) -> bool:
    return path.endswith(INPUT_SUFFIXES)


def is_output_folder(folder: str) -> bool:
    """A folder an archive run wrote into: it holds the run's manifest and ``parts/``."""
    return os.path.isfile(os.path.join(folder, MANIFEST)) and \
        os.path.isdir(os.path.join(folder, PARTS))


class _Outputs:
    """What a scan skips: in an archive output folder (one found, or one this run writes),
    its manifest, summary and ``parts/``; and the files this run writes."""

    def __init__(self, outputs: Sequence[str]) -> None:
        self.paths = {os.path.abspath(p) for p in outputs}
        self.folders: dict[str, bool] = {}

    def folder(self, path: str) -> bool:
        if path not in self.folders:
            self.folders[path] = path in self.paths or is_output_folder(path)
        return self.folders[path]

    def holds(self, path: str) -> bool:
        """Whether the file ``path`` (absolute) is a run's output."""
        if path in self.paths:
            return True
        parent, name = os.path.split(path)
        if name in (MANIFEST, SUMMARY) and self.folder(parent):
            return True
        while True:                      # inside some output folder's parts/?
            up, name = os.path.split(parent)
            if up == parent:
                return False
            if name == PARTS and self.folder(up):
                return True
            parent = up

    def walk(self, top: str, seen: set[tuple[int, int]]) -> Iterator[str]:
        """The input files under the folder ``top``, any depth (:func:`_folders`), output
        folders' own files (and the run's files) left out."""
        for folder, subfolders, names in _folders(top, seen):
            here = os.path.abspath(folder)
            if self.folder(here):
                subfolders[:] = [d for d in subfolders if d != PARTS]
                names = [n for n in names if n not in (MANIFEST, SUMMARY)]
            for n in names:
                if _is_input(n) and not (self.paths and os.path.join(here, n) in self.paths):
                    yield os.path.join(folder, n)


def _folders(top: str, seen: set[tuple[int, int]]) -> Iterator[tuple[str, list[str],
                                                                       list[str]]]:
    """``os.walk(top)`` with symbolic links followed, each real folder once: a folder
    already in ``seen`` (device and inode) is not listed again, so a link back up
    (``self -> .``, ``up -> ..``) leads nowhere new and a walk through links ends. The
    subfolders list is the walk's own: remove from it what must not be entered."""
    for folder, subfolders, names in os.walk(top, followlinks=True):
        try:
            st = os.stat(folder)
        except OSError:
            subfolders[:] = []
            continue
        if (st.st_dev, st.st_ino) in seen:
            subfolders[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        yield folder, subfolders, names


def _glob(pattern: str, seen: set[tuple[int, int]]) -> list[str]:
    """The files ``pattern`` matches, as :func:`glob.glob` with ``recursive=True`` matches
    them (``**`` any number of folders, ``*``, ``?`` and ``[...]`` within a name, neither
    matching a name that starts with a dot), found by :func:`_folders`: through symbolic
    links, each real folder once. (glob.glob follows links too, without end: one
    ``self -> .`` link gave a file 41 times, two never finished.)"""
    parts = pattern.split(os.sep)
    fixed = 0                            # the leading names without wildcards: the root
    while fixed < len(parts) - 1 and not glob.has_magic(parts[fixed]):
        fixed += 1
    root = os.sep.join(parts[:fixed]) or (os.sep if pattern.startswith(os.sep) else "")
    wanted = tuple(parts[fixed:])
    found = []
    for folder, subfolders, names in _folders(root or os.curdir, seen):
        rel = os.path.relpath(folder, root or os.curdir)
        here = () if rel == os.curdir else tuple(rel.split(os.sep))
        subfolders[:] = [d for d in subfolders if _matches((*here, d), wanted, folder=True)]
        found += [os.path.join(folder, n) if root else os.path.join(*here, n)
                  for n in names if _matches((*here, n), wanted)]
    return [f for f in found if os.path.isfile(f)]


@functools.lru_cache(maxsize=4096)
def _matches(names: tuple[str, ...], pattern: tuple[str, ...], folder: bool = False) -> bool:
    """Whether the path ``names`` matches the pattern's names (``folder``: whether a file
    under the folder ``names`` could)."""
    if not names:
        return bool(pattern) if folder else all(p == "**" for p in pattern)
    if not pattern:
        return False
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return _matches(names, rest, folder) or (
            not names[0].startswith(".") and _matches(names[1:], pattern, folder))
    if names[0].startswith(".") and not head.startswith("."):
        return False                     # glob's rule: wildcards never match a hidden name
    return fnmatch.fnmatchcase(names[0], head) and _matches(names[1:], rest, folder)


def expand(specs: Sequence[str], outputs: Sequence[str] = (), *,
           stdin: bool = False) -> list[InputFile]:
    """The files named by ``specs`` (files, globs, directories), in order, each once (a
    file reached again, by another name or through a symbolic link, is not taken twice).

    A directory contributes its JSONL files (``*.jsonl``, ``*.ndjson``, ``*.json``, each
    optionally ``.gz``) at any depth, sorted; a glob its matches, sorted. Both follow
    symbolic links to folders, each real folder once, so a link back up ends. A file named
    directly is taken whatever its name. Directories and globs never yield a run's output:
    ``outputs`` (this run's ``--output`` file and ``--output-dir``) and, in any folder that
    holds an archive run's manifest, that manifest, its ``summary.json`` and ``parts/``
    (docs/archives.md: an output folder may sit inside the input folder, and a rerun
    resumes). With ``stdin``, ``-`` is stdin (an InputFile named ``-``), in its place.
    Raises FileNotFoundError for a spec matching nothing.
    """
    files: list[InputFile] = []
    seen: set[tuple[int, int]] = set()      # files taken, by device and inode
    skip = _Outputs(outputs)

    def add(name: str) -> None:
        path = os.path.abspath(name)
        st = os.stat(path)
        if (st.st_dev, st.st_ino) not in seen:   # a file reached again through a link: once
            seen.add((st.st_dev, st.st_ino))
            files.append(InputFile(name, path, st.st_size, name.endswith(".gz")))

    for spec in specs:
        if spec == "-" and stdin:
            files.append(InputFile("-", "-", 0, False))
        elif os.path.isdir(spec):
            for name in sorted(skip.walk(spec, set())):
                add(name)
        elif os.path.exists(spec):
            with open(spec, "rb"):       # unreadable: fail now, naming it
                pass
            add(spec)
        elif glob.has_magic(spec):
            found = _glob(spec, set())
            matches = sorted(m for m in found if not skip.holds(os.path.abspath(m)))
            if not matches:
                raise FileNotFoundError(2, "matches only the output of a score-replays run"
                                        if found else "no file matches", spec)
            for name in matches:
                add(name)
        else:
            raise FileNotFoundError(2, "No such file or directory", spec)
    return files


def expand_names(specs: Sequence[str], outputs: Sequence[str] = ()) -> list[str]:
    """Files, globs and directories → file names, ``-`` (stdin) kept in its place;
    ``outputs`` as for :func:`expand`."""
    return [f.name for f in expand(specs, outputs, stdin=True)]


def open_input(path: str, gz: bool) -> IO[bytes] | gzip.GzipFile:
    """A binary stream of a file's lines, gunzipped when ``gz``."""
    return gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115


# ----------------------------------------------------------------------------- lines

@dataclass(frozen=True)
class LongLine:
    """An input line longer than :data:`MAX_LINE_BYTES`: read past as it streams, never
    held; only its size is kept. Every reader yields one where the line was, and every
    job makes it a rejected record (:attr:`reason`)."""

    size: int                # its bytes, without the newline

    @property
    def reason(self) -> str:
        return (f"line of {self.size:,} bytes is over the maximum line size "
                f"({MAX_LINE_BYTES:,} bytes); not read")


Line = str | LongLine


def split_lines(data: bytes) -> list[str]:
    """The lines of ``data`` (lines of a block, cut at line ends; each shorter than
    :data:`MAX_LINE_BYTES`).

    Decoded at once, then split: a ``\n`` byte is never inside a UTF-8 sequence, so this is
    each line decoded on its own (the same U+FFFD for the same bad bytes), without a call
    per line."""
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()            # the data ends with a newline (or is empty)
    if "\r" in text:          # a CRLF ending's \r dropped; a lone one stays
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines


def _ended(head: list[bytes], size: int, end: bytes) -> Line:
    """The line whose start is ``head`` (its ``size`` bytes so far; nothing kept past the
    limit) and whose last bytes before the newline (or the end of the data) are ``end``."""
    size += len(end)
    if size > MAX_LINE_BYTES:
        return LongLine(size)
    text = (b"".join(head) + end).decode("utf-8", errors="replace")
    return text[:-1] if text.endswith("\r") else text


def _lines(blocks: Iterable[bytes]) -> Iterator[Line]:
    """The lines of a stream of blocks of at most :data:`BLOCK` bytes: THE line splitter.

    A line that ends inside the block it started in is shorter than a block, so the lines
    between a block's first and last newline are split at once (:func:`split_lines`); only
    the line running across blocks is gathered, and only up to :data:`MAX_LINE_BYTES`: past
    that its bytes are counted and dropped, and it comes out as a :class:`LongLine`. So the
    memory a reader holds is bounded by the limit plus a block, whatever the input."""
    head: list[bytes] = []     # the start of the line running across blocks (within limit)
    size = 0                   # its bytes so far, counted past the limit too
    for block in blocks:
        first = block.find(b"\n")
        if first < 0:
            size += len(block)
            if size <= MAX_LINE_BYTES:
                head.append(block)
            else:
                head.clear()
            continue
        yield _ended(head, size, block[:first])
        last = block.rfind(b"\n")
        if last > first:
            yield from split_lines(block[first + 1:last + 1])
        rest = block[last + 1:]
        head, size = [rest], len(rest)
    if size:
        yield _ended(head, size, b"")


def _blocks(stream: IO[bytes] | gzip.GzipFile, limit: int | None = None) -> Iterator[bytes]:
    """A stream's bytes in blocks of at most :data:`BLOCK` (what is there: a pipe's lines go
    on as they arrive), ``limit`` bytes at most."""
    read = getattr(stream, "read1", stream.read)
    while limit is None or limit > 0:
        block = read(BLOCK if limit is None else min(BLOCK, limit))
        if not block:
            return
        if limit is not None:
            limit -= len(block)
        yield block


def stream_lines(stream: IO[bytes] | gzip.GzipFile) -> Iterator[Line]:
    """The lines of a binary stream (:func:`_lines`)."""
    return _lines(_blocks(stream))


def file_lines(path: str) -> Iterator[Line]:
    """The lines of a file (``-``: stdin; ``.gz``: gunzipped)."""
    if path != "-":
        with open_input(path, path.endswith(".gz")) as stream:
            yield from stream_lines(stream)
        return
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        yield from stream_lines(buffer)
        return
    # A text stand-in for stdin (tests): its text split the same way.
    data = sys.stdin.read().encode("utf-8", errors="surrogatepass")
    yield from _lines(data[i:i + BLOCK] for i in range(0, len(data), BLOCK))


def read_range(path: str, start: int, end: int) -> Iterator[Line]:
    """The lines in bytes [start, end) of a plain file (a range cut at line ends)."""
    with open(path, "rb") as f:
        f.seek(start)
        yield from _lines(_blocks(f, end - start))


def _line_end(f: IO[bytes], pos: int) -> int:
    """The offset just after the end of the line that holds byte ``pos`` of ``f`` (or of
    the file), read a block at a time: a line may be longer than memory should hold."""
    f.seek(pos)
    while block := f.read(BLOCK):
        newline = block.find(b"\n")
        if newline >= 0:
            return pos + newline + 1
        pos += len(block)
    return pos


def byte_ranges(path: str, chunk_lines: int) -> Iterator[tuple[int, int]]:
    """Byte ranges of a plain file of about ``chunk_lines`` lines each, cut at line ends
    (estimated from the first :data:`SAMPLE_BYTES`; a worker reads its range itself)."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        sample = f.read(SAMPLE_BYTES)
        per_line = len(sample) / max(sample.count(b"\n"), 1)
        step = max(int(per_line * chunk_lines), 1024)
        start = 0
        while start < size:
            end = min(_line_end(f, min(start + step, size)), size)
            yield start, end
            start = end


def count_lines(paths: Sequence[str]) -> int | None:
    """Lines in the input files (for the ETA), or None when reading stdin or gzip."""
    if not paths or any(p == "-" or p.endswith(".gz") for p in paths):
        return None
    total = 0
    for p in paths:
        with open(p, "rb") as f:
            last = b"\n"
            while block := f.read(BLOCK):
                total += block.count(b"\n")
                last = block[-1:]
            total += last != b"\n"
    return total


def read_replay(spec: str, line: int | None = None) -> str:
    """One replay's text for ``view``, ``review`` and ``score``: a file, ``-`` (stdin), or
    line ``line`` (1-based) of a JSON-lines file (``.gz`` too); at most
    :data:`MAX_LINE_BYTES` either way, read no further.

    :raises OSError: the file cannot be read.
    :raises ValueError: the file has fewer than ``line`` lines, or that line (or the whole
        file) is over the limit.
    """
    if line is not None:
        for i, text in enumerate(file_lines(spec), 1):
            if i == line:
                if isinstance(text, LongLine):
                    raise ValueError(f"{spec} line {line:,}: {text.reason}")
                return text
        raise ValueError(f"{spec} has fewer than {line:,} lines")
    if spec == "-":
        buffer = getattr(sys.stdin, "buffer", None)
        data = (buffer.read(MAX_LINE_BYTES + 1) if buffer is not None else
                sys.stdin.read(MAX_LINE_BYTES + 1).encode("utf-8", errors="surrogatepass"))
    else:
        with open(spec, "rb") as f:
            data = f.read(MAX_LINE_BYTES + 1)
    if len(data) > MAX_LINE_BYTES:
        raise ValueError(f"{'stdin' if spec == '-' else spec} holds more than "
                         f"{MAX_LINE_BYTES:,} bytes, the most a replay may take (the "
                         "maximum line size of an archive); not read (one replay of a "
                         "JSON-lines archive: --line N)")
    return data.decode("utf-8", errors="replace")


# ----------------------------------------------------------------------------- shapes
# The two ways to hand a command the other shape of input: a JSON-lines archive to a
# command that reads one replay, one replay printed over many lines to one that reads
# archives. Each command says so, and what to run instead.

def json_lines(text: str) -> int:
    """How many lines ``text`` holds when it is JSON lines (two or more lines, the first a
    JSON object on its own: an archive given where one replay goes), else 0."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        return 0
    try:
        first = orjson.loads(lines[0])
    except orjson.JSONDecodeError:
        return 0
    return len(lines) if isinstance(first, dict) else 0


def one_document(path: str) -> int:
    """How many lines the file ``path`` spans when it is one JSON object over several lines
    (a replay printed for people, given where an archive goes: every line of it rejected),
    else 0. Read up to the maximum line size."""
    if path == "-":
        return 0
    try:
        with open_input(path, path.endswith(".gz")) as f:
            data = f.read(MAX_LINE_BYTES + 1)
        if len(data) > MAX_LINE_BYTES or not isinstance(orjson.loads(data), dict):
            return 0
    except (OSError, EOFError, ValueError, zlib.error):    # a bad gzip: no hint to give
        return 0
    lines = data.count(b"\n") + (not data.endswith(b"\n"))
    return lines if lines > 1 else 0
