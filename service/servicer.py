"""ShuangkouService: each RPC translates the request, calls the core, translates back.

Core exceptions are never handled here: :func:`rpc` maps them to a status in one place
(:mod:`service.errors`).
"""

from __future__ import annotations

import functools
import logging
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

import core_ext
from core_ext.errors import IllegalPlay, ShuangkouError
from core_ext.variants import BUILTIN, Variant, house_variants, list_variants

from . import rounds
from .convert import (
    KIND_BY_NAME,
    KIND_NAMES,
    cards_of,
    declaration,
    reading_to_proto,
    resolve_variant,
    variant_label,
    variant_to_proto,
)
from .errors import BadInput, failure_for, field_scope, status_for
from .gen.shuangkou.v1 import readings_pb2, scoring_pb2, service_pb2, service_pb2_grpc
from .limits import Limits

if TYPE_CHECKING:   # prometheus_client must not be imported before the CLI sets it up
    from .metrics import Metrics

__all__ = ["ShuangkouServicer", "SERVICE_NAME"]

log = logging.getLogger(__name__)
SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["ShuangkouService"].full_name
F = TypeVar("F", bound=Callable[..., Any])
# classify_batch's kind column: index into core_ext.KINDS, 255 = invalid -> proto Kind.
_KIND_TABLE = bytes([i + 1 if i < len(core_ext.KINDS) else 0 for i in range(256)])
_KIND_LABEL = {i: name for i, name in enumerate(core_ext.KINDS)} | {255: "invalid"}


def abort(context: grpc.ServicerContext, exc: BaseException) -> None:
    """Fail the RPC with the status ``exc`` maps to (INTERNAL for a server bug)."""
    status = status_for(exc)
    if status is None:
        log.exception("unexpected error", exc_info=exc)
        context.abort(grpc.StatusCode.INTERNAL, "internal error; see the server log")
    context.abort_with_status(status)


