"""The archive: rounds between a tested team of one :class:`~.kinds.Kind` and a reference team,
written as replay documents that ``shuangkou review-replays`` reads, with a labels file
saying what each player and partnership is.

A kind's rounds are ``matches`` matches of ``rounds`` rounds. Round k of match m is dealt
the same for every kind (the deal's random stream is the seed's, the match's and the
round's), in variant k of the list given (cycled), the leader's partner opposite (so dealt
and table seats are one); the tested team sits at seats 0/2 in even rounds and 1/3 in odd
ones. Each tested player keeps one id through its match: ``<kind>-<m>-a`` (the seat that
leads the team's pair of seats, 0 or 1) and ``<kind>-<m>-b``; the reference team's are
``ref-<reference>-<kind>-<m>-a`` / ``-b``.

Files, in the output directory, per kind: ``<kind>.jsonl`` (one replay a line, in match
and round order, ``players`` by dealt seat) and ``<kind>.rounds.jsonl`` (line for line:
the match, the round, the variant, the tested team, what each tested seat drew — a thrower
whether it threw —, the tested team's points and the CPU the round took to play); and
``labels.json``, rebuilt from those on every run: the settings, each kind, each player id
and each partnership (the two ids joined by " + ", sorted) with its kind, role (tested or
reference) and the signal it cheats on (None: honest). A run resumes a kind where its
files stop; the same seed gives the same files, byte for byte (the CPU field aside).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from research.panel import Player, team_points
from shuangkou.core import Declaration, Round, format_cards, get_variant
from shuangkou.core.cards import SEATS, rank_name
from shuangkou.core.generate import deal

from .kinds import KINDS, REFERENCES

__all__ = ["LABELS", "Recorded", "generate", "labels", "play_round", "read_lines"]

LABELS = "labels.json"


class Recorded(Round):
    """A round that writes down each play and pass as a replay's action."""

    log: list[dict[str, Any]]

    def copy(self) -> Recorded:
        other = super().copy()
        assert isinstance(other, Recorded)
        other.log = list(self.log)
        return other

    def play(self, seat: int, cards: Any, declare: Any = None) -> Any:
        record = super().play(seat, cards, declare)
        action: dict[str, Any] = {"seat": seat, "play": format_cards(list(record.cards))}
        if declare is not None:
            action.update(_declared(declare))
        self.log.append(action)
        return record

    def pass_turn(self, seat: int) -> Any:
        record = super().pass_turn(seat)
        self.log.append({"seat": seat, "pass": True})
        return record


def _rank(value: Any) -> Any:
    return rank_name(value) if isinstance(value, int) else value


def _declared(d: Any) -> dict[str, Any]:
    """A declaration as a replay action's fields (docs/replays.md)."""
    if isinstance(d, str):
        return {"declare": d}
    assert isinstance(d, Declaration)
    fields: dict[str, Any] = {"declare": d.kind}
    if d.top is not None:
        fields["declare_top"] = _rank(d.top)
    if d.star is not None:
        fields["declare_star"] = d.star
    if d.wilds is not None:
        fields["declare_wilds"] = [_rank(w) for w in d.wilds]
    return fields


def play_round(variant: str, deal_rng: random.Random, players: Sequence[Player],
               rng: random.Random) -> tuple[dict[str, Any], Round]:
    """Deal a round from ``deal_rng`` (the leader's partner opposite) and play it out with
    ``players`` by table seat; the replay document (without ``players``) and the round."""
    v = get_variant(variant)
    hands = deal(v, deal_rng)
    leader = deal_rng.randrange(SEATS)
    r = Recorded.deal(v, hands, leader, partner=(leader + 2) % SEATS)
    assert isinstance(r, Recorded)
    r.log = []
    while not r.is_over:
        seat = r.turn
        assert seat is not None
        players[seat](r, rng)
    return ({"variant": v.id, "hands": [format_cards(h) for h in hands], "leader": leader,
             "partner": (leader + 2) % SEATS, "actions": r.log}, r)


def read_lines(path: Path) -> list[str]:
    """The complete lines of a file (a line cut short by a stopped run is dropped)."""
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")
    return [line for line in lines[:-1] if line]


def _ids(kind: str, match: int, reference: str) -> tuple[list[str], list[str]]:
    tested = [f"{kind}-{match:02d}-{s}" for s in "ab"]
    ref = [f"ref-{reference}-{kind}-{match:02d}-{s}" for s in "ab"]
    return tested, ref


