"""Review archives (``shuangkou review-replays``): the collusion signal on a bench-made archive
where one partnership cheats, and the throughput per core and on Dask.

    .venv/bin/python bench/bench_review_archive.py make --rounds 40 --out FILE [--seed 1]
    .venv/bin/python bench/bench_review_archive.py collusion --rounds 40 [--rollouts 32]
    .venv/bin/python bench/bench_review_archive.py throughput --rounds 16 [--rollouts N]

``make`` writes an archive of JSON-lines replays naming their players: in every round the
partnership ``cheat-a`` & ``cheat-b`` (table seats 0/2 or 1/3 in turn) plays against a fair
pair (``fair-1`` & ``fair-2`` or ``fair-3`` & ``fair-4`` in turn). A fair seat plays the rule
policy (it sees its own hand and the table, as every 托管 seat); a cheating seat sees every
hand — its partner's too — and plays the action among its first ``--width`` 提示 that is best
on the TRUE deal (each played out to the end by the rule policy in all four seats). The
replays are the same for a seed.

``collusion`` makes such an archive, reviews it (``review-replays -j 1`` with the oracle)
and prints each partnership's signal: the share of non-forced decisions whose taken action
differs from the fair best and beats it on the true deal, and the mean oracle gain per
decision, with their 95 % intervals. The cheating pair must stand clearly above the fair ones.

``throughput`` reviews one archive three times into fresh directories — one local process
(``-j 1``), ``--dask local:1`` and ``--dask local:2`` — and prints replays per second of
each and the two-worker speed-up over one worker (target >= 1.8x on two free cores).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from shuangkou.core import Declaration, Round  # noqa: E402
from shuangkou.core._core import format_cards  # noqa: E402
from shuangkou.core._suggest import choose_in  # noqa: E402
from shuangkou.core.generate import deal  # noqa: E402
from shuangkou.core.suggest import suggestions  # noqa: E402
from shuangkou.core.variants import get_variant  # noqa: E402

CHEATS = ("cheat-a", "cheat-b")
FAIR = (("fair-1", "fair-2"), ("fair-3", "fair-4"))


def _apply(r: Round, cards: tuple[int, ...], declared: Declaration | None) -> dict[str, Any]:
    """Take an action in ``r``; its replay action."""
    seat = r.turn
    if not cards:
        r.pass_turn(seat)
        return {"seat": seat, "pass": True}
    r.play(seat, cards, declared)
    action: dict[str, Any] = {"seat": seat, "play": format_cards(list(cards))}
    if declared is not None:
        parts = {"declare": declared.kind, "declare_top": declared.top,
                 "declare_star": declared.star,
                 "declare_wilds": None if declared.wilds is None else list(declared.wilds)}
        action |= {k: v for k, v in parts.items() if v is not None}
    return action


def _rule(r: Round) -> tuple[tuple[int, ...], Declaration | None]:
    p = choose_in(r)[0]
    cards, reading, declared = p.cards, p.reading, p.declared
    return cards, (Declaration(reading.kind, reading.top, reading.star or None)
                   if declared else None)


def _true_value(r: Round, choice: tuple[tuple[int, ...], Declaration | None], team: int) -> int:
    """The team's points when ``choice`` is taken and everyone then plays the rule policy:
    the value of an action on the true deal."""
    r = r.copy()
    _apply(r, *choice)
    while not r.is_over:
        _apply(r, *_rule(r))
    final = r.result().final
    return final[team] + final[team + 2]


def _cheat(r: Round, width: int) -> tuple[tuple[int, ...], Declaration | None]:
    """The best of the seat's first ``width`` 提示 on the true deal (ties: the hint order)."""
    team = r.turn % 2
    options = [(s.cards, s.declaration) for s in suggestions(r, count=width).actions]
    return max(options, key=lambda o: _true_value(r, o, team))


