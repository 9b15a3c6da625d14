"""Rule sets ("variants") declared as data (RULES.md §3–§6, §8, §10, §11).

A :class:`Variant` is a frozen record of every rule that differs between house rule sets.
The seven built-ins live in :data:`BUILTIN`; a house variant is a built-in with fields
replaced, either in code (:meth:`Variant.replace`) or from a TOML/JSON file that names the
built-in it ``extends`` (:func:`load_variant`). Every field is validated on construction
and errors name the field.

Tables are tuples of rows so they stay hashable and printable:

* ``multiplier``: ``((star, M), ...)`` ascending; below the first row M = 1, the last row
  applies to all higher stars.
* ``contribution``: ``((star, a, b), ...)`` ascending: the player gets +a, each payer −b.
* ``base``: ``{"double": (1st, 2nd, 3rd, 4th), "single": ..., "flat": ...}`` by place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .cards import BJ, RANK_CHARS, TWO, rank_copies
from .documents import bounded, load_json, read_document
from .errors import ShuangkouError, VariantError
from .round_ends import ROUND_ENDS as ROUND_ENDS  # the values of round_end: the table's rows
from .round_ends import round_end

__all__ = [
    "Variant",
    "VariantError",
    "BUILTIN",
    "BOMB_ORDERS",
    "get_variant",
    "list_variants",
    "load_variant",
    "variant_from_mapping",
    "variant_from_json",
    "register_variants",
    "house_variants",
    "find_variant",
    "numbered",
]


# The fields a bomb's sort key may compare (§8):
#   star       the bomb's star (uncapped)       tier       kind tier from `tiers`
#   top        last rank in chain order         neg_cards  fewer cards wins
#   cards      more cards wins                  neg_y      fewer links wins
#   y          more links wins                  wrap_class 0 = A23.., 1 = ..KA2, 2 = other
#   rank_list  chain ranks by count desc, then rank desc (huopin)
BOMB_KEY_FIELDS = ("star", "tier", "top", "neg_cards", "cards", "neg_y", "y", "wrap_class",
                   "rank_list")
# Bomb-order families (§8). Each lists the fields of a bomb's sort key, compared
# lexicographically, and the tier of each bomb kind (higher tier wins at equal star).
BOMB_ORDERS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "baibian": {
        "key": ("star", "tier", "top"),
        "tiers": {"joker_bomb_3": 0, "bomb": 1, "chain_bomb": 1, "joker_bomb_4": 2},
    },
    "bianfeng": {
        "key": ("star", "tier", "neg_cards", "wrap_class", "top"),
        "tiers": {"joker_bomb_3": 0, "bomb": 1, "chain_bomb": 1, "joker_bomb_4": 2},
    },
    "fengkuang": {
        "key": ("star", "tier", "neg_y", "top", "cards"),
        "tiers": {"joker_bomb_3": 0, "bomb": 1, "chain_bomb": 1, "joker_bomb_4": 2},
    },
    "qianbian": {
        "key": ("star", "tier", "neg_cards", "top"),
        "tiers": {"joker_bomb_3": 0, "chain_bomb": 1, "joker_bomb_4": 2, "bomb": 3},
    },
    "huopin": {
        "key": ("star", "tier", "y", "cards", "rank_list"),
        "tiers": {"joker_bomb_3": 0, "joker_bomb_4": 0, "chain_bomb": 1, "bomb": 2},
    },
})

# The values of the fields that name a behaviour. The compiled modules number each list's
# values in its order (:func:`numbered`; their C enums are checked against these lists by
# tests/test_round_ends.py). The round end's values are the rows of round_ends.py.
CHAIN_COUNTS = ("equal", "any")            # per-rank counts of a chain bomb
CHAIN_PHASES = ("common", "largest", "smallest")  # which count is the chain's X
CHAIN_WRAPS = ("none", "through_ace", "natural_two")  # may a chain run through 2?
STAR_SOURCES = ("winning_team", "all", "winner")    # whose star sets the multiplier
CONTRIBUTION_MODES = ("per_bomb", "round_star")
CONTRIBUTION_RECIPIENTS = ("player", "team")
ESCAPE_RULES = ("none", "bianfeng", "fengkuang", "qianbian", "huopin")
KINDS_OF_WIN = ("double", "single", "flat")


def numbered(values: tuple[str, ...]) -> Mapping[str, int]:
    """Each value of a field's list by its position: the number compiled code branches on."""
    return MappingProxyType({name: i for i, name in enumerate(values)})


