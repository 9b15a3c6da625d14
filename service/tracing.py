"""OpenTelemetry tracing, opt-in (setting ``tracing``; ``pip install shuangkou[otel]``).

Off — the default — nothing here imports ``opentelemetry``: :func:`traced` hands back one
shared do-nothing context manager and :func:`start_call` None, so a call pays one global read.

On (:func:`enable`, from :func:`shuangkou.service.server.serve` with an OTLP exporter, or
with any span processor in tests):

* every call of the API services, over gRPC or HTTP, is a SERVER span named
  ``shuangkou.v1.Service/Method`` (:func:`start_call` / :func:`end_call`, from the
  interceptor), child of the W3C ``traceparent`` the caller sent — gRPC metadata or HTTP
  header, the same key — so that a game server's trace goes on through us; its attributes
  follow OpenTelemetry's RPC conventions (``rpc.system``, ``rpc.service``, ``rpc.method``,
  ``rpc.grpc.status_code``) plus ``shuangkou.protocol`` (grpc, connect, grpc-web); its status
  is ERROR for the codes the conventions call a server's errors (:data:`SERVER_ERRORS`), the
  code's name as the description;
* :func:`traced` opens a child span of whatever span is current, for the work inside a call
  worth seeing on its own (the 托管 search of ``SuggestAction``): any module may use it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .config import ConfigError

if TYPE_CHECKING:
    from .config import Config

__all__ = ["enable", "disable", "enabled", "traced", "start_call", "end_call", "from_config",
           "require", "SERVER_ERRORS", "TracingUnavailable"]

#: gRPC codes that mark a server span as failed (OpenTelemetry's RPC conventions); the others
#: are the caller's (INVALID_ARGUMENT, NOT_FOUND …): the span keeps them as its code only.
SERVER_ERRORS = frozenset({"UNKNOWN", "DEADLINE_EXCEEDED", "UNIMPLEMENTED", "INTERNAL",
                           "UNAVAILABLE", "DATA_LOSS"})
_NOTHING = contextlib.nullcontext()


class TracingUnavailable(ConfigError):
    """``tracing`` is on but the OpenTelemetry SDK is not installed."""


class _State:
    """The tracer in use (None: tracing off) and what a call's span needs of the SDK."""

    tracer: Any = None
    provider: Any = None
    owned = False            # the provider is ours to shut down (from_config made it)
    propagator: Any = None
    api: Any = None          # opentelemetry.trace
    context: Any = None      # opentelemetry.context
    status: Any = None       # opentelemetry.trace.status


_state = _State()


def enabled() -> bool:
    return _state.tracer is not None


def enable(provider: Any) -> None:
    """Trace calls into ``provider`` (an SDK ``TracerProvider`` with its span processors)."""
    from opentelemetry import context, trace
    from opentelemetry.trace import status
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from .version import version

    _state.api, _state.context, _state.status = trace, context, status
    _state.propagator = TraceContextTextMapPropagator()
    _state.provider, _state.owned = provider, False
    _state.tracer = provider.get_tracer("shuangkou.service", version())


def disable() -> None:
    """Stop tracing; the provider is shut down (its spans exported) when it was ours."""
    provider, owned = _state.provider, _state.owned
    _state.tracer = _state.provider = None
    _state.owned = False
    if provider is not None and owned:
        provider.shutdown()


def from_config(config: Config) -> bool:
    """Enable tracing as ``config`` asks: spans exported by OTLP over gRPC, in batches (the
    exporter and the sampler read the standard ``OTEL_*`` variables: endpoint, headers,
    ``OTEL_TRACES_SAMPLER``; parent-based always-on by default); whether it is on."""
    if not config.tracing:
        return False
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise TracingUnavailable(f"setting 'tracing' needs OpenTelemetry: pip install "
                                 f"'shuangkou[otel]' ({exc.name} is missing)") from None
    from .version import version

    attributes = {SERVICE_VERSION: version()}
    if not os.environ.get("OTEL_SERVICE_NAME"):
        attributes[SERVICE_NAME] = "shuangkou"
    provider = TracerProvider(resource=Resource.create(attributes))
    # The batch processor's queue is bounded (2,048 spans by default, the rest dropped):
    # an unreachable collector costs memory no more than that.
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    enable(provider)
    _state.owned = True
    return True


def require() -> None:
    """Raise :class:`TracingUnavailable` when the ``otel`` extra is not installed (checked
    before the server starts, without importing it)."""
    from importlib.util import find_spec

    for module in ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.grpc"):
        try:
            found = find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise TracingUnavailable(f"setting 'tracing' needs OpenTelemetry: pip install "
                                     f"'shuangkou[otel]' ({module} is missing)")


def traced(name: str, **attributes: Any) -> contextlib.AbstractContextManager[Any]:
    """A child span ``name`` of the current span while the block runs (an exception in it
    is recorded, the span marked ERROR); nothing when tracing is off."""
    tracer = _state.tracer
    if tracer is None:
        return _NOTHING
    return tracer.start_as_current_span(name, attributes=attributes)  # type: ignore[no-any-return]


def start_call(full_method: str, metadata: Iterable[tuple[str, Any]], protocol: str) -> Any:
    """The SERVER span of a call of ``/service/Method`` made current, child of the
    ``traceparent`` in ``metadata`` (gRPC metadata or HTTP headers); None when tracing is
    off. End it with :func:`end_call`, on the same thread."""
    tracer = _state.tracer
    if tracer is None:
        return None
    carrier = {key.lower(): value for key, value in metadata
               if key.lower() in ("traceparent", "tracestate") and isinstance(value, str)}
    parent = _state.propagator.extract(carrier) if carrier else None
    service, _, method = full_method.lstrip("/").rpartition("/")
    span = tracer.start_span(full_method.lstrip("/"), context=parent,
                             kind=_state.api.SpanKind.SERVER, attributes={
                                 "rpc.system": "grpc" if protocol == "grpc" else "connect_rpc",
                                 "rpc.service": service, "rpc.method": method,
                                 "shuangkou.protocol": protocol})
    token = _state.context.attach(_state.api.set_span_in_context(span, parent))
    return span, token


def end_call(call: Any, code: str, number: int) -> str:
    """End the span of :func:`start_call` with the call's gRPC code (name and number); its
    trace id (32 hex digits, for the access line)."""
    span, token = call
    span.set_attribute("rpc.grpc.status_code", number)
    if code in SERVER_ERRORS:
        span.set_status(_state.status.Status(_state.status.StatusCode.ERROR, code))
    span.end()
    _state.context.detach(token)
    return f"{span.get_span_context().trace_id:032x}"

