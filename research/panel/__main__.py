"""How strong each style of the panel is: every deal played twice, the rule policy's team
at seats 0/2 then 1/3 against the style, per variant; the share of those rounds the rule
policy wins and its points per round.

    .venv/bin/python -m research.panel [--deals 20] [--variants ID ...] [--seed 1]
"""

from __future__ import annotations

import argparse
import random

from shuangkou.core.variants import get_variant

from . import PANEL, VARIANTS, new_round, play, rule_player, team_points


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m research.panel",
                                 description="the panel against the rule policy")
    ap.add_argument("--deals", type=int, default=20)
    ap.add_argument("--variants", nargs="*", default=VARIANTS)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    print(f"{'style':9} {'variant':16} {'rounds':>6} {'rule policy wins':>17} "
          f"{'its points/round':>17}")
    for name, style in PANEL.items():
        for vid in args.variants:
            v = get_variant(vid)
            wins, points = 0, 0
            for d in range(args.deals):
                dealt = new_round(v, random.Random(f"{vid}/{args.seed}/{d}"))
                for side in (0, 1):
                    r = play(dealt.copy(), side, rule_player, style,
                             random.Random(f"{args.seed}/{d}/{side}"))
                    wins += r.result().winning_team == side
                    points += team_points(r, side)
            n = 2 * args.deals
            print(f"{name:9} {vid:16} {n:6d} {wins / n:17.1%} {points / n:+17.2f}", flush=True)


if __name__ == "__main__":
    main()
