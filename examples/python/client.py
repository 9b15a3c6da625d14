"""A small Python client of shuangkou.v1.ShuangkouService, on the stubs the package generates.

Classifies a play, lists the plays that beat another, settles a round from a summary and
shows how a rejected request reads (status code, field violation, reason). Run it with the
project's virtualenv (``.venv/bin/python client.py [ADDRESS]``) against a running server.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from shuangkou.v1 import (
    cards_pb2,
    scoring_pb2,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

DEADLINE = 5.0   # seconds; every call carries one and the server honours it


def rule_set(variant: str) -> dict[str, Any]:
    """The request field that names the rule set (a built-in or server-registered id)."""
    return {"rule_set": variants_pb2.RuleSet(id=variant)}


def cards(text: str) -> cards_pb2.Cards:
    """Cards in the text notation (RULES.md §2); codes go in ``Cards(cards=[...])``."""
    return cards_pb2.Cards(cards_text=text)


def explain(exc: grpc.RpcError) -> str:
    """A failed call in one line: code, message, and the field and reason from the details."""
    line = f"{exc.code().name}: {exc.details()}"
    status = rpc_status.from_call(exc)
    for detail in status.details if status else []:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            for v in bad.field_violations:
                line += f" [field {v.field}, reason {v.reason}]"
    return line


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except grpc.RpcError as exc:   # the server is down or unreachable: one line, no traceback
        print(f"client.py: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return 2


def run(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", nargs="?",
                        default=os.environ.get("SHUANGKOU_ADDR", "localhost:50051"),
                        help="gRPC target (default $SHUANGKOU_ADDR or localhost:50051)")
    parser.add_argument("--variant", default="baibian", help="built-in rule set id")
    args = parser.parse_args(argv)

    # One channel for every call; round_robin spreads calls over every resolved address.
    options = [("grpc.service_config",
                json.dumps({"loadBalancingConfig": [{"round_robin": {}}]}))]
    with grpc.insecure_channel(args.address, options=options) as channel:
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        rules = rule_set(args.variant)

        reply = stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
            play=cards("45678 BJ"), **rules), timeout=DEADLINE)
        print("classify 45678 BJ:", reply.reading.text)
        for r in reply.readings[1:]:
            print("  also:", r.text)

        reply = stub.EnumerateLegalPlays(service_pb2.EnumerateLegalPlaysRequest(
            hand=cards("33 44 55 66 77 BJ"), to_beat=cards("55"), include_counts=True,
            **rules), timeout=DEADLINE)
        print(f"plays beating 55: {reply.total}")
        for play in reply.plays:
            print(f"  {play.reading.text}")

        summary = scoring_pb2.RoundSummary(finish_order=[0, 2], stake=1, bombs=[
            scoring_pb2.BombPlay(seat=0, cards=cards("7777777"))])
        result = stub.ScoreRound(service_pb2.ScoreRoundRequest(summary=summary, **rules),
                                 timeout=DEADLINE).result
        print(f"score: {scoring_pb2.WinKind.Name(result.kind)}, star {result.star}, "
              f"x{result.multiplier}, final {list(s.final for s in result.seats)}")

        try:
            stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(play=cards("3S 4"), **rules),
                              timeout=DEADLINE)
        except grpc.RpcError as exc:
            print("classify 3S 4:", explain(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
