"""How a process of ours keeps freed memory: glibc's ``M_TOP_PAD``, asked for by the server
(service/server.py) and by the batch scorer (service/batch/command.py).

By default glibc gives memory freed at the top of a heap back to the system at once, so a
process that frees and reallocates a megabyte again and again (a server's large replies, the
batch scorer's blocks of input lines and records) has it faulted in afresh each time: 1.4 of
the 3.2 ms of a half-invalid 8,192-play BatchClassify, and a tenth of the batch scorer's CPU
(docs/BENCHMARKS.md). Keeping 4 MiB per arena was enough; the cost is at most that per arena
of RSS. An operator's ``MALLOC_TOP_PAD_`` stands instead (glibc reads it itself).
"""

from __future__ import annotations

import os

__all__ = ["HEAP_TOP_PAD", "keep_heap_pad"]

HEAP_TOP_PAD = 4 << 20
_M_TOP_PAD = -2         # glibc malloc.h


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):      # not a name this C library knows
        return False


def keep_heap_pad(pad: int = HEAP_TOP_PAD) -> bool:
    """Set glibc's ``M_TOP_PAD`` (unless ``MALLOC_TOP_PAD_`` is set: the operator's word);
    whether it was set (False on another C library)."""
    if "MALLOC_TOP_PAD_" in os.environ or not _glibc():
        return False
    import ctypes  # only here: the batch scorer starts without it elsewhere

    return bool(ctypes.CDLL(None).mallopt(_M_TOP_PAD, pad))
