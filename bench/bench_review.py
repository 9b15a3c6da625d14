"""复盘 (core.review): what a review costs.

    .venv/bin/python bench/bench_review.py cost [--rounds 4] [--variants ID ...]
        [--policies rule random search] [--rollouts N] [--oracle]

``cost`` reviews whole rounds at a rollout budget (default: the review's own,
``DEFAULT_REVIEW``) and prints, per variant and the policy that played the rounds
(tests/review_rounds.py: ``rule`` the rule policy, ``random`` uniformly random legal play,
``search`` the 托管 search at 200 rollouts, in all four seats): the decisions per round and
those evaluated (the rest are forced: one legal action), the CPU seconds per round (mean and
the slowest round) and per evaluated decision, and what the budget buys: the mean loss per
evaluated decision and the median standard error of a decision's loss (σ; the verdicts
count a loss only beyond 2σ, docs/review.md). Only the review is timed (``time.process_time``
of this process), not the play of the rounds. Target: ≤ 10 s of CPU per round at the default
budget, on every variant.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from review_rounds import POLICIES, played  # noqa: E402

from shuangkou import core  # noqa: E402
from shuangkou.core.review import DEFAULT_REVIEW, ReviewBudget, review  # noqa: E402

VARIANTS = [v.id for v in core.list_variants()]
SEARCH_ROLLOUTS = 200      # the 托管 search that plays the "search" rounds


def cost(variants: list[str], policies: list[str], rounds: int, rollouts: int,
         oracle: bool) -> None:
    budget = ReviewBudget(rollouts=rollouts)
    print(f"review at {rollouts} rollouts per decision ({budget.model} model)"
          f"{', with the oracle' if oracle else ''}; CPU seconds of this process")
    print(f"{'variant':<18} {'policy':<7} {'rounds':>6} {'decisions':>9} {'evaluated':>9} "
          f"{'s/round':>8} {'max s':>6} {'ms/evaluated':>12} {'mean loss':>9} "
          f"{'median σ':>8}")
    worst = (0.0, "")
    for v in variants:
        for policy in policies:
            cpu: list[float] = []
            losses: list[float] = []
            sigmas: list[float] = []
            decisions = 0
            for seed in range(rounds):
                doc = played(v, seed, policy, rollouts=SEARCH_ROLLOUTS)
                t0 = time.process_time()
                rv = review(doc, budget=budget, seed=seed, oracle=oracle)
                cpu.append(time.process_time() - t0)
                decisions += len(rv.decisions)
                losses += [d.loss for d in rv.decisions if not d.forced]
                sigmas += [d.loss_se for d in rv.decisions if not d.forced and d.loss > 0]
            evaluated = len(losses)
            mean = sum(cpu) / rounds
            print(f"{v:<18} {policy:<7} {rounds:>6} {decisions / rounds:>9.1f} "
                  f"{evaluated / rounds:>9.1f} {mean:>8.2f} {max(cpu):>6.2f} "
                  f"{1000 * sum(cpu) / max(evaluated, 1):>12.1f} "
                  f"{sum(losses) / max(evaluated, 1):>9.2f} "
                  f"{statistics.median(sigmas) if sigmas else 0.0:>8.2f}", flush=True)
            worst = max(worst, (max(cpu), f"{v}, {policy}"))
    print(f"slowest round: {worst[0]:.2f} s of CPU ({worst[1]}); target <= 10 s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("cost", help="CPU per reviewed round, per variant")
    c.add_argument("--rounds", type=int, default=4, help="rounds per variant and policy")
    c.add_argument("--variants", nargs="*", default=VARIANTS)
    c.add_argument("--policies", nargs="*", choices=POLICIES, default=list(POLICIES))
    c.add_argument("--rollouts", type=int, default=DEFAULT_REVIEW.rollouts)
    c.add_argument("--oracle", action="store_true", help="also evaluate on the true deal")
    args = ap.parse_args()
    if args.cmd == "cost":
        cost(args.variants, args.policies, args.rounds, args.rollouts, args.oracle)


if __name__ == "__main__":
    main()