def generate(out: Path, kinds: Sequence[str], *, matches: int, rounds: int,
             variants: Sequence[str], reference: str = "rule", seed: int = 1,
             progress: bool = False) -> dict[str, int]:
    """Write (or complete) the archive of ``kinds`` in ``out`` (module doc); the rounds
    each kind's file holds."""
    out.mkdir(parents=True, exist_ok=True)
    ref_seat = REFERENCES[reference]
    done: dict[str, int] = {}
    for name in kinds:
        kind = KINDS[name]
        replays, notes = out / f"{name}.jsonl", out / f"{name}.rounds.jsonl"
        have = min(len(read_lines(replays)), len(read_lines(notes)))
        _truncate(replays, have)
        _truncate(notes, have)
        with replays.open("a") as rf, notes.open("a") as nf:
            for i in range(have, matches * rounds):
                m, k = divmod(i, rounds)
                line, note = _one(name, kind.seat, ref_seat, reference, m, k,
                                  variants[i % len(variants)], seed)
                rf.write(json.dumps(line, separators=(",", ":")) + "\n")
                nf.write(json.dumps(note, separators=(",", ":")) + "\n")
                rf.flush()
                nf.flush()
                if progress:
                    print(f"{name} {i + 1}/{matches * rounds}", flush=True)
        done[name] = matches * rounds
    (out / LABELS).write_text(json.dumps(labels(out, reference, seed), indent=1,
                                         ensure_ascii=False) + "\n")
    return done


def _truncate(path: Path, lines: int) -> None:
    """Keep the first ``lines`` complete lines of ``path`` (what a resumed run builds on)."""
    if path.exists():
        kept = read_lines(path)[:lines]
        path.write_text("".join(line + "\n" for line in kept))


def _one(name: str, seat: Any, ref_seat: Any, reference: str, m: int, k: int, variant: str,
         seed: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Round k of match m of kind ``name``: its replay and its notes."""
    deal_rng = random.Random(f"fairplay/{seed}/deal/{m}/{k}")
    rng = random.Random(f"fairplay/{seed}/{name}/{m}/{k}")
    side = k % 2
    tested, ref = _ids(name, m, reference)
    drawn = [seat(rng), seat(rng)]
    others = [ref_seat(rng), ref_seat(rng)]
    players: list[Player] = [None] * SEATS  # type: ignore[list-item]
    ids = [""] * SEATS
    for j in (0, 1):
        players[side + 2 * j], ids[side + 2 * j] = drawn[j][0], tested[j]
        players[1 - side + 2 * j], ids[1 - side + 2 * j] = others[j][0], ref[j]
    t = time.process_time()
    doc, r = play_round(variant, deal_rng, players, rng)
    cpu = time.process_time() - t
    doc["players"] = ids
    note = {"match": m, "round": k, "variant": variant, "tested": side,
            "drawn": {tested[j]: drawn[j][1] for j in (0, 1) if drawn[j][1]},
            "points": team_points(r, side), "cpu": round(cpu, 3)}
    return doc, note


def labels(out: Path, reference: str, seed: int) -> dict[str, Any]:
    """What each player and partnership of the archive in ``out`` is (module doc)."""
    players: dict[str, Any] = {}
    pairs: dict[str, Any] = {}
    kinds: dict[str, Any] = {}
    rounds = 0
    for notes in sorted(out.glob("*.rounds.jsonl")):
        name = notes.name.removesuffix(".rounds.jsonl")
        if name not in KINDS:
            continue
        kind = KINDS[name]
        rows = [json.loads(line) for line in read_lines(notes)]
        rounds += len(rows)
        kinds[name] = {"cheat": kind.cheat, "what": kind.what, "rounds": len(rows)}
        for m in sorted({row["match"] for row in rows}):
            tested, ref = _ids(name, m, reference)
            mine = [row for row in rows if row["match"] == m]
            for ids, role, cheat in ((tested, "tested", kind.cheat), (ref, "reference", None)):
                what = kind.what if role == "tested" else f"the reference team ({reference})"
                for pid in ids:
                    players[pid] = {"kind": name if role == "tested" else f"ref-{reference}",
                                    "role": role, "match": m, "rounds": len(mine),
                                    "cheat": cheat, "what": what}
                    if cheat == "thrown_rounds":
                        players[pid]["thrown_rounds"] = [
                            row["round"] for row in mine
                            if row["drawn"].get(pid, {}).get("throws")]
                pairs[" + ".join(sorted(ids))] = {
                    "kind": name if role == "tested" else f"ref-{reference}", "role": role,
                    "match": m, "cheat": cheat, "what": what}
    return {"seed": seed, "reference": reference, "rounds": rounds, "kinds": kinds,
            "players": players, "pairs": pairs}
