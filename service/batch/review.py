"""``shuangkou review-replays``: review an archive, with per-player and per-partnership figures.

An archive run (:mod:`~shuangkou.service.batch.archive`: partitions, exactly once,
resumable, every core, ``--dask``, ``--shard`` and ``--merge``) whose :class:`ReviewJob`
turns each replay line into its review (:func:`shuangkou.core.review.review`, docs/review.md)
and adds up, in every partition's counts and so in the summary:

* for every player a replay names (its ``players``, by dealt seat; the review reports them
  by table seat): non-forced decisions, mean loss per decision and the loss share (losses
  over stakes: the figure that compares players, docs/review.md) with 95 % intervals,
  inaccuracy / mistake / blunder counts, the blunder rate and the agreement with the
  search's first choice and its top 3, each with a Wilson interval;
* for every partnership (two players who sat as partners, table seats 0 and 2 or 1 and 3):
  the collusion signal from the review's ``oracle=True`` evaluation on the TRUE deal — the
  mean ``oracle_gain`` per decision (the taken action's value on the true deal minus the
  fair best's) with its interval, and the share of non-forced decisions where the taken
  action differs from the fair best and beats it on the true deal (a seat that sees its
  partner's cards finds such actions; one that does not, only by luck) — beside the
  archive's rate over every partnership;
* with ``--fair-play`` (the review's fair-play views, core_ext/fairplay.py; docs/review.md
  "Fair play"), the signals that supersede the collusion signal above: per partnership
  **hand sharing**, per player **full sight**, **thrown rounds** (the player's give-ups —
  blocks of its partner, tricks conceded — crowded into some of the rounds it lost, three or
  more to a round; the round of most named, and the opponent who gained most in it) and
  **engine assistance** (托管's choice taken where it is not the rule policy's, and the
  player's agreement over every such decision beside its loss share elsewhere) — each with its
  95 % interval, one-sided p-value and the decisions and rounds that carried its evidence,
  and how many flags chance alone would raise among those tested;
* the same over every decision of the archive, and :data:`CAVEATS`, which a platform must
  read before it acts on any of it.

Means are ratio estimates over rounds: a round is one sample (its decisions share a deal and
are not independent), so an interval is the cluster-robust one, ``m ± 1.96·se`` with
``se² = R/(R−1)·Σ(x_r − m·n_r)² / (Σn_r)²`` over the R rounds (for the loss share, n_r is
the round's stake); every sum it needs adds up
exactly over partitions, so shards merged give what one run gives. The fair-play sums do
too: the information signals' :class:`~shuangkou.core.fairplay.Sums`, the engine counts and,
for the thrown-round test (a permutation test over a player's give-ups), each player's
rounds as short lists of its give-ups, their chances and its final amount in archive
order.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from shuangkou.core.errors import ShuangkouError
from shuangkou.core.fairplay import (
    Agreement,
    GiveUps,
    Signal,
    Sums,
    either,
    engine_signal,
    thrown_signal,
)
from shuangkou.core.suggest import DEFAULT_WIDTH

from ..inputs import Line
from ..review.fair import NOT_PROOF, WHAT_TO_DO, fair_played, gained_most, round_fair
from ..review.options import budget_arguments, budget_of, fair_play_arguments, fair_play_given
from ..shown import shown
from .archive import ArchiveError, Job, Stats
from .command import archive_arguments, archive_main, check_archive_args
from .records import failure_record, line_error

if TYPE_CHECKING:       # the review itself is imported where a line is reviewed
    from shuangkou.core.review import ReviewBudget

__all__ = ["ALPHA", "CAVEATS", "FAIR_SUMS", "MIN_DECISIONS", "MIN_ROUNDS", "PlayerFair", "ReviewJob",
           "ReviewStats", "main", "wilson"]

#: Non-forced decisions below which a player's or a partnership's figures are marked small.
MIN_DECISIONS = 200
#: Rounds carrying evidence below which a fair-play signal is marked small and never
#: flagged (docs/decisions/engineering.md E78).
MIN_ROUNDS = 10
#: The format of the fair-play sums a partition keeps (8: a player's engine counts are
#: core_ext/fairplay.py ``Agreement``, with every departure of 托管's choice and the skill
#: elsewhere; 7: a player's rounds hold the counts
#: of its endgame apart, and a free beat splits no set, E94; 6: a player's rounds hold its final
#: amount, the thrown-round test counting the rounds it lost, E93; 5: the views' regrets and
#: the tells read against the reference action, E92; 4: against the view's best, the leads
#: not chosen and the pass rate, a player's rounds holding its concessions beside its
#: blocks; 3 its blocks alone; 2 the information signals' sums without the rounds' own
#: scores; 1 a player's rounds as losses).
FAIR_SUMS = 8
#: The one-sided p-value below which a fair-play signal over enough rounds is flagged.
ALPHA = 0.01
#: 25 replays are a few minutes of review on one core at the default budget: a lost
#: partition costs little, and a Dask task's overhead is nothing beside it.
DEFAULT_PARTITION_LINES = 25
Z95 = 1.959964
SHOWN = 10                   # players and partnerships printed (all are in summary.json)
# Player ids hold no control characters (core_ext/replay.py check_players): a safe joiner.
_PAIR = "\x1f"

CAVEATS = (
    "Variance per round: the deal decides much of a round, so a round counts as one sample "
    "(its decisions are not independent) and a few dozen rounds say little.",
    "The engine's own bias: losses, verdicts and agreement are measured against the search's "
    "model of the other seats at a finite rollout budget; a strong player of another style "
    "can look worse, and a bot that plays like the engine looks flawless.",
    NOT_PROOF + " Nor is a partnership whose choices beat the fair best on the true deal more "
    "often than the archive's rate (the oracle's collusion signal, which the fair-play "
    "signals supersede).",
    WHAT_TO_DO,
    f"False alarms among many: each signal's p-value holds for one "
    f"honest partnership or player, so at p < {ALPHA} about one in {round(1 / ALPHA)} is "
    "flagged by chance alone; the summary says how many were tested and how many flags "
    "chance makes among them. Each round counts on its own and beyond its table's (the same "
    "deal, the same evaluator), both to flag; facing the rule policy, the panel's honest "
    "styles came to at most 4.2 % of matches flagged at p < 0.05 and 0.9 % at p < 0.01 on "
    "hand sharing over 10, 20 and 50 rounds, and on full sight every style at most 5.7 % "
    "and 0.9 % but the bomber style, flagged in up to 11 % of 50-round matches at "
    "p < 0.05 (docs/BENCHMARKS.md \"Fair play\"); facing 托管's search, every panel style "
    "that departs from the reference (not the searches) was flagged above the nominal rate "
    "on hand sharing and full sight, the bomber style in up to 24 % of 50-round matches at "
    "p < 0.05 on hand sharing and 28 % on full sight, random play in up to 17 %: read a "
    "flag against the opponents' strength. On thrown rounds, which count only the rounds a "
    "player lost, every honest style facing the rule policy at most 3.9 % at p < 0.05 and "
    "0.5 % at p < 0.01, and facing 托管's search at most 2.4 % and 0.1 %, but the search "
    "facing a search (its own kind, or 托管's search at 200 rollouts) in up to 8.8 % and "
    "4.6 % of 50-round matches: a strong player now and then gives up three times or more "
    "in a round it loses. Read a thrown-rounds flag with the round it names.",
    f"Minimum sample: figures over fewer than {MIN_DECISIONS} non-forced decisions, and "
    f"fair-play signals over fewer than {MIN_ROUNDS} rounds that carried evidence, are marked "
    "small; do not rank or flag anyone on them.",
)

# The sums of a tally (all add up over partitions). n: non-forced decisions; x: their loss;
# s: their stake; g, m: oracle gain and the decisions that have one; nn, xx, xn, ss, xs, gg,
# gm, mm: the squares and products of the per-round sums (cluster-robust intervals).
_KEYS = ("rounds", "n", "forced", "inaccuracy", "mistake", "blunder", "first", "top3", "x",
         "nn", "xx", "xn", "s", "ss", "xs", "m", "g", "beats", "mm", "gg", "gm")


def _tally() -> dict[str, float]:
    return dict.fromkeys(_KEYS, 0.0)


def _add(into: dict[str, float], other: dict[str, float]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _round_sums(decisions: Iterable[dict[str, Any]]) -> dict[str, float]:
    """One round's contribution of some decisions (a seat's, or a partnership's two)."""
    t = _tally()
    t["rounds"] = 1
    for d in decisions:
        if d["forced"]:
            t["forced"] += 1
            continue
        t["n"] += 1
        t["x"] += d["loss"]
        t["s"] += d["stake"]
        if d["verdict"] in ("inaccuracy", "mistake", "blunder"):
            t[d["verdict"]] += 1
        t["first"] += bool(d["agrees_first"])
        t["top3"] += bool(d["agrees_top3"])
        gain = d.get("oracle_gain")
        if gain is not None:
            t["m"] += 1
            t["g"] += gain
            t["beats"] += gain > 0 and not d["candidates"][d["best"]].get("taken", False)
    t["nn"], t["xx"], t["xn"] = t["n"] ** 2, t["x"] ** 2, t["x"] * t["n"]
    t["ss"], t["xs"] = t["s"] ** 2, t["x"] * t["s"]
    t["mm"], t["gg"], t["gm"] = t["m"] ** 2, t["g"] ** 2, t["g"] * t["m"]
    return t


