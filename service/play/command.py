"""``shuangkou play [--variant V] [--seed N] [--server HOST:PORT]``: a round in the terminal
against three 托管 seats (:mod:`~shuangkou.service.play.terminal`).

The deal is the one ``shuangkou generate --seed N`` deals (hands, leader, revealed card or
teams), so a round can be dealt again, compared with the bot's, or played on a server:
with ``--server`` every move goes through ``RoundService`` (docs/rounds.md) and the same
seed and keys give the same round. You play the hand dealt to seat 0, wherever the §9
swap seats it. Exit status 0 when the round ends or the player leaves, 1 for a bad
variant, 2 for bad usage or a server that cannot be reached.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from ..shown import shown
from .tables import Deal, LocalTable, RemoteTable, Table
from .terminal import Colours, Game

__all__ = ["main", "deal_of"]

_YOU = 0            # the dealt hand the player holds


def deal_of(variant: object, seed: int) -> Deal:
    """The deal of ``generate --seed`` (core.generate_replay: the one seeded deal)."""
    from shuangkou import core

    doc = core.generate_replay(variant, seed)   # type: ignore[arg-type]
    revealed = doc.get("revealed")
    teams = doc.get("teams")
    return Deal(variant, tuple(tuple(core.parse_cards(h)) for h in doc["hands"]),  # type: ignore[arg-type]
                doc["leader"], core.parse_cards([revealed])[0] if revealed else None,
                tuple((t[0], t[1]) for t in teams) if teams else None)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shuangkou play",
        description="Play a round in the terminal against three 托管 seats (one of them your "
                    "partner): your hand sorted, legal plays and 提示 on a key, the settlement "
                    "at the end, and a replay for `shuangkou view` on request.")
    p.add_argument("-v", "--variant", metavar="ID|FILE", default="baibian",
                   help="rule set: a built-in id (default %(default)s) or a house variant file")
    p.add_argument("--seed", type=int, default=None,
                   help="the deal (as `shuangkou generate --seed N`); default: a random one")
    p.add_argument("--server", metavar="HOST:PORT",
                   help="play the round on a running service (RoundService) instead of here")
    p.add_argument("-o", "--save", metavar="FILE",
                   help="write the replay to FILE when the round ends (or you leave)")
    p.add_argument("--delay", type=float, default=None, metavar="SECONDS",
                   help="pause before each 托管 move (default 0.4 on a terminal, else 0)")
    p.add_argument("--no-color", action="store_true", help="no colours")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; the exit status."""
    args = _parser().parse_args(argv)
    from shuangkou.core.errors import ShuangkouError

    from ..commands import Failed, resolve_variant

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "big")
    if seed < 0 or (args.delay is not None and args.delay < 0):
        print("shuangkou play: --seed and --delay must not be negative", file=sys.stderr)
        return 2
    if args.server is not None:
        from ..client import check_target

        try:
            check_target(args.server)
        except ValueError as exc:
            print(f"shuangkou play: {shown(str(exc))}", file=sys.stderr)
            return 2
    try:
        variant = resolve_variant(args.variant, {}, args.server is not None)
        if args.server is not None and isinstance(variant, str):
            from shuangkou import core

            core.get_variant(variant)     # the deal is made here: a rule set known here
        deal = deal_of(variant, seed)
    except Failed as exc:
        print(f"shuangkou play: {shown(str(exc))}", file=sys.stderr)
        return exc.status
    except ShuangkouError as exc:
        print(f"shuangkou play: {shown(str(exc))}", file=sys.stderr)
        return 1
    table: Table = RemoteTable(args.server, variant) if args.server else LocalTable()
    interactive = sys.stdout.isatty()
    colours = Colours(interactive and not args.no_color and "NO_COLOR" not in os.environ)
    delay = args.delay if args.delay is not None else (0.4 if interactive else 0.0)
    game = Game(table, deal, _YOU, sys.stdout, input, colours, delay, seed, args.save)
    try:
        return game.run()
    except ConnectionError as exc:
        print(f"shuangkou play: {shown(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nshuangkou play: interrupted", file=sys.stderr)
        return 130
    finally:
        table.close()

