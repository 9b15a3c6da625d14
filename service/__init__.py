"""The Shuangkou gRPC service: ``shuangkou serve`` (see :mod:`service.cli`).

Modules: :mod:`~service.config` settings, :mod:`~service.server` assembly and lifecycle,
:mod:`~service.servicer` the RPCs, :mod:`~service.convert` / :mod:`~service.rounds` wire <->
core translation, :mod:`~service.errors` status mapping, :mod:`~service.limits` request
limits, :mod:`~service.metrics` Prometheus, :mod:`~service.remote` a client for
``ScoreReplays`` over a pool of replicas. Generated stubs live in ``service.gen``.
"""