def _ratio(sx: float, sn: float, sxx: float, sxn: float, snn: float,
           rounds: float) -> tuple[float | None, list[float] | None]:
    """Σx/Σn (a mean per decision, or per point at stake) and its cluster-robust 95 %
    interval (None without the data)."""
    if not sn:
        return None, None
    mean = sx / sn
    if rounds < 2:
        return round(mean, 4), None
    ss = max(sxx - 2 * mean * sxn + mean * mean * snn, 0.0)
    se = math.sqrt(rounds / (rounds - 1) * ss) / sn
    return round(mean, 4), [round(mean - Z95 * se, 4), round(mean + Z95 * se, 4)]


def wilson(k: float, n: float, z: float = Z95) -> list[float] | None:
    """The Wilson score interval of a proportion k/n (None for n = 0).

    >>> wilson(0, 10)
    [0.0, 0.2775]
    """
    if not n:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(centre - half, 0.0), 4), round(min(centre + half, 1.0), 4)]


def _share(k: float, n: float) -> float | None:
    return round(k / n, 4) if n else None


def player_figures(t: dict[str, float]) -> dict[str, Any]:
    """A player's (or the archive's) figures from its tally."""
    mean, interval = _ratio(t["x"], t["n"], t["xx"], t["xn"], t["nn"], t["rounds"])
    share, share_interval = _ratio(t["x"], t["s"], t["xx"], t["xs"], t["ss"], t["rounds"])
    n = t["n"]
    return {"rounds": int(t["rounds"]), "decisions": int(n), "forced": int(t["forced"]),
            "mean_loss": mean, "mean_loss_95": interval,
            "loss_share": share, "loss_share_95": share_interval,
            "inaccuracies": int(t["inaccuracy"]), "mistakes": int(t["mistake"]),
            "blunders": int(t["blunder"]), "blunder_rate": _share(t["blunder"], n),
            "blunder_rate_95": wilson(t["blunder"], n),
            "agree_first": _share(t["first"], n), "agree_first_95": wilson(t["first"], n),
            "agree_top3": _share(t["top3"], n), "agree_top3_95": wilson(t["top3"], n),
            "small_sample": n < MIN_DECISIONS}


