"""The ``shuangkou`` command: ``serve`` (the gRPC server) and the subcommands of other modules
(``score-replays``, ...), listed in :data:`COMMANDS`.

Logging is configured here and nowhere else.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .commands import COMMANDS as ONE_OFF_COMMANDS
from .exits import Exit, guarded

if TYPE_CHECKING:   # the subcommands start without the server's modules (issue 20: start-up)
    from multiprocessing.connection import Connection

    from .config import Config

__all__ = ["main", "run", "worker_main", "COMMANDS"]

#: Subcommands implemented elsewhere: name -> (module, function taking argv, one-line help).
#: The function parses its own arguments and returns the exit status. Add a command with one
#: line here.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "score-replays": ("shuangkou.service.batch.command", "main",
                      "validate and score replay archives: on every core, on running "
                      "servers (--server), on Dask or as shards (see score-replays --help)"),
    "review-replays": ("shuangkou.service.batch.review", "main",
                       "review an archive of replays, per player and partnership "
                       "(see review-replays --help)"),
    "view": ("shuangkou.service.view.command", "main",
             "an HTML page of a replayed round (see view --help)"),
    "review": ("shuangkou.service.review.command", "main",
               "复盘: each decision of a replayed round, its verdict and loss (see review --help)"),
    "play": ("shuangkou.service.play.command", "main",
             "play a round in the terminal against three 托管 seats (see play --help)"),
}


def _configure_logging(config: Config) -> None:
    import logging  # here, not at the top: the one-off commands start without it

    from .logs import formatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(config.log_format))
    logging.basicConfig(level=config.log_level, handlers=[handler], force=True)


def _exit_now(status: int) -> None:
    """Leave at once: after grace, a handler thread still computing must not hold the exit
    (the interpreter would join every executor thread)."""
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def worker_main(config: Config, report: Connection | None = None) -> int:
    """Entry point of a ``--workers`` child process (spawned; must be importable)."""
    _configure_logging(config)
    from .server import serve

    _exit_now(serve(config, multiprocess=True, report=report))
    return 0   # not reached


def run(config: Config) -> int:
    """``shuangkou serve``: one server process, or a supervisor of ``config.workers`` of them
    (each :func:`worker_main`). Here, above both: the supervisor's module never imports the
    server's, nor the server's the supervisor's start-up (docs/design.md, layers)."""
    if config.workers == 1:
        from .server import serve

        return serve(config)
    from .startup import metrics_directory

    with metrics_directory():      # before the workers' module imports prometheus_client
        from .workers import serve_workers

        return serve_workers(config, worker_main)


def _parser() -> argparse.ArgumentParser:
    from .config import add_arguments
    from .version import version

    parser = argparse.ArgumentParser(
        prog="shuangkou", description="Shuangkou (双扣) rules: the server (serve) and one-off "
        "questions from the local core or a running server (--server HOST:PORT).")
    parser.add_argument("--version", action="version", version=f"shuangkou {version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser(
        "serve", help="run the server (gRPC, HTTP, metrics)",
        description="Run the server: ShuangkouService and RoundService over gRPC (with health "
                    "and reflection) and over HTTP (Connect JSON, gRPC-Web), and Prometheus "
                    "metrics. Settings: embedded defaults < --config FILE < SHUANGKOU_* "
                    "environment variables < flags.")
    add_arguments(serve)
    for name, (_module, _func, text) in COMMANDS.items():
        commands.add_parser(name, add_help=False, help=text)
    for name, text in ONE_OFF_COMMANDS.items():   # service/commands.py
        commands.add_parser(name, add_help=False, help=text)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``shuangkou ARGV``; the exit status (service/exits.py: one per kind of outcome,
    70 for a crash, whichever command it was)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return guarded(argv[0] if argv else "", lambda: _run(argv))


def _run(argv: list[str]) -> int:
    if argv and argv[0] in COMMANDS:
        module, func, _ = COMMANDS[argv[0]]
        return int(getattr(importlib.import_module(module), func)(argv[1:]) or 0)
    if argv and argv[0] in ONE_OFF_COMMANDS:   # classify, compare, plays, ...
        from .commands import main as run_command

        return run_command(argv)
    from .config import ConfigError, load_config

    parser = _parser()
    args = parser.parse_args(argv)
    if args.command != "serve":
        parser.print_help()
        return Exit.USAGE
    try:
        config = load_config(args)
    except ConfigError as exc:
        parser.exit(2, f"shuangkou serve: {exc}\n")
    _configure_logging(config)
    from shuangkou.core.errors import VariantError

    if config.tracing:      # refused before anything starts, not in each worker
        from .tracing import require

        try:
            require()
        except ConfigError as exc:
            parser.exit(2, f"shuangkou serve: {exc}\n")

    try:
        status = run(config)
    except (VariantError, ConfigError) as exc:
        parser.exit(2, f"shuangkou serve: {exc}\n")
    except OSError as exc:
        import logging

        logging.getLogger("shuangkou").error("%s", exc)
        status = Exit.USAGE          # a port in use: it cannot run as configured
    _exit_now(status)
    return status   # not reached


if __name__ == "__main__":
    sys.exit(main())
