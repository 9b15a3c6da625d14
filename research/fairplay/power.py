"""The power study: for each kind of player, its reviewed rounds resampled into matches of
R rounds, and each fair-play signal computed on every match as review-replays --fair-play
computes it over a partnership's or a player's rounds; the share of matches flagged at
p < 5 % and p < 1 % is the signal's power for a cheat of that signal, its false-positive
rate for an honest player.

The units resampled are whole rounds of one player (or one partnership): a match of R
rounds draws R distinct rounds of the kind's reviewed rounds (with replacement only when
the kind has fewer than R), each with its tested seat
(seat a's and seat b's rounds are both the kind's player's, pooled), and the signal is the
command's over them (``shuangkou.core.fairplay``, used here only as the command uses it, to
aggregate the per-round figures :mod:`.reviewed` keeps):

* **hand sharing**, per partnership: ``Sums`` of the rounds' partnership scores, their own
  and beyond the other partnership's (``RoundFair.team_beyond``), ``Sums.signal("partner")``
  (Student's t over the rounds, on both), and of its tells (``RoundFair.tells_beyond``), the
  stronger of the two
  (``either``);
* **full sight**, per player: the same of its seat's scores beyond its opponents'
  (``RoundFair.seat_beyond``), ``signal("all")``, and of its sight scores
  (``RoundFair.sight_beyond``), the stronger of the two (``either``);
* **thrown rounds**, per player: ``thrown_signal`` over its rounds' give-ups, chances and
  final amounts (kept by :mod:`.told` for every round; a permutation test: up to
  ``permutations`` deals of the give-ups, seeded per match);
* **engine assistance**, per player: ``engine_signal`` of its summed counts (a sign test).

The reference team's seats (the rule policy) are an honest kind of their own for each kind
they face, ``ref-rule vs <kind>``: a match is played against one partnership, and what the
opponents play moves an honest seat's figures (core_ext/fairplay.py, "The table is the
control"). Beside the resampled rates, for the information signals: ``d``, the
pool's mean round score beyond its tables over its standard deviation, with its 95 %
interval, and the same of its own scores — what an honest player's false-positive rate over
R rounds rests on (about 1 − Φ(z_α − √R·d) for the smaller of the two, both tests having
to flag), and what a pool of N rounds can tell of it; for thrown rounds, how often a flagged thrower's
named round was one it threw.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any

from shuangkou.core.fairplay import (
    GiveUps,
    RoundScore,
    Sums,
    TableScore,
    either,
    engine_signal,
    thrown_signal,
)
from shuangkou.service.review.fair import EngineTells, RoundFair

from .archive import LABELS
from .kinds import KINDS, SIGNALS
from .reviewed import REVIEWED, review_cpu, reviewed_rounds, reviewed_rows
from .told import tells_rows

__all__ = ["ALPHAS", "DEFAULT_SIZES", "Pools", "load", "rates", "study"]

ALPHAS = (0.05, 0.01)
#: What a kept folder says of the review's cost (``keep``).
CPU = "cpu.json"
DEFAULT_SIZES = (10, 20, 50)
_VIEW = {"hand_sharing": "partner", "tells": "tells", "full_sight": "all", "sight": "tells"}
#: The study's tables: the signals, and the tells (the hand-sharing and full-sight signals'
#: second parts) alone.
TABLES = ("hand_sharing", "tells", "full_sight", "sight", *SIGNALS[2:])
_TITLE = {"hand_sharing": "hand sharing, per partnership",
          "tells": "hand sharing's tells alone, per partnership, every round",
          "full_sight": "full sight, per player",
          "sight": "full sight's tells alone, per player, every round",
          "thrown_rounds": "thrown rounds, per player",
          "engine": "engine assistance, per player"}


@dataclass
class Pair:
    """One round of one partnership: its hand-sharing scores beyond the other
    partnership's, on the views and on the tells (None: none carried evidence, or the round's
    tells were not computed)."""

    views: TableScore | None
    tells: TableScore | None


@dataclass
class Player:
    """One reviewed round of one player: its full-sight scores beyond its opponents', on the
    views and on the tells (its sight score; None: none carried evidence, or the round's
    tells were not computed), and its engine counts."""

    full_sight: TableScore | None
    engine: EngineTells
    sight: TableScore | None = None


@dataclass
class Thrown:
    """One round of one player for the thrown-round test: its give-ups and chances, and
    whether it threw the round (None: not a thrower)."""

    give_ups: GiveUps
    throws: bool | None


@dataclass
class Pools:
    """Every kind's reviewed rounds: ``pairs`` its partnership's hand-sharing scores,
    ``players`` its players' rounds, ``cheat`` the signal it cheats on (None: honest),
    ``points`` the tested team's points in each round, ``decisions`` the evaluated
    decisions of each; ``cpu`` the review's CPU (seconds) over ``cpu_rounds`` rounds."""

    pairs: dict[str, list[Pair]] = field(default_factory=dict)
    tells: dict[str, list[TableScore | None]] = field(default_factory=dict)
    sight: dict[str, list[TableScore | None]] = field(default_factory=dict)
    players: dict[str, list[Player]] = field(default_factory=dict)
    thrown: dict[str, list[Thrown]] = field(default_factory=dict)
    cheat: dict[str, str | None] = field(default_factory=dict)
    points: dict[str, list[float]] = field(default_factory=dict)
    decisions: dict[str, list[int]] = field(default_factory=dict)
    cpu: float = 0.0
    cpu_rounds: int = 0


