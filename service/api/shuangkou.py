"""ShuangkouService (protos/shuangkou/v1/service.proto): each RPC translates the request,
calls the core, translates back.

Failures are never turned into statuses here: :func:`shuangkou.service.errors.rpc` fails a
unary call with the status of whatever it raised, and
:func:`shuangkou.service.errors.status_proto` builds the in-band ones (batch items, stream
results), so the wire sees one shape of error.
"""

from __future__ import annotations

import hashlib
import logging
from array import array
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import grpc

from shuangkou import core
from shuangkou.core.errors import CardError, DeadlineExceeded, ShuangkouError
from shuangkou.core.records import BatchErrors
from shuangkou.core.replay import Replay, parse_replay
from shuangkou.core.review import Review, review
from shuangkou.core.variants import BUILTIN, Variant, house_variants, list_variants
from shuangkou.v1 import readings_pb2, scoring_pb2, service_pb2, service_pb2_grpc

from ..costs import TimeLimit, decisions, review_cost
from ..errors import (
    BadInput,
    OverCap,
    Refused,
    failure_for,
    field_scope,
    item_status,
    rpc,
    status_proto,
    still_wanted,
)
from ..lane import REVIEW_ROUND, Lane
from ..limits import Limits
from ..paging import decode_token, encode_token
from ..version import build_info
from . import results
from ._classify_replies import batch_columns, batch_errors, classify_reply
from ._requests import read_batch_request
from .convert import (
    KIND_BY_NAME,
    KIND_NAMES,
    WIN_NAMES,
    cards_of,
    declaration,
    reading_bytes,
    reading_message,
    reading_to_proto,
    resolve_variant,
    variant_by_id,
    variant_label,
    variant_to_proto,
)
from .review import review_options, review_to_proto

if TYPE_CHECKING:   # prometheus_client must not be imported before the CLI sets it up
    from shuangkou.core._core import _KindName as KindName

    from ..metrics import Metrics

    #: A plain BatchClassify request as read from its bytes: rule set id, codes, lengths.
    PlainBatch = tuple[str, memoryview, array[int]]

__all__ = ["ShuangkouServicer", "register_shuangkou_service", "Collect", "SERVICE_NAME",
           "BATCH_CHUNK"]

log = logging.getLogger(__name__)
SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["ShuangkouService"].full_name
# classify_batch's kind column: index into core.KINDS, 255 = invalid -> proto Kind.
_KIND_TABLE = bytes([KIND_BY_NAME[core.KINDS[i]] if i < len(core.KINDS) else 0
                     for i in range(256)])
_KIND_LABEL = {i: name for i, name in enumerate(core.KINDS)} | {255: "invalid"}
# BatchClassify works in slices cut by time, not by count (issue 19: 2,048 plays of a
# heavy house variant took 3.5 s): the core stops a slice within about a play of its
# budget, however costly the plays, and the call checks between slices that the client
# still wants the answer. A slice holds at most BATCH_CHUNK plays (its columns' memory).
BATCH_SLICE_SECONDS = 0.05
BATCH_CHUNK = 2048


class _Listed:
    """ListVariants' list: every rule set's message and its size in a reply, and the scope
    of its page tokens (the ids, so that a token only continues the same list)."""

    def __init__(self, variants: tuple[Variant, ...]) -> None:
        self.variants = variants
        self.messages = [variant_to_proto(v) for v in variants]
        self.sizes = [m.ByteSize() + 4 for m in self.messages]   # + tag and length
        self.scope = hashlib.sha256("\n".join(v.id for v in variants).encode()).digest()


# An invalid batch play's BatchError is written as bytes by the compiled writer
# (service/api/_classify_replies.pyx): the core groups a batch's invalid plays by reason, and each
# reason's status is encoded once (service/errors.py item_status) — a batch of invalid plays
# repeats a handful — so an invalid play costs about what a valid one does.