def rpc(method: F) -> F:
    """Map every exception of a unary RPC to its status (the one place that does)."""
    @functools.wraps(method)
    def wrapper(self: ShuangkouServicer, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as exc:  # noqa: BLE001 - every failure gets a status
            abort(context, exc)
    return wrapper  # type: ignore[return-value]


def problem(exc: BaseException) -> scoring_pb2.Problem:
    """The per-item form of a failure (batch entries, stream results); the same reason text
    as the local ``score-replays`` records."""
    failure = failure_for(exc)
    if failure is None:
        log.error("unexpected error", exc_info=exc)
        text = f"internal error: {type(exc).__name__}: {exc}"
        return scoring_pb2.Problem(code="INTERNAL", type=type(exc).__name__, message=text,
                                   reason=text)
    return scoring_pb2.Problem(code=failure.code.name, type=failure.type,
                               message=failure.message, field=failure.field,
                               action=getattr(exc, "action", None),
                               reason=getattr(exc, "detail", None) or failure.message)


class ShuangkouServicer(service_pb2_grpc.ShuangkouServiceServicer):
    def __init__(self, limits: Limits, metrics: Metrics) -> None:
        self.limits = limits
        self.metrics = metrics

    # ------------------------------------------------------------------ reading plays
    @rpc
    def ClassifyPlay(self, request: service_pb2.ClassifyPlayRequest,
                     context: grpc.ServicerContext) -> service_pb2.ClassifyPlayResponse:
        variant = resolve_variant(request)
        codes, where = cards_of(request.play, "play", self.limits)
        kind, top = declaration(request.declare, "declare", request.HasField("declare"))
        with field_scope(where):
            c = core_ext.classify(codes, variant)
        reading = c.primary
        if kind is not None:
            with field_scope("declare"):
                reading = core_ext.play_reading(codes, variant, None, kind, top)
        self.metrics.plays_classified.labels(variant_label(variant), c.kind).inc()
        return service_pb2.ClassifyPlayResponse(
            cards=c.cards, readings=[reading_to_proto(r) for r in c.readings],
            reading=reading_to_proto(reading))

    @rpc
    def ComparePlays(self, request: service_pb2.ComparePlaysRequest,
                     context: grpc.ServicerContext) -> service_pb2.ComparePlaysResponse:
        variant = resolve_variant(request)
        current, where_current = cards_of(request.current, "current", self.limits)
        play, where_play = cards_of(request.play, "play", self.limits)
        ckind, ctop = declaration(request.current_declare, "current_declare",
                                  request.HasField("current_declare"))
        kind, top = declaration(request.declare, "declare", request.HasField("declare"))
        with field_scope(where_current):
            standing = core_ext.classify(current, variant).primary
        if ckind is not None:
            with field_scope("current_declare"):
                standing = core_ext.play_reading(current, variant, None, ckind, ctop)
        with field_scope(where_play):
            primary = core_ext.classify(play, variant).primary
        if kind is not None:
            # The declared reading must exist; it either beats or it does not.
            with field_scope("declare"):
                chosen = core_ext.play_reading(play, variant, None, kind, top)
                beats = chosen.beats(standing)
        else:
            try:
                chosen = core_ext.play_reading(play, variant, standing)
                beats = True
            except IllegalPlay:   # no reading beats: report the primary
                chosen, beats = primary, False
        return service_pb2.ComparePlaysResponse(beats=beats, current=reading_to_proto(standing),
                                                play=reading_to_proto(chosen))

    @rpc
    def BatchClassify(self, request: service_pb2.BatchClassifyRequest,
                      context: grpc.ServicerContext) -> service_pb2.BatchClassifyResponse:
        variant = resolve_variant(request)
        errors: dict[int, scoring_pb2.Problem] = {}
        if request.plays_text:
            if request.codes or request.lengths:
                raise BadInput("give the plays either as codes + lengths or as text, not both",
                               "plays_text")
            self.limits.check_batch(len(request.plays_text), "plays_text")
            codes, lengths = self._parse_texts(request.plays_text, errors)
        else:
            codes, lengths = request.codes, request.lengths
            self.limits.check_batch(len(lengths), "lengths")
            if lengths and max(lengths) > len(codes):
                i = max(range(len(lengths)), key=lengths.__getitem__)
                raise BadInput(f"lengths[{i}] = {lengths[i]} is more than the {len(codes)} "
                               "bytes of codes", f"lengths[{i}]")
        with field_scope("lengths"):
            columns = core_ext.classify_batch(codes, lengths, variant)
        kinds = columns["kind"].tobytes()
        response = service_pb2.BatchClassifyResponse(
            kind=kinds.translate(_KIND_TABLE), top=columns["top"], star=columns["star"],
            card_count=columns["cards"], reading_count=columns["readings"])
        self._explain_invalid(kinds, codes, lengths, variant, errors)
        response.errors.extend(service_pb2.BatchError(index=i, problem=p)
                               for i, p in sorted(errors.items()))
        response.valid = len(kinds) - len(errors)
        if request.include_readings:
            response.readings.extend(self._primary_readings(kinds, codes, lengths, variant))
        label = variant_label(variant)
        for k, n in Tally(kinds).items():
            self.metrics.plays_classified.labels(label, _KIND_LABEL.get(k, "invalid")).inc(n)
        return response

    def _parse_texts(self, texts: Any, errors: dict[int, scoring_pb2.Problem]
                     ) -> tuple[bytes, list[int]]:
        """Codes and lengths of text plays; unparsable ones become empty (invalid) plays."""
        buf = bytearray()
        lengths = []
        for i, text in enumerate(texts):
            try:
                with field_scope(f"plays_text[{i}]"):
                    if len(text) > 16 * self.limits.max_cards:
                        raise BadInput(f"card text of {len(text)} characters is too long")
                    play = core_ext.parse_cards(text)
                    self.limits.check_cards(len(play), f"plays_text[{i}]")
            except ShuangkouError as exc:
                errors[i] = problem(exc)
                play = []
            buf.extend(play)
            lengths.append(len(play))
        return bytes(buf), lengths

    def _explain_invalid(self, kinds: bytes, codes: bytes, lengths: Any, variant: str | Variant,
                         errors: dict[int, scoring_pb2.Problem]) -> None:
        """Why each invalid play has no reading (the batch only marks it)."""
        if kinds.count(255) == len(errors):
            return
        offset = 0
        for i, n in enumerate(lengths):
            if kinds[i] == 255 and i not in errors:
                field = f"plays_text[{i}]" if errors or isinstance(lengths, list) else "codes"
                try:
                    if n == 0:
                        raise BadInput("empty play", field)
                    with field_scope(field):
                        core_ext.classify(codes[offset:offset + n], variant)
                    raise BadInput("play has no reading", field)
                except ShuangkouError as exc:
                    errors[i] = problem(exc)
            offset += n

    def _primary_readings(self, kinds: bytes, codes: bytes, lengths: Any,
                          variant: str | Variant) -> Iterator[readings_pb2.Reading]:
        offset = 0
        for i, n in enumerate(lengths):
            if kinds[i] == 255:
                yield readings_pb2.Reading()
            else:
                yield reading_to_proto(core_ext.classify(codes[offset:offset + n],
                                                         variant).primary)
            offset += n

    # ------------------------------------------------------------------ enumeration
    @rpc
    def EnumerateLegalPlays(self, request: service_pb2.EnumerateLegalPlaysRequest,
                            context: grpc.ServicerContext
                            ) -> service_pb2.EnumerateLegalPlaysResponse:
        variant = resolve_variant(request)
        hand, where_hand = cards_of(request.hand, "hand", self.limits)
        to_beat = None
        if request.to_beat.cards or request.to_beat.cards_text:
            beat_codes, where_beat = cards_of(request.to_beat, "to_beat", self.limits)
            kind, top = declaration(request.to_beat_declare, "to_beat_declare",
                                    request.HasField("to_beat_declare"))
            with field_scope(where_beat):
                to_beat = core_ext.play_reading(beat_codes, variant, None, kind, top)
        limit = self.limits.plays_limit(request.limit)
        kinds = [_kind_name(k, f"kinds[{i}]") for i, k in enumerate(request.kinds)] or None
        # `to_beat` is passed as a Reading so the core classifies nothing here.
        with field_scope(where_hand):
            plays = core_ext.legal_plays(hand, variant, to_beat, kinds=kinds,
                                         bombs_only=request.bombs_only,
                                         max_cards=request.max_cards or None, limit=limit,
                                         timeout=context.time_remaining())
        response = service_pb2.EnumerateLegalPlaysResponse(
            plays=[_legal_play(play) for play in plays], truncated=plays.truncated)
        if request.include_counts:
            _still_wanted(context)
            with field_scope(where_hand):
                counts = core_ext.count_plays(hand, variant, to_beat,
                                              timeout=context.time_remaining())
            response.counts.extend(service_pb2.KindCount(kind=KIND_BY_NAME[k], count=n)
                                   for k, n in counts.items() if k in KIND_BY_NAME)
            response.total = sum(c.count for c in response.counts)
        if request.include_best_bomb:
            _still_wanted(context)
            with field_scope(where_hand):
                best = core_ext.best_bomb(hand, variant, timeout=context.time_remaining())
            if best is not None:
                response.best_bomb.CopyFrom(reading_to_proto(best))
        self.metrics.enumeration_size.labels(variant_label(variant)).observe(len(response.plays))
        return response

    # ------------------------------------------------------------------ scoring
    @rpc
    def ScoreRound(self, request: service_pb2.ScoreRoundRequest,
                   context: grpc.ServicerContext) -> service_pb2.ScoreRoundResponse:
        variant = resolve_variant(request)
        which = request.WhichOneof("round")
        label = variant_label(variant)
        try:
            if which == "summary":
                result = rounds.score_summary(request.summary, variant, self.limits)
            elif which in ("replay", "replay_json"):
                result = rounds.score_replay_request(request, variant, self.limits)
            else:
                raise BadInput("give a summary, a replay or replay_json", "round")
        except ShuangkouError as exc:
            self._rejected(label, exc)
            raise
        self._scored(result, which or "")
        return service_pb2.ScoreRoundResponse(result=result)

    def ScoreReplays(self, request_iterator: Iterator[service_pb2.ScoreReplaysRequest],
                     context: grpc.ServicerContext
                     ) -> Iterator[service_pb2.ScoreReplaysResponse]:
        for index, request in enumerate(request_iterator):
            if not context.is_active():
                return
            label = "unknown"
            try:
                variant = resolve_variant(request)
                label = variant_label(variant)
                if request.WhichOneof("round") is None:
                    raise BadInput("give a replay or replay_json", "round")
                result = rounds.score_replay_request(request, variant, self.limits)
            except ShuangkouError as exc:
                self._rejected(label, exc)
                yield service_pb2.ScoreReplaysResponse(index=index, error=problem(exc))
                continue
            except Exception as exc:  # noqa: BLE001 - a bug must not end the stream silently
                yield service_pb2.ScoreReplaysResponse(index=index, error=problem(exc))
                continue
            self._scored(result, "replay")
            yield service_pb2.ScoreReplaysResponse(index=index, result=result)

    def _scored(self, result: scoring_pb2.RoundResult, source: str) -> None:
        kind = scoring_pb2.WinKind.Name(result.kind).removeprefix("WIN_KIND_").lower()
        label = result.variant if result.variant in BUILTIN else "custom"
        self.metrics.rounds_scored.labels(label, kind, source.removesuffix("_json")).inc()

    def _rejected(self, label: str, exc: BaseException) -> None:
        failure = failure_for(exc)
        reason = failure.reason if failure else "INTERNAL"
        self.metrics.replays_rejected.labels(label, reason).inc()

    # ------------------------------------------------------------------ variants
    @rpc
    def ListVariants(self, request: service_pb2.ListVariantsRequest,
                     context: grpc.ServicerContext) -> service_pb2.ListVariantsResponse:
        return service_pb2.ListVariantsResponse(
            variants=[variant_to_proto(v) for v in (*list_variants(), *house_variants())])

    @rpc
    def GetVariant(self, request: service_pb2.GetVariantRequest,
                   context: grpc.ServicerContext) -> Any:
        variant = resolve_variant(request)
        return variant_to_proto(BUILTIN[variant] if isinstance(variant, str) else variant)


def _kind_name(value: int, field: str) -> str:
    name = KIND_NAMES.get(value)
    if name is None:
        raise BadInput(f"{value} is not a play type", field)
    return name


def _still_wanted(context: grpc.ServicerContext) -> None:
    """Stop between stages of a long request once the client gave up or the deadline passed."""
    if not context.is_active():
        context.abort(grpc.StatusCode.DEADLINE_EXCEEDED
                      if (context.time_remaining() or 1) <= 0 else grpc.StatusCode.CANCELLED,
                      "the request ended before the enumeration finished")


def _legal_play(play: Any) -> service_pb2.LegalPlay:
    """A core legal play (cards and the reading they stand in) as a message."""
    cards, reading = play
    return service_pb2.LegalPlay(cards=list(cards), reading=reading_to_proto(reading))

