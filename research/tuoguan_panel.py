"""托管 by search against the opponent panel (issue 34): paired deals, per variant and opponent.

    .venv/bin/python research/tuoguan_panel.py run [--model mix|sound|rule] [--exact 0] [--infer]
        [--win POINTS] [--race] [--margin 1] [--width 6] [--no-partner-bomb] [--rollouts 600]
        [--ms 0] [--start 0]
        [--deals 1000] [--variants ID ...] [--opponents NAME ...] [--out FILE] [--seed 1]
        [--kept DIR]
    .venv/bin/python research/tuoguan_panel.py keep FILE ... --into DIR
    .venv/bin/python research/tuoguan_panel.py report FILE ...
        [--pair MODEL:ROLLOUTS[:MS] MODEL:ROLLOUTS[:MS]]
    .venv/bin/python research/tuoguan_panel.py parts [run's options but --out; --deals 100]
    .venv/bin/python research/tuoguan_panel.py departures [the same; --deals 10 --opponents search24]
        [--truth]

``run`` deals every deal once per opponent and plays it four times: the rule policy's team
at seats 0/2 and then 1/3 against the opponent (the baseline), then the search team at the
same seats against the same opponent (the same deal, leader and opponent random stream).
The search's points per round over the rule policy are each deal's two search rounds
against the baseline's two, so the luck of the deal cancels out. Opponents: the panel
(research/panel: ``cautious``, ``bomber``, ``blind``, ``hoarder``, ``team``), ``rule`` (the
rule policy), ``random`` (uniform legal play) and ``search24`` (issue 24's search, the
previous 托管 default, as ``SEARCH24`` keeps it: model "rule", no racing, 600 rollouts, capped
by ``--ms`` like the search measured: the head-to-head). ``--model`` picks the search measured
(core._search.MODELS: ``mix``, the default for 托管, ``sound``, the mixture without its
partner-blind style, or ``rule``, issue 24's) and ``--exact``
its exact endgames (rollouts whose hands hold that many cards or fewer together are solved
exactly; 0: none), ``--infer`` its inference from passes (deals redrawn until the seats that
passed on the standing play would have passed: core._search ``roll_deal``; the model's name
gains ``+i``), ``--win`` the search's win bonus in points (default: its own, ``win_bonus``;
the name gains ``+wX``), ``--race`` its racing (candidates clearly behind stop being
rolled out: core._search ``race_out``; the name gains ``+r``), ``--margin`` the standard
errors a gain must exceed to overturn the rule policy (the name gains ``+mX``; the 托管
default: ``--race --margin 3``, ``--margin 2`` until issue 34's ninth stop), ``--width``
the most candidates a decision rolls out (the search's ``width``, 6; the name gains
``+wdN``), ``--no-partner-bomb`` leaves the smallest bomb out of its candidates when the
partner's play stands (the name gains ``+npb``); ``--rollouts``
is deterministic, ``--ms`` a cap in wall time (the 托管 default is 600 rollouts, 100 ms).

The rule policy's rounds of a deal do not depend on the search measured, so ``run`` plays
them only for a deal that no file it reads (``--out``, ``--kept``) has measured against the
same opponent; else it reuses them (against ``search24`` they are half the work).
One JSON line per deal is appended to ``--out`` as it completes; a run that stops resumes
where it left (deals in the file are skipped), so the full measurement (``--deals 1000``
for every variant and opponent) can go in the background; processes given disjoint deal
ranges (``--start``) can share a file.

``report`` reads the files ``run`` wrote or the kept deals: those behind docs/BENCHMARKS.md's
figures are in research/results, a gzip per opponent and variant (:func:`keep`).
``keep FILE --into DIR`` merges a run's file into them; ``run --kept DIR`` skips the deals
kept there (``run`` appends to a plain file only). ``report`` prints per model, budget,
opponent and variant: rounds; the search team's win rate (Wilson 95 % interval) and the rule
policy's on the same deals; its points per round over the rule policy (normal 95 % interval
over deals); its raw points per round (against ``search24``: the head-to-head's points); the
median CPU of its searched decisions. When a file holds several models on the same deals, it
adds each one's paired difference with ``rule`` (issue 24's search), and a ``+i`` model's
with the same model without inference, per opponent and variant and pooled over the panel
(each pooled line followed by the two searches' shares of the rounds won and their paired
difference, in percentage points: the head to head's measure);
``--pair A B`` pairs two searches instead (``MODEL:ROLLOUTS[:MS]``, e.g. ``sound+r:600
mix+r:600``), from one or several files. Last, per search, issue 34's targets
(:func:`targets`): the panel pooled and its lines short of +3 with the lower bound above 0,
the head to head, random play, the CPU per decision.

``parts`` plays ``run``'s deals again (the same search, options and deals) and shows where
the search's points over the rule policy come from: rounds it wins that the rule policy
loses, or bigger wins; base × multiplier or contributions (:func:`parts`). ``departures``
plays them again too and asks, at each of the search's decisions, how often it and three
others on the same position (twice its rollouts, a margin one less, issue 24's search)
overturn the rule policy's action (:func:`departures`); with ``--truth`` it also plays each
departure out both ways against the opponent, the true hands kept, and prints what it gained
by kind of decision (:func:`print_truths`).
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from research.panel import (  # noqa: E402
    PANEL,
    VARIANTS,
    Player,
    act,
    interval,
    new_round,
    play,
    random_action,
    rule_action,
    rule_player,
    search,
    search_player,
    team_points,
    wilson,
)
from shuangkou.core import Round  # noqa: E402
from shuangkou.core._search import MAX_WIDTH  # noqa: E402
from shuangkou.core.styles import MODELS  # noqa: E402
from shuangkou.core.suggest import SEARCH24, SeatStyles  # noqa: E402
from shuangkou.core.variants import get_variant  # noqa: E402

OPPONENTS = [*PANEL, "rule", "random", "search24"]


def opponent_player(name: str, ms: float) -> Player:
    if name in PANEL:
        return PANEL[name]
    if name == "rule":
        return rule_player
    if name == "random":
        return random_action
    return search_player(SEARCH24.model, SEARCH24.rollouts, ms, race=SEARCH24.race)


def model_name(args: argparse.Namespace) -> str:
    """The search measured, as the results name it (``mix+r+m3``: the 托管 default;
    ``mix+r+m2`` before issue 34's ninth stop)."""
    return (args.model + (f"+e{args.exact}" if args.exact else "") + ("+i" if args.infer else "")
            + ("+read" if args.read else "")
            + (f"+w{args.win:g}" if args.win is not None else "") + ("+r" if args.race else "")
            + (f"+m{args.margin:g}" if args.margin != 1 else "")
            + (f"+wd{args.width}" if args.width != 6 else "")
            + ("" if args.partner_bomb else "+npb"))


def deal_rounds(args: argparse.Namespace, theirs: Player, vid: str, d: int,
                known: bool = False, player: Player | None = None,
                ) -> Iterator[tuple[int, Round | None, Round, list[float]]]:
    """Deal ``d`` of ``vid`` as ``run`` plays it: per team (0: seats 0/2, 1: 1/3), the rule
    policy's round and the search's against ``theirs``, on the same deal, leader and
    opponent stream, and the CPU of the search's searched decisions (ms). ``known``: the
    rule policy's rounds are known already (None in their place: they do not depend on the
    search measured, and against ``search24`` they are half the work). ``player``: plays
    the search's seats in its place (no CPU is counted)."""
    dealt = new_round(get_variant(vid), random.Random(f"{vid}/{args.seed}/{d}"))
    for team in (0, 1):
        base = None if known else play(dealt.copy(), team, rule_player, theirs,
                                       random.Random(f"{args.seed}/{d}/{team}"))
        cpu: list[float] = []
        seats = SeatStyles() if args.read else None
        if seats is not None:       # the styles' rates, counted once per process, uncounted
            seats.weights(get_variant(vid), args.model)
        ours = player or search_player(args.model, args.rollouts, args.ms, cpu, args.exact,
                                       args.infer, args.win, args.race, args.margin, seats,
                                       args.width, args.partner_bomb)
        r = play(dealt.copy(), team, ours, theirs, random.Random(f"{args.seed}/{d}/{team}"),
                 seats)
        yield team, base, r, cpu


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if out.suffix == ".gz":
        raise SystemExit(f"--out {out}: run appends one line per deal to a plain file "
                         f"(run --out FILE --kept {out.parent}, then keep FILE --into "
                         f"{out.parent})")
    have = sorted(Path(args.kept).glob("*.jsonl.gz")) if args.kept else []
    if out.exists():
        have.append(out)
    rows = [row for path in have for row in read_deals(path)]
    done = {deal_key(row) for row in rows}
    # the rule policy's rounds of a deal, whichever search was measured on it: reused
    bases = {base_key(row): [(x["base_won"], x["base_points"]) for x in row["rounds"]]
             for row in rows}
    model = model_name(args)
    with out.open("a") as f:
        for opponent in args.opponents:
            theirs = opponent_player(opponent, args.ms)
            for vid in args.variants:
                t0 = time.perf_counter()
                for d in range(args.start, args.deals):
                    if (model, args.rollouts, args.ms, opponent, vid, d) in done:
                        continue
                    row: dict[str, Any] = {"model": model, "rollouts": args.rollouts,
                                           "ms": args.ms, "opponent": opponent,
                                           "variant": vid, "deal": d, "rounds": []}
                    known = bases.get(base_key(row))
                    for team, base, r, cpu in deal_rounds(args, theirs, vid, d, bool(known)):
                        if known:
                            base_won, base_points = known[team]
                        else:
                            assert base is not None
                            base_won = base.result().winning_team == team
                            base_points = team_points(base, team)
                        row["rounds"].append({
                            "team": team, "won": r.result().winning_team == team,
                            "points": team_points(r, team),
                            "base_won": base_won, "base_points": base_points,
                            "cpu_ms": [round(x, 2) for x in cpu]})
                    f.write(json.dumps(row) + "\n")
                    f.flush()
                    if (d + 1) % 10 == 0:
                        print(f"{opponent} {vid}: {d + 1} deals "
                              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    report(read_deals(Path(out)))


def parts(args: argparse.Namespace) -> None:
    """Where the search's points over the rule policy come from, on ``run``'s deals (played
    again: the rounds are deterministic under a rollout budget). Each of a deal's two
    pairs of rounds (the rule policy's team, the search's, on the same deal) falls in one
    of four cells by which of them placed first; per cell, its rounds, the mean points of
    each and the kinds of their rounds (§9: double, single, flat). Last, the gain per round
    split into base × multiplier and contributions (§10)."""
    for opponent in args.opponents:
        theirs = opponent_player(opponent, args.ms)
        for vid in args.variants:
            # per cell, per round: (kind, points, contributions) of the rule policy's, the search's
            cells: dict[tuple[bool, ...], list[list[tuple[str, int, int]]]] = {}
            for d in range(args.start, args.deals):
                for team, base, r, _ in deal_rounds(args, theirs, vid, d):
                    results = [x.result() for x in (base, r)]
                    cells.setdefault(tuple(x.winning_team == team for x in results), []).append(
                        [(x.kind, team_points(y, team),
                          sum(s.contribution for s in x.seats if s.team == team))
                         for x, y in zip(results, (base, r), strict=True)])
            n = sum(len(c) for c in cells.values())
            print(f"{model_name(args)} {budget_label(args.rollouts, args.ms)} against "
                  f"{opponent} in {vid}: {n} rounds ({args.deals - args.start} deals)")
            print(f"  {'rule policy':11} {'search':6} {'rounds':>6} {'rule pts':>8} "
                  f"{'search pts':>10} {'diff':>6}  kinds (rule policy | search)")
            split = [0.0, 0.0]
            for key in sorted(cells, reverse=True):
                rounds = cells[key]
                kinds = [" ".join(f"{k} {c}" for k, c in sorted(Counter(
                    x[i][0] for x in rounds).items())) for i in (0, 1)]
                pts = [statistics.fmean(x[i][1] for x in rounds) for i in (0, 1)]
                print(f"  {'won' if key[0] else 'lost':11} {'won' if key[1] else 'lost':6} "
                      f"{len(rounds):6d} {pts[0]:+8.2f} {pts[1]:+10.2f} {pts[1] - pts[0]:+6.2f}"
                      f"  {kinds[0]} | {kinds[1]}")
                for (_, p0, c0), (_, p1, c1) in rounds:
                    split[0] += (p1 - c1 - p0 + c0) / n
                    split[1] += (c1 - c0) / n
            print(f"  gain per round {split[0] + split[1]:+.2f}: base × multiplier "
                  f"{split[0]:+.2f}, contributions {split[1]:+.2f}")


#: What a search answered on a position: its choice, whether that is the rule policy's
#: action, and its candidates by their (cards, reading, declared)
_Asked = tuple[tuple[Any, ...], bool, dict[tuple[Any, ...], tuple[Any, ...]]]


def asking(searches: dict[str, dict[str, Any]], seen: list[dict[str, _Asked]],
           then: Callable[[Round, dict[str, _Asked]], None] | None = None) -> Player:
    """A seat that plays the first of ``searches`` and asks the others the same position:
    each decision of more than one candidate appended to ``seen``, every search's answer
    by its label (and handed to ``then`` with the position, before the seat plays)."""
    first = next(iter(searches))

    def play(r: Round, rng: random.Random) -> None:
        asked: dict[str, _Asked] = {}
        for label, kw in searches.items():
            ranked, stats = search(r, count=MAX_WIDTH, **kw)
            asked[label] = (tuple(ranked[0][:3]), bool(stats["kept"]),
                            {tuple(x[:3]): x for x in ranked})
            if label == first and stats["width"] < 2:
                break                       # one candidate: nothing to ask the others
        else:
            seen.append(asked)
            if then is not None:
                then(r, asked)
        act(r, *asked[first][0])
    return play


def departure_kind(r: Round, rule: tuple[Any, ...], other: tuple[Any, ...]) -> str:
    """A departure as ``--truth`` sorts it: where the seat is (it leads, or follows the
    partner's or an opponent's play), and what the rule policy's action and the other are
    (a pass, a play, a bomb)."""
    standing, turn = r.standing, r.turn
    assert turn is not None         # a decision: the round is not over
    where = ("leads" if standing is None else
             "over the partner" if (standing.seat - turn) % 2 == 0 else "over an opponent")
    what = ["pass" if a[1] is None else "bomb" if a[1].is_bomb else "play" for a in (rule, other)]
    return f"{where}: {what[0]} -> {what[1]}"


def truth_taker(name: str, twice: str, ours: Player, theirs: Player, seed: str,
                truths: dict[str, list[tuple[str, int, int]]],
                ) -> Callable[[Round, dict[str, _Asked]], None]:
    """What ``departures --truth`` does at each decision (:func:`asking`'s ``then``): where
    ``name`` overturns the rule policy's action, and where ``twice`` does and ``name`` keeps
    it, the two actions played out against ``theirs`` (:func:`played_both_ways`), appended
    to ``truths`` by label as (kind, points, placing first) gained over the rule policy's."""
    decisions = 0

    def take(r: Round, asked: dict[str, _Asked]) -> None:
        nonlocal decisions
        decisions += 1
        kept = asked[name][1]
        # the measured search's departure; twice the rollouts' only where the measured keeps
        departing = [label for label, yes in ((name, not kept),
                                              (twice, kept and not asked[twice][1])) if yes]
        if not departing:
            return
        rule = rule_action(r)
        for label in departing:
            other = asked[label][0]
            pts, won = played_both_ways(r, (rule, other), ours, theirs, f"{seed}/{decisions}")
            truths[label].append((departure_kind(r, rule, other), pts, won))
    return take


def played_both_ways(r: Round, actions: tuple[tuple[Any, ...], tuple[Any, ...]],
                     ours: Player, theirs: Player, seed: str) -> tuple[int, int]:
    """The position ``r`` played out from each of two actions of the seat to act, the true
    hands kept: its team's seats by ``ours``, the others by ``theirs`` (the same opponent
    stream both times). The second's points and placing first minus the first's."""
    assert r.turn is not None       # a decision: the round is not over
    team = r.turn % 2
    out = []
    for action in actions:
        x = r.copy()
        act(x, *action)
        play(x, team, ours, theirs, random.Random(seed))
        out.append((team_points(x, team), int(x.result().winning_team == team)))
    return out[1][0] - out[0][0], out[1][1] - out[0][1]


def departures(args: argparse.Namespace) -> None:
    """How often a search overturns the rule policy's action, and where searches differ:
    on the decisions of ``run``'s search in its deals (played again, its team at seats
    0/2 and then 1/3), the same position searched also with twice its rollouts, with a
    margin of one standard error less, and by issue 24's search (``SEARCH24``). Per
    search: the decisions where it overturns the rule policy's action, and those where its
    choice is the measured search's; last, the decisions where twice the rollouts overturn
    it and the measured search keeps it, with the mean gain the measured search saw for
    that choice (points, rounds placed first, the standard error of the value): what
    more rollouts change."""
    if args.read:
        sys.exit("departures: --read is not asked (the styles read need the round's actions "
                 "tallied as run tallies them)")
    base = {"model": args.model, "exact": args.exact, "infer": args.infer, "win": args.win,
            "race": args.race, "margin": args.margin, "width": args.width, "ms": args.ms,
            "partner_bomb": args.partner_bomb}
    name, twice = (f"{model_name(args)} {n} r" for n in (args.rollouts, 2 * args.rollouts))
    less = max(args.margin - 1, 0)
    searches = {name: {**base, "rollouts": args.rollouts},
                twice: {**base, "rollouts": 2 * args.rollouts},
                f"{name}, margin {less:g}": {**base, "rollouts": args.rollouts,
                                             "margin": less},
                "search24 600 r": {"model": SEARCH24.model, "race": SEARCH24.race,
                                   "margin": SEARCH24.margin, "rollouts": SEARCH24.rollouts,
                                   "ms": args.ms}}
    measured = search_player(args.model, args.rollouts, args.ms, None, args.exact, args.infer,
                             args.win, args.race, args.margin, None, args.width,
                             args.partner_bomb)
    for opponent in args.opponents:
        theirs = opponent_player(opponent, args.ms)
        for vid in args.variants:
            seen: list[dict[str, _Asked]] = []
            # per departure played out (--truth): its kind, points and placing first
            truths: dict[str, list[tuple[str, int, int]]] = {name: [], twice: []}
            then = truth_taker(name, twice, measured, theirs, f"{args.seed}/{vid}", truths)
            ours = asking(searches, seen, then if args.truth else None)
            for d in range(args.start, args.deals):
                for _ in deal_rounds(args, theirs, vid, d, known=True, player=ours):
                    pass
            n = max(len(seen), 1)
            print(f"{name} against {opponent} in {vid}: {len(seen)} searched decisions "
                  f"({args.deals - args.start} deals)")
            for label in searches:
                left = sum(not x[label][1] for x in seen)
                same = sum(x[label][0] == x[name][0] for x in seen)
                print(f"  {label:30} overturns the rule policy {left:5d} ({left / n:.1%}); "
                      f"the measured choice {same:5d} ({same / n:.1%})")
            more = [x[name][2].get(x[twice][0]) for x in seen if not x[twice][1] and x[name][1]]
            gains = [g for g in more if g is not None]
            if gains:
                print(f"  {twice} overturns it where {name} keeps it: {len(more)} decisions; "
                      f"the gain {name} saw for that choice: points "
                      f"{statistics.fmean(g[5] for g in gains):+.2f}, placed first "
                      f"{statistics.fmean(g[6] for g in gains):+.3f}, se of the value "
                      f"{statistics.fmean(g[7] for g in gains):.2f}")
            if args.truth:
                print_truths(opponent, truths, name, twice)


def print_truths(opponent: str, truths: dict[str, list[tuple[str, int, int]]], name: str,
                 twice: str) -> None:
    """``departures --truth``: each departure from the rule policy's action played out
    both ways against the opponent, the true hands kept (:func:`played_both_ways`); the
    mean gain over the rule policy's action (normal 95 % intervals over the decisions),
    in all and by kind (:func:`departure_kind`)."""
    for label, what in ((name, f"{name} overturns the rule policy"),
                        (twice, f"{twice} overturns it where {name} keeps it")):
        rows = truths[label]
        print(f"  played out against {opponent}, the true hands: {what}: {len(rows)} decisions")
        by_kind: dict[str, list[tuple[str, int, int]]] = {"all": rows}
        for row in rows:
            by_kind.setdefault(row[0], []).append(row)
        for kind, xs in sorted(by_kind.items(), key=lambda kv: (kv[0] != "all", -len(kv[1]))):
            if len(xs) < 2:
                continue
            pts, pts_half = interval([x[1] for x in xs])
            won, won_half = interval([x[2] for x in xs])
            print(f"    {kind:40} {len(xs):5d}  points {pts:+6.2f} [{pts - pts_half:+.2f}, "
                  f"{pts + pts_half:+.2f}]  placed first {won:+.3f} [{won - won_half:+.3f}, "
                  f"{won + won_half:+.3f}]")


def deal_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a deal's line unique: the search, its budget, the opponent, the deal."""
    return (row["model"], row["rollouts"], row["ms"], row["opponent"], row["variant"],
            row["deal"])


def base_key(row: dict[str, Any]) -> tuple[Any, ...]:
    """What the rule policy's rounds of a deal depend on: the opponent (and the time cap
    ``--ms`` puts on ``search24``), the variant and the deal — not the search measured."""
    return row["ms"], row["opponent"], row["variant"], row["deal"]


def keep(files: list[Path], into: Path) -> None:
    """Merge ``run``'s files into the folder of kept deals (research/results): a gzip per
    opponent and variant, its lines in the order of the search, budget and deal, each as
    :func:`kept` writes it, gzipped without a name or time, so that a line that did not
    grow keeps its bytes (and git stores nothing new for it). A deal already kept is kept
    as it was."""
    into.mkdir(parents=True, exist_ok=True)
    lines: dict[tuple[str, str], dict[tuple[Any, ...], dict[str, Any]]] = {}
    before = {path: len(read_deals(path)) for path in sorted(into.glob("*.jsonl.gz"))}
    for path in [*before, *files]:
        for row in read_deals(path):
            lines.setdefault((row["opponent"], row["variant"]), {}).setdefault(deal_key(row),
                                                                              row)
    for (opponent, vid), deals in sorted(lines.items()):
        text = "".join(json.dumps(kept(deals[k]), separators=(",", ":")) + "\n"
                       for k in sorted(deals, key=lambda k: (k[0], k[1], k[2], k[5])))
        packed = gzip.compress(text.encode(), 9, mtime=0)
        path = into / f"{opponent}-{vid}.jsonl.gz"
        if not path.exists() or path.read_bytes() != packed:
            path.write_bytes(packed)
            print(f"{path}: {before.get(path, 0)} -> {len(deals)} deals")


def kept(row: dict[str, Any]) -> dict[str, Any]:
    """A deal's line as :func:`keep` stores it: as ``run`` wrote it but for the CPU of each
    round's searched decisions, ``cpu_ms`` (in ms to 0.01, in the order decided), which
    becomes ``cpu_steps``: the same values in hundredths of a millisecond in increasing
    order, each written as its step from the one before (the first from 0). Every value is
    kept, so every figure ``report`` prints of them is the same; their order, which no
    figure reads, is not, and without it the deals take two thirds of the room
    (docs/decisions/engineering.md E84)."""
    def steps(cpu: list[float]) -> list[int]:
        hundredths = sorted(round(x * 100) for x in cpu)
        return [b - a for a, b in itertools.pairwise([0, *hundredths])]
    return {**row, "rounds": [{**{k: v for k, v in x.items() if k != "cpu_ms"},
                               "cpu_steps": steps(x["cpu_ms"])} for x in row["rounds"]]}


def unkept(row: dict[str, Any]) -> dict[str, Any]:
    """A deal's line as ``run`` writes it, from :func:`kept`'s (a line of ``run``'s as it is):
    ``cpu_ms`` in increasing order."""
    return {**row, "rounds": [
        {**{k: v for k, v in x.items() if k != "cpu_steps"},
         "cpu_ms": [t / 100 for t in itertools.accumulate(x["cpu_steps"])]}
        if "cpu_steps" in x else x for x in row["rounds"]]}


def read_deals(path: Path) -> list[dict[str, Any]]:
    """The deals in a file ``run`` wrote or in the kept deals' gzip (research/results), as
    ``run`` writes them (:func:`unkept`)."""
    text = (gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz"
            else path.read_text())
    return [unkept(json.loads(line)) for line in text.splitlines()]


def budget_label(rollouts: int, ms: float) -> str:
    """A search's budget as the report prints it: ``600 r`` or ``600 r, 100 ms``."""
    return f"{rollouts} r" + (f", {ms:g} ms" if ms else "")


def gain(row: dict[str, Any]) -> float:
    """A deal's points per round over the rule policy: its two search rounds against the
    baseline's two on the same deal."""
    return sum(x["points"] - x["base_points"] for x in row["rounds"]) / 2


def _spec(text: str) -> tuple[str, tuple[int, float]]:
    """``MODEL:ROLLOUTS[:MS]`` (as the report names a line's model and budget) as a key."""
    try:
        model, rollouts, *ms = text.split(":")
        if not model or len(ms) > 1:
            raise ValueError
        return model, (int(rollouts), float(ms[0]) if ms else 0.0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a search is MODEL:ROLLOUTS[:MS], e.g. mix+r+m2:600") from None


def cpu_figures(cpu: list[float]) -> tuple[float, float]:
    """The median and 99th percentile of searched decisions' CPU, ``cpu`` sorted (0 when
    there is none): its caller sorts millions of values once for both figures (the
    median's own sort of a sorted list is one pass)."""
    if not cpu:
        return 0.0, 0.0
    return statistics.median(cpu), cpu[int(0.99 * len(cpu))]


def report(deals: Iterable[dict[str, Any]],
           pair: list[tuple[str, tuple[int, float]]] | None = None,
           below: int | None = None) -> None:
    """The table of every line in ``deals`` (as :func:`read_deals` gives them; a later deal
    of a line replaces an earlier one of its number), issue 34's targets, and each search
    paired with its baseline or with ``pair``'s other search, on the same deals."""
    groups: dict[tuple[Any, ...], dict[int, dict[str, Any]]] = {}
    for row in deals:
        if below is None or row["deal"] < below:
            groups.setdefault(deal_key(row)[:5], {})[row["deal"]] = row

    def order(key: tuple[Any, ...]) -> tuple[Any, ...]:
        model, rollouts, ms, opponent, vid = key
        return (model, rollouts, ms, OPPONENTS.index(opponent) if opponent in OPPONENTS
                else 99, VARIANTS.index(vid) if vid in VARIANTS else 99)

    print(f"{'model':7} {'budget':>12} {'opponent':9} {'variant':16} {'rounds':>6} "
          f"{'win':>6} {'95% CI':>13} {'rule win':>8} {'pts/round over rule':>20} "
          f"{'95% CI':>15} {'pts/round':>9} {'CPU ms p50':>10} {'p99':>6}")
    for key in sorted(groups, key=order):
        model, rollouts, ms, opponent, vid = key
        rows = list(groups[key].values())
        rounds = [x for row in rows for x in row["rounds"]]
        wins = sum(x["won"] for x in rounds)
        lo, hi = wilson(wins, len(rounds))
        base = sum(x["base_won"] for x in rounds) / len(rounds)
        mean, half = interval([gain(row) for row in rows])
        raw = statistics.fmean(x["points"] for x in rounds)
        median, p99 = cpu_figures(sorted(t for x in rounds for t in x["cpu_ms"]))
        budget = budget_label(rollouts, ms)
        print(f"{model:7} {budget:>12} {opponent:9} {vid:16} {len(rounds):6d} "
              f"{wins / len(rounds):6.1%} {lo:6.1%}-{hi:6.1%} {base:8.1%} {mean:+20.2f} "
              f"{mean - half:+7.2f}..{mean + half:+6.2f} {raw:+9.2f} "
              f"{median:10.1f} {p99:6.1f}")
    targets(groups)
    if pair:
        (a_model, a_budget), (b_model, b_budget) = pair
        pairs = [(key, (b_model, *b_budget, *key[3:])) for key in sorted(groups, key=order)
                 if (key[0], *key[1:3]) == (a_model, *a_budget)]
        heading = " − ".join(f"{m}:{r}" + (f":{ms:g}" if ms else "") for m, (r, ms) in pair)
    else:
        base_of = {key: "rule" for key in groups if key[0] != "rule"}
        base_of.update({key: key[0].removesuffix("+i") for key in groups
                        if key[0].endswith("+i")})
        pairs = [(key, (base_of[key], *key[1:])) for key in sorted(groups, key=order)
                 if key in base_of]
        heading = ("each model − rule (issue 24's search), and a model with inference (+i) − "
                   "the same without")
    pairs = [(key, other) for key, other in pairs if other in groups]
    if pairs:
        print(f"\n{heading}, on the same deals, paired: points per round, 95 % interval")
        # per search pair and group, per deal: the points difference and the two searches'
        # shares of its rounds won (the head to head's measure)
        pooled: dict[tuple[Any, ...], list[tuple[float, float, float]]] = {}
        for key, other in pairs:
            common = sorted(set(groups[key]) & set(groups[other]))
            if not common:
                continue
            mine, theirs = ([groups[k][d]["rounds"] for d in common] for k in (key, other))
            diffs = [sum(x["points"] for x in a) / 2 - sum(x["points"] for x in b) / 2
                     for a, b in zip(mine, theirs, strict=True)]
            # the panel pooled over its styles; the head to head and random play apart
            group = "panel" if key[3] in PANEL else key[3]
            pooled.setdefault((key[0] + " − " + other[0], *key[1:3], group), []).extend(
                (diff, statistics.fmean(x["won"] for x in a),
                 statistics.fmean(x["won"] for x in b))
                for diff, a, b in zip(diffs, mine, theirs, strict=True))
            mean, half = interval(diffs)
            budget = budget_label(key[1], key[2])
            print(f"{key[0] + ' − ' + other[0]:12} {budget:>12} {key[3]:9} {key[4]:16} "
                  f"{len(common):5d} deals "
                  f"{mean:+7.2f} [{mean - half:+.2f}, {mean + half:+.2f}]")
        for (model, rollouts, ms, group), deals in pooled.items():
            if deals:
                mean, half = interval([diff for diff, _, _ in deals])
                budget = budget_label(rollouts, ms)
                print(f"{model:12} {budget:>12} {group:9} {'pooled':16} {len(deals):5d} deals "
                      f"{mean:+7.2f} [{mean - half:+.2f}, {mean + half:+.2f}]")
                mean, half = interval([a - b for _, a, b in deals])
                print(f"{'':12} {'':>12} {group:9} {'pooled':16} {len(deals):5d} deals "
                      f"rounds won {statistics.fmean(a for _, a, _ in deals):.1%} against "
                      f"{statistics.fmean(b for _, _, b in deals):.1%}: {100 * mean:+.1f} pp "
                      f"[{100 * (mean - half):+.1f}, {100 * (mean + half):+.1f}]")


def targets(groups: dict[tuple[Any, ...], dict[int, dict[str, Any]]]) -> None:
    """Issue 34's targets per search measured (model, rollouts, ms): against the panel,
    pooled and how many lines (opponent × variant) are ≥ +3 points per round over the rule
    policy with the lower 95 % bound above 0 (and which are not); the head to head against
    ``search24`` (share of rounds, Wilson 95 %; the search team's points per round); against
    ``random``; the CPU of every searched decision."""
    searches = sorted({key[:3] for key in groups})
    if searches:
        print("\nissue 34's targets: against the panel ≥ +3 points per round over the rule "
              "policy with the lower 95 % bound above 0 in every line; head to head ≥ 55 % "
              "of rounds and more points; against random ≥ 99 %")
    for search_key in searches:
        lines = {key[3:]: list(rows.values()) for key, rows in groups.items()
                 if key[:3] == search_key}
        model, rollouts, ms = search_key
        print(f"{model} {budget_label(rollouts, ms)}:")
        panel = {line: [gain(row) for row in rows] for line, rows in lines.items()
                 if line[0] in PANEL}
        if panel:
            mean, half = interval([d for diffs in panel.values() for d in diffs])
            short = []
            for (opponent, vid), diffs in sorted(panel.items()):
                m, h = interval(diffs)
                if not (m >= 3 and m - h > 0 and len(diffs) > 1):
                    short.append(f"{opponent} {vid} {m:+.2f} [{m - h:+.2f}, {m + h:+.2f}] "
                                 f"({len(diffs)})")
            print(f"  panel: {sum(map(len, panel.values()))} deals, {mean:+.2f} "
                  f"[{mean - half:+.2f}, {mean + half:+.2f}] points per round over the rule "
                  f"policy; {len(panel) - len(short)} of {len(panel)} lines meet the target "
                  f"(deals per line {min(map(len, panel.values()))}–"
                  f"{max(map(len, panel.values()))})")
            for text in short:
                print(f"    short: {text}")
        for opponent in ("search24", "random"):
            rows = [row for line, rs in lines.items() if line[0] == opponent for row in rs]
            if not rows:
                continue
            rounds = [x for row in rows for x in row["rounds"]]
            won = sum(x["won"] for x in rounds)
            lo, hi = wilson(won, len(rounds))
            mean, half = interval([sum(x["points"] for x in row["rounds"]) / 2 for row in rows])
            print(f"  {opponent}: {won / len(rounds):.1%} of {len(rounds)} rounds "
                  f"[{lo:.1%}, {hi:.1%}]; the search team's points per round {mean:+.2f} "
                  f"[{mean - half:+.2f}, {mean + half:+.2f}] ({len(rows)} deals)")
        cpu = sorted(t for rows in lines.values() for row in rows for x in row["rounds"]
                     for t in x["cpu_ms"])
        if cpu:
            over = f", past {ms:g} ms: {sum(t > ms for t in cpu)}" if ms else ""
            median, p99 = cpu_figures(cpu)
            print(f"  CPU per searched decision: {len(cpu)} decisions, median "
                  f"{median:.1f} ms, p99 {p99:.1f} ms, max {cpu[-1]:.1f} ms{over}")


def parser() -> argparse.ArgumentParser:
    """The command line: ``run``, ``parts``, ``departures``, ``keep`` and ``report``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    # run and parts play the same deals with the same search: one set of arguments
    rn = argparse.ArgumentParser(add_help=False)
    rn.add_argument("--model", choices=MODELS, default="mix")
    rn.add_argument("--exact", type=int, default=0, help="exact endgames at this many cards")
    rn.add_argument("--win", type=float, default=None,
                    help="the win bonus in points (default: the search's, win_bonus; model +wX)")
    rn.add_argument("--infer", action="store_true",
                    help="deals consistent with the passes on the standing play (model +i)")
    rn.add_argument("--width", type=int, default=6,
                    help="the most candidates a decision's search rolls out (default 6, "
                         "the search's; model +wdN)")
    rn.add_argument("--read", action="store_true",
                    help="the other seats' styles drawn as their actions so far read "
                         "(core.suggest.SeatStyles; model +read)")
    rn.add_argument("--race", action="store_true",
                    help="candidates clearly behind stop being rolled out (model +r)")
    rn.add_argument("--margin", type=float, default=1.0,
                    help="standard errors a gain must exceed to overturn the rule policy "
                    "(model +mX)")
    rn.add_argument("--no-partner-bomb", dest="partner_bomb", action="store_false",
                    help="no bomb over the partner's standing play among the candidates "
                    "(model +npb)")
    rn.add_argument("--rollouts", type=int, default=600)
    rn.add_argument("--ms", type=float, default=0.0)
    rn.add_argument("--deals", type=int, default=1000, help="paired deals per variant and "
                    "opponent (4 rounds each)")
    rn.add_argument("--start", type=int, default=0, help="the first deal: processes given "
                    "disjoint ranges (--start K --deals N: deals K to N-1) run side by side")
    rn.add_argument("--variants", nargs="*", default=VARIANTS)
    rn.add_argument("--opponents", nargs="*", default=OPPONENTS, choices=OPPONENTS)
    rn.add_argument("--seed", type=int, default=1)
    pt = sub.add_parser("parts", parents=[rn], help="where the points over the rule "
                        "policy come from (the deals played again)")
    pt.set_defaults(deals=100)
    dp = sub.add_parser("departures", parents=[rn], help="how often the search overturns "
                        "the rule policy's action, against more rollouts, a smaller margin "
                        "and issue 24's search on the same positions")
    dp.add_argument("--truth", action="store_true",
                    help="also play each departure from the rule policy's action out both "
                    "ways against the opponent, the true hands kept: what it gained")
    dp.set_defaults(deals=10, opponents=["search24"])
    rn = sub.add_parser("run", parents=[rn])
    rn.add_argument("--kept", help="a folder of kept deals (keep --into): deals there are "
                    "skipped too")
    rn.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "panel.jsonl"),
                    help="the results file (appended to; default in $TMPDIR)")
    kp = sub.add_parser("keep", help="merge run's files into the kept deals (research/results)")
    kp.add_argument("files", nargs="+", type=Path)
    kp.add_argument("--into", type=Path, required=True,
                    help="the folder of kept deals, e.g. research/results/tuoguan-panel")
    rp = sub.add_parser("report")
    rp.add_argument("files", nargs="+", type=Path)
    rp.add_argument("--pair", nargs=2, metavar=("A", "B"), type=_spec,
                    help="pair two searches, each MODEL:ROLLOUTS[:MS] (e.g. sound+r:600 "
                    "mix+r:600), instead of each model with issue 24's search")
    rp.add_argument("--below", type=int, metavar="N",
                    help="only the deals numbered below N: a line as it stood when it held "
                    "its first N deals (a table measured then, in a folder grown since)")
    return ap


def main() -> None:
    args = parser().parse_args()
    if args.cmd == "run":
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        run(args)
    elif args.cmd == "parts":
        parts(args)
    elif args.cmd == "departures":
        departures(args)
    elif args.cmd == "keep":
        keep(args.files, args.into)
    else:
        report((row for path in args.files for row in read_deals(path)), args.pair,
               args.below)


if __name__ == "__main__":
    main()
