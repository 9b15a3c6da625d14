"""``score-replays --view-rejected DIR``: a page per rejected line and an index linking them.

While the records stream (or, for an ``--output-dir`` archive, from its partition files)
:class:`Rejected` notes which input lines were rejected, up to a cap; :func:`write_pages`
then reads those lines again from the inputs and writes, for each, the page
``shuangkou view`` makes (:mod:`shuangkou.service.view.page`), named by file and line
(``DIR/<file>-<line>.html``: :func:`page_name`, one name per file as given), and
``DIR/index.html``: every page with its file, line, action and reason, and how many
rejected lines the cap left out.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..inputs import Line, LongLine, file_lines

__all__ = ["DEFAULT_LIMIT", "Rejected", "page_name", "write_pages"]

DEFAULT_LIMIT = 100          # pages written at most (a bad archive can reject every line)
INDEX = "index.html"
_REJECTED = '{"ok":false'    # how every rejected record's JSON text starts (records.dumps)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NAME_CHARS = 120            # of a file's name in its pages' names (a file system allows 255)


@dataclass
class Rejected:
    """The rejected input lines seen so far: the first ``limit`` as (file, 1-based line)
    once located, and the count of all."""

    limit: int = DEFAULT_LIMIT
    count: int = 0
    found: list[tuple[str, int]] = field(default_factory=list)   # located (archives)
    indices: list[int] = field(default_factory=list)             # 0-based over all inputs
    seen: int = 0                                                 # records read so far

    def add_records(self, text: str) -> None:
        """Note the rejected records of a block of JSON lines, in input order."""
        for record in text.splitlines():
            if record.startswith(_REJECTED):
                self.count += 1
                if len(self.indices) + len(self.found) < self.limit:
                    self.indices.append(self.seen)
            self.seen += 1

    def add_located(self, file: str, line: int) -> None:
        """Note a rejected line known by its file and line (an archive's record)."""
        self.count += 1
        if len(self.indices) + len(self.found) < self.limit:
            self.found.append((file, line))

    def add_archive(self, part_files: Iterable[str]) -> None:
        """Note the rejected records of an archive's partition files (each names its file
        and line), in the merged order."""
        for path in part_files:
            with open(path, encoding="utf-8") as f:
                for text in f:
                    if '"ok":false' in text[:400]:
                        record = json.loads(text)
                        if record.get("ok") is False:
                            self.add_located(record["file"], record["line"])

    def locate(self, files: Sequence[str]) -> list[tuple[str, int, Line]]:
        """(file, line, text) of every noted line, reading the inputs in order (and no
        further than the last one)."""
        by_index, by_line = set(self.indices), set(self.found)
        total = len(by_index) + len(by_line)
        out: list[tuple[str, int, Line]] = []
        index = 0
        for name in files:
            if len(out) == total:
                break
            for number, text in enumerate(file_lines(name), 1):
                if index in by_index or (name, number) in by_line:
                    out.append((name, number, text))
                    if len(out) == total:
                        break
                index += 1
        return out


def page_name(file: str, line: int) -> str:
    """The page of a line: the file's name made safe for a file system, and the line.

    A name that had to change (``x/day.jsonl``, ``../../day.jsonl``, a long one) also
    carries ``~`` and a hash of the name as given, which a name kept as it is cannot hold:
    two input files never share a page (``x/day.jsonl``, ``x_day.jsonl`` and ``day.jsonl``
    are three), and a file's pages are named alike on every run."""
    safe = _UNSAFE.sub("_", file.lstrip("./")).strip("_") or "stdin"
    if safe != file or len(safe) > _NAME_CHARS:
        digest = hashlib.sha256(file.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        safe = f"{safe[:_NAME_CHARS]}~{digest}"
    return f"{safe}-{line}.html"


def write_pages(outdir: str, lines: Iterable[tuple[str, int, Line]], rejected: int,
                partial_deal: bool = False) -> tuple[int, str]:
    """Write a page per (file, line, text) and the index; the number of pages and the
    index's path. A line over the maximum line size, never read, has no page: its row in
    the index says why."""
    from ..view.page import page_of, render_index

    os.makedirs(outdir, exist_ok=True)
    entries: list[dict[str, Any]] = []
    for file, line, text in lines:
        if isinstance(text, LongLine):
            entries.append({"file": file, "line": line, "page": None, "action": None,
                            "reason": text.reason})
            continue
        story, page = page_of(text, f"{_readable(file)} line {line}", partial_deal)
        name = page_name(file, line)
        with open(os.path.join(outdir, name), "w", encoding="utf-8") as out:
            out.write(page)
        rej = story.rejection
        entries.append({"file": file, "line": line, "page": name,
                        "action": None if rej is None else rej.action,
                        "reason": "scored (not rejected here)" if rej is None else rej.reason})
    index = os.path.join(outdir, INDEX)
    with open(index, "w", encoding="utf-8") as out:
        out.write(render_index([{**e, "file": _readable(e["file"])} for e in entries],
                               rejected))
    # The names as the records give them: one the file system holds in bytes that are not
    # UTF-8 keeps them as JSON escapes (\\udcff), as in an archive's records.
    with open(os.path.join(outdir, "index.json"), "w", encoding="utf-8",
              errors="backslashreplace") as out:
        json.dump({"rejected": rejected, "pages": entries}, out, ensure_ascii=False, indent=1)
    return len(entries), index


def _readable(name: str) -> str:
    """A file name as a page shows it: bytes that are not UTF-8 (the surrogates
    :func:`os.fsdecode` gives them) as U+FFFD."""
    return os.fsencode(name).decode("utf-8", "replace")
