"""A small Python client of shuangkou.v1.ShuangkouService, on the package's client.

Classifies a play, lists the plays that beat another, settles a round from a summary and
shows how a rejected request reads (status code, field violation, reason). Run it with the
project's virtualenv (``.venv/bin/python client.py [ADDRESS]``) against a running server.
"""

from __future__ import annotations

import argparse
import os
import sys

from shuangkou.client import Rejected, ServiceError, ShuangkouClient
from shuangkou.v1 import cards_pb2, scoring_pb2, service_pb2, variants_pb2


def cards(text: str) -> cards_pb2.Cards:
    """Cards in the text notation (RULES.md §2); codes go in ``Cards(cards=[...])``."""
    return cards_pb2.Cards(cards_text=text)


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except ServiceError as exc:   # the server is down or unreachable: one line, no traceback
        print(f"client.py: {exc.code.name}: {exc.message}", file=sys.stderr)
        return 2


def run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", nargs="?",
                        default=os.environ.get("SHUANGKOU_ADDR", "localhost:50051"),
                        help="gRPC target (default $SHUANGKOU_ADDR or localhost:50051)")
    parser.add_argument("--variant", default="baibian", help="built-in rule set id")
    args = parser.parse_args(argv)

    # One client (one channel) for every call: deadlines, retries on UNAVAILABLE and
    # round_robin over every resolved address come with it (shuangkou.client).
    with ShuangkouClient(args.address) as rules:
        # The rule set is named here once: a built-in id, a server-registered house id, or
        # a house variant inline (RuleSet(custom_json=...), docs/api.md).
        rule_set = variants_pb2.RuleSet(id=args.variant)

        reply = rules.classify_play(service_pb2.ClassifyPlayRequest(
            play=cards("45678 BJ"), rule_set=rule_set))
        print("classify 45678 BJ:", reply.reading.text)
        for r in reply.readings[1:]:
            print("  also:", r.text)

        plays = rules.enumerate_legal_plays(service_pb2.EnumerateLegalPlaysRequest(
            hand=cards("33 44 55 66 77 BJ"), to_beat=cards("55"), include_counts=True,
            rule_set=rule_set))
        print(f"plays beating 55: {plays.total}")
        for play in plays.plays:
            print(f"  {play.reading.text}")

        summary = scoring_pb2.RoundSummary(finish_order=[0, 2], stake=1, bombs=[
            scoring_pb2.BombPlay(seat=0, cards=cards("7777777"))])
        result = rules.score_round(service_pb2.ScoreRoundRequest(
            summary=summary, rule_set=rule_set)).result
        print(f"score: {scoring_pb2.WinKind.Name(result.kind)}, star {result.star}, "
              f"x{result.multiplier}, final {list(s.final for s in result.seats)}")

        try:
            rules.classify_play(service_pb2.ClassifyPlayRequest(play=cards("3S 4"),
                                                                rule_set=rule_set))
        except Rejected as exc:   # the request is at fault: the field and the reason say how
            print(f"classify 3S 4: {exc.code.name}: {exc.message} "
                  f"[field {exc.field}, reason {exc.reason}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
