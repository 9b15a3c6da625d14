"""The ``shuangkou`` command: ``serve`` (the gRPC server) and ``score-replays`` (batch scorer).

Logging is configured here and nowhere else.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from .commands import COMMANDS
from .config import Config, ConfigError, add_arguments, load_config

__all__ = ["main", "worker_main"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s"


def _configure_logging(level: str) -> None:
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr, force=True)


def worker_main(config: Config) -> int:
    """Entry point of a ``--workers`` child process (spawned; must be importable)."""
    _configure_logging(config.log_level)
    from .server import serve

    return serve(config, multiprocess=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shuangkou", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve", help="run the gRPC server",
        description="Run the gRPC server (ShuangkouService, health, reflection, Prometheus "
                    "metrics). Settings: embedded defaults < --config FILE < SHUANGKOU_* "
                    "environment variables < flags.")
    add_arguments(serve)
    commands.add_parser("score-replays", add_help=False,
                        help="score replay files locally (see score-replays --help)")
    for name, summary in COMMANDS.items():   # service/commands.py
        commands.add_parser(name, add_help=False, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "score-replays":
        from .batch import main as score_replays  # owned by the scoring module

        return int(score_replays(argv[1:]) or 0)
    if argv and argv[0] in COMMANDS:   # one-off questions: classify, compare, plays, ...
        from .commands import main as run_command

        return run_command(argv)
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "serve":
        parser.print_help()
        return 2
    try:
        config = load_config(args)
    except ConfigError as exc:
        parser.exit(2, f"shuangkou serve: {exc}\n")
    _configure_logging(config.log_level)
    from .server import run

    try:
        return run(config, worker_main)
    except OSError as exc:
        logging.getLogger("shuangkou").error("%s", exc)
        return 1


if __name__ == "__main__":
    sys.exit(main())