class ShuangkouServicer(service_pb2_grpc.ShuangkouServiceServicer):
    def __init__(self, limits: Limits, metrics: Metrics, lane: Lane | None = None) -> None:
        self.limits = limits
        self.metrics = metrics
        self.lane = lane or Lane(1, 8, limits.review_max_seconds)
        self._listing: _Listed | None = None
        self._counters: dict[tuple[str, ...], Any] = {}

    # ------------------------------------------------------------------ reading plays
    @rpc
    def ClassifyPlay(self, request: service_pb2.ClassifyPlayRequest,
                     context: grpc.ServicerContext) -> bytes:
        """The reply's bytes (a ClassifyPlayResponse written from its readings' encoded
        bytes, each kept once per distinct reading): gRPC sends them as they are, the HTTP
        side reads them into the message (:mod:`shuangkou.service.http.seam`)."""
        variant = resolve_variant(request)
        codes, where = cards_of(request.play, "play", self.limits)
        declared = declaration(request, "declaration", "declaration")
        with field_scope(where):
            c = core.classify(codes, variant)
        reading = c.primary
        if declared is not None:
            with field_scope("declaration"):
                reading = core.play_reading(codes, variant, None, declared)
        self._classified(variant_label(variant), c.kind).inc()
        return classify_reply(c.cards, [reading_bytes(r) for r in c.readings],
                              reading_bytes(reading))

    def _classified(self, label: str, kind: str) -> Any:
        """The plays-classified counter of one (variant label, kind): looked up once."""
        child = self._counters.get((label, kind))
        if child is None:
            child = self._counters[(label, kind)] = self.metrics.plays_classified.labels(
                label, kind)
        return child

    @rpc
    def ComparePlays(self, request: service_pb2.ComparePlaysRequest,
                     context: grpc.ServicerContext) -> service_pb2.ComparePlaysResponse:
        variant = resolve_variant(request)
        current, where_current = cards_of(request.current, "current", self.limits)
        play, where_play = cards_of(request.play, "play", self.limits)
        current_declared = declaration(request, "current_declaration", "current_declaration")
        declared = declaration(request, "declaration", "declaration")
        # Classified one by one so that an error names its own field; the comparison
        # (§7 rules 4-6, §8) is the core's.
        with field_scope(where_current):
            standing = core.classify(current, variant)
        with field_scope(where_play):
            played = core.classify(play, variant)
        try:
            result = core.compare(played, standing, variant, declare=declared,
                                      current_declare=current_declared)
        except ShuangkouError as exc:
            exc.field = ("current_declaration" if exc.field == "current_declare"
                         else "declaration")
            raise
        return service_pb2.ComparePlaysResponse(beats=result.beats,
                                                current=reading_to_proto(result.current),
                                                play=reading_to_proto(result.play))

    @rpc
    def BatchClassify(self, request: service_pb2.BatchClassifyRequest,
                      context: grpc.ServicerContext) -> bytes:
        """The reply's bytes (a BatchClassifyResponse): gRPC sends them as they are, the
        HTTP side reads them into the message (:mod:`shuangkou.service.http.seam`)."""
        return self._batch(resolve_variant(request), request.codes, list(request.lengths),
                           request.plays_text, request.include_readings, context)

    @rpc
    def batch_plain(self, request: PlainBatch, context: grpc.ServicerContext) -> bytes:
        """:meth:`BatchClassify` of a request gRPC read plain (its rule set id, codes and
        lengths: :func:`register_shuangkou_service`), checked in the same order."""
        vid, codes, lengths = request
        return self._batch(variant_by_id(vid), codes, lengths, (), False, context)

    def _batch(self, variant: str | Variant, codes: bytes | memoryview, lengths: Sequence[int],
               texts: Sequence[str], include_readings: bool,
               context: grpc.ServicerContext) -> bytes:
        parse_errors: dict[int, bytes] = {}  # text plays' index -> its encoded status
        text_mode = bool(texts)
        if text_mode:
            if codes or lengths:
                raise BadInput("give the plays either as codes + lengths or as text, not both",
                               "plays_text")
            self.limits.check_batch(len(texts), "plays_text")
            codes, lengths = self._parse_texts(texts, parse_errors, context)
        else:
            self.limits.check_batch(len(lengths), "lengths")
            total = sum(lengths)
            if total != len(codes) and lengths and max(lengths) > len(codes):
                i = max(range(len(lengths)), key=lengths.__getitem__)
                raise BadInput(f"lengths[{i}] = {lengths[i]} is more than the {len(codes)} "
                               "bytes of codes", f"lengths[{i}]")
            if total != len(codes):
                raise CardError(f"lengths add up to {total} cards but codes holds "
                                f"{len(codes)} bytes", "lengths")
        response = service_pb2.BatchClassifyResponse()
        tally = array("q", bytes(8 * 256))   # plays by core kind index
        wire: list[bytes] = []          # the packed columns and errors of every slice
        view = memoryview(codes)
        first = offset = invalid = 0
        while first < len(lengths):
            still_wanted(context)
            left = context.time_remaining()
            chunk = lengths[first:first + BATCH_CHUNK]
            size = sum(chunk)
            with field_scope("lengths"):
                columns = core.classify_batch(
                    view[offset:offset + size], chunk, variant,
                    timeout=BATCH_SLICE_SECONDS if left is None else min(BATCH_SLICE_SECONDS,
                                                                         left))
            done = columns.plays
            if done < len(chunk):       # the slice ran out of time
                chunk = chunk[:done]
                size = sum(chunk)
            # core kind indexes -> proto Kind values, counted; every column a packed field
            wire.append(batch_columns(columns.kind, columns.top, columns.star, columns.cards,
                                      columns.readings, _KIND_TABLE, tally))
            invalid += len(columns.errors)
            wire.append(self._errors_bytes(columns.errors, first, parse_errors if text_mode
                                           else None))
            if include_readings:
                response.readings.extend(self._primary_readings(columns.kind.tobytes(), bytes(
                    view[offset:offset + size]), chunk, variant))
            first += done
            offset += size
        response.valid_count = len(lengths) - invalid
        label = variant_label(variant)
        for k, n in enumerate(tally):
            if n:
                self._classified(label, _KIND_LABEL.get(k, "invalid")).inc(n)
        # The reply as bytes: the message's fields, then the columns and errors written
        # above (a repeated field's parts concatenate), never parsed and re-encoded here.
        return response.SerializeToString() + b"".join(wire)

    @staticmethod
    def _errors_bytes(errors: BatchErrors, first: int,
                      parse_errors: dict[int, bytes] | None) -> bytes:
        """The BatchErrors of one slice (its plays from ``first``) as the reply's bytes. In
        text mode (``parse_errors``: what the parse refused) each names its own field,
        ``plays_text[i]``; else every one names ``codes``."""
        if not errors:
            return b""
        groups, exceptions = errors.grouped()
        if parse_errors is None:
            for exc in exceptions:
                exc.field = "codes"
            return batch_errors(first, errors.indexes, groups, [
                item_status(exc) for exc in exceptions])
        statuses = []
        for j, g in zip(errors.indexes, groups, strict=True):
            status = parse_errors.get(first + j)
            if status is None:
                exc = exceptions[g]
                exc.field = f"plays_text[{first + j}]"
                status = item_status(exc)
            statuses.append(status)
        return batch_errors(first, errors.indexes, array("I", range(len(statuses))), statuses)

    def _parse_texts(self, texts: Any, errors: dict[int, bytes],
                     context: grpc.ServicerContext) -> tuple[bytes, list[int]]:
        """Codes and lengths of text plays; unparsable ones become empty (invalid) plays."""
        buf = bytearray()
        lengths = []
        for i, text in enumerate(texts):
            if i % BATCH_CHUNK == 0:
                still_wanted(context)
            try:
                with field_scope(f"plays_text[{i}]"):
                    if len(text) > 16 * self.limits.max_cards:
                        raise BadInput(f"card text of {len(text)} characters is too long")
                    play = core.parse_cards(text)
                    self.limits.check_cards(len(play), f"plays_text[{i}]")
            except ShuangkouError as exc:   # kept as its status: no traceback held per play
                errors[i] = item_status(exc)
                play = []
            buf.extend(play)
            lengths.append(len(play))
        return bytes(buf), lengths

    @staticmethod
    def _primary_readings(kinds: bytes, codes: bytes, lengths: Sequence[int],
                          variant: str | Variant) -> Iterator[readings_pb2.Reading]:
        offset = 0
        for j, n in enumerate(lengths):
            if kinds[j] == 255:
                yield readings_pb2.Reading()
            else:
                yield reading_message(core.classify(codes[offset:offset + n],
                                                        variant).primary)
            offset += n

    # ------------------------------------------------------------------ enumeration
    @rpc
    def EnumerateLegalPlays(self, request: service_pb2.EnumerateLegalPlaysRequest,
                            context: grpc.ServicerContext
                            ) -> service_pb2.EnumerateLegalPlaysResponse:
        variant = resolve_variant(request)
        hand, where_hand = cards_of(request.hand, "hand", self.limits)
        if request.page_size < 0:
            raise BadInput("page_size must not be negative", "page_size")
        offset = decode_token(request.page_token, request)
        to_beat = None
        if request.to_beat.cards or request.to_beat.cards_text:
            beat_codes, where_beat = cards_of(request.to_beat, "to_beat", self.limits)
            declared = declaration(request, "to_beat_declaration", "to_beat_declaration")
            with field_scope(where_beat):
                to_beat = core.play_reading(beat_codes, variant, None, declared)
        size = self.limits.plays_limit(request.page_size)
        kinds = [_kind_name(k, f"kinds[{i}]") for i, k in enumerate(request.kinds)] or None
        # `to_beat` is passed as a Reading so the core classifies nothing here. The page is
        # the plays [offset, offset + size) of the core's deterministic order.
        with field_scope(where_hand):
            plays = core.legal_plays(hand, variant, to_beat, kinds=kinds,
                                         bombs_only=request.bombs_only,
                                         max_cards=request.max_cards or None,
                                         limit=offset + size, timeout=context.time_remaining())
        response = service_pb2.EnumerateLegalPlaysResponse(
            plays=[_legal_play(plays[i]) for i in range(offset, len(plays))])
        if plays.truncated:
            response.next_page_token = encode_token(offset + size, request)
        if request.include_counts:
            still_wanted(context)
            with field_scope(where_hand):
                counts = core.count_plays(hand, variant, to_beat,
                                              timeout=context.time_remaining())
            response.counts.extend(service_pb2.KindCount(kind=KIND_BY_NAME[k], count=n)
                                   for k, n in counts.items() if k in KIND_BY_NAME)
            response.total = sum(c.count for c in response.counts)
        if request.include_best_bomb:
            still_wanted(context)
            with field_scope(where_hand):
                best = core.best_bomb(hand, variant, timeout=context.time_remaining())
            if best is not None:
                response.best_bomb.CopyFrom(reading_to_proto(best))
        self.metrics.enumeration_size.labels(variant_label(variant)).observe(len(response.plays))
        return response

    # ------------------------------------------------------------------ scoring
    @rpc
    def ScoreRound(self, request: service_pb2.ScoreRoundRequest,
                   context: grpc.ServicerContext) -> service_pb2.ScoreRoundResponse:
        result = self._score(request, "summary, a replay or replay_json", context)
        return service_pb2.ScoreRoundResponse(result=result)

    def _score(self, request: Any, wanted: str,
               context: grpc.ServicerContext) -> scoring_pb2.RoundResult:
        """One round of a ScoreRound or ScoreReplays request, counted in the metrics."""
        label = "unknown"
        which = request.WhichOneof("round")
        try:
            variant = resolve_variant(request)
            label = variant_label(variant)
            if which == "summary":
                result = results.score_summary(request.summary, variant, self.limits)
            elif which in ("replay", "replay_json"):
                result = results.score_replay_request(request, variant, self.limits)
            else:
                raise BadInput(f"give a {wanted}", "round")
        except ShuangkouError as exc:
            self._rejected(label, exc)
            raise
        still_wanted(context)
        self._scored(result, which or "")
        return result

    def ScoreReplays(self, request_iterator: Iterator[service_pb2.ScoreReplaysRequest],
                     context: grpc.ServicerContext
                     ) -> Iterator[service_pb2.ScoreReplaysResponse]:
        for index, request in enumerate(request_iterator):
            if not context.is_active():
                return
            try:
                if not isinstance(request, service_pb2.ScoreReplaysRequest):
                    # A message the transport refused (over the size limit, undecodable):
                    # answered in its place, so one poison line does not end the stream.
                    raise BadInput(request.detail, "")
                result = self._score(request, "replay or replay_json", context)
            except Exception as exc:  # noqa: BLE001 - answered in-band; the stream goes on
                if not context.is_active():
                    return
                yield service_pb2.ScoreReplaysResponse(index=index, error=status_proto(exc))
                continue
            yield service_pb2.ScoreReplaysResponse(index=index, result=result)

    # service.admission hands refused stream messages on to this method (RejectedMessage).
    ScoreReplays.accepts_rejected_messages = True  # type: ignore[attr-defined]

    def _scored(self, result: scoring_pb2.RoundResult, source: str) -> None:
        kind = WIN_NAMES[result.kind]
        label = result.variant if result.variant in BUILTIN else "custom"
        self.metrics.rounds_scored.labels(label, kind, source.removesuffix("_json")).inc()

    def _rejected(self, label: str, exc: BaseException) -> None:
        failure = failure_for(exc)
        reason = failure.reason if failure else "INTERNAL"
        self.metrics.replays_rejected.labels(label, reason).inc()

    # ------------------------------------------------------------------ review
    @rpc
    def ReviewRound(self, request: service_pb2.ReviewRoundRequest,
                    context: grpc.ServicerContext) -> service_pb2.ReviewRoundResponse:
        """The review of one replay, in the lane (service/lane.py), bounded by the call's
        deadline (less the reply's margin, as SuggestAction's search is) and by the server's
        caps (review_max_rollouts up front, review_max_seconds as it runs), and stopped
        when the client goes away."""
        options = review_options(request)
        label = "unknown"
        try:   # a replay refused is counted as ScoreRound counts it; running out of time is not
            variant = resolve_variant(request)
            label = variant_label(variant)
            if request.WhichOneof("round") is None:
                raise BadInput("give a replay or replay_json", "round")
            replay, where = results.replay_input(request, variant, self.limits)
            typed = _typed(replay)
            cap = self.limits.review_max_seconds

            def cost() -> float:
                if typed is None:          # not a replay: the review says why, at once
                    return 0.0
                rollouts = options.budget.rollouts
                self.limits.check_review(rollouts, decisions(typed), options.oracle,
                                         "rollouts", options.fair_rollouts)
                limit = TimeLimit.of(context.time_remaining(), cap, "review_max_seconds")
                return min(review_cost(typed, rollouts, options.oracle, options.budget.width,
                                       options.fair_rollouts),
                           limit.seconds)

            def work() -> Review:
                limit = TimeLimit.of(context.time_remaining(), cap, "review_max_seconds")
                try:
                    with field_scope(where, nested=True):
                        return review(replay if typed is None else typed,
                                      timeout=limit.seconds,
                                      cancelled=lambda: not context.is_active(),
                                      **options.kwargs())
                except DeadlineExceeded:
                    if limit.capped and context.is_active():
                        raise limit.reached("review") from None
                    raise

            reviewed = self.lane.run(REVIEW_ROUND, context, cost, work)
        except (DeadlineExceeded, OverCap, Refused):
            raise
        except ShuangkouError as exc:
            self._rejected(label, exc)
            raise
        for d in reviewed.decisions:
            self._reviewed(label, d.verdict).inc()
        return review_to_proto(reviewed)

    def _reviewed(self, label: str, verdict: str) -> Any:
        """The decisions-reviewed counter of one (variant label, verdict): looked up once."""
        child = self._counters.get(("review", label, verdict))
        if child is None:
            child = self._counters[("review", label, verdict)] = \
                self.metrics.decisions_reviewed.labels(label, verdict)
        return child

    # ------------------------------------------------------------------ variants
    @rpc
    def ListVariants(self, request: service_pb2.ListVariantsRequest,
                     context: grpc.ServicerContext) -> service_pb2.ListVariantsResponse:
        if request.page_size < 0:
            raise BadInput("page_size must not be negative", "page_size")
        listed = self._listed()
        offset = decode_token(request.page_token, request, listed.scope)
        # As many as were asked for and fit in one reply (the token and framing aside).
        room = self.limits.max_message_bytes - 256
        wanted = request.page_size or len(listed.messages)
        end = offset
        while end < len(listed.messages) and end - offset < wanted and \
                (room >= listed.sizes[end] or end == offset):
            room -= listed.sizes[end]
            end += 1
        response = service_pb2.ListVariantsResponse(variants=listed.messages[offset:end])
        if end < len(listed.messages):
            response.next_page_token = encode_token(end, request, listed.scope)
        return response

    def _listed(self) -> _Listed:
        """The rule sets this server lists, as messages built once (the built-ins, then the
        house variants registered at start-up; built again if those change)."""
        variants = (*list_variants(), *house_variants())
        listed = self._listing
        if listed is None or len(listed.variants) != len(variants) or any(
                a is not b for a, b in zip(listed.variants, variants, strict=True)):
            listed = self._listing = _Listed(variants)
        return listed

    @rpc
    def GetVariant(self, request: service_pb2.GetVariantRequest,
                   context: grpc.ServicerContext) -> service_pb2.GetVariantResponse:
        variant = resolve_variant(request)
        return service_pb2.GetVariantResponse(variant=variant_to_proto(
            BUILTIN[variant] if isinstance(variant, str) else variant))

    @rpc
    def GetServerInfo(self, request: service_pb2.GetServerInfoRequest,
                      context: grpc.ServicerContext) -> service_pb2.GetServerInfoResponse:
        info = build_info()
        return service_pb2.GetServerInfoResponse(
            version=info["version"], python_version=info["python"],
            grpcio_version=info["grpcio"], core_build=info["core"],
            variant_ids=[v.id for v in (*list_variants(), *house_variants())])


