"""The tells (shuangkou.core.tells) and the give-ups (shuangkou.core.fairplay
``over_partner``, ``concedes``) of every round of the archive, as review-replays
--fair-play computes them: per decision ``tell`` and ``opponents_tell`` at the command's default seed (0; the
decoys are seeded by it and the action's index, so the figures are the command's own),
the tells of the partner's hand summed per partnership (``tell_score``), both per seat
(``sight_score``), and per seat its blocks and concessions with their chances.

Neither needs rollouts (a few milliseconds a round), so they are computed for every round
of each kind, not only the reviewed ones: ``tells`` writes ``<into>/tells/<kind>.jsonl.gz``,
one line a round — its ``line`` in the kind's file, its ``players`` by table seat, per team
(table seats t and t + 2) its tells' score ``[score, excess, tells]`` or None, per table seat
its ``sight`` score alike (its tells of the partner's hand and of the opponents'),
``blocks`` ``[blocks, chances, concessions, chances to concede]`` and ``late`` the same of
its endgame (core_ext/fairplay.py ``LATE``), its ``final`` amount in
the round (the thrown-round test counts the rounds a player lost) and ``throws`` (whether
the seat threw the round, from the archive's notes; None: not a thrower) — and the power
study reads them beside the reviewed rounds (the hand-sharing and full-sight signals'
second parts) and alone (the tells' own tables over every round, and the thrown-round
test's).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shuangkou.core.cards import SEATS
from shuangkou.core.fairplay import GiveUps, concedes, over_partner
from shuangkou.core.replay import parse_replay
from shuangkou.core.tells import Tell, opponents_tell, sight_score, tell, tell_score

from .archive import read_lines

__all__ = ["TELLS", "round_tells", "tell_archive", "tells_rows"]

TELLS = "tells"
#: The seed review-replays reviews with unless told otherwise (its ``--seed``).
SEED = 0


def round_tells(replay: dict[str, Any], seed: int = SEED) -> dict[str, Any]:
    """One round's players by table seat, per team its tells' score and per table seat its
    give-ups, their chances and its final amount (module doc)."""
    typed = parse_replay(replay)
    r = typed.start()
    told: list[list[Tell]] = [[] for _ in range(SEATS)]
    beats: list[list[Tell]] = [[] for _ in range(SEATS)]
    # per seat, its chances to block and to concede: (taken, its cards left then)
    over: list[list[tuple[bool, int]]] = [[] for _ in range(SEATS)]
    conceded: list[list[tuple[bool, int]]] = [[] for _ in range(SEATS)]
    for i, action in enumerate(typed.actions):
        if action.kind == "escape":
            r.apply(action)
            continue
        before = r.copy()
        record = r.apply(action)
        t = tell(before, action.cards, record.reading, seed=seed, index=i)
        if t is not None:
            told[action.seat].append(t)
        b = opponents_tell(before, action.cards, record.reading, seed=seed, index=i)
        if b is not None:
            beats[action.seat].append(b)
        left = before.cards_left[action.seat]
        if (o := over_partner(before, action.cards)) is not None:
            over[action.seat].append((o, left))
        if (c := concedes(before, action.cards)) is not None:
            conceded[action.seat].append((c, left))
    final = list(r.result().final)
    give_ups = [GiveUps.of(over[s], conceded[s], final[s]) for s in range(SEATS)]
    scores = [tell_score((told[t], told[t + 2])) for t in (0, 1)]
    sight = [sight_score(told[s] + beats[s]) for s in range(SEATS)]
    players = replay.get("players")
    return {"players": [players[r.hand_at[t]] for t in range(SEATS)] if players else None,
            "tells": [None if s is None else [s.score, s.excess, s.decisions] for s in scores],
            "sight": [None if s is None else [s.score, s.excess, s.decisions] for s in sight],
            "blocks": [[g.blocks, g.chances, g.concessions, g.to_concede] for g in give_ups],
            "late": [list(g.late) for g in give_ups], "final": final}


def tell_archive(archive: Path, into: Path, kinds: Sequence[str]) -> dict[str, int]:
    """Write the tells of every round of each of ``kinds`` in ``archive`` into
    ``into/tells`` (module doc); the rounds written per kind."""
    out = into / TELLS
    out.mkdir(parents=True, exist_ok=True)
    done = {}
    for kind in kinds:
        source = archive / f"{kind}.jsonl"
        if not source.exists():
            continue
        target = out / f"{kind}.jsonl.gz"
        notes = archive / f"{kind}.rounds.jsonl"
        drawn = [json.loads(n).get("drawn", {}) for n in read_lines(notes)] if notes.exists() \
            else []
        with gzip.GzipFile(target, "wb", mtime=0) as f:
            for line, text in enumerate(read_lines(source)):
                row = {"line": line, **round_tells(json.loads(text))}
                what = drawn[line] if line < len(drawn) else {}
                row["throws"] = [what.get(p, {}).get("throws") for p in row["players"] or ()]
                f.write((json.dumps(row, separators=(",", ":")) + "\n").encode())
                done[kind] = line + 1
        print(f"{target}: {done.get(kind, 0)} rounds, {target.stat().st_size:,} bytes")
    return done


def tells_rows(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The tells rows kept in ``folder/tells``, per kind (none when it has no such folder)."""
    return {path.name.split(".")[0]: [json.loads(line) for line in
                                     gzip.open(path, "rt") if line.strip()]
            for path in sorted((folder / TELLS).glob("*.jsonl.gz"))}