def _score(x: Sequence[float] | None) -> RoundScore | None:
    return None if x is None else RoundScore(x[0], x[1], int(x[2]))


def load(folder: Path, kinds: Sequence[str] | None = None,
         variants: Sequence[str] | None = None) -> Pools:
    """The pools of an archive's reviewed rounds (``folder/reviewed``) or of a kept folder
    (``folder/*.jsonl.gz``), with ``folder/labels.json``; only the rounds of ``variants``
    when given."""
    labels = json.loads((folder / LABELS).read_text())["players"]
    pools = Pools()
    if (folder / REVIEWED).is_dir():
        found = reviewed_rounds(folder, kinds)
        pools.cpu, pools.cpu_rounds = review_cpu(folder)
    else:
        found = {path.name.split(".")[0]: reviewed_rows(path)
                 for path in sorted(folder.glob("*.jsonl.gz"))}
        if (folder / CPU).exists():
            cost = json.loads((folder / CPU).read_text())
            pools.cpu, pools.cpu_rounds = cost["cpu"], cost["rounds"]
    def kind_of(pid: str, table: str) -> str:
        # a reference seat is a kind of its own for each kind it faces (module doc)
        kind: str = labels[pid]["kind"]
        return f"{kind} vs {table}" if kind.startswith("ref-") else kind

    told = tells_rows(folder)
    told_at = {name: {row["line"]: row for row in rows} for name, rows in told.items()}
    for name, rows in sorted(told.items()):
        if name not in KINDS or (kinds and name not in kinds):
            continue
        for row in rows:
            fair = _told(row)
            for t in (0, 1):
                pools.tells.setdefault(kind_of(row["players"][t], name), []).append(
                    fair.tells_beyond(t))
            for s, pid in enumerate(row["players"]):
                pools.sight.setdefault(kind_of(pid, name), []).append(fair.sight_beyond(s))
                pools.thrown.setdefault(kind_of(pid, name), []).append(
                    Thrown(GiveUps(*row["blocks"][s], row["final"][s], tuple(row["late"][s])),
                           row["throws"][s]))
    for name, rows in sorted(found.items()):
        if name not in KINDS or (kinds and name not in kinds):
            continue
        for row in rows:
            if variants and row["notes"]["variant"] not in variants:
                continue
            ids = row["players"]
            tells = told_at.get(name, {}).get(row["line"])
            assert tells is None or tells["players"] == ids, (name, row["line"])
            told_round = _told(tells) if tells else RoundFair((None, None), (), ())
            fair = RoundFair((_score(row["hand_sharing"][0]), _score(row["hand_sharing"][1])),
                             tuple(_score(x) for x in row["full_sight"]),
                             tuple(EngineTells(*x) for x in row["engine"]),
                             told_round.tells, sight=told_round.sight)
            for t in (0, 1):
                kind = kind_of(ids[t], name)
                pools.pairs.setdefault(kind, []).append(
                    Pair(fair.team_beyond(t), fair.tells_beyond(t) if tells else None))
                pools.cheat[kind] = labels[ids[t]]["cheat"]
            for s, pid in enumerate(ids):
                pools.players.setdefault(kind_of(pid, name), []).append(Player(
                    fair.seat_beyond(s), fair.engine[s],
                    fair.sight_beyond(s) if tells else None))
            pools.points.setdefault(name, []).append(row["notes"]["points"])
            pools.decisions.setdefault(name, []).append(row["decisions"])
    return pools