class Collect:
    """Stands for a ``grpc.Server`` to a generated registration (``add_*Servicer_to_server``)
    and keeps what it registers: the service's full name and its method handlers by method
    name, for a server that adds them its own way — gRPC's, with BatchClassify's reader
    (:func:`register_shuangkou_service`), and the HTTP port's, as Connect endpoints
    (:func:`shuangkou.service.http.seam.endpoints`)."""

    def __init__(self) -> None:
        self.service = ""
        self.handlers: dict[str, Any] = {}

    def add_generic_rpc_handlers(self, generic: object) -> None:
        pass

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.service, self.handlers = service, dict(handlers)


def register_shuangkou_service(server: grpc.Server, servicer: ShuangkouServicer) -> str:
    """Add ``servicer`` to ``server``: the generated registration, except that gRPC decodes
    BatchClassify's requests with the compiled reader (service/api/_requests.pyx), which
    gives a plain request as its fields — answered by :meth:`ShuangkouServicer.batch_plain` —
    and any other as its message. Returns the service's full name."""
    def batch(request: Any, context: grpc.ServicerContext) -> bytes:
        if type(request) is tuple:
            return servicer.batch_plain(request, context)
        return servicer.BatchClassify(request, context)

    collected = Collect()
    service_pb2_grpc.add_ShuangkouServiceServicer_to_server(servicer, collected)
    found = collected.handlers
    found["BatchClassify"] = found["BatchClassify"]._replace(
        unary_unary=batch, request_deserializer=read_batch_request)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, found),))
    server.add_registered_method_handlers(SERVICE_NAME, found)
    return SERVICE_NAME


def _typed(replay: Replay | dict[str, Any] | str) -> Replay | None:
    """A review's replay as the typed record, to cost it (the review then takes the record,
    parsed once); None for one that does not parse, which the review refuses as it always
    did, with its own words."""
    if isinstance(replay, Replay):
        return replay
    try:
        return parse_replay(replay)
    except ValueError:        # every ShuangkouError: the review says the same
        return None


def _kind_name(value: int, field: str) -> KindName:
    name = KIND_NAMES.get(value)
    if name is None:
        raise BadInput(f"{value} is not a play type", field)
    return name


def _legal_play(play: Any) -> service_pb2.LegalPlay:
    """A core legal play (cards and the reading they stand in) as a message."""
    cards, reading = play
    return service_pb2.LegalPlay(cards=list(cards), reading=reading_to_proto(reading))
