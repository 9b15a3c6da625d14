"""Translate between the wire messages and the core: rule sets, cards, seats, readings,
declarations, variants, and the proto enums beside the core's names.

Every function that reads request data raises core errors tagged with the request field
(see :func:`shuangkou.service.errors.field_scope`), so :mod:`shuangkou.service.errors` can
map them. Rule data (kinds, seats, card codes, rank positions) comes from the core; the
enums' names from the proto.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from shuangkou import core
from shuangkou.core.cards import MAX_CODE, SEATS, is_card, rank_position
from shuangkou.core.declaration import check_parts
from shuangkou.core.errors import CardError
from shuangkou.core.variants import BUILTIN, Variant, find_variant, variant_from_json
from shuangkou.v1 import cards_pb2, readings_pb2, scoring_pb2, variants_pb2

from ..errors import BadInput, UnknownVariant, bounded, field_scope
from ..limits import Limits
from . import DEFAULT_VARIANT

if TYPE_CHECKING:
    from shuangkou.core._core import _KindName as KindName  # the core's play-type names (a Literal)

__all__ = ["resolve_variant", "variant_by_id", "variant_label", "cards_of", "card_values",
           "seat_of", "reading_to_proto", "reading_bytes", "reading_message", "ENCODED_READINGS",
           "declaration", "declaration_to_proto", "variant_data", "variant_document",
           "variant_to_proto",
           "KIND_BY_NAME", "KIND_NAMES", "ACTION_TYPES", "ACTION_NAMES", "WIN_KINDS",
           "WIN_NAMES", "DEFAULT_VARIANT"]

def _by_name(enum: Any, prefix: str) -> dict[str, int]:
    """A proto enum's values by the core's name for them: ``WIN_KIND_DOUBLE`` -> "double"
    (the zero value, UNSPECIFIED, is no core value)."""
    return {name.removeprefix(prefix).lower(): value for name, value in enum.items() if value}


# core kind name <-> proto Kind value
KIND_BY_NAME: dict[KindName, readings_pb2.Kind] = {
    name: cast("readings_pb2.Kind", readings_pb2.Kind.Value("KIND_" + name.upper()))
    for name in core.KINDS}
KIND_NAMES: dict[int, KindName] = {v: k for k, v in KIND_BY_NAME.items()}
# ActionRecord.kind ("play", "pass", "escape") <-> ActionType; RoundResult.kind <-> WinKind
ACTION_TYPES = cast("dict[str, scoring_pb2.ActionType]",
                    _by_name(scoring_pb2.ActionType, "ACTION_TYPE_"))
ACTION_NAMES = {v: k for k, v in ACTION_TYPES.items()}
WIN_KINDS = cast("dict[str, scoring_pb2.WinKind]", _by_name(scoring_pb2.WinKind, "WIN_KIND_"))
WIN_NAMES = {v: k for k, v in WIN_KINDS.items()}
CARD_CODES = frozenset(c for c in range(MAX_CODE + 1) if is_card(c))
MAX_CUSTOM_VARIANT_CACHE = 256
MAX_CUSTOM_VARIANT_CHARS = 16 * 1024   # a full rule set is ~1.5 KB: the cache stays < 4 MiB
CUSTOM_FIELD = "rule_set.custom_json"


@lru_cache(maxsize=MAX_CUSTOM_VARIANT_CACHE)
def _custom_variant(text: str) -> Variant:
    """Parse and validate a custom variant once per distinct JSON document."""
    with field_scope(CUSTOM_FIELD, nested=True):
        return variant_from_json(text, CUSTOM_FIELD)


def resolve_variant(request: Any) -> str | Variant:
    """The rule set a request names: a built-in id (str) or a validated custom Variant."""
    rule_set = request.rule_set
    which = rule_set.WhichOneof("source")
    if which == "custom_json":
        text = rule_set.custom_json
        if len(text) > MAX_CUSTOM_VARIANT_CHARS:   # checked before the cache keeps the text
            raise BadInput(f"custom variant JSON is {len(text):,} characters; at most "
                           f"{MAX_CUSTOM_VARIANT_CHARS:,}", CUSTOM_FIELD)
        return _custom_variant(text)
    return variant_by_id(rule_set.id if which == "id" else "")


def variant_by_id(vid: str) -> str | Variant:
    """The rule set of ``rule_set.id`` (the default when empty): a built-in id, or a house
    variant the server registered."""
    if not vid:
        return DEFAULT_VARIANT
    if vid not in BUILTIN:
        house = find_variant(vid)   # a house variant the server registered at start-up
        if house is not None:
            return house
        raise UnknownVariant(f"unknown variant {bounded(repr(vid), 60)}; built-in variants "
                             f"are {', '.join(BUILTIN)}", "rule_set.id")
    return vid


def variant_label(variant: str | Variant) -> str:
    """Metric label of a rule set: the built-in id, or "custom" (bounded cardinality)."""
    return variant if isinstance(variant, str) else "custom"


def cards_of(msg: cards_pb2.Cards, where: str, limits: Limits, *,
             allow_empty: bool = False) -> tuple[list[int], str]:
    """The card codes of a ``Cards`` message (codes or text, not both), size-checked, and the
    path of the field they came from (for errors found later by the core)."""
    # each field read once (every RPC's path)
    codes: list[int] = list(msg.cards)
    text = msg.cards_text
    if codes and text:
        raise BadInput("give the cards either as codes or as text, not both", where)
    if text:
        field = f"{where}.cards_text"
        if len(text) > 16 * limits.max_cards:
            raise BadInput(f"card text of {len(text)} characters is too long", field)
        with field_scope(field):
            codes = core.parse_cards(text)
    else:
        field = f"{where}.cards"
        if not CARD_CODES.issuperset(codes):
            i, code = next((i, c) for i, c in enumerate(codes) if c not in CARD_CODES)
            raise CardError(f"invalid card code {code} at position {i}", f"{field}[{i}]")
    if not codes and not allow_empty:
        raise BadInput("no cards given", where)
    limits.check_cards(len(codes), field)
    return codes, field


def card_values(codes: tuple[int, ...]) -> tuple[cards_pb2.Card, ...]:
    """Core card codes as the Card enum (the enum's values are the codes)."""
    return cast("tuple[cards_pb2.Card, ...]", codes)


def seat_of(value: int, field: str, *, table: bool = False) -> int:
    """``value`` if it is a seat, else BadInput naming ``field`` (``table``: the round
    service's wording)."""
    if value >= SEATS:
        raise BadInput(f"seat {value} is not a table seat (0-{SEATS - 1})" if table else
                       f"{value} is not a seat (0-{SEATS - 1})", field)
    return value


def reading_to_proto(r: core.Reading) -> readings_pb2.Reading:
    return readings_pb2.Reading(
        kind=KIND_BY_NAME[r.kind], card_count=r.cards, top=r.top, length=r.length,
        star=r.star, phase=r.phase, regular=r.regular, wrap_class=r.wrap_class,
        ranks=[readings_pb2.RankCount(rank=rank, count=count) for rank, count in r.ranks],
        wilds=list(r.wilds), key_values=list(_flatten(r.key)), is_bomb=r.is_bomb,
        text=r.describe(), links=r.links, top_rank=r.top_rank)


# Reply messages of readings, kept per distinct reading: a game server classifies the same
# few thousand readings over and over, and a round's every call sends the play that stands
# back; building a Reading message costs more than the classification (issue 20's profile
# of ClassifyPlay). The one cache of every servicer's readings. Keyed by the rule set and the
# reading's packed C form (equal in every field, so equal messages); bounded: emptied when
# full (~0.5 KiB an entry).
READING_CACHE_SIZE = 16_384
_T = TypeVar("_T")
_reading_messages: dict[tuple[object, bytes], readings_pb2.Reading] = {}
#: What :func:`reading_bytes` keeps (every reply written as bytes reads its readings here).
ENCODED_READINGS: dict[tuple[object, bytes], bytes] = {}


def _kept(cache: dict[tuple[object, bytes], _T], r: core.Reading,
          make: Callable[[core.Reading], _T]) -> _T:
    key = (r.rules, r.packed)
    got = cache.get(key)
    if got is None:
        if len(cache) >= READING_CACHE_SIZE:
            cache.clear()
        got = cache[key] = make(r)
    return got


def reading_message(r: core.Reading) -> readings_pb2.Reading:
    """:func:`reading_to_proto` of ``r``, built once per distinct reading; the message is
    shared, so callers copy it into their reply (protobuf does) and never change it."""
    return _kept(_reading_messages, r, reading_to_proto)


def reading_bytes(r: core.Reading) -> bytes:
    """:func:`reading_message` of ``r`` encoded, once per distinct reading (for the replies
    written as bytes: service/api/_classify_replies.pyx, _round_replies.pyx)."""
    return _kept(ENCODED_READINGS, r, _encoded)


def _encoded(r: core.Reading) -> bytes:
    return reading_message(r).SerializeToString()


def declaration_to_proto(d: core.Declaration) -> readings_pb2.Declaration:
    """A core Declaration as a message, the parts it names and no other (the reverse of
    :func:`declaration`): a reading's own ``Reading.declaration`` names it exactly (kind,
    top, star and wild placement)."""
    msg = readings_pb2.Declaration(kind=KIND_BY_NAME[cast("KindName", d.kind)])
    if d.top is not None:
        msg.top = _rank(d.top)
    if d.star is not None:
        msg.star = d.star
    if d.wilds is not None:
        msg.wilds.SetInParent()
        msg.wilds.ranks[:] = [_rank(w) for w in d.wilds]
    return msg


def _rank(value: int | str) -> int:
    """A rank position, from a position or a rank name (a Declaration holds either)."""
    if isinstance(value, int):
        return value
    position = rank_position(value)
    if position is None:
        raise ValueError(f"{value!r} is not a rank")
    return position


def _flatten(values: Iterable[Any]) -> Iterable[int]:
    for v in values:
        if isinstance(v, (tuple, list)):
            yield from _flatten(v)
        else:
            yield int(v)


def declaration(owner: Any, name: str, where: str) -> core.Declaration | None:
    """The core Declaration of ``owner.<name>`` (a Declaration message), None when unset."""
    if not owner.HasField(name):
        return None
    msg: readings_pb2.Declaration = getattr(owner, name)
    kind = KIND_NAMES.get(msg.kind)
    if kind is None:
        raise BadInput("a declaration needs a kind", f"{where}.kind")
    top = msg.top if msg.HasField("top") else None
    star = msg.star if msg.HasField("star") else None
    wilds = tuple(msg.wilds.ranks) if msg.HasField("wilds") else None
    check_parts(top, star, wilds, (f"{where}.top", f"{where}.star", f"{where}.wilds.ranks"),
                BadInput)
    return core.Declaration(kind, top, star, wilds)


def variant_data(v: Variant) -> dict[str, Any]:
    """Every field of a variant as plain JSON-able data (tuples -> lists, mappings -> dicts);
    accepted back by ``variant_from_mapping``."""
    def plain(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {k: plain(x) for k, x in value.items()}
        if isinstance(value, (tuple, list)):
            return [plain(x) for x in value]
        return value
    return {f.name: plain(getattr(v, f.name)) for f in fields(v)}


def variant_document(v: Variant) -> dict[str, Any]:
    """:func:`variant_data` with ``extends`` naming the built-in underneath, so that the
    document can be edited and sent back as a ``custom_json`` rule set."""
    data = variant_data(v)
    data["extends"] = v.extends or v.id
    return data


def variant_to_proto(v: Variant) -> variants_pb2.Variant:
    data = variant_document(v)
    msg = variants_pb2.Variant(
        id=v.id, name=v.name, source=v.source, decks=v.decks, lowest_rank=v.lowest_rank,
        hand_size=v.hand_size, joker_copies=v.joker_copies, deck_size=v.deck_size,
        ranks=v.ranks, wild_jokers=list(v.wild_jokers), chain_min_links=v.chain_min_links,
        chain_counts=v.chain_counts, chain_phase=v.chain_phase, chain_wrap=v.chain_wrap,
        bomb_order=v.bomb_order, bomb_key_fields=list(v.bomb_key_fields),
        multi_bomb_rows=[variants_pb2.MultiBombRow(n=n, min_k=k) for n, k in v.multi_bomb],
        chain_bonus=v.chain_bonus, round_end=v.round_end,
        kou_by_kind=dict(v.kou), kou_thresholds=list(v.kou_thresholds),
        multiplier_rows=[variants_pb2.MultiplierRow(star=s, multiplier=m) for s, m in v.multiplier],
        multiplier_star=v.multiplier_star,
        contribution_rows=[variants_pb2.ContributionRow(star=s, gain=a, pay=b)
                      for s, a, b in v.contribution],
        contribution_mode=v.contribution_mode,
        contribution_recipients=v.contribution_recipients,
        escape=v.escape, escape_fee=v.escape_fee, extends=v.extends or "",
        builtin=BUILTIN.get(v.id) is v,
        variant_json=json.dumps(data, ensure_ascii=False))
    for kind, row in v.base.items():
        msg.base_rows[kind].amounts.extend(row)
    if v.settlement_star_cap is not None:
        msg.settlement_star_cap = v.settlement_star_cap
    return msg
