"""The Shuangkou gRPC service and the ``shuangkou`` command line, one module per job.

* serving: :mod:`~shuangkou.service.cli` (the command, logging), :mod:`~shuangkou.service.config`
  (settings), :mod:`~shuangkou.service.startup` (what a server and the supervisor both do at
  start-up), :mod:`~shuangkou.service.server` (assembly, lifecycle, health),
  :mod:`~shuangkou.service.workers` (``--workers``: the supervisor);
* the wire: :mod:`~shuangkou.service.api` (servicers that only translate, proto ↔ core,
  result rendering), :mod:`~shuangkou.service.errors` (every wire error and abort),
  :mod:`~shuangkou.service.admission` (what is refused before a servicer runs),
  :mod:`~shuangkou.service.limits` (request size limits), :mod:`~shuangkou.service.paging`
  (page tokens);
* operations: :mod:`~shuangkou.service.metrics` (the counters),
  :mod:`~shuangkou.service.interceptor` (every call counted and admitted),
  :mod:`~shuangkou.service.exposition` (the ``/metrics`` endpoint),
  :mod:`~shuangkou.service.logs` (text or JSON lines, the access log),
  :mod:`~shuangkou.service.tracing` (OpenTelemetry spans, opt-in),
  :mod:`~shuangkou.service.version` (which build answers);
* commands: :mod:`~shuangkou.service.commands` (one-off questions) and
  :mod:`~shuangkou.service.client` (their ``--server`` adapter, on :mod:`shuangkou.client`);
  :mod:`~shuangkou.service.batch` (``score-replays``); :mod:`~shuangkou.service.view`
  (``view``: the page of a round) and :mod:`~shuangkou.service.play` (``play``: a round in
  the terminal).

Generated stubs are ``shuangkou.v1``.
"""

if __name__ != "shuangkou.service":   # the folder imported by its own name (python in the repo root)
    raise ImportError(f"this folder is the package shuangkou.service; import it by that name, "
                      f"not as {__name__!r} (docs/decisions/engineering.md E1)")