def _told(row: Mapping[str, Any]) -> RoundFair:
    """A kept tells row (:mod:`.told`) as the round's figures it holds: the partnerships'
    tells and the seats' sight scores."""
    return RoundFair((None, None), (), (), (_score(row["tells"][0]), _score(row["tells"][1])),
                     sight=tuple(_score(x) for x in row["sight"]))


def _sums(scores: Iterable[RoundScore | None]) -> Sums:
    sums = Sums()
    for x in scores:
        sums.add(x)
    return sums


def _p(signal: str, units: Sequence[Any], permutations: int, seed: int) -> tuple[float, str]:
    """The signal's p-value over one match's rounds (and the thrown-round test's note)."""
    if signal == "hand_sharing":
        parts = {"views": _sums(u.views for u in units).signal("partner"),
                 "tells": _sums(u.tells for u in units).signal("tells")}
        return either("hand_sharing", parts).p, ""
    if signal == "full_sight":
        parts = {"views": _sums(u.full_sight for u in units).signal("all"),
                 "tells": _sums(u.sight for u in units).signal("tells")}
        return either("full_sight", parts).p, ""
    if signal in _VIEW:
        return _sums(units).signal(_VIEW[signal]).p, ""
    if signal == "engine":
        return engine_signal(sum(u.engine.engine for u in units),
                             sum(u.engine.rule for u in units)).p, ""
    s = thrown_signal([u.give_ups for u in units], permutations=permutations, seed=seed)
    return s.p, s.note


def rates(signal: str, pool: Sequence[Any], size: int, matches: int, *, permutations: int,
          seed: int) -> dict[str, Any]:
    """Matches of ``size`` rounds drawn from ``pool`` (distinct rounds; with replacement when
    the pool holds fewer): the share with p below each of
    :data:`ALPHAS`, and (thrown rounds) among those flagged at 5 % the share whose named
    round was thrown."""
    rng = random.Random(f"{seed}/{signal}/{size}")
    flagged = [0] * len(ALPHAS)
    named = thrown_named = 0
    for i in range(matches):
        units = ([pool[k] for k in rng.sample(range(len(pool)), size)] if size <= len(pool)
                 else [pool[rng.randrange(len(pool))] for _ in range(size)])
        p, note = _p(signal, units, permutations, i)
        for j, alpha in enumerate(ALPHAS):
            flagged[j] += p < alpha
        if signal == "thrown_rounds" and p < ALPHAS[0] and note.startswith("round "):
            at = int(note.split()[1].rstrip(":"))
            if units[at].throws is not None:
                named += 1
                thrown_named += bool(units[at].throws)
    out: dict[str, Any] = {"size": size, "matches": matches,
                           "rates": [k / matches for k in flagged]}
    if named:
        out["named_thrown"] = thrown_named / named
    return out


def _standardised(scores: Sequence[TableScore | None],
                  own: bool = False) -> tuple[float, float, int]:
    """The pool's mean round score (beyond its tables; ``own``: its own) over its standard
    deviation, the half-width of its 95 % interval, and the rounds that carried
    evidence."""
    xs = [(s.own if own else s.beyond).score for s in scores if s is not None]
    n = len(xs)
    if n < 2:
        return 0.0, math.inf, n
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) or 1.0
    return mean / sd, 1.96 / math.sqrt(n), n


def _implied(size: int, alpha: float, d: float) -> float:
    """An honest player's false-positive rate over ``size`` rounds at level ``alpha`` were
    its rounds' standardised mean score ``d`` (normal approximation)."""
    normal = NormalDist()
    return 1 - normal.cdf(normal.inv_cdf(1 - alpha) - math.sqrt(size) * d)


def _role(cheat: str | None, signal: str) -> str:
    signal = {"tells": "hand_sharing", "sight": "full_sight"}.get(signal, signal)
    return "honest" if cheat is None else "cheat" if cheat == signal else "other"


