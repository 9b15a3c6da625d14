"""How a process of ours keeps freed memory: glibc's ``M_TOP_PAD``, asked for by the server
(service/server.py) and by the batch scorer (service/batch/command.py).

By default glibc gives memory freed at the top of a heap back to the system at once, so a
process that frees and reallocates a megabyte again and again (a server's large replies, the
batch scorer's blocks of input lines and records) has it faulted in afresh each time: 1.4 of
the 3.2 ms of a half-invalid 8,192-play BatchClassify, and a tenth of the batch scorer's CPU
(docs/history/benchmarks-notebook.md "HTTP beside gRPC"). Keeping 4 MiB per arena was enough; the cost is at most that per arena
of RSS. An operator's ``MALLOC_TOP_PAD_`` stands instead (glibc reads it itself).

Setting the pad also freezes glibc's mmap threshold at 128 KiB (glibc raises it by itself,
up to 32 MiB, as large blocks are freed, unless a program sets any of these parameters), so
that every larger block is mapped and faulted in afresh whatever the pad. The batch scorer,
whose blocks of lines are a megabyte or so, sets the threshold to glibc's own ceiling again
(``mmap_below``): 0.17–0.22 s of system CPU per 40,000 lines of a heavy house variant,
0.06–0.08 s with it. The server leaves it: its large messages are rare and its memory
after them is measured (docs/operations.md).
"""

from __future__ import annotations

import os

__all__ = ["HEAP_TOP_PAD", "MMAP_CEILING", "keep_heap_pad"]

HEAP_TOP_PAD = 4 << 20
#: glibc's ceiling for its own mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64 bits).
MMAP_CEILING = 32 << 20
_M_TOP_PAD, _M_MMAP_THRESHOLD = -2, -3         # glibc malloc.h


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):      # not a name this C library knows
        return False


def keep_heap_pad(pad: int = HEAP_TOP_PAD, mmap_below: int | None = None) -> bool:
    """Set glibc's ``M_TOP_PAD`` (unless ``MALLOC_TOP_PAD_`` is set: the operator's word),
    and with ``mmap_below`` its ``M_MMAP_THRESHOLD`` (unless ``MALLOC_MMAP_THRESHOLD_`` is
    set); whether the pad was set (False on another C library)."""
    if "MALLOC_TOP_PAD_" in os.environ or not _glibc():
        return False
    import ctypes  # only here: the batch scorer starts without it elsewhere

    libc = ctypes.CDLL(None)
    if mmap_below is not None and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        libc.mallopt(_M_MMAP_THRESHOLD, mmap_below)
    return bool(libc.mallopt(_M_TOP_PAD, pad))
