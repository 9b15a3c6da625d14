"""The review's options on the command line, one definition for the three commands that
review (``shuangkou review``, ``shuangkou view --review`` and ``review-replays``): its budget,
``--rollouts`` and ``--width`` (each the review's default when not given), and
``--fair-play`` with its budget, ``--decoys`` and ``--fair-deals`` (docs/review.md "Fair
play"). The values are checked where the budget is made, by
:class:`~shuangkou.core.review.ReviewBudget`, the one place that knows their bounds.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from shuangkou.core.review import DEFAULT_REVIEW, ReviewBudget

__all__ = ["budget_arguments", "budget_given", "budget_of", "fair_play_arguments",
           "fair_play_given"]


def budget_arguments(group: Any) -> None:
    """Add ``--rollouts`` and ``--width`` to a parser or group (None when not given: the
    review's default)."""
    group.add_argument("--rollouts", type=int, metavar="N",
                       help="rollouts per decision, over its candidates (default: the "
                            f"review's, {DEFAULT_REVIEW.rollouts:,})")
    group.add_argument("--width", type=int, metavar="W",
                       help="candidates from the ranked 提示 list per decision, besides the "
                            f"action taken (default: the review's, {DEFAULT_REVIEW.width})")


def fair_play_arguments(group: Any) -> None:
    """Add ``--fair-play``, ``--decoys`` and ``--fair-deals`` to a parser or group."""
    group.add_argument("--fair-play", action="store_true",
                       help="also evaluate each decision on the fair-play views (the "
                            "partner's hand seen, every hand seen; each on the true hands "
                            "and on decoys): the evidence of hand sharing, full sight, "
                            "thrown rounds and engine assistance (docs/review.md 'Fair "
                            "play')")
    group.add_argument("--decoys", type=int, metavar="K",
                       help=f"decoys per fair-play view (default {DEFAULT_REVIEW.decoys})")
    group.add_argument("--fair-deals", type=int, metavar="D",
                       help="deals each fair-play view is rolled out on (default "
                            f"{DEFAULT_REVIEW.fair_deals})")


def fair_play_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse the fair-play budget without ``--fair-play`` (bad usage: exit status 2)."""
    if not args.fair_play and (args.decoys is not None or args.fair_deals is not None):
        parser.error("--decoys and --fair-deals go with --fair-play")


def budget_of(base: ReviewBudget, **given: int | None) -> ReviewBudget:
    """``base`` (a review budget) with the values given (None: keep ``base``'s);
    ShuangkouError naming the field for a value out of its bounds."""
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    return replace(base, **changes)


def budget_given(args: argparse.Namespace) -> ReviewBudget:
    """The budget a command's arguments ask for (:func:`budget_arguments`,
    :func:`fair_play_arguments`): the default review's with the values given."""
    return budget_of(DEFAULT_REVIEW, rollouts=args.rollouts, width=args.width,
                     decoys=args.decoys, fair_deals=args.fair_deals)