@dataclass(frozen=True)
class Variant:
    """One rule set. Build house variants with :meth:`replace` or :func:`load_variant`."""

    id: str
    name: str
    source: str = ""
    # --- deck (§3) ---
    decks: int = 2
    lowest_rank: int = 0          # rank position of the lowest natural rank (3 = 0, 7 = 4)
    hand_size: int = 27
    joker_copies: int = 2         # copies of each joker in the deck
    # --- wilds (§4) ---
    wild_jokers: tuple[str, ...] = ("BJ",)
    # --- chain bombs (§6) ---
    chain_min_links: int = 3
    chain_counts: str = "equal"
    chain_phase: str = "common"
    chain_wrap: str = "none"
    # --- bomb order (§8) ---
    bomb_order: str = "baibian"
    # --- round stars (§10.2) ---
    # multi_bomb: minimum k for N = 4 and for N >= 5 ((4, k4), (5, k5)); empty = no table.
    multi_bomb: tuple[tuple[int, int], ...] = ()
    chain_bonus: bool = False
    # --- settlement (§9, §10) ---
    round_end: str = "finishing_order"
    base: Mapping[str, tuple[int, int, int, int]] = field(default_factory=lambda: MappingProxyType({
        "double": (4, 4, -4, -4), "single": (2, -2, 2, -2), "flat": (1, 0, 0, 1)}))
    # huopin: k per kind of win, and the losing team's card thresholds for double/single.
    kou: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    kou_thresholds: tuple[int, int] = (12, 7)
    multiplier: tuple[tuple[int, int], ...] = ((5, 2), (6, 4), (7, 8), (8, 16))
    multiplier_star: str = "winning_team"
    contribution: tuple[tuple[int, int, int], ...] = ((6, 6, 2), (7, 12, 4), (8, 18, 6))
    contribution_mode: str = "per_bomb"
    contribution_recipients: str = "player"
    settlement_star_cap: int | None = None
    escape: str = "none"
    escape_fee: int = 0           # huopin: the escaper pays escape_fee × stake + table fee
    extends: str | None = None    # the built-in this variant was derived from, if any

    # ------------------------------------------------------------------ identity
    def __hash__(self) -> int:
        """Hash of every field (mappings as sorted items), consistent with ``==``.

        Written out because the generated one would hash the ``base``/``kou`` mappings,
        which are unhashable; equal variants hash equal, so a variant rebuilt from the same
        data (e.g. the same custom JSON on every request) finds the same compiled rules.
        """
        return hash(tuple([_hashable(getattr(self, name)) for name in _FIELD_NAMES]))

    @property
    def fingerprint(self) -> bytes:
        """16 bytes that name the rules: the first 16 bytes of the SHA-256 of every rule
        field (all but the labels :data:`LABEL_FIELDS`) as canonical JSON — sorted keys, no
        spaces, ASCII escapes, the values of :meth:`to_dict`. Variants that play and settle
        alike share it whatever their ids; any rule changed changes it. A round state is
        bound to it (core_ext/_state.pyx)."""
        rules = {k: v for k, v in self.to_dict().items() if k not in LABEL_FIELDS}
        text = json.dumps(rules, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode("ascii")).digest()[:16]   # ~20 µs: callers keep it

    # ------------------------------------------------------------------ derived data
    @property
    def copies_per_rank(self) -> int:
        """Cards of each natural rank in the deck (the 2 is in every deck)."""
        return rank_copies(TWO, self.decks, self.lowest_rank, self.joker_copies)

    @property
    def deck_size(self) -> int:
        return sum(rank_copies(r, self.decks, self.lowest_rank, self.joker_copies)
                   for r in range(BJ + 1))

    @property
    def ranks(self) -> str:
        """The natural ranks of the deck, low to high."""
        return RANK_CHARS[self.lowest_rank:]

    @property
    def bomb_key_fields(self) -> tuple[str, ...]:
        return tuple(BOMB_ORDERS[self.bomb_order]["key"])

    @property
    def bomb_tiers(self) -> Mapping[str, int]:
        tiers: Mapping[str, int] = BOMB_ORDERS[self.bomb_order]["tiers"]
        return tiers

    def multiplier_for(self, star: int) -> int:
        """M for a star (§10.3): 1 below the first row, the last row for all higher stars."""
        m = 1
        for s, mult in self.multiplier:
            if star >= s:
                m = mult
        return m

    def contribution_for(self, star: int) -> tuple[int, int]:
        """(+a, −b) for a star (§10.4); (0, 0) below the first row."""
        ab = (0, 0)
        for s, a, b in self.contribution:
            if star >= s:
                ab = (a, b)
        return ab

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        def fail(name: str, why: str) -> None:
            raise VariantError(f"variant {self.id!r}: field {name!r} {why}", name)

        def one_of(name: str, allowed: tuple[str, ...]) -> None:
            if getattr(self, name) not in allowed:
                fail(name, f"must be one of {', '.join(allowed)}; got {getattr(self, name)!r}")

        for name, types in _FIELD_TYPES.items():
            value = getattr(self, name)
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                fail(name, f"must be {_TYPE_NAMES[types]}; got {type(value).__name__} {value!r}")
        for name, longest in _TEXT_LIMITS.items():
            text = getattr(self, name) or ""
            if len(text) > longest:
                fail(name, f"is longer than {longest} characters")
            if not text.isascii():
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError:     # "\ud800" from JSON: no reply could carry it
                    fail(name, "holds a lone surrogate (\\ud800-\\udfff), which is not text")
        if not self.id or not self.id.replace("_", "").isalnum():
            fail("id", "must be a non-empty identifier (letters, digits, _)")
        if self.decks not in (1, 2, 3, 4):
            fail("decks", f"must be 1–4; got {self.decks!r}")
        if not isinstance(self.lowest_rank, int) or not 0 <= self.lowest_rank <= 8:
            fail("lowest_rank", f"must be a rank position 0–8 (3…J); got {self.lowest_rank!r}")
        if not isinstance(self.hand_size, int) or not 1 <= self.hand_size <= 40:
            fail("hand_size", f"must be 1–40; got {self.hand_size!r}")
        if self.hand_size * 4 > self.deck_size:
            fail("hand_size", f"{self.hand_size} × 4 seats exceeds the {self.deck_size}-card deck")
        if self.joker_copies not in (0, 1, 2, 3, 4):
            fail("joker_copies", f"must be 0–4; got {self.joker_copies!r}")
        if not set(self.wild_jokers) <= {"SJ", "BJ"} or len(set(self.wild_jokers)) != len(self.wild_jokers):
            fail("wild_jokers", f"must be a subset of ['SJ', 'BJ']; got {list(self.wild_jokers)!r}")
        if self.chain_min_links not in range(2, 13):
            fail("chain_min_links", f"must be 2–12; got {self.chain_min_links!r}")
        one_of("chain_counts", CHAIN_COUNTS)
        one_of("chain_phase", CHAIN_PHASES)
        one_of("chain_wrap", CHAIN_WRAPS)
        if self.chain_counts == "equal" and self.chain_phase != "common":
            fail("chain_phase", "must be 'common' when chain_counts is 'equal'")
        if self.chain_counts == "any" and self.chain_phase == "common":
            fail("chain_phase", "must be 'largest' or 'smallest' when chain_counts is 'any'")
        if self.chain_wrap != "none" and self.lowest_rank != 0:
            fail("chain_wrap", "wrap-around chains need the full deck (lowest_rank 0)")
        one_of("bomb_order", tuple(BOMB_ORDERS))
        for row in self.multi_bomb:
            if (type(row) is not tuple or len(row) != 2 or not all(type(x) is int for x in row)
                    or row[0] not in (4, 5) or not 1 <= row[1] <= 12):
                fail("multi_bomb", f"rows are [N, min_k] with N 4 or 5; got {row!r}")
        if len({row[0] for row in self.multi_bomb}) != len(self.multi_bomb):
            fail("multi_bomb", "has at most one row for N = 4 and one for N >= 5")
        one_of("round_end", ROUND_ENDS)
        # Both tables are checked in every variant (data must hash and round-trip), and
        # the one the round end scores by (its row's `kou`) must be complete.
        kou_scored = round_end(self.round_end).kou
        if not kou_scored and set(self.base) != set(KINDS_OF_WIN):
            fail("base", f"needs exactly the rows {', '.join(KINDS_OF_WIN)}")
        for kind, places in self.base.items():
            if kind not in KINDS_OF_WIN or type(places) is not tuple or len(places) != 4 \
                    or not all(type(v) is int and abs(v) <= MAX_AMOUNT for v in places):
                fail("base", f"row {kind!r} needs four integers (1st..4th place)")
        if (kou_scored and set(self.kou) != set(KINDS_OF_WIN)) or not all(
                kind in KINDS_OF_WIN and type(v) is int and 0 <= v <= MAX_AMOUNT
                for kind, v in self.kou.items()):
            fail("kou", f"needs an integer for each of {', '.join(KINDS_OF_WIN)}")

        thresholds = self.kou_thresholds   # checked in every variant: data must round-trip
        if (len(thresholds) != 2 or not all(type(x) is int for x in thresholds)
                or not 1 <= thresholds[1] <= thresholds[0] <= 1000):
            fail("kou_thresholds", "must be [double_from, single_from] with "
                 "1 <= single_from <= double_from")
        _check_star_table(self, "multiplier", self.multiplier, 2, fail)
        _check_star_table(self, "contribution", self.contribution, 3, fail)
        one_of("multiplier_star", STAR_SOURCES)
        one_of("contribution_mode", CONTRIBUTION_MODES)
        one_of("contribution_recipients", CONTRIBUTION_RECIPIENTS)
        if self.settlement_star_cap is not None and not 4 <= self.settlement_star_cap <= 40:
            fail("settlement_star_cap", "must be null or 4–40")
        one_of("escape", ESCAPE_RULES)
        if not 0 <= self.escape_fee <= MAX_AMOUNT:
            fail("escape_fee", f"must be 0–{MAX_AMOUNT:,}")

    # ------------------------------------------------------------------ conversion
    def replace(self, **changes: Any) -> Variant:
        """A copy with fields replaced (validated). Unknown names raise VariantError.

        The copy records the built-in it derives from in ``extends`` unless told otherwise.
        """
        changes.setdefault("extends", self.extends or self.id)
        return _replace_checked(self, changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able data (tuples become lists, mappings dicts)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["base"] = {k: list(v) for k, v in self.base.items()}
        d["kou"] = dict(self.kou)
        plain: dict[str, Any] = json.loads(json.dumps(d))
        return plain


def _hashable(value: Any) -> Any:
    """A field value in hashable form: mappings become sorted item tuples."""
    if isinstance(value, Mapping):
        return tuple(sorted(value.items()))
    return value


def _check_star_table(v: Variant, name: str, table: Any, width: int, fail: Any) -> None:
    if not table:
        fail(name, "must have at least one row")
    last = 0
    for row in table:
        if type(row) is not tuple or len(row) != width or not all(type(x) is int for x in row):
            fail(name, f"rows need {width} integers; got {row!r}")
        if row[0] <= last or row[0] > 64 or any(x < 0 or x > MAX_AMOUNT for x in row):
            fail(name, "stars must ascend (1–64) and amounts be 0–1,000,000")
        last = row[0]


_FIELD_NAMES = tuple(f.name for f in fields(Variant))
_FIELD_TYPES: Mapping[str, tuple[type, ...]] = MappingProxyType({
    **{n: (str,) for n in ("id", "name", "source", "chain_counts", "chain_phase", "chain_wrap",
                           "bomb_order", "round_end", "multiplier_star", "contribution_mode",
                           "contribution_recipients", "escape")},
    **{n: (int,) for n in ("decks", "lowest_rank", "hand_size", "joker_copies",
                           "chain_min_links", "escape_fee")},
    "chain_bonus": (bool,),
    "settlement_star_cap": (int, type(None)),
    "extends": (str, type(None)),
    "wild_jokers": (tuple,),
    "multi_bomb": (tuple,),
    "kou_thresholds": (tuple,),
    "multiplier": (tuple,),
    "contribution": (tuple,),
    "base": (Mapping,),
    "kou": (Mapping,),
})
_TEXT_LIMITS = {"id": 64, "name": 200, "source": 200, "extends": 64}
#: The fields that name a rule set rather than state a rule: no round, reading or
#: settlement depends on them (so they stay out of :attr:`Variant.fingerprint`).
LABEL_FIELDS = ("id", "name", "source", "extends")
MAX_AMOUNT = 10**6      # largest table amount or fee: settlements stay far inside int64
_TYPE_NAMES = {(str,): "text", (int,): "an integer", (bool,): "true or false",
               (int, type(None)): "an integer or null", (str, type(None)): "text or null",
               (tuple,): "a list", (Mapping,): "a table"}

_BAIBIAN = Variant(
    id="baibian", name="百变双扣", source="docs/seeds/000_f1dd99c373b18bde.txt",
    escape="none",
)
_FENGKUANG = Variant(
    id="fengkuang", name="疯狂双扣（平常场）", source="docs/seeds/001_59d6c8a7f796e91e.txt",
    wild_jokers=("SJ", "BJ"),
    chain_counts="any", chain_phase="largest",
    bomb_order="fengkuang",
    base=MappingProxyType({"double": (4, 4, -4, -4), "single": (2, -2, 2, -2), "flat": (0, 0, 0, 0)}),
    multiplier=((5, 2), (6, 4), (7, 6), (8, 8), (9, 16), (10, 24), (11, 32), (12, 64),
                (13, 96), (14, 128), (15, 256), (16, 512)),
    contribution=((5, 6, 2), (6, 9, 3), (7, 12, 4), (8, 18, 6), (9, 36, 12), (10, 72, 24),
                  (11, 144, 48), (12, 192, 64), (13, 288, 96), (14, 384, 128),
                  (15, 768, 256), (16, 1152, 384)),
    escape="fengkuang",
)
_FENGKUANG_CRAZY = replace(
    _FENGKUANG, id="fengkuang_crazy", name="疯狂双扣（疯狂场）",
    decks=3, lowest_rank=4, hand_size=28,
    multiplier=((8, 4), (9, 6), (10, 8), (11, 16), (12, 32), (13, 48), (14, 64), (15, 128),
                (16, 256), (17, 384), (18, 512), (19, 768), (20, 1024)),
    contribution=_FENGKUANG.contribution + ((17, 1536, 512), (18, 1920, 640),
                                            (19, 2304, 768), (20, 3000, 1000)),
)
_BIANFENG = Variant(
    id="bianfeng", name="边锋百变双扣", source="docs/seeds/002_7d650771cb65ddd5.txt",
    chain_wrap="through_ace", bomb_order="bianfeng",
    base=MappingProxyType({"double": (4, 4, -4, -4), "single": (2, -2, 2, -2), "flat": (1, -1, -1, 1)}),
    contribution=((6, 6, 2), (7, 18, 6), (8, 30, 10)),
    escape="bianfeng",
)
_BIANFENG_LISHUI = replace(
    _BIANFENG, id="bianfeng_lishui", name="边锋百变双扣（丽水规则房间）",
    multi_bomb=((4, 3), (5, 2)),
    multiplier=((5, 2), (6, 4), (7, 8), (8, 16), (9, 32), (10, 64)),
    contribution_mode="round_star",
)
_QIANBIAN = Variant(
    id="qianbian", name="千变双扣", source="docs/seeds/003_0365516d8eb7a6c4.txt",
    wild_jokers=("SJ", "BJ"),
    chain_counts="any", chain_phase="smallest",
    bomb_order="qianbian",
    multi_bomb=((4, 4), (5, 2)), chain_bonus=True,
    multiplier_star="all",
    contribution_mode="round_star", contribution_recipients="team",
    escape="qianbian",
)
_HUOPIN = Variant(
    id="huopin", name="火拼双扣", source="docs/seeds/004_ad6aaeb065c829c9.txt",
    wild_jokers=("SJ", "BJ"),
    chain_min_links=2, chain_counts="any", chain_phase="smallest", chain_wrap="natural_two",
    bomb_order="huopin",
    round_end="first_out",
    kou=MappingProxyType({"double": 3, "single": 2, "flat": 1}),
    multiplier=((5, 2), (6, 4), (7, 8), (8, 16), (9, 32)),
    multiplier_star="winner",
    contribution=((6, 6, 2), (7, 18, 6), (8, 30, 10)),
    settlement_star_cap=9,
    escape="huopin", escape_fee=128,
)

#: The seven built-in rule sets by id, in RULES.md order.
BUILTIN: Mapping[str, Variant] = MappingProxyType({
    v.id: v for v in (_BAIBIAN, _FENGKUANG, _FENGKUANG_CRAZY, _BIANFENG, _BIANFENG_LISHUI,
                      _QIANBIAN, _HUOPIN)
})


def get_variant(variant: str | Variant) -> Variant:
    """The built-in variant with this id (or the Variant itself). Unknown ids raise VariantError."""
    if isinstance(variant, Variant):
        return variant
    try:
        return BUILTIN[variant] if variant in BUILTIN else _HOUSE[variant]
    except (KeyError, TypeError):
        raise VariantError(
            f"unknown variant {variant!r}; built-in variants are {', '.join(BUILTIN)}", "variant"
        ) from None


def list_variants() -> list[Variant]:
    """The built-in variants, in RULES.md order."""
    return list(BUILTIN.values())


_TUPLE_FIELDS = {"wild_jokers", "multi_bomb", "kou_thresholds", "multiplier", "contribution"}
MAX_EXTENDS_DEPTH = 8


def variant_from_mapping(data: Mapping[str, Any], base: Variant | None = None,
                         _known: Mapping[str, Mapping[str, Any]] | None = None) -> Variant:
    """Build a variant from plain data: ``{"id": ..., "extends": "baibian", <overrides>}``.

    ``extends`` names a built-in (or, with ``_known``, another custom variant); the result
    is that variant with the given fields replaced. Field names and values are validated.
    """
    if not isinstance(data, Mapping):
        raise VariantError("a custom variant must be a mapping of fields", None)
    data = dict(data)
    parent_id = data.pop("extends", None)
    if base is None:
        if parent_id is None:
            raise VariantError("a custom variant must name the built-in it 'extends'", "extends")
        base = _resolve_parent(parent_id, _known or {}, depth=0)
    changes = dict(data)
    changes.setdefault("extends", base.extends or base.id)
    # A house variant is not the rule set it derives from: without a name and source of
    # its own it is named by its id and its source says what it extends (docs/decisions/rules.md
    # R14), never the parent's text (`extends` itself names the built-in at the root).
    if parent_id is not None and isinstance(changes.get("id", base.id), str):
        changes.setdefault("name", changes.get("id", base.id))
        changes.setdefault("source", f"house variant extending {parent_id}")
    variant = _replace_checked(base, changes)
    # After the fields are checked, so a malformed field is reported first. An id taken
    # from the parent (no "id" given) counts: two rule sets must never share an id.
    if variant.id in BUILTIN:
        raise VariantError(f"a custom variant may not take the built-in id {variant.id!r}; "
                           "give it an id of its own", "id")
    return variant


def _replace_checked(base: Variant, data: Mapping[str, Any]) -> Variant:
    """``dataclasses.replace`` with field names checked and plain data shaped (lists→tuples)."""
    names = {f.name for f in fields(Variant)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise VariantError(f"unknown field {unknown[0]!r}", unknown[0])
    changes: dict[str, Any] = {}
    for key, value in data.items():
        try:
            if key in _TUPLE_FIELDS and value is not None:
                value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            elif key in ("base", "kou"):
                if not isinstance(value, Mapping):
                    raise TypeError
                value = MappingProxyType({k: tuple(v) if isinstance(v, list) else v
                                          for k, v in value.items()})
        except TypeError:
            raise VariantError(f"field {key!r} has the wrong shape", key) from None
        changes[key] = value
    try:
        return replace(base, **changes)
    except VariantError:
        raise
    except (TypeError, ValueError) as exc:
        raise VariantError(f"invalid custom variant: {exc}", None) from None


def _resolve_parent(parent_id: Any, known: Mapping[str, Mapping[str, Any]], depth: int) -> Variant:
    if not isinstance(parent_id, str):
        raise VariantError("'extends' must be a variant id", "extends")
    if parent_id in BUILTIN:
        return BUILTIN[parent_id]
    if parent_id in known:
        if depth >= MAX_EXTENDS_DEPTH:
            raise VariantError(f"'extends' chain through {parent_id!r} is cyclic or too deep", "extends")
        spec = dict(known[parent_id])
        grand = _resolve_parent(spec.pop("extends", None), known, depth + 1)
        return variant_from_mapping(spec, base=grand)
    raise VariantError(f"'extends' names unknown variant {parent_id!r}", "extends")


def load_variant(source: str | Path | Mapping[str, Any]) -> Variant:
    """Load a custom variant from a ``.toml`` or ``.json`` file (or an already-parsed mapping).

    A file may hold one variant, or several under ``[variants.<id>]`` / ``{"variants": {...}}``
    that extend each other; then the last one listed is returned (use :func:`load_variants`).
    """
    variants = load_variants(source)
    return variants[-1]


def load_variants(source: str | Path | Mapping[str, Any]) -> list[Variant]:
    """All custom variants defined in a TOML/JSON file or mapping (see :func:`load_variant`)."""
    if isinstance(source, Mapping):
        data: Any = source
    else:
        # Hostile files (deep nesting, huge integers, not UTF-8, lone surrogates) are refused
        # with one sentence naming the file and where in it; Python's own errors never escape.
        name = f"variant file {str(source)!r}"
        try:
            data = read_document(source, name, invalid=VariantError)
        except VariantError:
            raise
        except ShuangkouError as exc:
            raise VariantError(str(exc), None) from None
    if not isinstance(data, Mapping):
        raise VariantError("a variant file must hold a table/object", None)
    if "variants" in data:
        specs = data["variants"]
        if not isinstance(specs, Mapping) or not specs:
            raise VariantError("'variants' must be a non-empty table of id -> fields", "variants")
        specs = {k: {"id": k, **v} if isinstance(v, Mapping) else v for k, v in specs.items()}
        return [variant_from_mapping(spec, _known=specs) if isinstance(spec, Mapping)
                else variant_from_mapping(spec) for spec in specs.values()]
    return [variant_from_mapping(data)]


# ----------------------------------------------------------------------------- house registry
# House variants a server loads at start-up (`shuangkou serve --variants FILE...`), resolvable
# by id next to the built-ins. Written once before serving; read-only afterwards.
_HOUSE: dict[str, Variant] = {}
#: House variants one server may register: their ids must fit one GetServerInfo reply
#: (10,000 ids of 64 characters: 0.7 MB of the 4 MiB message limit).
MAX_HOUSE_VARIANTS = 10_000


def register_variants(sources: Any) -> list[Variant]:
    """Load every variant of each file in ``sources`` and register them by id, all or none.

    Refused (VariantError) when an id is a built-in's, is defined twice, or is registered
    already; nothing is registered then. Returns the variants registered, in file order.
    """
    loaded: list[Variant] = []
    for source in sources:
        loaded.extend(load_variants(source))
    if len(loaded) + len(_HOUSE) > MAX_HOUSE_VARIANTS:
        raise VariantError(f"{len(loaded) + len(_HOUSE):,} house variants: a server registers "
                           f"at most {MAX_HOUSE_VARIANTS:,}", None)
    seen: set[str] = set()
    for v in loaded:
        if v.id in BUILTIN:
            raise VariantError(f"house variant id {v.id!r} is a built-in's; choose another id",
                               "id")
        if v.id in seen or v.id in _HOUSE:
            raise VariantError(f"house variant id {v.id!r} is defined twice", "id")
        seen.add(v.id)
    _HOUSE.update((v.id, v) for v in loaded)
    for v in loaded:
        _BY_RULES.setdefault(v.fingerprint, v)
    return loaded


def unregister_variants() -> None:
    """Forget every house variant (tests and embedding)."""
    _HOUSE.clear()
    _BY_RULES.clear()
    _BY_RULES.update((v.fingerprint, v) for v in reversed(list(BUILTIN.values())))


def house_variants() -> list[Variant]:
    """The registered house variants, in registration order."""
    return list(_HOUSE.values())


def find_variant(variant_id: str) -> Variant | None:
    """The built-in or registered house variant with this id, or None."""
    return BUILTIN.get(variant_id) or _HOUSE.get(variant_id)


# The built-in and registered house variants by the fingerprint of their rules (the first
# listed of those sharing rules), for messages that name the rule set a state was played under.
_BY_RULES: dict[bytes, Variant] = {}
unregister_variants()


def variant_with_rules(fingerprint: bytes) -> Variant | None:
    """The built-in or registered house variant whose :attr:`Variant.fingerprint` this is."""
    return _BY_RULES.get(fingerprint)


# ----------------------------------------------------------------------------- from JSON text

_ANNOTATIONS = {f.name: str(f.type) for f in fields(Variant)}


def variant_from_json(text: str, name: str = "variant JSON") -> Variant:
    """A custom variant from JSON text sent from outside (a request's ``custom_json``).

    The text is parsed safely (:func:`shuangkou.core.documents.load_json`, which calls it
    ``name``), must be an object, and every known field must have its JSON type (``2.0`` is
    no int, ``5`` no name) before :func:`variant_from_mapping` checks the values. A type
    error is a :class:`VariantError` whose ``field`` is the path inside the document
    (``decks``, ``multiplier[1][1]``, ``kou.double``).
    """
    data = load_json(text, name)
    if not isinstance(data, dict):
        raise VariantError("custom variant JSON must be an object of fields")
    _check_field_types(data)
    return variant_from_mapping(data)


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


def _check_field_types(data: dict[str, Any]) -> None:
    """Reject JSON values of the wrong type with the field path, before the values are
    validated (:func:`variant_from_mapping` checks ranges, not JSON types)."""
    for key, value in data.items():
        annotation = _ANNOTATIONS.get(key)
        if annotation is None:
            continue      # unknown fields: variant_from_mapping names them
        bad = _type_error(value, annotation, key)
        if bad:
            want = annotation.replace("tuple", "list").replace("Mapping", "object")
            raise VariantError(f"custom variant field {key!r} must be {want}; got "
                               f"{bounded(repr(value), 80)}", bad)
