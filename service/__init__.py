"""The Shuangkou gRPC service: ``shuangkou serve`` (see :mod:`shuangkou.service.cli`).

Modules: :mod:`~shuangkou.service.config` settings, :mod:`~shuangkou.service.server` assembly and lifecycle,
:mod:`~shuangkou.service.servicer` the RPCs, :mod:`~shuangkou.service.convert` / :mod:`~shuangkou.service.rounds` wire <->
core translation, :mod:`~shuangkou.service.errors` status mapping, :mod:`~shuangkou.service.limits` request
limits, :mod:`~shuangkou.service.metrics` Prometheus, :mod:`~shuangkou.service.remote` a client for
``ScoreReplays`` over a pool of replicas. Generated stubs are ``shuangkou.v1``.
"""

if __name__ != "shuangkou.service":   # the folder imported by its own name (python in the repo root)
    raise ImportError(f"this folder is the package shuangkou.service; import it by that name, "
                      f"not as {__name__!r} (docs/decisions.md, Packaging)")

