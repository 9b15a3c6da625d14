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
import socket
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["load_house_variants", "stop_signals", "metrics_directory", "check_bindable",
           "bind_error"]

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
    """An event set by SIGTERM or SIGINT (main thread only). The main thread must wait for
    it with :func:`wait_for_stop`, never ``stop.wait()``: the handler's ``set()`` runs on the
    main thread and takes the event's lock, which ``wait()`` holds for a moment each time it
    wakes — a signal at that moment deadlocked a worker (it logged the signal and never
    drained)."""
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        log.info("received %s: shutting down", signal.Signals(signum).name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handler)
    return stop


def wait_for_stop(stop: threading.Event, interval: float) -> None:
    """Wait on the main thread until ``stop`` is set, looking every ``interval`` seconds
    without taking its lock (:func:`stop_signals`: a sleep a signal interrupts, then
    ``is_set``, which reads a flag)."""
    while not stop.is_set():
        time.sleep(interval)


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


def bind_error(address: str, exc: OSError, setting: str) -> OSError:
    """The one sentence of a port that cannot be bound, as the HTTP port says it
    (:func:`shuangkou.service.http.port.create_http_server`): the address, the system's reason
    ("Address already in use") and the setting that moves it."""
    return OSError(f"cannot listen on {address}: {exc.strerror or exc} ({setting})")


def check_bindable(host: str, port: int, *, reuse_port: bool, address: str,
                   setting: str) -> None:
    """Raise :func:`bind_error` when ``host:port`` cannot be bound, before gRPC tries.

    gRPC's C core reports a failed bind only as its own log line on stderr and a
    "Failed to bind ... set GRPC_VERBOSITY=debug" error; a plain socket bound (and closed)
    first with the options gRPC uses (SO_REUSEADDR, SO_REUSEPORT when asked) names the
    reason instead. Port 0 always binds. A name such as ``localhost`` is checked on its
    first address."""
    if port == 0:
        return
    bare = host.strip("[]")
    try:
        family, kind, proto, _, where = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise OSError(f"cannot listen on {address}: {exc.strerror} ({setting})") from None
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind(where)
        except OSError as exc:
            raise bind_error(address, exc, setting) from None