def pair_figures(t: dict[str, float]) -> dict[str, Any]:
    """A partnership's (or every partnership's) collusion signal from its tally."""
    mean, interval = _ratio(t["g"], t["m"], t["gg"], t["gm"], t["mm"], t["rounds"])
    return {"rounds": int(t["rounds"]), "decisions": int(t["m"]),
            "mean_oracle_gain": mean, "mean_oracle_gain_95": interval,
            "beats_true_deal": _share(t["beats"], t["m"]),
            "beats_true_deal_95": wilson(t["beats"], t["m"]),
            "small_sample": t["m"] < MIN_DECISIONS}


@dataclass
class PlayerFair:
    """One player's fair-play sums: ``full_sight`` and ``sight``
    (:class:`~shuangkou.core.fairplay.Sums` of its rounds' full-sight scores on the views and
    of its sight scores, core_ext/tells.py, each beyond its opponents'), ``engine``
    (:class:`~shuangkou.core.fairplay.Agreement` of its rounds' engine counts, service/
    review/fair.py ``EngineTells``), and
    ``rounds``: per round with a chance to block or to concede, in archive order, ``[label,
    blocks, chances, concessions, chances to concede, final, late]`` (the thrown-round test's,
    core_ext/fairplay.py ``GiveUps``: it counts the rounds the player lost; ``late`` the
    four counts of its endgame), the label the
    opponent who gained most with the round's source and the player's own final amount
    there."""

    full_sight: Sums = field(default_factory=Sums)
    engine: Agreement = field(default_factory=Agreement)
    rounds: list[list[Any]] = field(default_factory=list)
    sight: Sums = field(default_factory=Sums)

    def merge(self, other: PlayerFair) -> None:
        self.full_sight.merge(other.full_sight)
        self.sight.merge(other.sight)
        self.engine.merge(other.engine)
        self.rounds += other.rounds

    def to_dict(self) -> dict[str, Any]:
        return {"full_sight": self.full_sight.to_dict(), "engine": self.engine.to_dict(),
                "rounds": self.rounds, "sight": self.sight.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PlayerFair:
        return cls(Sums.from_dict(d["full_sight"]), Agreement.from_dict(d["engine"]),
                   d["rounds"], Sums.from_dict(d["sight"]))

    def give_ups(self) -> list[GiveUps]:
        """Its kept rounds (``rounds``) as the thrown-round test's records."""
        return [GiveUps(blocks, chances, concessions, to_concede, final, tuple(late))
                for _, blocks, chances, concessions, to_concede, final, late in self.rounds]

    def thrown(self) -> Signal:
        return thrown_signal(self.give_ups(), [r[0] for r in self.rounds])


@dataclass
class ReviewStats(Stats):
    """A partition's counts (:class:`~shuangkou.service.batch.archive.Stats`) and the review
    sums: every decision, each named player and each partnership; with fair play, each
    partnership's hand-sharing sums and each player's :class:`PlayerFair`."""

    overall: dict[str, float] = field(default_factory=_tally)
    pairs_all: dict[str, float] = field(default_factory=_tally)
    players: dict[str, dict[str, float]] = field(default_factory=dict)
    pairs: dict[str, dict[str, float]] = field(default_factory=dict)
    unnamed: int = 0                 # reviewed rounds that name no players
    fair_pairs: dict[str, Sums] = field(default_factory=dict)
    fair_tells: dict[str, Sums] = field(default_factory=dict)
    fair_players: dict[str, PlayerFair] = field(default_factory=dict)

    def add_ok(self, record: dict[str, Any], file: str, line: int) -> None:
        by_seat: list[list[dict[str, Any]]] = [[], [], [], []]
        for d in record["decisions"]:
            by_seat[d["seat"]].append(d)
        names = record.get("players")
        self.unnamed += names is None
        for seat, decisions in enumerate(by_seat):
            sums = _round_sums(decisions)
            _add(self.overall, sums)
            if names is not None:
                _add(self.players.setdefault(names[seat], _tally()), sums)
        for team in (0, 1):
            sums = _round_sums(by_seat[team] + by_seat[team + 2])
            _add(self.pairs_all, sums)
            if names is not None:
                _add(self.pairs.setdefault(_pair(names, team), _tally()), sums)
        if names is not None and fair_played(record["decisions"]):
            self._add_fair(record, names, f"{file} line {line}")

    def _add_fair(self, record: dict[str, Any], names: list[str], source: str) -> None:
        """A fair-play round's sums: per partnership, per player."""
        final = record["result"]["final"]
        scores = round_fair(record["decisions"], final)
        for team in (0, 1):
            pair = _pair(names, team)
            self.fair_pairs.setdefault(pair, Sums()).add(scores.team_beyond(team))
            self.fair_tells.setdefault(pair, Sums()).add(scores.tells_beyond(team))
        for seat, name in enumerate(names):
            mine = self.fair_players.setdefault(name, PlayerFair())
            mine.full_sight.add(scores.seat_beyond(seat))
            mine.sight.add(scores.sight_beyond(seat))
            mine.engine.add(*scores.engine[seat])
            g = scores.give_ups[seat]
            if g.chances or g.to_concede:
                mine.rounds.append([f"{names[gained_most(final, seat)]} ({source}; the "
                                    f"player's final {final[seat]:+d})",
                                    g.blocks, g.chances, g.concessions, g.to_concede, g.final,
                                    list(g.late)])

    def merge_more(self, other: Stats) -> None:
        assert isinstance(other, ReviewStats)
        _add(self.overall, other.overall)
        _add(self.pairs_all, other.pairs_all)
        for mine, theirs in ((self.players, other.players), (self.pairs, other.pairs)):
            for key, sums in theirs.items():
                _add(mine.setdefault(key, _tally()), sums)
        self.unnamed += other.unnamed
        for mine_pairs, theirs_pairs in ((self.fair_pairs, other.fair_pairs),
                                         (self.fair_tells, other.fair_tells)):
            for key, pair in theirs_pairs.items():
                mine_pairs.setdefault(key, Sums()).merge(pair)
        for key, player in other.fair_players.items():
            self.fair_players.setdefault(key, PlayerFair()).merge(player)

    def more_dict(self) -> dict[str, Any]:
        review: dict[str, Any] = {"overall": self.overall, "pairs_all": self.pairs_all,
                                  "players": self.players, "pairs": self.pairs,
                                  "unnamed": self.unnamed}
        if self.fair_pairs or self.fair_players:
            review["fair"] = {"pairs": {k: s.to_dict() for k, s in self.fair_pairs.items()},
                              "tells": {k: s.to_dict() for k, s in self.fair_tells.items()},
                              "players": {k: p.to_dict()
                                          for k, p in self.fair_players.items()}}
        return {"review": review}

    def load_more(self, d: dict[str, Any]) -> None:
        r = d["review"]
        self.overall, self.pairs_all = r["overall"], r["pairs_all"]
        self.players, self.pairs, self.unnamed = r["players"], r["pairs"], r["unnamed"]
        fair = r.get("fair", {})
        self.fair_pairs = {k: Sums.from_dict(s) for k, s in fair.get("pairs", {}).items()}
        self.fair_tells = {k: Sums.from_dict(s) for k, s in fair.get("tells", {}).items()}
        self.fair_players = {k: PlayerFair.from_dict(p)
                             for k, p in fair.get("players", {}).items()}


def _pair(names: list[str], team: int) -> str:
    """A partnership's key: the two players of a team, sorted."""
    return _PAIR.join(sorted((names[team], names[team + 2])))


def _figure(signal: Signal, decisions: int, rounds: int) -> dict[str, Any]:
    """A fair-play signal as the summary gives it: the signal's own fields (rounded), the
    decisions and rounds that carried its evidence, whether its sample is small and whether
    it is flagged (p < :data:`ALPHA` over enough rounds)."""
    small = rounds < MIN_ROUNDS
    return {**signal.to_dict(), "estimate": round(signal.estimate, 4),
            "low": round(signal.low, 4), "high": round(signal.high, 4),
            "z": round(signal.z, 4), "p": float(f"{signal.p:.4g}"), "decisions": decisions,
            "rounds": rounds, "small_sample": small,
            "flagged": not small and signal.flagged(ALPHA)}


def _agreement(sums: Agreement) -> dict[str, Any]:
    """What engine assistance rests on beside its test: 托管's choice taken among every
    decision where it is not the rule policy's action (``share``, with its 95 % interval over
    the player's rounds), those decisions, and the player's loss share over its other
    evaluated decisions (``elsewhere``: its skill where agreement cannot tell)."""
    a, half = sums.agreement, 1.96 * sums.se
    return {"share": round(a, 4), "low": round(max(0.0, a - half), 4),
            "high": round(min(1.0, a + half), 4), "departs": sums.departs,
            "elsewhere": round(sums.elsewhere, 4)}


def _part(signal: Signal, sums: Sums) -> dict[str, Any]:
    """One part of a signal made of several tests (hand sharing's views and tells): its
    figures, never a flag of its own."""
    return {"estimate": round(signal.estimate, 4), "low": round(signal.low, 4),
            "high": round(signal.high, 4), "z": round(signal.z, 4),
            "p": float(f"{signal.p:.4g}"), "decisions": sums.decisions, "rounds": sums.rounds}


def _either(kind: str, views: Sums, view: str, tells: Sums) -> dict[str, Any]:
    """A signal of two tests of one cheat, the views (of ``view``) and the tells
    (core_ext/fairplay.py ``either``): the stronger's figures, p doubled, and each part's."""
    parts = {"views": (views.signal(view), views), "tells": (tells.signal("tells"), tells)}
    signal = either(kind, {name: p for name, (p, _) in parts.items()})
    used = parts[signal.note][1] if signal.note else views
    return {**_figure(signal, used.decisions, used.rounds),
            "parts": {name: _part(p, sums) for name, (p, sums) in parts.items()}}


def fair_summary(stats: ReviewStats) -> dict[str, Any]:
    """The summary's ``fair_play``: per partnership hand sharing, per player full sight,
    thrown rounds and engine assistance, and how many flags chance makes among those
    tested."""
    pairs: list[dict[str, Any]] = []
    for key, views in sorted(stats.fair_pairs.items()):
        pairs.append({"players": key.split(_PAIR), "hand_sharing": _either(
            "hand_sharing", views, "partner", stats.fair_tells.get(key, Sums()))})
    players: dict[str, dict[str, dict[str, Any]]] = {}
    for name, p in sorted(stats.fair_players.items()):
        thrown = p.thrown()
        players[name] = {
            "full_sight": _either("full_sight", p.full_sight, "all", p.sight),
            "thrown_rounds": _figure(thrown, sum(g.chances + g.to_concede
                                                 for g in p.give_ups()), thrown.evidence),
            "engine": {**_figure(engine_signal(p.engine.engine, p.engine.rule),
                                 p.engine.engine + p.engine.rule, p.engine.told),
                       "agreement": _agreement(p.engine)}}
    figures: dict[str, list[dict[str, Any]]] = {
        "hand_sharing": [f["hand_sharing"] for f in pairs],
        **{kind: [f[kind] for f in players.values()]
           for kind in ("full_sight", "thrown_rounds", "engine")}}
    chance = {}
    for kind, found in figures.items():
        tested = sum(not f["small_sample"] for f in found)
        chance[kind] = {"tested": tested, "flagged": sum(f["flagged"] for f in found),
                        "by_chance": round(tested * ALPHA, 2)}
    return {"alpha": ALPHA, "min_rounds": MIN_ROUNDS, "partnerships": pairs,
            "players": players, "flags": chance}


@dataclass(frozen=True)
class ReviewJob(Job):
    """Review every line (:func:`shuangkou.core.review.review`: ``rollouts`` per decision
    over all its ``width`` candidates, ``seed``; the true-deal evaluation with ``oracle``;
    the fair-play views with ``fair_play``, ``decoys`` decoys each on ``fair_deals``
    deals)."""

    rollouts: int | None = None      # None: the review's default budget
    width: int = DEFAULT_WIDTH       # the review's default (ReviewBudget's)
    seed: int = 0
    oracle: bool = True
    fair_play: bool = False
    decoys: int | None = None        # None: the review's default budget
    fair_deals: int | None = None

    name = "review-replays"
    done = "reviewed"
    default_partition_lines = DEFAULT_PARTITION_LINES
    stats_type = ReviewStats

    def settings(self) -> dict[str, Any]:
        # without fair play, the settings (and so a run's fingerprint) are what they were;
        # with it, the format of the sums its partitions keep is one too, so that a build
        # that sums otherwise takes a run begun by another for another run
        fair = ({"fair_play": True, "decoys": self.decoys, "fair_deals": self.fair_deals,
                 "fair_sums": FAIR_SUMS} if self.fair_play else {})
        return {"rollouts": self.rollouts, "width": self.width, "seed": self.seed,
                "oracle": self.oracle, **fair}

    def with_settings(self, settings: dict[str, Any]) -> ReviewJob:
        if settings.get("fair_play") and settings.get("fair_sums", 1) != FAIR_SUMS:
            raise ArchiveError("this run's partitions keep their fair-play sums as another "
                               f"build did (format {settings.get('fair_sums', 1)}, this "
                               f"build's {FAIR_SUMS}): review the archive again into a new "
                               "--output-dir")
        return replace(self, rollouts=settings["rollouts"], width=settings["width"],
                       seed=settings["seed"], oracle=settings["oracle"],
                       fair_play=settings.get("fair_play", False),
                       decoys=settings.get("decoys"), fair_deals=settings.get("fair_deals"))

    def budget(self) -> ReviewBudget:
        """The review's budget (ShuangkouError naming the field of a value out of bounds)."""
        from shuangkou.core.review import DEFAULT_REVIEW

        return budget_of(DEFAULT_REVIEW, rollouts=self.rollouts, width=self.width,
                         decoys=self.decoys, fair_deals=self.fair_deals)

    def record(self, line: Line, partial_deal: bool) -> dict[str, Any]:
        if (refused := line_error(line)) is not None:
            return refused
        assert isinstance(line, str)
        from shuangkou.core.review import review

        try:
            rv = review(line, budget=self.budget(), seed=self.seed, oracle=self.oracle,
                        fair=self.fair_play, partial_deal=partial_deal)
        except Exception as exc:  # noqa: BLE001 - one bad line must not stop an archive
            return failure_record(exc)
        record = {"ok": True, **rv.to_dict()}
        # The review's own timing would make a retried partition's bytes differ from the
        # first attempt's (exactly once means the same bytes): the .done file keeps time.
        record.pop("seconds", None)
        return record

    def summary(self, stats: Stats) -> dict[str, Any]:
        assert isinstance(stats, ReviewStats)
        baseline = pair_figures(stats.pairs_all)
        pairs = []
        for key, sums in sorted(stats.pairs.items()):
            figures = pair_figures(sums)
            low = (figures["beats_true_deal_95"] or [0.0])[0]
            figures["above_archive_rate"] = (not figures["small_sample"]
                                             and baseline["beats_true_deal"] is not None
                                             and low > baseline["beats_true_deal"])
            pairs.append({"players": key.split(_PAIR), **figures})
        return {"review": {"settings": self.settings(), "min_decisions": MIN_DECISIONS},
                "decisions": player_figures(stats.overall),
                "rounds_without_players": stats.unnamed,
                "players": {p: player_figures(t) for p, t in sorted(stats.players.items())},
                "partnerships": pairs, "partnership_rate": baseline,
                "fair_play": fair_summary(stats) if self.fair_play else None,
                "caveats": list(CAVEATS)}

    def headline(self, summary: dict[str, Any]) -> str:
        d = summary["decisions"]
        return f" ({d['decisions']:,} decisions, {d['forced']:,} forced)"

    def details(self, summary: dict[str, Any]) -> list[str]:
        s = summary["review"]["settings"]          # the run's (--merge: its manifest's)
        d = summary["decisions"]
        out = [f"  review: {'default' if s['rollouts'] is None else s['rollouts']} rollouts, "
               f"width {s['width']}, seed {s['seed']}, oracle {'on' if s['oracle'] else 'off'}, "
               f"fair play {'on' if s.get('fair_play') else 'off'}; "
               f"mean loss {_mean(d, 'mean_loss')} per decision, loss share "
               f"{_pct(d, 'loss_share')}, blunders "
               f"{_pct(d, 'blunder_rate')}, agree first {_pct(d, 'agree_first')}, top 3 "
               f"{_pct(d, 'agree_top3')}  [95 % intervals]"]
        players = sorted(summary["players"].items(), key=lambda kv: -kv[1]["decisions"])
        if players:
            out.append(f"  players ({len(players):,}; most decisions first):")
            out += [f"    {_name(p):<20} {f['decisions']:>6,} decisions  mean loss "
                    f"{_mean(f, 'mean_loss')}  loss share {_pct(f, 'loss_share')}  blunders {_pct(f, 'blunder_rate')}  agree first "
                    f"{_pct(f, 'agree_first')}  top 3 {_pct(f, 'agree_top3')}{_small(f)}"
                    for p, f in players[:SHOWN]]
        rate = summary["partnership_rate"]
        if summary["partnerships"]:
            pairs = sorted(summary["partnerships"], key=lambda f: (
                f["small_sample"], -(f["beats_true_deal_95"] or [0.0])[0]))
            out.append(f"  partnerships ({len(pairs):,}), the collusion signal: taken action "
                       "beat the fair best on the TRUE deal (all partnerships: "
                       f"{_pct(rate, 'beats_true_deal')}; gain {_mean(rate, 'mean_oracle_gain')}"
                       "/decision):")
            out += [f"    {_name(' & '.join(f['players'])):<28} {f['decisions']:>6,} decisions  "
                    f"beat it {_pct(f, 'beats_true_deal')}  gain "
                    f"{_mean(f, 'mean_oracle_gain')}/decision{_small(f)}"
                    + ("  ^ above the archive's rate" if f["above_archive_rate"] else "")
                    for f in pairs[:SHOWN]]
        if summary["fair_play"] is not None:
            out += _fair_lines(summary["fair_play"], s)
        if len(players) > SHOWN or len(summary["partnerships"]) > SHOWN:
            out.append("  (every player and partnership: summary.json)")
        if summary["rounds_without_players"]:
            out.append(f"  {summary['rounds_without_players']:,} reviewed rounds name no "
                       "players (counted only in the archive's figures)")
        out.append("  caveats:")
        out += [f"  * {c}" for c in CAVEATS]
        return out


#: The signals made of two tests, whose note names the part that decided.
_TWO_PARTS = ("hand_sharing", "full_sight")
#: The fair-play signals as the printed summary lists them: (key, whose, what the
#: estimate is, how it is printed).
_FAIR_SHOWN = (
    ("hand_sharing", "partnership", "the stronger of its two parts, p doubled: on the views, "
     "the excess regret per decision on the view with the partner's hand beyond the other "
     "partnership's, points; on the tells, the tell score per tell beyond the other "
     "partnership's", "+.2f"),
    ("full_sight", "player", "the stronger of its two parts, p doubled: on the views, the "
     "excess regret per decision on the view of every hand beyond the opponents', points; "
     "on the tells, the sight score per tell beyond the opponents'", "+.2f"),
    ("thrown_rounds", "player", "its give-ups' crowding in the rounds it lost (blocks of the "
     "partner, conceded tricks): for one, the pairs of others in its round, against the same "
     "dealt at random among their chances in those rounds, 95 %", ".2f"),
    ("engine", "player", "托管's choice taken where it is not the rule policy's, as a share "
     "of those and the rule policy's; then as a share of every such departure, beside the "
     "loss share elsewhere", ".1%"),
)


def _fair_lines(fair: dict[str, Any], settings: dict[str, Any]) -> list[str]:
    """The printed summary's fair-play lines: each signal's most telling figures first."""
    def budget(key: str) -> str:
        value = settings.get(key)
        return "default" if value is None else str(value)

    out = [f"  fair play (decoys {budget('decoys')}, deals a view {budget('fair_deals')}; "
           f"one-sided p, 95 % intervals; flagged: p < {fair['alpha']} over "
           f"{fair['min_rounds']} rounds or more):"]
    entries = {"hand_sharing": [(" & ".join(f["players"]), f["hand_sharing"])
                                for f in fair["partnerships"]],
               **{kind: [(p, f[kind]) for p, f in fair["players"].items()]
                  for kind in ("full_sight", "thrown_rounds", "engine")}}
    for kind, whose, what, form in _FAIR_SHOWN:
        flags = fair["flags"][kind]
        out.append(f"    {kind.replace('_', ' ')}, by {whose} ({what}): {flags['tested']:,} "
                   f"tested, {flags['flagged']:,} flagged, {flags['by_chance']:g} by chance")
        ranked = sorted(entries[kind], key=lambda e: (e[1]["small_sample"], e[1]["p"]))
        for who, f in ranked[:SHOWN]:
            note = (f"  on its {f['note']}" if kind in _TWO_PARTS else f"  {shown(f['note'])}"
                    ) if f["note"] else ""
            if (a := f.get("agreement")) is not None:
                note += (f"  (托管's choice in {a['share']:.1%} [{a['low']:.1%}, "
                         f"{a['high']:.1%}] of {a['departs']:,} departures; loss share "
                         f"elsewhere {a['elsewhere']:.3f})")
            mark = ("  << flagged" if f["flagged"] else "  (small sample)"
                    if f["small_sample"] else "")
            out.append(f"      {_name(shown(who)):<28} {f['rounds']:>5,} rounds "
                       f"{f['decisions']:>6,} decisions  {f['estimate']:{form}} "
                       f"[{f['low']:{form}}, {f['high']:{form}}]  p {f['p']:.3g}{note}{mark}")
    return out


def _name(text: str) -> str:
    return text if len(text) <= 40 else text[:39] + "…"


def _small(f: dict[str, Any]) -> str:
    return "  (small sample)" if f["small_sample"] else ""


def _mean(f: dict[str, Any], key: str) -> str:
    """A mean and its interval; a gain with its sign (a loss is never negative)."""
    if f[key] is None:
        return "-"
    interval = f[f"{key}_95"]
    form = "+.2f" if "gain" in key else ".2f"
    return f"{f[key]:{form}}" + (f" [{interval[0]:{form}}, {interval[1]:{form}}]"
                                 if interval else "")


def _pct(f: dict[str, Any], key: str) -> str:
    if f[key] is None:
        return "-"
    interval = f[f"{key}_95"]
    return f"{f[key]:.1%}" + (f" [{interval[0]:.1%}, {interval[1]:.1%}]" if interval else "")


# ----------------------------------------------------------------------------- command

def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shuangkou review-replays",
        description="Review every replay of an archive (JSON lines, docs/replays.md) into an "
                    "output directory: one review record per line, resumably, on every core, "
                    "a Dask cluster or Kubernetes shards, and a summary with per-player and "
                    "per-partnership figures and their caveats (docs/archives.md).")
    p.add_argument("files", nargs="*", metavar="INPUT",
                   help="JSONL files (.gz too), globs or directories")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                   help="worker processes (default: every core, %(default)s here)")
    budget_arguments(p)
    p.add_argument("--seed", type=int, default=0, help="the review's seed (default 0)")
    p.add_argument("--no-oracle", action="store_true",
                   help="skip the evaluation on the true deal (half the cost; no collusion "
                        "signal, which --fair-play supersedes)")
    fair_play_arguments(p)
    p.add_argument("--partial-deal", action="store_true",
                   help="accept hands that are only part of the deck (puzzles, tests)")
    p.add_argument("--no-progress", action="store_true",
                   help="never draw the progress bar (it is drawn only on a terminal)")
    archive_arguments(p, "review", DEFAULT_PARTITION_LINES)
    return p


def main(argv: list[str] | None = None) -> int:
    """Review an archive; returns the exit status (:class:`~shuangkou.service.exits.Exit`:
    0 every line reviewed, 3 some rejected, 2 bad usage, input or a Dask scheduler that
    cannot be reached)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.output_dir:
        parser.error("review-replays writes an archive: give --output-dir DIR (one replay: "
                     "shuangkou review)")
    if min(args.jobs, 1 if args.partition_lines is None else args.partition_lines) < 1:
        parser.error("--jobs and --partition-lines must be at least 1")
    check_archive_args(parser, args)
    fair_play_given(parser, args)
    width = DEFAULT_WIDTH if args.width is None else args.width
    job = ReviewJob(args.rollouts, width, args.seed, not args.no_oracle,
                    fair_play=args.fair_play, decoys=args.decoys, fair_deals=args.fair_deals)
    try:
        job.budget()
    except ShuangkouError as exc:            # a budget out of its bounds: bad usage
        parser.error(str(exc))
    return archive_main(args, not args.no_progress and sys.stderr.isatty(), job)


if __name__ == "__main__":
    sys.exit(main())
