"""The archive reviewed as ``shuangkou review-replays --fair-play`` reviews it — the product's
review of each line with the fair-play views (``shuangkou.core.review.review(line,
budget=..., fair=True)``, what the command runs per line) — and each round reduced to what
the command's fair-play sums take of it (:func:`reduce`).

:func:`reduce` reads a review in its JSON form (``Review.to_dict()``, the records the
command writes), as the command does (service/review/fair.py on its branch): per
partnership the round's hand-sharing score and per table seat its full-sight score
(``shuangkou.core.fairplay.round_score`` over the decisions' evidence — the only use of the
detector here, the command's own aggregation), the engine-assistance counts (decisions
where 托管's choice is not the best: the taken action was 托管's, or the best), and the
(loss, stake) of each evaluated decision to three decimals (the thrown-round test's input).
It keeps each decision's raw evidence too (three decimals), so that another aggregation can
be studied without reviewing again.

``review`` writes ``<archive>/reviewed/<kind>.jsonl``, one reduced round a line in the
archive's order, the rounds of the kinds interleaved (round 0 of every kind, then round 1,
…) so that a run stopped early leaves every kind about as far; a run resumes where the
files stop.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from shuangkou.core.cards import SEATS
from shuangkou.core.fairplay import KINDS as VIEWS
from shuangkou.core.fairplay import Evidence, RoundScore, round_score
from shuangkou.core.review import DEFAULT_REVIEW, ReviewBudget, review

from .archive import read_lines

__all__ = ["FAIR_REVIEW", "REVIEWED", "reduce", "review_archive", "reviewed_rows"]

#: The review's budget for fair play: the default review's (2,000 rollouts a decision, 3
#: decoys per fair-play view, 12 deals each), what ``review-replays --fair-play`` spends.
FAIR_REVIEW = DEFAULT_REVIEW
REVIEWED = "reviewed"


def _evaluated(d: Mapping[str, Any]) -> bool:
    return not d["forced"] and d["deals"] > 0


def _taken(d: Mapping[str, Any]) -> int:
    return next(k for k, c in enumerate(d["candidates"]) if c["taken"])


def _evidence(d: Mapping[str, Any]) -> list[Evidence]:
    return [Evidence(e["kind"], e["regret"], tuple(e["decoy_regrets"]), e["disagree"],
                     e["follows"]) for e in d.get("fair") or ()]


def _score(s: RoundScore | None) -> list[float] | None:
    return None if s is None else [s.score, s.excess, s.decisions]


def reduce(record: Mapping[str, Any]) -> dict[str, Any]:
    """A reviewed round (``Review.to_dict()``) as the fair-play sums take it (module doc):
    ``hand_sharing`` per team (table seats t and t + 2) and ``full_sight`` per table seat,
    each [score, excess, decisions] or None (no decision carried evidence); ``engine`` per
    seat [托管's taken, the best taken]; ``thrown`` per seat [loss, stake, loss, stake, …];
    ``evidence`` per seat [[view, regret, decoy regrets…, disagree, follows], …]."""
    by_seat: list[list[Evidence]] = [[] for _ in range(SEATS)]
    engine = [[0, 0] for _ in range(SEATS)]
    thrown: list[list[float]] = [[] for _ in range(SEATS)]
    raw: list[list[list[Any]]] = [[] for _ in range(SEATS)]
    for d in record["decisions"]:
        seat = d["seat"]
        found = _evidence(d)
        by_seat[seat].extend(found)
        raw[seat].extend([VIEWS.index(e.kind), round(e.regret, 3),
                          *(round(x, 3) for x in e.decoy_regrets), int(e.disagree),
                          int(e.follows)] for e in found)
        if not _evaluated(d):
            continue
        thrown[seat] += [round(d["loss"], 3), round(d["stake"], 3)]
        if d["tuoguan"] != d["best"]:
            taken = _taken(d)
            if taken == d["tuoguan"]:
                engine[seat][0] += 1
            elif taken == d["best"]:
                engine[seat][1] += 1
    return {"players": record["players"], "final": record["result"]["final"],
            "hand_sharing": [_score(round_score("partner", by_seat[t] + by_seat[t + 2]))
                             for t in (0, 1)],
            "full_sight": [_score(round_score("all", e)) for e in by_seat],
            "engine": engine, "thrown": thrown, "evidence": raw,
            "decisions": sum(_evaluated(d) for d in record["decisions"])}


def _review_one(job: tuple[str, int, str, dict[str, Any], int]) -> tuple[str, int, dict[str, Any]]:
    kind, i, line, budget, seed = job
    t = time.process_time()
    rv = review(line, budget=ReviewBudget(**budget), fair=True, seed=seed)
    row = reduce(rv.to_dict())
    row["cpu"] = round(time.process_time() - t, 3)
    return kind, i, row


def review_archive(archive: Path, kinds: Sequence[str], *, budget: ReviewBudget = FAIR_REVIEW,
                   seed: int = 0, jobs: int = 1, limit: int | None = None,
                   progress: bool = False) -> dict[str, int]:
    """Review (or go on reviewing) the first ``limit`` rounds (all: None) of each kind of
    ``archive`` (module doc); the rounds reviewed per kind."""
    folder = archive / REVIEWED
    folder.mkdir(exist_ok=True)
    lines: dict[str, list[str]] = {}
    notes: dict[str, list[str]] = {}
    have: dict[str, int] = {}
    for kind in kinds:
        lines[kind] = read_lines(archive / f"{kind}.jsonl")[:limit]
        notes[kind] = read_lines(archive / f"{kind}.rounds.jsonl")
        done = read_lines(folder / f"{kind}.jsonl")
        have[kind] = len(done)
        (folder / f"{kind}.jsonl").write_text("".join(x + "\n" for x in done))
    todo = [(kind, i, lines[kind][i], budget.to_dict(), seed)
            for i in range(max((len(x) for x in lines.values()), default=0))
            for kind in kinds if have[kind] <= i < len(lines[kind])]
    files = {kind: (folder / f"{kind}.jsonl").open("a") for kind in kinds}
    try:
        results: Iterator[tuple[str, int, dict[str, Any]]]
        if jobs > 1:
            pool = multiprocessing.get_context("fork").Pool(jobs)
            results = pool.imap(_review_one, todo)
        else:
            pool = None
            results = map(_review_one, todo)
        for kind, i, row in results:
            note = json.loads(notes[kind][i]) if i < len(notes[kind]) else {}
            files[kind].write(json.dumps({"line": i, "notes": note, **row},
                                         separators=(",", ":")) + "\n")
            files[kind].flush()
            have[kind] = i + 1
            if progress:
                print(f"{kind} {i + 1}/{len(lines[kind])} {row['cpu']:.1f} s", flush=True)
        if pool is not None:
            pool.close()
            pool.join()
    finally:
        for f in files.values():
            f.close()
    return have


def reviewed_rows(path: Path) -> list[dict[str, Any]]:
    """The reduced rounds of a ``reviewed`` file (plain, or gzip: ``.gz``)."""
    if path.suffix == ".gz":
        import gzip

        with gzip.open(path, "rt") as f:
            return [json.loads(line) for line in f if line.strip()]
    return [json.loads(line) for line in read_lines(path)]
