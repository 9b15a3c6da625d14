"""The slow, obviously-correct twin of the rules core, written from RULES.md §2–§8 alone.

Nothing here is shared with ``core._core``: card text is parsed with regular
expressions, a play is read by brute force — every assignment of natural ranks to the wild
jokers is tried and each resulting rank multiset is tested against every pattern definition
of §5/§6 — and the five bomb orders of §8 are written out as plain tuple builders. The only
things taken from the project are the card-code scheme of docs/design.md (so results can be
compared with the core) and the deck/wild/chain fields of a :class:`Variant` (so custom
variants can be checked too; :data:`RULEBOOK` transcribes the RULES.md tables so tests can
check the built-in variants' data against the rule book). Only the comparison helpers at
the end (``core_readings``, ``reading_diff``) call the core.

Speed is not a goal; clarity is. A play with w wild jokers costs C(13 + w - 1, w) pattern
tests (1820 for four wilds).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations_with_replacement
from typing import Any

from shuangkou import core
from shuangkou.core.variants import Variant, get_variant

# ----------------------------------------------------------------------------- cards (§2)

RANK_TEXT = ("3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K", "A", "2")
SUIT_TEXT = ("S", "H", "D", "C")
ACE, TWO, SJ, BJ = 11, 12, 13, 14
NO_SUIT = 4
JOKER_TEXT = {"SJ": SJ, "BJ": BJ}

ORDINARY_KINDS = ("triple_chain", "pair_chain", "straight", "triple", "pair", "single")
BOMB_KINDS = ("bomb", "chain_bomb", "joker_bomb_3", "joker_bomb_4")

_SEPARATORS = re.compile(r"[\s,+]+")
_RANK = r"(?:10|[2-9TJQKA])"
_SUITED = re.compile(rf"({_RANK})([SHDC])")
_RUN = re.compile(rf"{_RANK}+")
_ONE_RANK = re.compile(_RANK)


class RefCardError(ValueError):
    """Card text the rule book does not accept (the reference's CardError)."""


@dataclass(frozen=True, order=True)
class Card:
    """A card: rank position (3 = 0 … 2 = 12, SJ = 13, BJ = 14) and suit (None: no suit)."""

    rank: int
    suit: str | None = None

    @property
    def code(self) -> int:
        """The card code of docs/design.md: 1 + rank × 5 + suit (4 = no suit)."""
        return 1 + self.rank * 5 + (NO_SUIT if self.suit is None else SUIT_TEXT.index(self.suit))

    @property
    def text(self) -> str:
        if self.rank == SJ:
            return "SJ"
        if self.rank == BJ:
            return "BJ"
        return RANK_TEXT[self.rank] + (self.suit or "")

    @classmethod
    def from_code(cls, code: int) -> Card:
        rank, suit = divmod(code - 1, 5)
        if code < 1 or rank > BJ or (rank >= SJ and suit != NO_SUIT):
            raise RefCardError(f"{code} is not a card code")
        return cls(rank, None if suit == NO_SUIT else SUIT_TEXT[suit])


def _rank_of(text: str) -> int:
    return RANK_TEXT.index("T" if text == "10" else text)


def parse(text: str) -> list[Card]:
    """Card text per §2: tokens split by whitespace/``,``/``+``; a token is one card or a
    run of suitless rank characters; jokers stand alone; case is ignored."""
    cards: list[Card] = []
    for token in _SEPARATORS.split(text.strip().upper()):
        if not token:
            continue
        if token in JOKER_TEXT:
            cards.append(Card(JOKER_TEXT[token]))
        elif m := _SUITED.fullmatch(token):
            cards.append(Card(_rank_of(m.group(1)), m.group(2)))
        elif _RUN.fullmatch(token):
            cards.extend(Card(_rank_of(r)) for r in _ONE_RANK.findall(token))
        else:
            raise RefCardError(f"{token!r} is not a card")
    return cards


def as_cards(cards: str | Iterable[int] | Iterable[Card]) -> list[Card]:
    """Text, card codes or Cards -> Cards."""
    if isinstance(cards, str):
        return parse(cards)
    return [c if isinstance(c, Card) else Card.from_code(int(c)) for c in cards]


def codes(cards: str | Iterable[int] | Iterable[Card]) -> list[int]:
    return [c.code for c in as_cards(cards)]


# ----------------------------------------------------------------------------- rules

@dataclass(frozen=True)
class Rules:
    """The parts of a variant that reading and comparing plays depend on (§3, §4, §6, §8)."""

    decks: int
    lowest: int                  # lowest natural rank position of the deck
    hand_size: int
    joker_copies: int
    wild: frozenset[int]         # joker ranks that act as wilds in mixed plays
    chain_min: int
    chain_equal: bool            # all counts of a chain bomb must be equal
    chain_x: str                 # "common" / "largest" / "smallest"
    chain_wrap: bool             # chains may run through 2 (only together with A)
    family: str                  # §8 bomb order family

    @property
    def naturals(self) -> tuple[int, ...]:
        return tuple(range(self.lowest, TWO + 1))


def rules_of(variant: str | Variant) -> Rules:
    v = get_variant(variant)
    return Rules(
        decks=v.decks, lowest=v.lowest_rank, hand_size=v.hand_size, joker_copies=v.joker_copies,
        wild=frozenset(JOKER_TEXT[j] for j in v.wild_jokers),
        chain_min=v.chain_min_links, chain_equal=v.chain_counts == "equal",
        chain_x=v.chain_phase, chain_wrap=v.chain_wrap != "none", family=v.bomb_order,
    )


#: RULES.md §3/§4/§6/§8 tables, transcribed by hand for the seven built-in variants.
RULEBOOK: dict[str, Rules] = {
    "baibian": Rules(2, 0, 27, 2, frozenset({BJ}), 3, True, "common", False, "baibian"),
    "fengkuang": Rules(2, 0, 27, 2, frozenset({SJ, BJ}), 3, False, "largest", False, "fengkuang"),
    "fengkuang_crazy": Rules(3, 4, 28, 2, frozenset({SJ, BJ}), 3, False, "largest", False,
                             "fengkuang"),
    "bianfeng": Rules(2, 0, 27, 2, frozenset({BJ}), 3, True, "common", True, "bianfeng"),
    "bianfeng_lishui": Rules(2, 0, 27, 2, frozenset({BJ}), 3, True, "common", True, "bianfeng"),
    "qianbian": Rules(2, 0, 27, 2, frozenset({SJ, BJ}), 3, False, "smallest", False, "qianbian"),
    "huopin": Rules(2, 0, 27, 2, frozenset({SJ, BJ}), 2, False, "smallest", True, "huopin"),
}
#: §3: cards in the deck per built-in variant.
DECK_SIZE = {v: 108 for v in RULEBOOK} | {"fengkuang_crazy": 112}
#: The built-in variant ids in RULES.md order; those where SJ is wild too, and BJ-only ones (§4).
VARIANTS = tuple(RULEBOOK)
BOTH_WILD = tuple(v for v, r in RULEBOOK.items() if SJ in r.wild)
BJ_WILD = tuple(v for v, r in RULEBOOK.items() if SJ not in r.wild)


def deck_problems(cards: str | Iterable[int] | Iterable[Card], variant: str | Variant) -> list[str]:
    """Why these cards cannot all come from the variant's deck / one hand (§2, §3); [] if fine."""
    rules = rules_of(variant)
    cs = as_cards(cards)
    problems = []
    if len(cs) > rules.hand_size:
        problems.append(f"{len(cs)} cards is more than a hand of {rules.hand_size}")
    by_rank = Counter(c.rank for c in cs)
    by_face = Counter(c for c in cs if c.suit is not None)
    for rank, n in sorted(by_rank.items()):
        name = Card(rank).text
        if rank >= SJ:
            if n > rules.joker_copies:
                problems.append(f"{n} × {name}, the deck has {rules.joker_copies}")
        elif rank < rules.lowest:
            problems.append(f"{name} is not in the deck")
        elif n > 4 * rules.decks:
            problems.append(f"{n} × {name}, the deck has {4 * rules.decks}")
    for card, n in sorted(by_face.items()):
        if card.rank < SJ and card.rank >= rules.lowest and n > rules.decks:
            problems.append(f"{n} × {card.text}, the deck has {rules.decks}")
    return problems


# ----------------------------------------------------------------------------- readings

@dataclass(frozen=True)
class RefReading:
    """One reading (§7): attribute names follow the core's ``Reading`` (docs/design.md)."""

    kind: str
    cards: int
    top: int
    length: int
    star: int
    phase: int
    regular: bool
    wrap_class: int
    ranks: tuple[tuple[int, int], ...]
    wilds: tuple[int, ...]
    key: tuple[Any, ...]

    @property
    def is_bomb(self) -> bool:
        return self.kind in BOMB_KINDS

    @property
    def strength(self) -> tuple[Any, ...]:
        """§7 rule 2: (card count, top) for ordinary plays, the §8 key for bombs."""
        return self.key if self.is_bomb else (self.cards, self.top)

    def describe(self) -> str:
        pattern = " ".join(Card(r).text * n for r, n in self.ranks)
        return f"{self.kind} [{pattern}] star={self.star} top={self.top} wilds={self.wilds}"


# §8, one plain tuple builder per bomb-order family. Python compares the tuples
# lexicographically; the larger tuple is the stronger bomb.

def _key_baibian(kind: str, star: int, cards: int, y: int, top: int, wrap: int,
                 ranks: tuple[tuple[int, int], ...]) -> tuple[Any, ...]:
    # star, then top; three-joker bomb smallest at 6 stars, four-joker bomb largest at 7.
    if kind == "joker_bomb_3":
        return (star, 0, 0)
    if kind == "joker_bomb_4":
        return (star, 2, 0)
    return (star, 1, top)


def _key_bianfeng(kind: str, star: int, cards: int, y: int, top: int, wrap: int,
                  ranks: tuple[tuple[int, int], ...]) -> tuple[Any, ...]:
    # star, then fewer cards, then wrap class (A23.. < ..KA2 < other), then top.
    if kind == "joker_bomb_3":
        return (star, 0, 0, 0, 0)
    if kind == "joker_bomb_4":
        return (star, 2, 0, 0, 0)
    return (star, 1, -cards, wrap, top)


def _key_fengkuang(kind: str, star: int, cards: int, y: int, top: int, wrap: int,
                   ranks: tuple[tuple[int, int], ...]) -> tuple[Any, ...]:
    # star, then fewer links (N-bomb: 1), then top, then more cards.
    if kind == "joker_bomb_3":
        return (star, 0, 0, 0, 0)
    if kind == "joker_bomb_4":
        return (star, 2, 0, 0, 0)
    return (star, 1, -y, top, cards)


def _key_qianbian(kind: str, star: int, cards: int, y: int, top: int, wrap: int,
                  ranks: tuple[tuple[int, int], ...]) -> tuple[Any, ...]:
    # star; at equal stars N-bomb > four-joker bomb > chain bomb > three-joker bomb;
    # N-bombs by top; chain bombs by fewer cards, then top.
    if kind == "joker_bomb_3":
        return (star, 0, 0, 0)
    if kind == "chain_bomb":
        return (star, 1, -cards, top)
    if kind == "joker_bomb_4":
        return (star, 2, 0, 0)
    return (star, 3, 0, top)


def _key_huopin(kind: str, star: int, cards: int, y: int, top: int, wrap: int,
                ranks: tuple[tuple[int, int], ...]) -> tuple[Any, ...]:
    # uncapped star; at equal stars N-bomb > chain bomb > joker bombs; N-bombs by rank;
    # chains by more links, more cards, then ranks listed by count desc (ties: rank desc),
    # with the 2 at its natural position.
    if kind in ("joker_bomb_3", "joker_bomb_4"):
        return (star, 0, 0, 0, ())
    if kind == "chain_bomb":
        listed = tuple(r for r, n in sorted(ranks, key=lambda rn: (-rn[1], -rn[0])))
        return (star, 1, y, cards, listed)
    return (star, 2, 0, 0, (top,))


BOMB_KEY = {
    "baibian": _key_baibian,
    "bianfeng": _key_bianfeng,
    "fengkuang": _key_fengkuang,
    "qianbian": _key_qianbian,
    "huopin": _key_huopin,
}


def _reading(rules: Rules, kind: str, ranks: Sequence[tuple[int, int]], wilds: Sequence[int],
             star: int = 0, phase: int = 0, regular: bool = False,
             wrap: int = 2) -> RefReading:
    ranks = tuple(ranks)
    cards = sum(n for _, n in ranks)
    top = ranks[-1][0]
    y = len(ranks)
    key = BOMB_KEY[rules.family](kind, star, cards, y, top, wrap, ranks) if kind in BOMB_KINDS else ()
    return RefReading(kind=kind, cards=cards, top=top, length=y, star=star, phase=phase,
                      regular=regular, wrap_class=wrap, ranks=ranks, wilds=tuple(wilds), key=key)


def _joker_readings(jokers: list[int], rules: Rules) -> list[RefReading]:
    """§4: a play made only of jokers is read naturally. Jokers are not natural ranks, so
    these readings list no ``ranks``; their top is the highest joker."""
    n, top = len(jokers), max(jokers)
    if n == 1:
        kind, star = "single", 0
    elif n == 2 and jokers[0] == jokers[1]:
        kind, star = "pair", 0
    elif n == 3:
        kind, star = "joker_bomb_3", 6
    elif n == 4:
        kind, star = "joker_bomb_4", 7
    else:
        return []  # SJ BJ, or more jokers than any pattern holds
    key = BOMB_KEY[rules.family](kind, star, n, 1, top, 2, ()) if kind in BOMB_KINDS else ()
    return [RefReading(kind=kind, cards=n, top=top, length=1, star=star, phase=0,
                       regular=kind in BOMB_KINDS, wrap_class=2, ranks=(), wilds=(), key=key)]


def _chain_order(ranks: list[int], rules: Rules) -> list[int] | None:
    """The ranks in chain order if they are consecutive per §6, else None.

    Without wrap: consecutive within lowest…A. With wrap: an arc of the cycle
    3 4 … K A 2 3 …, which may hold the 2 only together with the A.
    """
    span = set(ranks)
    if not rules.chain_wrap:
        lo = min(span)
        window = list(range(lo, lo + len(span)))
        return window if set(window) == span and window[-1] <= ACE and lo >= rules.lowest else None
    for start in range(13):
        arc = [(start + i) % 13 for i in range(len(span))]
        if set(arc) == span:
            return arc if TWO not in arc or ACE in arc else None
    return None


def _concrete_readings(counts: dict[int, int], wilds: tuple[int, ...],
                       rules: Rules) -> list[RefReading]:
    """Every §5/§6 pattern that this concrete multiset of natural ranks forms."""
    distinct = sorted(counts)
    n = sum(counts.values())
    found = []
    if len(distinct) == 1:
        r = distinct[0]
        one = [(r, n)]
        kind = {1: "single", 2: "pair", 3: "triple"}.get(n)
        if kind:
            found.append(_reading(rules, kind, one, wilds))
        else:
            found.append(_reading(rules, "bomb", one, wilds, star=n, phase=n, regular=True))
    # Straight / pair chain / triple chain: consecutive within lowest…A, never wrapping.
    in_row = (distinct[-1] <= ACE and distinct[0] >= rules.lowest
              and distinct == list(range(distinct[0], distinct[0] + len(distinct))))
    each = {counts[r] for r in distinct}
    if in_row and len(each) == 1:
        per = each.pop()
        links = [(r, per) for r in distinct]
        if per == 1 and len(distinct) >= 5:
            found.append(_reading(rules, "straight", links, wilds))
        elif per == 2 and len(distinct) >= 3:
            found.append(_reading(rules, "pair_chain", links, wilds))
        elif per == 3 and len(distinct) >= 3:
            found.append(_reading(rules, "triple_chain", links, wilds))
    # Chain bomb: Y >= min consecutive ranks, each at least 4 cards.
    if len(distinct) >= max(2, rules.chain_min) and min(counts.values()) >= 4:
        order = _chain_order(distinct, rules)
        sizes = [counts[r] for r in distinct]
        if order is not None and (not rules.chain_equal or len(set(sizes)) == 1):
            x = {"common": sizes[0], "largest": max(sizes), "smallest": min(sizes)}[rules.chain_x]
            if TWO in order and TWO != order[-1]:
                wrap = 0   # a 3 follows the 2 (A23, KA23, A234)
            elif TWO in order:
                wrap = 1   # ends at the 2 (KA2, QKA2)
            else:
                wrap = 2
            found.append(_reading(rules, "chain_bomb", [(r, counts[r]) for r in order], wilds,
                                  star=x + len(order), phase=x,
                                  regular=len(set(sizes)) == 1, wrap=wrap))
    return found


def order_readings(readings: Iterable[RefReading]) -> list[RefReading]:
    """§7 rule 2 order: bombs strongest first, then by type, each highest top first."""
    readings = list(readings)
    bombs = sorted((r for r in readings if r.is_bomb), key=lambda r: r.key, reverse=True)
    plain = sorted((r for r in readings if not r.is_bomb),
                   key=lambda r: (ORDINARY_KINDS.index(r.kind), -r.top))
    return bombs + plain


def placements_ref(cards: str | Iterable[int] | Iterable[Card],
                   variant: str | Variant) -> dict[tuple[Any, ...], list[RefReading]]:
    """Every reading of every wild placement, grouped by (kind, strength) (§7 rule 2).

    Each group lists its placements lowest first (wild rank positions, ascending).
    Does not check deck limits (see :func:`deck_problems`).
    """
    rules = rules_of(variant)
    ranks = [c.rank for c in as_cards(cards)]
    jokers = sorted(r for r in ranks if r >= SJ)
    naturals = [r for r in ranks if r < SJ]
    if not ranks:
        return {}
    if not naturals:
        return {(r.kind, r.strength): [r] for r in _joker_readings(jokers, rules)}
    if any(j not in rules.wild for j in jokers):
        return {}  # §4: a non-wild joker mixed with naturals
    groups: dict[tuple[Any, ...], list[RefReading]] = {}
    natural_counts = dict(Counter(naturals))
    # combinations_with_replacement yields placements in ascending lexicographic order.
    for wilds in combinations_with_replacement(rules.naturals, len(jokers)):
        counts = dict(natural_counts)
        for w in wilds:
            counts[w] = counts.get(w, 0) + 1
        for reading in _concrete_readings(counts, wilds, rules):
            groups.setdefault((reading.kind, reading.strength), []).append(reading)
    return groups


def classify_ref(cards: str | Iterable[int] | Iterable[Card],
                 variant: str | Variant) -> list[RefReading]:
    """All readings of a play in §7 rule-2 order (the first is the primary); [] if invalid.

    One reading per (kind, strength), with the lowest wild placement. Does not check deck
    limits (see :func:`deck_problems`).
    """
    return order_readings(group[0] for group in placements_ref(cards, variant).values())


# ----------------------------------------------------------------------------- beating (§8)

def reading_beats(b: RefReading, a: RefReading) -> bool:
    """§8: does reading b, played on top of reading a, beat it? (same variant)"""
    if b.is_bomb and a.is_bomb:
        return b.key > a.key
    if b.is_bomb or a.is_bomb:
        return b.is_bomb
    return b.kind == a.kind and b.cards == a.cards and b.top > a.top


def beats_ref(b_cards: str | Iterable[int] | Iterable[Card], a: RefReading | str | Iterable[int],
              variant: str | Variant) -> bool:
    """§7 rule 5: b beats a when any of b's readings beats a (a's primary if given as cards)."""
    if not isinstance(a, RefReading):
        readings = classify_ref(a, variant)
        if not readings:
            raise ValueError("the play to beat has no reading")
        a = readings[0]
    return any(reading_beats(r, a) for r in classify_ref(b_cards, variant))


def play_reading_ref(cards: str | Iterable[int] | Iterable[Card], variant: str | Variant,
                     to_beat: RefReading | None = None,
                     declare: str | None = None) -> RefReading | None:
    """§7 rules 4 and 6: the reading that stands on the table, or None if the play is illegal.

    ``declare`` names a kind; the strongest reading of that kind is meant (when following:
    the strongest of that kind that beats).
    """
    readings = classify_ref(cards, variant)
    if declare is not None:
        readings = [r for r in readings if r.kind == declare]
    if to_beat is not None:
        readings = [r for r in readings if reading_beats(r, to_beat)]
    return readings[0] if readings else None


# ----------------------------------------------------------------------------- comparing

#: Reading attributes compared with the core's. The key is compared by order, not by value
#: (its tuple layout is each implementation's own business), and ``wilds`` as a multiset
#: (the core lists a wrap chain's wilds in chain order, the reference ascending).
VIEW_FIELDS = ("kind", "cards", "top", "length", "star", "phase", "regular", "wrap_class",
               "ranks", "wilds")


def view(reading: Any) -> tuple[Any, ...]:
    """A reading's comparable attributes; works for RefReading and the core's Reading.

    docs/design.md defines ``top`` for joker singles and pairs only, so a joker bomb's top is
    left out (the core reports 14 even for ``SJ SJ SJ`` in a three-SJ house deck).
    """
    values = []
    for f in VIEW_FIELDS:
        value = getattr(reading, f)
        if f == "ranks":
            value = tuple(map(tuple, value))
        elif f == "wilds":
            value = tuple(sorted(value))
        elif f == "top" and reading.kind in ("joker_bomb_3", "joker_bomb_4"):
            value = None
        values.append(value)
    return tuple(values)


def show(readings: Iterable[Any]) -> str:
    """One line per reading, for mismatch reports."""
    lines = [", ".join(f"{f}={v!r}" for f, v in zip(VIEW_FIELDS, view(r), strict=True))
             for r in readings]
    return "\n".join(f"    {line}" for line in lines) or "    (no reading: invalid)"


def core_readings(cards: Any, variant: str) -> list[Any]:
    """The core's readings in its order; [] when it says InvalidPlay."""
    try:
        return list(core.classify(cards, variant).readings)
    except core.InvalidPlay:
        return []


def reading_diff(cards: Any, variant: str) -> str | None:
    """None when core and reference read the cards identically, else a printable diff."""
    ref = classify_ref(cards, variant)
    core = core_readings(cards, variant)
    if [view(r) for r in ref] == [view(r) for r in core]:
        return None
    text = " ".join(core.format_cards(core.parse_cards(cards)))
    return (f"{variant}: {text}\n  reference:\n{show(ref)}\n  core:\n{show(core)}")
