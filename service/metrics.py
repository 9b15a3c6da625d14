"""Prometheus metrics: the standard gRPC server series and the service's domain counters.
The interceptor that counts every call in them is :mod:`shuangkou.service.interceptor`.

Nothing is registered at import: the CLI builds a :class:`Metrics` on a registry of its
choice (a private ``CollectorRegistry`` in one process; ``None`` in ``--workers`` mode, where
prometheus_client's multiprocess mode writes every process's values to a shared directory
that the supervisor exposes, :mod:`shuangkou.service.exposition`).
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .admission import REJECT_REASONS

__all__ = ["Metrics", "GRPC_LABELS", "RPC_TYPES"]

GRPC_LABELS = ("grpc_type", "grpc_service", "grpc_method")
# Rules queries take microseconds; the default buckets start at 5 ms.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SIZE_BUCKETS = (0, 1, 5, 10, 50, 100, 500, 1000, 5000, 10_000, 50_000, 100_000)

#: ``grpc_type`` of a method by (request streaming, response streaming).
RPC_TYPES = {
    (False, False): "unary",
    (True, False): "client_stream",
    (False, True): "server_stream",
    (True, True): "bidi_stream",
}


class Metrics:
    """Every metric of one server process, registered on ``registry`` (None: multiprocess)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        kw: dict[str, Any] = {"registry": registry}
        self.started = Counter("grpc_server_started", "RPCs started on the server.",
                               GRPC_LABELS, **kw)
        self.handled = Counter("grpc_server_handled", "RPCs completed on the server, by status.",
                               (*GRPC_LABELS, "grpc_code"), **kw)
        self.handling = Histogram("grpc_server_handling_seconds",
                                  "Response latency of RPCs handled by the server.",
                                  GRPC_LABELS, buckets=LATENCY_BUCKETS, **kw)
        self.received = Counter("grpc_server_msg_received", "Messages received from clients.",
                                GRPC_LABELS, **kw)
        self.sent = Counter("grpc_server_msg_sent", "Messages sent to clients.",
                            GRPC_LABELS, **kw)
        self.plays_classified = Counter("shuangkou_plays_classified",
                                        "Plays classified, by variant and primary type "
                                        "(kind 'invalid' for plays with no reading).",
                                        ("variant", "kind"), **kw)
        self.enumeration_size = Histogram("shuangkou_enumeration_plays",
                                          "Legal plays listed per EnumerateLegalPlays call.",
                                          ("variant",), buckets=SIZE_BUCKETS, **kw)
        self.rounds_scored = Counter("shuangkou_rounds_scored",
                                     "Rounds settled, by variant, kind of win and input.",
                                     ("variant", "kind_of_win", "source"), **kw)
        self.replays_rejected = Counter("shuangkou_replays_rejected",
                                        "Replays or summaries refused as invalid, by reason.",
                                        ("variant", "reason"), **kw)
        self.rounds_started = Counter("shuangkou_rounds_started",
                                      "Live rounds dealt by StartRound, by variant and deal "
                                      "(hands: the caller's; seed: shuffled by the server).",
                                      ("variant", "deal"), **kw)
        self.rounds_finished = Counter("shuangkou_rounds_finished",
                                       "Live rounds ended by an ApplyAction, by variant and "
                                       "kind of win.", ("variant", "kind_of_win"), **kw)
        self.rule_errors = Counter("shuangkou_rule_errors",
                                   "Actions a live round's state forbids (FAILED_PRECONDITION), "
                                   "by RPC and rule (NOT_YOUR_TURN, CARDS_NOT_HELD ...).",
                                   ("grpc_method", "reason"), **kw)
        self.suggestions = Counter("shuangkou_suggestions",
                                   "托管 decisions made by SuggestAction, by variant and action "
                                   "(play, pass, escape).", ("variant", "action"), **kw)
        self.suggest_seconds = Histogram("shuangkou_suggest_seconds",
                                         "Time the 托管 policy took to decide one action, by "
                                         "variant.", ("variant",), buckets=LATENCY_BUCKETS, **kw)
        self.decisions_reviewed = Counter("shuangkou_decisions_reviewed",
                                          "Decisions reviewed by ReviewRound, by variant and "
                                          "verdict (forced, good, inaccuracy, mistake, "
                                          "blunder).", ("variant", "verdict"), **kw)
        self.http_requests = Counter("shuangkou_http_requests",
                                     "Requests to the HTTP port, by protocol (connect: JSON or "
                                     "binary; grpc_web; grpc; other: not an RPC's content "
                                     "type).", ("protocol",), **kw)
        self.worker_up = Gauge("shuangkou_worker_up", "1 per live server process (pid label in "
                               "--workers mode).", multiprocess_mode="liveall", **kw)
        self.rejected = Counter("shuangkou_requests_rejected",
                                "Requests refused before the servicer saw them, or replies too "
                                "large to send, or refused by the lane or a cap on one call's "
                                f"cost, by method and reason ({', '.join(REJECT_REASONS)}; "
                                "with the method labels 'unknown', HTTP requests refused before "
                                "their method was read: head_too_large, malformed).",
                                (*GRPC_LABELS, "reason"), **kw)
        # --- the lane for searches and reviews (issue 61, service/lane.py)
        self.lane_threads = Gauge("shuangkou_lane_threads", "Threads that run searches and "
                                  "reviews (the lane).", multiprocess_mode="livesum", **kw)
        self.lane_max_calls = Gauge("shuangkou_lane_max_calls", "Calls the lane holds at most, "
                                    "running and waiting (lane_max_calls).",
                                    multiprocess_mode="livesum", **kw)
        self.lane_max_cost = Gauge("shuangkou_lane_max_cost_seconds", "Expected CPU-seconds "
                                   "the lane holds at most, running and waiting (lane_backlog "
                                   "x lane threads).", multiprocess_mode="livesum", **kw)
        self.lane_cost = Gauge("shuangkou_lane_cost_seconds", "Expected CPU-seconds of the "
                               "calls in the lane now, running and waiting.",
                               multiprocess_mode="livesum", **kw)
        self.lane_calls = Gauge("shuangkou_lane_calls", "Calls in the lane now, by state "
                                "(running, waiting).", ("state",),
                                multiprocess_mode="livesum", **kw)
        self.lane_wait = Histogram("shuangkou_lane_wait_seconds", "Time calls waited in the "
                                   "lane before their work started, by method.",
                                   ("grpc_method",), buckets=LATENCY_BUCKETS, **kw)
        self.lane_expected = Counter("shuangkou_lane_expected_cpu_seconds", "Expected "
                                     "CPU-seconds of the calls the lane ran (the cost model), "
                                     "by method.", ("grpc_method",), **kw)
        self.lane_cpu = Counter("shuangkou_lane_cpu_seconds", "CPU-seconds the calls the lane "
                                "ran took (their threads' CPU time), by method.",
                                ("grpc_method",), **kw)
        # --- the HTTP edge (issue 33): connections and what the server cut short
        self.http_connections = Counter("shuangkou_http_connections",
                                        "Connections accepted on the HTTP ports (API and "
                                        "metrics), by port.", ("port",), **kw)
        self.http_open = Gauge("shuangkou_http_open_connections",
                               "HTTP connections open now, by port.", ("port",),
                               multiprocess_mode="livesum", **kw)
        self.http_refused = Counter("shuangkou_http_refused",
                                    "HTTP connections answered 503 and closed at once because "
                                    "http_max_connections were open and none of them waited "
                                    "for a request, by port.", ("port",), **kw)
        self.http_timeouts = Counter("shuangkou_http_timeouts",
                                     "HTTP connections closed by a timeout, by port and phase "
                                     "(header: the request head took over http_header_timeout; "
                                     "body: the body over http_body_timeout; idle: no request "
                                     "for http_keepalive_timeout).", ("port", "phase"), **kw)
        self.http_evicted = Counter("shuangkou_http_evicted",
                                    "HTTP connections closed to make room for a new one while "
                                    "http_max_connections were open: the one waiting longest "
                                    "for a request (idle, or still sending its head), by port.",
                                    ("port",), **kw)
        self.http_disconnects = Counter("shuangkou_http_disconnects",
                                        "HTTP calls whose client hung up before the answer "
                                        "(the call ends CANCELLED).", **kw)
        self.http_ready = Gauge("shuangkou_http_ready", "1 while the HTTP server answers the "
                                "process's own probe, through a loopback socket of its own "
                                "(the service's gRPC health follows it; a flood does not).",
                                multiprocess_mode="liveall", **kw)
        self.access_dropped = Counter("shuangkou_access_lines_dropped",
                                      "Access lines left out of the log because more calls "
                                      "ended than access_log lines a second allow, by outcome "
                                      "(ok; error: any other code).", ("outcome",), **kw)
        self.log_dropped = Counter("shuangkou_log_lines_dropped",
                                   "Log lines a client can cause (the HTTP edge's warnings and "
                                   "errors) left out past their rate bound, by logger.",
                                   ("logger",), **kw)
        self.build_info = Gauge("shuangkou_build_info", "Always 1; the labels say which build "
                                "answers.", ("version", "python", "grpcio", "core"),
                                multiprocess_mode="max", **kw)

    def init_series(self, service: Any) -> None:
        """Zero the refusal series of every method of ``service`` (a protobuf ServiceDescriptor)
        so rates and alerts see them before the first refusal: the lane's reasons for the
        lane's methods, and their lane series."""
        from .lane import LANE_METHODS, REASONS

        for method in service.methods:
            kind = RPC_TYPES[(method.client_streaming, method.server_streaming)]
            in_lane = f"/{service.full_name}/{method.name}" in LANE_METHODS
            for reason in REJECT_REASONS:
                if reason in REASONS.values() and not in_lane:
                    continue
                if reason != "stream_limit" or kind != "unary":
                    self.rejected.labels(kind, service.full_name, method.name, reason)
            if in_lane:
                self.lane_wait.labels(method.name)
                self.lane_expected.labels(method.name)
                self.lane_cpu.labels(method.name)

    def init_round_series(self) -> None:
        """Zero the rule-error series (ApplyAction, SuggestAction, every rule) so that rates
        and alerts see them before the first error."""
        from shuangkou.core.errors import RuleViolation

        for method in ("ApplyAction", "SuggestAction"):
            for reason in RuleViolation.RULE_REASONS:
                self.rule_errors.labels(method, reason)

    def mark_up(self) -> None:
        from .version import build_info

        self.worker_up.set(1)
        self.build_info.labels(**build_info()).set(1)
