"""Two independent references for legal-play enumeration (docs/enumeration.md).

Neither shares code with ``core._enumerate``; both classify multisets with
``core.classify`` (classification is checked against its own twin elsewhere) and apply
the listing rules themselves:

* a play is a sub-multiset of the hand's faces (13 natural ranks, SJ, BJ);
* leading, it is listed once per *class* among its readings: each ordinary type, and
  "bombs" (every bomb reading together), with the strongest reading of the class;
* following, once per class holding a reading that beats the target, with the first
  (strongest) reading of the class that beats.

:func:`brute_force` tries **every** sub-multiset of the hand's count vector — obviously
complete, usable up to about 14 cards. :func:`by_patterns` works the other way round: it
walks every pattern instance of §5/§6 (a window, per-link counts) and every way the hand can
realise it (naturals, the rest wild jokers, at least one natural), collecting multisets in
a set per class — fast enough for full 27/28-card hands, so it is the second method behind
the perft fixtures. Both return ``{(counts, class): Reading}``.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from itertools import product
from typing import Any

from shuangkou import core
from shuangkou.core.errors import InvalidPlay
from shuangkou.core.variants import Variant, get_variant

SJ, BJ, ACE, TWO = 13, 14, 11, 12
NFACES = 15
KINDS: tuple[str, ...] = tuple(core.KINDS)
ORDINARY = KINDS[:6]
BOMBS = "bombs"                      # the class of every bomb reading
CLASSES = (*ORDINARY, BOMBS)

Counts = tuple[int, ...]             # 15 faces: ranks 3..2, SJ, BJ
Plays = dict[tuple[Counts, str], Any]  # (counts, class) -> core Reading


# ----------------------------------------------------------------------------- cards

def face(code: int) -> int:
    """Rank position of a card code (docs/design.md: code = 1 + rank × 5 + suit)."""
    return (code - 1) // 5


def counts_of(codes: Iterable[int]) -> Counts:
    c = [0] * NFACES
    for code in codes:
        c[face(code)] += 1
    return tuple(c)


def codes_of(counts: Sequence[int]) -> list[int]:
    """Rank-only cards (jokers as themselves) for a count vector."""
    return [1 + r * 5 + 4 for r in range(NFACES) for _ in range(counts[r])]


def class_of(kind: str) -> str:
    return BOMBS if kind in core.BOMB_KINDS else kind


# ----------------------------------------------------------------------------- listing rules

class Readings:
    """``core.classify`` of count vectors, cached per variant (small multisets repeat)."""

    def __init__(self, variant: str | Variant) -> None:
        self.variant = get_variant(variant)
        self.cache: dict[Counts, tuple[Any, ...]] = {}

    def __call__(self, counts: Counts) -> tuple[Any, ...]:
        found = self.cache.get(counts)
        if found is None:
            try:
                found = tuple(core.classify(codes_of(counts), self.variant).readings)
            except InvalidPlay:
                found = ()
            self.cache[counts] = found
        return found


def entries(readings: Sequence[Any], target: Any | None) -> dict[str, Any]:
    """Class -> listed reading for one multiset (readings in §7 rule-2 order)."""
    out: dict[str, Any] = {}
    for r in readings:
        cls = class_of(r.kind)
        if cls in out:
            continue
        if target is None or r.beats(target):
            out[cls] = r
    return out


def per_kind(plays: Plays) -> dict[str, int]:
    """Plays per kind of their listed reading, every kind in KINDS order."""
    out = dict.fromkeys(KINDS, 0)
    for reading in plays.values():
        out[reading.kind] += 1
    return out


# ----------------------------------------------------------------------------- brute force

def sub_multisets(hand: Counts) -> Iterator[Counts]:
    """Every non-empty sub-multiset of a count vector."""
    for sub in product(*(range(n + 1) for n in hand)):
        if any(sub):
            yield sub


def brute_force(hand: Sequence[int], variant: str | Variant,
                targets: Sequence[Any | None] = (None,),
                readings: Readings | None = None) -> list[Plays]:
    """Every listed play per target (None = leading), by trying every sub-multiset."""
    read = readings or Readings(variant)
    results: list[Plays] = [{} for _ in targets]
    for sub in sub_multisets(counts_of(hand)):
        rds = read(sub)
        if not rds:
            continue
        for result, target in zip(results, targets, strict=True):
            for cls, r in entries(rds, target).items():
                result[(sub, cls)] = r
    return results


# ----------------------------------------------------------------------------- by patterns

def _wild_counts(v: Variant, hand: Counts) -> tuple[int, int]:
    return (hand[SJ] if "SJ" in v.wild_jokers else 0, hand[BJ] if "BJ" in v.wild_jokers else 0)


def realise(need: dict[int, int], hand: Counts, ws: int, wb: int) -> Iterator[Counts]:
    """Every multiset of the hand that makes a pattern needing ``need[rank]`` cards per rank:
    some naturals of each rank, the rest wild jokers (any SJ/BJ mix), ≥ 1 natural."""
    ranks = sorted(need)
    w = ws + wb
    base = [0] * NFACES

    def fill(i: int, g: int) -> Iterator[Counts]:
        if i == len(ranks):
            if any(base[:13]):
                for s in range(max(0, g - wb), min(g, ws) + 1):
                    base[SJ], base[BJ] = s, g - s
                    yield tuple(base)
                base[SJ] = base[BJ] = 0
            return
        r = ranks[i]
        for wild in range(max(0, need[r] - hand[r]), min(need[r], w - g) + 1):
            base[r] = need[r] - wild
            yield from fill(i + 1, g + wild)
        base[r] = 0

    yield from fill(0, 0)


def chain_windows(v: Variant) -> Iterator[list[int]]:
    """Rank lists of the chain-bomb windows of §6 (consecutive; 2 only after A, wrap rule)."""
    for start in range(v.lowest_rank, 13):
        for y in range(v.chain_min_links, 13):
            ranks = [(start + i) % 13 for i in range(y)]
            if v.chain_wrap == "none":
                if start + y - 1 > ACE:
                    break
            elif TWO in ranks and (ACE not in ranks or ranks.index(TWO) < ranks.index(ACE)):
                continue          # 2 must come right after A in chain order
            yield ranks


def _pattern_multisets(v: Variant, hand: Counts, cls: str) -> set[Counts]:
    """Every multiset of the hand realising some pattern instance of one class."""
    ws, wb = _wild_counts(v, hand)
    w = ws + wb
    naturals = range(v.lowest_rank, 13)
    run = range(v.lowest_rank, ACE + 1)         # ordinary chains: 3 (or 7) .. A
    out: set[Counts] = set()

    def add(need: dict[int, int]) -> None:
        out.update(realise(need, hand, ws, wb))

    def jokers(s: int, b: int) -> None:
        if s <= hand[SJ] and b <= hand[BJ]:
            out.add((0,) * 13 + (s, b))

    if cls == "single":
        for r in range(NFACES):
            if hand[r]:
                out.add(tuple(int(i == r) for i in range(NFACES)))
    elif cls in ("pair", "triple"):
        width = 2 if cls == "pair" else 3
        for r in naturals:
            add({r: width})
        if cls == "pair":
            jokers(2, 0)
            jokers(0, 2)
    elif cls in ("straight", "pair_chain", "triple_chain"):
        width, shortest = {"straight": (1, 5), "pair_chain": (2, 3), "triple_chain": (3, 3)}[cls]
        for links in range(shortest, len(run) + 1):
            for first in run[: len(run) - links + 1]:
                add({r: width for r in range(first, first + links)})
    else:
        for r in naturals:                               # N-bombs
            for n in range(4, hand[r] + w + 1):
                add({r: n})
        for s in range(5):                               # joker bombs
            for b in range(5):
                if s + b in (3, 4):
                    jokers(s, b)
        for ranks in chain_windows(v):                   # chain bombs
            if sum(max(0, 4 - hand[r]) for r in ranks) > w:
                continue
            tops = [range(4, hand[r] + w + 1) for r in ranks]
            if v.chain_counts == "equal":
                shapes: Iterable[tuple[int, ...]] = (
                    (k,) * len(ranks) for k in range(4, min(t.stop for t in tops)))
            else:
                shapes = product(*tops)
            for shape in shapes:
                if sum(max(0, k - hand[r]) for k, r in zip(shape, ranks, strict=True)) <= w:
                    add(dict(zip(ranks, shape, strict=True)))
    return out


def by_patterns(hand: Sequence[int], variant: str | Variant, target: Any | None = None,
                readings: Readings | None = None) -> Plays:
    """Every listed play, found pattern instance by pattern instance (no sub-multiset search).

    Following an ordinary play only its type and bombs are walked; following a bomb, bombs.
    """
    v = get_variant(variant)
    read = readings or Readings(v)
    counts = counts_of(hand)
    if target is None:
        classes: Sequence[str] = CLASSES
    elif target.is_bomb:
        classes = (BOMBS,)
    else:
        classes = (target.kind, BOMBS)
    plays: Plays = {}
    for cls in classes:
        for sub in _pattern_multisets(v, counts, cls):
            rds = read(sub)
            if not any(class_of(r.kind) == cls for r in rds):
                raise AssertionError(f"{cls} pattern realised as {codes_of(sub)} has no "
                                     f"{cls} reading in {v.id}")
            listed = entries(rds, target).get(cls)
            if listed is not None:
                plays[(sub, cls)] = listed
    return plays


# ----------------------------------------------------------------------------- random hands

def full_deck(variant: str | Variant) -> list[int]:
    v = get_variant(variant)
    deck = [1 + r * 5 + s for _ in range(v.decks) for r in range(v.lowest_rank, 13)
            for s in range(4)]
    return deck + [1 + SJ * 5 + 4] * v.joker_copies + [1 + BJ * 5 + 4] * v.joker_copies


def random_hand(variant: str | Variant, rng: random.Random, size: int,
                jokers: int | None = None, ranks: int | None = None) -> list[int]:
    """``size`` cards of the variant's deck with exactly ``jokers`` jokers (default: as dealt).

    ``ranks``: draw the naturals from a window of that many consecutive ranks (so that
    bombs, chains and chain bombs are common)."""
    v = get_variant(variant)
    deck = full_deck(v)
    joker_pool = [c for c in deck if face(c) >= SJ]
    natural_pool = [c for c in deck if face(c) < SJ]
    if ranks is not None:
        first = rng.randrange(v.lowest_rank, 13 - ranks + 1)
        natural_pool = [c for c in natural_pool if first <= face(c) < first + ranks]
    if jokers is None:
        hand = rng.sample(natural_pool + joker_pool, size)
    else:
        jokers = min(jokers, len(joker_pool), size)
        hand = rng.sample(joker_pool, jokers) + rng.sample(natural_pool,
                                                           min(size - jokers, len(natural_pool)))
    return sorted(hand)