def study(folder: Path, kinds: Sequence[str] | None = None, *,
          sizes: Sequence[int] = DEFAULT_SIZES, matches: int = 2000, permutations: int = 2000, seed: int = 1, variants: Sequence[str] | None = None,
          signals: Sequence[str] = TABLES, json_out: Path | None = None) -> dict[str, Any]:
    """Print a table per signal of ``signals`` (module doc) over the rounds of ``variants``
    (None: all) and return the figures."""
    t0 = time.process_time()
    pools = load(folder, kinds, variants)
    order = sorted(pools.cheat, key=lambda k: (pools.cheat[k] is not None,
                                               SIGNALS.index(pools.cheat[k] or SIGNALS[0]),
                                               not k.startswith("ref-"), k))
    _print_kinds(pools, order)
    figures: dict[str, Any] = {"sizes": list(sizes), "alphas": list(ALPHAS),
                               "variants": list(variants or ()), "signals": {}}
    for signal in signals:
        n_matches = matches
        print(f"\n{_TITLE[signal]}: share of matches flagged at p < 5 % / 1 % "
              f"({n_matches} matches of R rounds resampled from N reviewed rounds"
              + (f"; {permutations} permutations each" if signal == "thrown_rounds" else "")
              + ")")
        head = "".join(f"   R={r:<3}  5 %    1 %" for r in sizes)
        extra = (f"   d ±95 %        own     implied at R={max(sizes)}, 5 %") \
            if signal in _VIEW else "   named thrown" if signal == "thrown_rounds" else ""
        print(f"{'kind':31} {'role':6} {'N':>5}{head}{extra}")
        rows = figures["signals"][signal] = []
        by_kind = {"hand_sharing": pools.pairs, "tells": pools.tells, "sight": pools.sight,
                   "thrown_rounds": pools.thrown}.get(signal, pools.players)
        for kind in order:
            if kind not in by_kind:
                continue
            pool: Sequence[Any] = by_kind[kind]
            role = _role(pools.cheat[kind], signal)
            got = [rates(signal, pool, r, n_matches, permutations=permutations,
                         seed=seed) for r in sizes]
            cells = "".join(f"   {'':5} {g['rates'][0]:5.3f}  {g['rates'][1]:5.3f}"
                            for g in got)
            row: dict[str, Any] = {"kind": kind, "role": role, "rounds": len(pool),
                                   "by_size": got}
            tail = ""
            if signal in _VIEW:
                scores = ([u.views for u in pool] if signal == "hand_sharing" else pool
                          if signal in ("tells", "sight") else [u.full_sight for u in pool])
                d, half, carried = _standardised(scores)
                own = _standardised(scores, own=True)[0]
                top = max(sizes)
                # both tests must flag (core_ext/fairplay.py Sums.signal): the smaller rate
                implied = [min(_implied(top, ALPHAS[0], d + x), _implied(top, ALPHAS[0], own + x))
                           for x in (-half, 0.0, half)]
                row.update(carried=carried)
                tail = "   no round carried evidence"    # a seat that plays the reference
                if carried >= 2:
                    row.update(d=d, d_half=half, d_own=own, implied=implied)
                    tail = (f"   {d:+.3f} ±{half:.3f}  {own:+.3f}  {implied[1]:.3f} "
                            f"[{implied[0]:.3f}, {implied[2]:.3f}]")
            elif signal == "thrown_rounds":
                named = [g.get("named_thrown") for g in got]
                if any(x is not None for x in named):
                    tail = "   " + " ".join("-" if x is None else f"{x:.2f}" for x in named)
            print(f"{kind:31} {role:6} {len(pool):5d}{cells}{tail}", flush=True)
            rows.append(row)
    figures["cpu_study"] = time.process_time() - t0
    print(f"\nstudy: {figures['cpu_study']:.0f} s of CPU")
    if json_out is not None:
        json_out.write_text(json.dumps(figures, indent=1) + "\n")
    return figures


def _print_kinds(pools: Pools, order: Sequence[str]) -> None:
    """The kinds: reviewed rounds, the tested team's points a round against the reference
    (95 % interval), the evaluated decisions a round; then the review's CPU."""
    print(f"{'kind':17} {'cheats on':14} {'rounds':>6} {'points/round':>15} "
          f"{'decisions/round':>16}")
    for kind in order:
        if kind not in pools.points:
            continue
        pts, n = pools.points[kind], pools.decisions[kind]
        points = "-"
        if len(pts) > 1:
            mean = sum(pts) / len(pts)
            half = 1.96 * math.sqrt(sum((x - mean) ** 2 for x in pts) / (len(pts) - 1)
                                    / len(pts))
            points = f"{mean:+6.2f} ±{half:5.2f}"
        print(f"{kind:17} {str(pools.cheat[kind]):14} {len(pts):6d} {points:>15} "
              f"{sum(n) / len(n):16.1f}")
    if pools.cpu_rounds:
        print(f"review: {pools.cpu:.0f} s of CPU for {pools.cpu_rounds} rounds "
              f"({pools.cpu / pools.cpu_rounds:.2f} s a round; review-replays and its workers)")
