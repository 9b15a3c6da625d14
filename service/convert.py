"""Translate between the wire messages and the core: rule sets, cards, readings, variants.

Every function that reads request data raises core_ext errors tagged with the request field
(see :func:`shuangkou.service.errors.field_scope`), so :mod:`shuangkou.service.errors` can map them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import fields
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

from shuangkou import core
from shuangkou.core.errors import CardError
from shuangkou.core.variants import BUILTIN, Variant, find_variant, variant_from_mapping
from shuangkou.v1 import cards_pb2, readings_pb2, variants_pb2

from .errors import BadInput, UnknownVariant, bounded, field_scope
from .limits import Limits

if TYPE_CHECKING:
    from shuangkou.core._core import _KindName as KindName  # the core's play-type names (a Literal)

__all__ = ["resolve_variant", "variant_label", "cards_of", "reading_to_proto", "reading_or_none",
           "declaration", "declaration_to_proto", "declared_reading", "variant_to_proto", "load_json", "KIND_BY_NAME",
           "KIND_NAMES", "DEFAULT_VARIANT", "MAX_JSON_DEPTH"]

DEFAULT_VARIANT = "baibian"
# core kind name <-> proto Kind value (the proto enum is the core's order shifted by one).
KIND_BY_NAME: dict[KindName, readings_pb2.Kind] = {
    name: cast("readings_pb2.Kind", readings_pb2.Kind.Value("KIND_" + name.upper()))
    for name in core.KINDS}
KIND_NAMES: dict[int, KindName] = {v: k for k, v in KIND_BY_NAME.items()}
MAX_CUSTOM_VARIANT_CACHE = 256
MAX_CUSTOM_VARIANT_CHARS = 16 * 1024   # a full rule set is ~1.5 KB: the cache stays < 4 MiB
CARD_CODES = frozenset(cards_pb2.Card.values()) - {cards_pb2.CARD_UNSPECIFIED}


MAX_RANK = 14        # rank positions 3=0 ... BJ=14
MAX_WILDS = 64       # wild jokers one play can hold: bounded by --max-cards anyway
MAX_JSON_DEPTH = 32   # replays and variants nest 3 deep; deeper documents are hostile
CUSTOM_FIELD = "rule_set.custom_json"


def load_json(text: str, field: str, *, invalid: type[Exception] = BadInput) -> Any:
    """Parse a JSON document from a request, rejecting what the wire or the core cannot carry.

    Malformed JSON raises ``invalid`` (the caller's own error class); nesting deeper than
    :data:`MAX_JSON_DEPTH`, integers past Python's 4,300-digit limit and lone surrogates
    ("\\ud800", as a value or a key: not UTF-8, so no reply could quote them) raise
    :class:`BadInput`. Every message is bounded and names ``field``, never Python's text.
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise BadInput(f"{field} is nested too deeply (at most {MAX_JSON_DEPTH} levels)",
                       field) from None
    except json.JSONDecodeError as exc:
        raise invalid(f"{field} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                      f"{exc.colno}", field) from None
    except ValueError:   # int() past sys.get_int_max_str_digits()
        raise BadInput(f"{field} holds an integer too long to read", field) from None
    _check_json(data, field)
    return data


def _check_json(data: Any, field: str) -> None:
    """Depth and text checks over a parsed document, without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise BadInput(f"{field} is nested too deeply (at most {MAX_JSON_DEPTH} "
                               "levels)", field)
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    _check_text(key, field)
                stack.append((item, depth + 1))
        elif isinstance(value, str):
            _check_text(value, field)


def _check_text(text: str, field: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{field} holds a lone surrogate escape (\\ud800-\\udfff), which is "
                       "not text", field) from None


@lru_cache(maxsize=MAX_CUSTOM_VARIANT_CACHE)
def _custom_variant(text: str) -> Variant:
    """Parse and validate a custom variant once per distinct JSON document."""
    data = load_json(text, CUSTOM_FIELD)
    if not isinstance(data, dict):
        raise BadInput("custom variant JSON must be an object of fields", CUSTOM_FIELD)
    _check_variant_types(data)
    with field_scope(CUSTOM_FIELD, nested=True):
        return variant_from_mapping(data)


# ----------------------------------------------------------------------------- JSON field types

_VARIANT_TYPES = {f.name: str(f.type) for f in fields(Variant)}


def _split_args(text: str) -> list[str]:
    """Top-level comma-separated parts of a type's argument list."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _type_error(value: Any, annotation: str, path: str) -> str | None:
    """Where JSON ``value`` does not fit the dataclass ``annotation`` (None if it does)."""
    annotation = annotation.strip()
    if annotation.endswith("| None"):
        return None if value is None else _type_error(value, annotation[:-6], path)
    if annotation == "int":
        return None if isinstance(value, int) and not isinstance(value, bool) else path
    if annotation in ("str", "bool"):
        return None if type(value).__name__ == annotation else path
    head, _, rest = annotation.partition("[")
    args = _split_args(rest[:-1])
    if head == "Mapping":
        if not isinstance(value, dict):
            return path
        for key, item in value.items():
            bad = _type_error(key, args[0], path) or _type_error(item, args[1], f"{path}.{key}")
            if bad:
                return bad
        return None
    if head == "tuple":
        if not isinstance(value, list):
            return path
        if args[-1] == "...":
            items = [(item, args[0]) for item in value]
        elif len(value) != len(args):
            return path
        else:
            items = list(zip(value, args, strict=True))
        for i, (item, arg) in enumerate(items):
            bad = _type_error(item, arg, f"{path}[{i}]")
            if bad:
                return bad
        return None
    return None


def _check_variant_types(data: dict[str, Any]) -> None:
    """Reject JSON values of the wrong type (2.0 for an int, 5 for a name) with the field path,
    before the core sees them (it validates ranges, not types)."""
    for key, value in data.items():
        annotation = _VARIANT_TYPES.get(key)
        if annotation is None:
            continue      # unknown fields: the core names them
        bad = _type_error(value, annotation, key)
        if bad:
            want = annotation.replace("tuple", "list").replace("Mapping", "object")
            raise BadInput(f"custom variant field {key!r} must be {want}; got "
                           f"{bounded(repr(value), 80)}", f"{CUSTOM_FIELD}.{bad}")


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
    vid = rule_set.id if which == "id" else ""
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
    codes: list[int] = list(msg.cards)     # each field read once (the hot path of every RPC)
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


def reading_to_proto(r: core.Reading) -> readings_pb2.Reading:
    return readings_pb2.Reading(
        kind=KIND_BY_NAME[r.kind], card_count=r.cards, top=r.top, length=r.length,
        star=r.star, phase=r.phase, regular=r.regular, wrap_class=r.wrap_class,
        ranks=[readings_pb2.RankCount(rank=rank, count=count) for rank, count in r.ranks],
        wilds=list(r.wilds), key_values=list(_flatten(r.key)), is_bomb=r.is_bomb,
        text=r.describe(), links=r.links, top_rank=r.top_rank)


def declaration_to_proto(r: core.Reading) -> readings_pb2.Declaration:
    """The declaration that names exactly reading ``r`` (kind, top, star and wild placement)."""
    d = r.declaration
    return readings_pb2.Declaration(
        kind=KIND_BY_NAME[r.kind], top=r.top, star=r.star,
        wilds=readings_pb2.WildPlacement(ranks=[int(w) for w in d.wilds or ()]))


def reading_or_none(r: core.Reading | None) -> readings_pb2.Reading | None:
    return None if r is None else reading_to_proto(r)


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
    if top is not None and top > MAX_RANK:
        raise BadInput(f"top {top} is not a rank position (0-{MAX_RANK})", f"{where}.top")
    wilds = None
    if msg.HasField("wilds"):
        wilds = tuple(msg.wilds.ranks)
        if len(wilds) > MAX_WILDS:
            raise BadInput(f"{len(wilds)} wild jokers; a play holds at most {MAX_WILDS}",
                           f"{where}.wilds.ranks")
        for i, rank in enumerate(wilds):
            if rank > MAX_RANK:
                raise BadInput(f"{rank} is not a rank position (0-{MAX_RANK})",
                               f"{where}.wilds.ranks[{i}]")
    return core.Declaration(kind, top, msg.star if msg.HasField("star") else None, wilds)


def declared_reading(codes: Any, variant: str | Variant, declared: core.Declaration | None,
                     to_beat: Any = None) -> core.Reading:
    """The reading that stands for ``codes`` (§7 rules 4-6): the declared one (beating
    ``to_beat`` when given), else the primary (or the first that beats)."""
    return core.play_reading(codes, variant, to_beat, declared)


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


def variant_to_proto(v: Variant) -> variants_pb2.Variant:
    data = variant_data(v)
    data["extends"] = v.extends or v.id   # so the JSON can be edited and sent back as is
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