def make_round(variant: str, k: int, seed: int, width: int) -> dict[str, Any]:
    """Round ``k``: the cheats at table seats k % 2 and k % 2 + 2."""
    rng = random.Random(f"{seed}/{k}")
    v = get_variant(variant)
    hands = deal(v, rng)
    leader = rng.randrange(4)
    # partner opposite the leader: no swap, so table seats are dealt seats
    r = Round.deal(v, hands, leader, partner=(leader + 2) % 4)
    cheat_team = k % 2
    fair = FAIR[(k // 2) % 2]
    players = [""] * 4
    players[cheat_team], players[cheat_team + 2] = CHEATS
    players[1 - cheat_team], players[3 - cheat_team] = fair
    actions = []
    while not r.is_over:
        choice = _cheat(r, width) if r.turn % 2 == cheat_team else _rule(r)
        actions.append(_apply(r, *choice))
    return {"variant": variant, "hands": [format_cards(h) for h in hands], "leader": leader,
            "partner": (leader + 2) % 4, "actions": actions, "players": players}


def make(rounds: int, out: Path, seed: int, width: int, variant: str) -> None:
    t = time.perf_counter()
    with out.open("w", encoding="utf-8") as f:
        for k in range(rounds):
            f.write(json.dumps(make_round(variant, k, seed, width)) + "\n")
    print(f"{rounds} rounds ({variant}) in {time.perf_counter() - t:.1f} s: {out}",
          file=sys.stderr)


def review(archive: Path, outdir: Path, extra: list[str]) -> tuple[dict[str, Any], float]:
    from shuangkou.service.batch import review as rb

    t = time.perf_counter()
    status = rb.main([str(archive), "--output-dir", str(outdir), "--no-progress", *extra])
    seconds = time.perf_counter() - t
    if status not in (0, 3):      # done, or done with lines rejected (service/exits.py)
        raise SystemExit(f"review-replays exited {status}")
    return json.loads((outdir / "summary.json").read_text()), seconds


def collusion(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "rounds.jsonl"
        make(args.rounds, archive, args.seed, args.width, args.variant)
        args.rollouts = args.rollouts or 32
        summary, seconds = review(archive, Path(tmp) / "out",
                                  ["-j", str(args.jobs), "--rollouts", str(args.rollouts)])
    print(f"{args.rounds} rounds reviewed in {seconds:.1f} s (rollouts {args.rollouts}, "
          f"{args.jobs} processes)")
    print(f"{'partnership':24} {'decisions':>9}  {'beat the fair best on the true deal':>36}  "
          f"{'mean oracle gain / decision':>30}")
    for p in summary["partnerships"]:
        b, g = p["beats_true_deal_95"], p["mean_oracle_gain_95"]
        print(f"{' & '.join(p['players']):24} {p['decisions']:9d}  "
              f"{p['beats_true_deal']:>12.1%} [{b[0]:.1%}, {b[1]:.1%}]          "
              f"{p['mean_oracle_gain']:>+9.2f} [{g[0]:+.2f}, {g[1]:+.2f}]")
    for name, f in summary["players"].items():
        print(f"{name:10} mean loss {f['mean_loss']:.2f} agree first {f['agree_first']:.1%}")


def throughput(args: argparse.Namespace) -> None:
    budget = [] if args.rollouts is None else ["--rollouts", str(args.rollouts)]
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "rounds.jsonl"
        make(args.rounds, archive, args.seed, args.width, args.variant)
        common = [*budget, "--partition-lines", "1"]
        walls = {}
        for label, workers, extra in (("1 local process", 1, ["-j", "1"]),
                                      ("dask local:1", 1, ["--dask", "local:1"]),
                                      ("dask local:2", 2, ["--dask", "local:2"])):
            out = Path(tmp) / "out"
            cpu = time.process_time()
            summary, seconds = review(archive, out, [*common, *extra])
            cpu = time.process_time() - cpu
            shutil.rmtree(out)
            walls[label] = seconds
            # busy: the share of the workers' wall time spent inside partitions (the rest is
            # the machinery: start-up, scheduling, reading and writing)
            busy = summary["scoring_seconds"] / (workers * seconds)
            line = (f"{label:16} {args.rounds} replays in {seconds:6.1f} s: "
                    f"{args.rounds / seconds:.3f} replays/s, workers busy {busy:.0%}")
            if extra == ["-j", "1"]:   # in this process: its CPU time is the review's
                line += f", {cpu / args.rounds:.2f} CPU-s per replay"
            print(line, flush=True)
    print(f"two Dask workers over one: {walls['dask local:1'] / walls['dask local:2']:.2f}x "
          "(target >= 1.8x on two free cores)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["make", "collusion", "throughput"])
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--rollouts", type=int, default=None,
                   help="per decision (collusion: 32; throughput: the review's default)")
    p.add_argument("--width", type=int, default=4, help="the cheats' candidates")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--variant", default="bianfeng")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    if args.mode == "make":
        make(args.rounds, args.out or Path("rounds.jsonl"), args.seed, args.width, args.variant)
    elif args.mode == "collusion":
        collusion(args)
    else:
        throughput(args)


if __name__ == "__main__":
    main()
