"""The archive reviewed by the product command, ``shuangkou review-replays --fair-play
--no-oracle`` (the review with the fair-play views at the command's budget), and each
reviewed round reduced to what the command's fair-play sums take of it (:func:`reduce`).

``review`` cuts each kind's rounds into slices of :data:`SLICE` (``<archive>/slices/sNN/
<kind>.jsonl``: lines s·SLICE … of every kind) and runs the command on one slice after
another, over the slice's files with a round not yet reviewed (``<archive>/reviewed/
sNN-<hash of their kinds>``: the command's output directory, its records in ``parts/``), so
that a run stopped early leaves every kind about as far, a run resumes as the command does
(its complete partitions are kept), and a later run over other kinds or more rounds reviews
only the rest. The CPU the command took (its process and its workers, from the operating
system's accounting) is written beside each run's output (``cpu.json``).

:func:`reduce` reads one record (``Review.to_dict()``, as the command writes it) with the
command's own reading (``shuangkou.service.review.fair``: ``round_fair`` — per partnership
the round's hand-sharing score and per table seat its full-sight score, from
``shuangkou.core.fairplay.round_score``, and the engine-assistance counts — and the
(loss, stake) of each evaluated decision to three decimals, under ``thrown``: the losses
docs/decisions/engineering.md E87 weighs thrown rounds on)
and keeps each decision's raw evidence (three decimals) so that another aggregation can be
studied without reviewing again.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import resource
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from shuangkou.core.fairplay import KINDS as VIEWS
from shuangkou.service.review.fair import evaluated, evidence_of, round_fair

from .archive import read_lines

__all__ = ["REVIEWED", "SLICE", "reduce", "review_archive", "reviewed_rows"]

REVIEWED = "reviewed"
SLICES = "slices"
#: Rounds of each kind per slice: the command's partition (one per kind and slice).
SLICE = 25


def _score(s: Any) -> list[float] | None:
    return None if s is None else [s.score, s.excess, s.decisions]


def reduce(record: Mapping[str, Any]) -> dict[str, Any]:
    """A reviewed round (``Review.to_dict()``) as the fair-play sums take it (module doc):
    ``hand_sharing`` per team (table seats t and t + 2) and ``full_sight`` per table seat,
    each [score, excess, decisions] or None (no decision carried evidence); ``engine`` per
    seat [托管's taken, the rule policy's taken, departures, loss and stake elsewhere]
    (``EngineTells``; a row kept before departures were counted has the first two);
    ``thrown`` per seat [loss, stake, loss, stake, …];
    ``evidence`` per seat [[view, regret, decoy regrets…, disagree, follows], …]."""
    decisions = record["decisions"]
    fair = round_fair(decisions, record["result"]["final"])
    thrown: list[list[float]] = [[] for _ in range(4)]
    raw: list[list[list[Any]]] = [[] for _ in range(4)]
    for d in decisions:
        seat = d["seat"]
        raw[seat].extend([VIEWS.index(e.kind), round(e.regret, 3),
                          *(round(x, 3) for x in e.decoy_regrets), int(e.disagree),
                          int(e.follows)] for e in evidence_of(d))
        if evaluated(d):
            thrown[seat] += [round(d["loss"], 3), round(d["stake"], 3)]
    return {"players": record["players"], "final": record["result"]["final"],
            "hand_sharing": [_score(s) for s in fair.hand_sharing],
            "full_sight": [_score(s) for s in fair.full_sight],
            "engine": [[e.engine, e.rule, e.departs, round(e.loss, 3), round(e.stake, 3)]
                       for e in fair.engine], "thrown": thrown, "evidence": raw,
            "decisions": sum(evaluated(d) for d in decisions)}


def _cut(archive: Path, kinds: Sequence[str], limit: int | None) -> list[Path]:
    """The slices of ``kinds``' first ``limit`` rounds (module doc), written once."""
    lines = {kind: read_lines(archive / f"{kind}.jsonl")[:limit] for kind in kinds}
    most = max((len(x) for x in lines.values()), default=0)
    folders = []
    for s in range((most + SLICE - 1) // SLICE):
        folder = archive / SLICES / f"s{s:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        for kind, mine in lines.items():
            part = mine[s * SLICE:(s + 1) * SLICE]
            path = folder / f"{kind}.jsonl"
            text = "".join(line + "\n" for line in part)
            if part and (not path.exists() or path.read_text() != text):
                path.write_text(text)
        folders.append(folder)
    return folders


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _records(out: Path) -> int:
    return sum(len(read_lines(p)) for p in out.glob("parts/*.jsonl"))


def _pending(archive: Path, folder: Path, kinds: Sequence[str]) -> tuple[Path, list[str]]:
    """The files of ``kinds`` in the slice ``folder`` with a round not yet reviewed in any
    of the slice's output directories, and the directory their run writes to: one per set of
    files (``<slice>-<kinds>``), so a run resumes its own and a later run over other kinds or
    more rounds adds one beside it (the command refuses to resume a run over other
    inputs)."""
    done = {(record["file"], record["line"])
            for part in (archive / REVIEWED).glob(f"{folder.name}*/parts/*.jsonl")
            for record in map(json.loads, read_lines(part))}
    inputs = [str(folder / f"{kind}.jsonl") for kind in kinds
              if (folder / f"{kind}.jsonl").exists()]
    todo = [path for path in inputs
            if any((path, k + 1) not in done for k in range(len(read_lines(Path(path)))))]
    names = "+".join(sorted(Path(path).stem for path in todo)).encode()
    return archive / REVIEWED / f"{folder.name}-{hashlib.sha256(names).hexdigest()[:8]}", todo


def review_archive(archive: Path, kinds: Sequence[str], *, limit: int | None = None,
                   jobs: int = 1, options: Sequence[str] = (),
                   progress: bool = False) -> dict[str, int]:
    """Review (or go on reviewing) the first ``limit`` rounds (all: None) of each kind of
    ``archive`` with the command (module doc; ``options``: more of its options, e.g. a
    budget); the rounds reviewed per kind."""
    command = [str(Path(sys.executable).parent / "shuangkou"), "review-replays"]
    for folder in _cut(archive, kinds, limit):
        out, inputs = _pending(archive, folder, kinds)
        if not inputs:
            continue
        before, had = _children_cpu(), _records(out)
        subprocess.run([*command, *inputs, "--output-dir", str(out), "--fair-play",
                        "--no-oracle", "-j", str(jobs), "--no-progress", *options],
                       check=True, stdout=None if progress else subprocess.DEVNULL,
                       stderr=None if progress else subprocess.DEVNULL)
        cpu, rounds = _children_cpu() - before, _records(out) - had
        ledger = out / "cpu.json"
        runs = json.loads(ledger.read_text()) if ledger.exists() else []
        ledger.write_text(json.dumps([*runs, {"cpu": round(cpu, 2), "rounds": rounds}]) + "\n")
        if progress:
            print(f"{folder.name}: {rounds} rounds, {cpu:.0f} s of CPU", flush=True)
    return {kind: len(rows) for kind, rows in reviewed_rounds(archive, kinds).items()}


def reviewed_rounds(archive: Path, kinds: Sequence[str] | None = None
                    ) -> dict[str, list[dict[str, Any]]]:
    """The reviewed rounds of the archive, per kind in the archive's order: each
    :func:`reduce`'s row with its ``line`` in the kind's file and its ``notes`` (the
    archive's ``<kind>.rounds.jsonl``)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    notes: dict[str, list[str]] = {}
    seen: set[tuple[str, int]] = set()
    for part in sorted((archive / REVIEWED).glob("s*/parts/*.jsonl")):
        for text in read_lines(part):
            record = json.loads(text)
            source = Path(record["file"])
            kind = source.stem
            line = int(source.parent.name[1:]) * SLICE + record["line"] - 1
            # a round reviewed twice (a run stopped, then one over other kinds): the first
            if (kinds and kind not in kinds) or not record.get("ok") or (kind, line) in seen:
                continue
            seen.add((kind, line))
            if kind not in notes:
                notes[kind] = read_lines(archive / f"{kind}.rounds.jsonl")
            row = {"line": line, "notes": json.loads(notes[kind][line]), **reduce(record)}
            rows.setdefault(kind, []).append(row)
    for found in rows.values():
        found.sort(key=lambda r: r["line"])
    return rows


def review_cpu(archive: Path) -> tuple[float, int]:
    """The command's CPU over the slices it reviewed (seconds) and the rounds it reviewed
    in those runs."""
    cpu, rounds = 0.0, 0
    for ledger in (archive / REVIEWED).glob("s*/cpu.json"):
        for run in json.loads(ledger.read_text()):
            cpu += run["cpu"]
            rounds += run["rounds"]
    return cpu, rounds


def reviewed_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a kept file (``keep``: gzip, one reduced round a line)."""
    with gzip.open(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]
