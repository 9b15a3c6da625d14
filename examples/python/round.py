"""A table run by a Python game server through shuangkou.v1.RoundService: a live round from
deal to settlement, on the package's client (shuangkou.client).

The server deals from a seed (StartRound ``seed``, docs/rounds.md "A fair deal"); each seat is
played by the service's 托管 (SuggestAction, then ApplyAction like any player's move). On the
way it shows the two kinds of failure a game server meets: a move the rules refuse
(``Rejected``, FAILED_PRECONDITION, handled by its ``google.rpc.ErrorInfo`` reason; the state
held is still the current one) and a transport failure (UNAVAILABLE: the client sends the same
state and action again by itself, which is safe since a call changes nothing on the server;
what still fails after its retries ends the run). Run it with the project's virtualenv against
a running server::

    python round.py [ADDRESS] [--variant ID] [--seed TEXT]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

from shuangkou.client import Rejected, RoundClient, ServiceError
from shuangkou.v1 import rounds_pb2, scoring_pb2, variants_pb2

# ActionType is defined in scoring.proto (replays share it), so it is scoring_pb2's.
PASS = scoring_pb2.ACTION_TYPE_PASS


def play_round(rounds: RoundClient, variant: str, seed: bytes) -> int:
    rules = variants_pb2.RuleSet(id=variant)
    state = rounds.start_round(rounds_pb2.StartRoundRequest(rule_set=rules, seed=seed)).state
    print(f"dealt from seed sha256 {state.view.seed_sha256.hex()[:16]}…: seat "
          f"{state.view.turn} leads, {state.view.hand_sizes[0]} cards each")

    # A move the rules refuse: the leader may not pass. The game server tells the player
    # and keeps the state it holds.
    try:
        rounds.apply_action(rounds_pb2.ApplyActionRequest(
            rule_set=rules, state=state.data,
            action=rounds_pb2.RoundAction(seat=state.view.turn, type=PASS)))
    except Rejected as exc:
        print(f"refused: {exc.reason}: {exc.message}")

    # What the table keeps besides the state: its round id and the action count, sent as the
    # precondition so that an earlier or another table's state is refused (docs/rounds.md
    # "Freshness and identity").
    round_id = state.view.round_id
    reply = None
    while not state.view.over:
        expect = rounds_pb2.StatePrecondition(round_id=round_id,
                                              actions_applied=state.view.actions_applied)
        hint = rounds.suggest_action(rounds_pb2.SuggestActionRequest(
            rule_set=rules, state=state.data, precondition=expect))
        reply = rounds.apply_action(rounds_pb2.ApplyActionRequest(
            rule_set=rules, state=state.data, action=hint.action, precondition=expect))
        state = reply.state
        record = reply.record
        if record.HasField("finished"):
            print(f"seat {record.finished} went out after {state.view.actions_applied} "
                  f"actions ({hint.reason})")
    assert reply is not None
    result = reply.result
    print(f"result: {scoring_pb2.WinKind.Name(result.kind)}, finish order "
          f"{list(result.finish_order)}, final {[s.final for s in result.seats]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", nargs="?",
                        default=os.environ.get("SHUANGKOU_ADDR", "localhost:50051"),
                        help="gRPC target (default $SHUANGKOU_ADDR or localhost:50051)")
    parser.add_argument("--variant", default="baibian", help="rule set id")
    parser.add_argument("--seed", help="text whose SHA-256 is the deal's seed (default: 32 "
                                       "random bytes, a new deal every run)")
    args = parser.parse_args(argv)
    seed = hashlib.sha256(args.seed.encode()).digest() if args.seed else os.urandom(32)
    try:
        with RoundClient(args.address) as rounds:
            return play_round(rounds, args.variant, seed)
    except ServiceError as exc:    # not the rules: the server is down, or a bug
        print(f"round.py: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
