"""``shuangkou view REPLAY [-o FILE] [--line N] [--review [--rollouts N] [--seed S]
[--width W] [--fair-play [--decoys K] [--fair-deals D]]]``: the page of one replayed round,
annotated with its review.

REPLAY is a replay file (docs/replays.md), ``-`` for stdin, or with ``--line N`` the N-th
line (1-based) of a JSON-lines archive, plain or gzipped — the line a ``score-replays``
record or its summary names. The page is written to ``-o FILE`` (``-``: stdout; default:
the replay's name with ``.html``, in the current directory; stdout for stdin). A rejected
replay gets a page too, marking the first action that cannot happen: the exit status is 0
when a page was written, 2 for bad usage or an unreadable file. One line on stderr says
what was written and the verdict.

``--review`` reviews the round first (:func:`shuangkou.core.review.review`, the budget of
``shuangkou review``): each action then carries its verdict, its loss and the best
alternative, and the page gains the evaluation graph and each seat's summary; with
``--fair-play``, each action the fair-play evidence it carried and the review section the
round's fair-play scores and their caveats. A rejected replay is not reviewed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from shuangkou.core.errors import ShuangkouError
from shuangkou.core.review import Review, review
from shuangkou.core.story import RoundStory

from ..inputs import json_lines, read_replay
from ..review.options import budget_arguments, budget_given, fair_play_arguments, fair_play_given
from ..shown import shown
from .page import KIND_TEXT, page_of

__all__ = ["main", "verdict"]


def verdict(story: RoundStory) -> str:
    """One line: how the replay came out."""
    rej = story.rejection
    if rej is not None:
        where = f"at action {rej.action}" if rej.action is not None else "as a whole"
        return f"rejected {where}: {rej.reason}"
    assert story.result is not None
    finals = " ".join(str(f) for f in story.result.final)
    return f"{KIND_TEXT[story.result.kind]}; finals {finals}"



def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shuangkou view",
        description="Write one self-contained HTML page of a replayed round: the hands as "
                    "dealt and the seating, every trick, bombs and stars, the finishing order "
                    "and the settlement term by term; a rejected replay up to the first "
                    "action that cannot happen, marked with the reason.")
    p.add_argument("replay", metavar="REPLAY",
                   help="a replay JSON file, '-' for stdin, or a JSONL archive with --line")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="where to write the page ('-': stdout; default: REPLAY's name with "
                        ".html in the current directory)")
    p.add_argument("--line", type=int, metavar="N",
                   help="take line N (1-based) of a JSON-lines file (.gz too)")
    p.add_argument("--partial-deal", action="store_true",
                   help="accept hands that are only part of the deck (puzzles, tests)")
    r = p.add_argument_group("review (复盘)")
    r.add_argument("--review", action="store_true",
                   help="annotate each action with its verdict and loss, the best "
                        "alternative beside it, an evaluation graph and each seat's summary")
    budget_arguments(r)
    r.add_argument("--seed", type=int, default=0, help="seeds the sampled deals (default 0)")
    fair_play_arguments(r)
    return p


def _reviewer(args: argparse.Namespace) -> Callable[[str], Review]:
    """How ``--review`` reviews a replay's text."""
    budget = budget_given(args)

    def reviewed(text: str) -> Review:
        return review(text, budget=budget, seed=args.seed, fair=args.fair_play,
                      partial_deal=args.partial_deal)
    return reviewed


def _default_output(replay: str, line: int | None) -> str:
    name = Path(replay).name
    for suffix in (".gz", ".jsonl", ".ndjson", ".json"):
        name = name.removesuffix(suffix)
    return f"{name or 'round'}{f'-{line}' if line else ''}.html"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.line is not None and (args.line < 1 or args.replay == "-"):
        parser.error("--line takes a line number from 1, of a file (not stdin)")
    if not args.review and (args.rollouts is not None or args.seed or
                            args.width is not None or args.fair_play):
        parser.error("--rollouts, --seed, --width and --fair-play go with --review")
    fair_play_given(parser, args)
    try:
        reviewer = _reviewer(args) if args.review else None
    except ShuangkouError as exc:    # a budget out of its bounds
        parser.error(str(exc))
    try:
        text = read_replay(args.replay, args.line)
    except OSError as exc:
        print(f"shuangkou view: cannot read {args.replay}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"shuangkou view: {exc}", file=sys.stderr)
        return 2
    source = args.replay if args.line is None else f"{args.replay} line {args.line}"
    try:
        story, page = page_of(text, "stdin" if args.replay == "-" else source,
                              args.partial_deal, reviewer)
    except ShuangkouError as exc:    # a seed the review refuses
        parser.error(str(exc))
    output = args.output or ("-" if args.replay == "-" else
                             _default_output(args.replay, args.line))
    if output == "-":
        sys.stdout.write(page)
        sys.stdout.flush()
    else:
        try:
            Path(output).write_text(page, encoding="utf-8")
        except OSError as exc:
            print(f"shuangkou view: cannot write {output}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
    where = "stdout" if output == "-" else os.path.relpath(output)
    note = ("" if reviewer is None else "; not reviewed" if story.rejection is not None
            else "; reviewed")
    if story.rejection is not None and args.line is None and (lines := json_lines(text)):
        note += (f"; {args.replay} holds {lines:,} JSON lines (an archive, one replay a "
                 "line): view one with --line N")
    print(shown(f"shuangkou view: {where}: {verdict(story)}{note}"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
