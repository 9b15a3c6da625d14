"""``shuangkou review REPLAY [--json] [-o FILE] [--line N] [--rollouts N] [--seed N] [--width N]
[--oracle] [--fair-play [--decoys K] [--fair-deals D]]``:
复盘 of one replayed round (docs/review.md).

REPLAY is a replay file (docs/replays.md), ``-`` for stdin, or with ``--line N`` the N-th
line (1-based) of a JSON-lines archive, plain or gzipped, as ``shuangkou view`` reads it.
Text for people (to stdout, or ``-o FILE``): one line per decision (seat, action, verdict,
loss ± its standard error, the best alternative; with ``--fair-play`` the evidence of each
view that carried some, and 托管's choice where it is not the rule policy's), then each seat's
summary (with ``--fair-play``, the round's fair-play scores and their caveats); ``--json``
prints ``Review.to_dict()``.
Exit status (:mod:`~shuangkou.service.exits`, as every command): 0 when the round was
reviewed, 1 for a replay that cannot happen (as ``shuangkou score``), 2 for bad usage or an
unreadable file; one line on stderr says why.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import orjson

from shuangkou.core import format_cards
from shuangkou.core.errors import ReplayError, ShuangkouError
from shuangkou.core.review import Candidate, Review, review

from ..exits import Exit
from ..inputs import json_lines, read_replay
from ..shown import shown
from .fair import (
    CAVEATS,
    TAKEN_TEXT,
    block_text,
    concede_text,
    engine_tells,
    evidence_text,
    fair_played,
    round_fair,
    score_text,
    tell_text,
    tells_text,
)
from .options import budget_arguments, budget_given, fair_play_arguments, fair_play_given

__all__ = ["main", "text_of"]

PROG = "shuangkou review"



def _action(c: Candidate) -> str:
    if c.kind == "pass":
        return "pass"
    what = " ".join(format_cards(c.cards))
    return f"{what} ({c.reading.describe()})" if c.reading is not None else what


def _points(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1f}"


def text_of(rv: Review) -> str:
    """The review for people: a line per decision, then the per-seat summary."""
    fair = fair_played(rv.decisions)
    names = rv.players
    who = [f"seat {s}" + (f" ({shown(names[s])})" if names else "") for s in range(4)]
    out = [f"复盘 of a {shown(rv.variant)} round: {rv.budget.rollouts} rollouts per "
           f"decision ({rv.budget.model} model), width {rv.budget.width}, seed {rv.seed}",
           ""]
    for x in rv.decisions:
        taken = x.candidates[x.taken]
        line = f"{x.index:4d}  {who[x.seat]:<10}  {shown(_action(taken)):<34}"
        if x.forced:
            out.append(f"{line}  forced")
            if x.tell is not None:            # a forced pass tells as much as a chosen one
                out.append(f"{'':18}{tell_text(x.tell)}")
            if x.opponents_tell is not None:
                out.append(f"{'':18}{tell_text(x.opponents_tell)}")
            continue
        line += f"  {x.verdict:<10}  loss {x.loss:4.1f} ± {x.loss_se:3.1f}"
        if x.taken != x.best:
            best = x.candidates[x.best]
            line += f"  best: {shown(_action(best))} ({_points(best.points)})"
        if x.oracle_gain is not None:
            line += f"  oracle {x.oracle_gain:+.1f}"
        out.append(line)
        out += [f"{'':18}{evidence_text(e)}" for e in x.fair if e.carries]
        if x.tell is not None:
            out.append(f"{'':18}{tell_text(x.tell)}")
        if x.opponents_tell is not None:
            out.append(f"{'':18}{tell_text(x.opponents_tell)}")
        if x.over_partner is not None:
            out.append(f"{'':18}{block_text(x.over_partner)}")
        if x.concedes is not None:
            out.append(f"{'':18}{concede_text(x.concedes)}")
        if fair and (told := engine_tells(x)) is not None:
            tuoguan = x.candidates[x.tuoguan]
            whose = TAKEN_TEXT[told]
            out.append(f"{'':18}托管 would play {shown(_action(tuoguan))}, not the rule "
                       f"policy's action; the action taken is {whose}")
    out += ["", "seat          decisions  forced  mean loss  loss share  inacc.  mistakes  "
                "blunders  agree 1st  agree top 3"]
    for s in rv.seats:
        def share(v: float | None) -> str:
            return "—" if v is None else f"{v:.0%}"
        mean = "—" if s.mean_loss is None else f"{s.mean_loss:.2f}"
        out.append(f"{who[s.seat]:<12}  {s.decisions:9d}  {s.forced:6d}  {mean:>9}  "
                   f"{share(s.loss_share):>10}  "
                   f"{s.inaccuracies:6d}  {s.mistakes:8d}  {s.blunders:8d}  "
                   f"{share(s.agree_first):>9}  {share(s.agree_top3):>11}")
    if fair:
        out += ["", *_fair_text(rv, who)]
    final = " ".join(str(f) for f in rv.final)
    out += ["", f"finals {final}; {rv.rollouts:,} rollouts in {rv.seconds:.1f} s"]
    return "\n".join(out) + "\n"


def _fair_text(rv: Review, who: list[str]) -> list[str]:
    """The round's fair-play scores: per partnership hand sharing, per seat full sight and
    the decisions that tell for engine assistance; the caveats."""
    scores = round_fair(rv.decisions, rv.final)
    out = ["fair play in this round (docs/review.md \"Fair play\"):"]
    out += [f"  hand sharing, {who[t]} & {who[t + 2]}: "
            f"{score_text(scores.team_beyond(t))}; tells: "
            f"{tells_text(scores.tells_beyond(t))}" for t in (0, 1)]
    out += [f"  full sight, {who[s]}: {score_text(scores.seat_beyond(s))}"
            f"; tells: {tells_text(scores.sight_beyond(s))}" for s in range(4)]
    out += [f"  engine, {who[s]}: 托管's choice is not the rule policy's at {t.departs} "
            f"decisions; it took 托管's {t.engine} times, the rule policy's {t.rule}"
            for s, t in enumerate(scores.engine)]
    out += [f"  thrown rounds, {who[s]}: {g.blocks} of {g.chances} chances to play over the "
            f"partner's standing play blocked, {g.concessions} of {g.to_concede} chances to "
            "concede a trick conceded" for s, g in enumerate(scores.give_ups)]
    return out + [f"* {c}" for c in CAVEATS]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Review every play and pass of a replayed round from what the deciding "
                    "seat could see: the candidate actions' expected points by rollouts, "
                    "the loss of the action taken and its verdict (docs/review.md).")
    p.add_argument("replay", metavar="REPLAY",
                   help="a replay JSON file, '-' for stdin, or a JSONL archive with --line")
    p.add_argument("--line", type=int, metavar="N",
                   help="take line N (1-based) of a JSON-lines file (.gz too)")
    p.add_argument("--json", action="store_true", help="print the review as JSON")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the review to FILE instead of stdout ('-': stdout)")
    budget_arguments(p)
    p.add_argument("--seed", type=int, default=0, metavar="N",
                   help="the seed of the deals (default 0; the same seed, the same review)")
    p.add_argument("--oracle", action="store_true",
                   help="also evaluate every candidate on the true deal (the collusion "
                        "signal, which --fair-play supersedes)")
    fair_play_arguments(p)
    p.add_argument("--partial-deal", action="store_true",
                   help="accept hands that are only part of the deck (puzzles, tests)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.line is not None and (args.line < 1 or args.replay == "-"):
        parser.error("--line takes a line number from 1, of a file (not stdin)")
    fair_play_given(parser, args)
    try:
        budget = budget_given(args)
    except ShuangkouError as exc:    # a budget out of its bounds
        parser.error(str(exc))
    try:
        text = read_replay(args.replay, args.line)
    except OSError as exc:
        print(shown(f"{PROG}: cannot read {args.replay}: {exc.strerror or exc}"),
              file=sys.stderr)
        return Exit.USAGE
    except ValueError as exc:
        print(shown(f"{PROG}: {exc}"), file=sys.stderr)
        return Exit.USAGE
    try:
        rv = review(text, budget=budget, seed=args.seed, oracle=args.oracle,
                    fair=args.fair_play, partial_deal=args.partial_deal)
    except ReplayError as exc:
        hint = ""
        if args.line is None and (lines := json_lines(text)):
            hint = (f"; {args.replay} holds {lines:,} JSON lines (an archive, one replay a "
                    "line): review one with --line N, or every one with `shuangkou "
                    f"review-replays {args.replay} --output-dir DIR`")
        print(shown(f"{PROG}: the replay cannot happen: {exc}{hint}"), file=sys.stderr)
        return Exit.BAD_INPUT
    except ShuangkouError as exc:    # a setting the review refuses (the seed)
        parser.error(str(exc))
    answer = (shown(orjson.dumps(rv.to_dict()).decode(), lines=True) + "\n" if args.json
              else text_of(rv))
    if args.output is None or args.output == "-":
        sys.stdout.write(answer)
        sys.stdout.flush()
        return Exit.OK
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(answer)
    except OSError as exc:
        print(shown(f"{PROG}: cannot write {args.output}: {exc.strerror or exc}"),
              file=sys.stderr)
        return Exit.USAGE
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
