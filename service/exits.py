"""THE exit statuses of every ``shuangkou`` command: one status per kind of outcome.

=====  ==========================================================================
0      done: every answer given, every line of an archive scored or reviewed
1      bad input: the one thing asked about is refused (cards, a play, a replay, a
       summary, a variant), one line on stderr says why
2      trouble running: bad usage, a file that cannot be read or written, a server
       or a Dask scheduler that cannot be reached or fails, an archive's
       partitions not all complete at ``--merge``
3      lines rejected: an archive run (``score-replays``, ``review-replays``) that
       is complete, every line with its record, some of them rejections
70     crash: an internal error, a bug (``EX_SOFTWARE`` of sysexits.h), with its
       traceback on stderr
=====  ==========================================================================

"Lines rejected" is a result, not a failure: a Kubernetes Job counts it as done
(deploy/k8s/batch), and it is kept off 1, the status Python itself gives an exception
nothing caught, so that no crash can ever pass for it. A crash the command catches
(:func:`guarded`) exits 70; one it cannot catch exits 1 (Python) or 128 + the signal (a
kill, the kernel's OOM killer): never 0 or 3 (docs/decisions/engineering.md E39).
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from enum import IntEnum

__all__ = ["Exit", "guarded"]


class Exit(IntEnum):
    """How a command ended (the table above)."""

    OK = 0
    BAD_INPUT = 1
    USAGE = 2
    REJECTED = 3
    CRASH = 70


def guarded(command: str, run: Callable[[], int]) -> int:
    """``run()``'s status, or :attr:`Exit.CRASH` (the traceback and one line naming the
    command on stderr) when it raised; exits and interruptions pass through. A reader that
    went away (``shuangkou generate -n 1000 | head -1``) ends the command quietly, with
    :attr:`Exit.USAGE`: its output could not be written."""
    try:
        return run()
    except BrokenPipeError:
        # stdout is gone: the interpreter's own flush at exit must not complain about it
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return Exit.USAGE
    except Exception:  # noqa: BLE001 - the one place a bug becomes an exit status
        traceback.print_exc()
        print(f"shuangkou {command}".rstrip() + ": internal error (a bug; the traceback "
              "above says where): exit status 70", file=sys.stderr)
        sys.stderr.flush()
        return Exit.CRASH
