"""Start-up shared by a server process and the ``--workers`` supervisor: the house variants
registered, the stop signals, and the metrics directory the workers share. Both
:mod:`shuangkou.service.server` and :mod:`shuangkou.service.workers` import it, and it
imports neither, so the supervisor never needs the server's modules to start.

Which of the two runs is the command's choice (:func:`shuangkou.service.cli.run`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["load_house_variants", "stop_signals", "metrics_directory"]

log = logging.getLogger(__name__)


def load_house_variants(files: Sequence[str]) -> list[str]:
    """Register the house variants of ``files`` (replacing any registered before); their ids.

    Raises core.VariantError naming the file when one is invalid or its id is taken.
    """
    from shuangkou.core.errors import VariantError
    from shuangkou.core.variants import register_variants, unregister_variants

    unregister_variants()
    ids: list[str] = []
    for path in files:
        try:
            ids += [v.id for v in register_variants([path])]
        except VariantError as exc:
            unregister_variants()
            named = repr(path) in str(exc)       # the file's own errors name it already
            raise VariantError(str(exc) if named else f"house variants {path!r}: {exc}",
                               getattr(exc, "field", None)) from None
    return ids


def stop_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (main thread only)."""
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        log.info("received %s: shutting down", signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    return stop


@contextlib.contextmanager
def metrics_directory() -> Iterator[str]:
    """prometheus_client's multiprocess directory for the workers (``PROMETHEUS_MULTIPROC_DIR``,
    made and removed here unless the environment names one). Entered before
    prometheus_client is first imported: it reads the variable once."""
    owned = "PROMETHEUS_MULTIPROC_DIR" not in os.environ
    path = os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR",
                                 tempfile.mkdtemp(prefix="shuangkou-metrics-"))
    try:
        yield path
    finally:
        if owned:
            shutil.rmtree(path, ignore_errors=True)
