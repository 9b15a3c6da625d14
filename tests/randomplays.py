"""Seeded random deals and plays for tests and benchmarks.

Plays are drawn from the variant's real deck, so they never break its copy limits (§2, §3),
and are biased towards what is rare in a uniform draw but matters most to the rules: wild
jokers, bombs, chain bombs (including wrap-around windows through ``A 2``), long straights
and chains, all-joker plays, and near misses (one card off a pattern). Every generator takes
a :class:`random.Random`, so a seed reproduces a run.

Usable from benchmarks as ``from tests.randomplays import PlayMaker`` (repository root on
``sys.path``) and from tests as ``from randomplays import PlayMaker``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

from shuangkou.core.variants import Variant, get_variant

SJ, BJ, ACE, TWO = 13, 14, 11, 12
NO_SUIT = 4

# How many jokers a pattern-built play mixes in, and how likely each count is.
JOKER_COUNT_WEIGHTS = ((0, 38), (1, 30), (2, 18), (3, 9), (4, 5))


def card(rank: int, suit: int = NO_SUIT) -> int:
    """Card code of docs/design.md: 1 + rank × 5 + suit (4 = no suit)."""
    return 1 + rank * 5 + suit


def full_deck(variant: str | Variant) -> list[int]:
    """Every card of the variant's deck (§3), suited, as codes."""
    v = get_variant(variant)
    deck = [card(r, s) for _ in range(v.decks) for r in range(v.lowest_rank, 13) for s in range(4)]
    return deck + [card(SJ)] * v.joker_copies + [card(BJ)] * v.joker_copies


def deal(variant: str | Variant, rng: random.Random) -> list[list[int]]:
    """Four hands of the variant's hand size from a shuffled deck."""
    v = get_variant(variant)
    deck = full_deck(v)
    rng.shuffle(deck)
    return [sorted(deck[i * v.hand_size:(i + 1) * v.hand_size]) for i in range(4)]


class PlayMaker:
    """Random plays for one variant. ``play()`` returns a list of card codes (1..hand size)."""

    def __init__(self, variant: str | Variant, rng: random.Random) -> None:
        self.v = get_variant(variant)
        self.rng = rng
        self.ranks = list(range(self.v.lowest_rank, 13))
        self.wild = [card(SJ if j == "SJ" else BJ) for j in self.v.wild_jokers]
        self.strategies: list[tuple[Callable[[], list[int]], int]] = [
            (self.sub_hand, 20),
            (self.same_rank, 22),
            (self.run, 18),
            (self.chain_bomb, 20),
            (self.jokers_only, 5),
            (self.near_miss, 15),
        ]

    # -------------------------------------------------------------- building blocks
    def _naturals(self, rank: int, n: int) -> list[int]:
        """n cards of one rank with distinct suited faces where possible; some suitless."""
        n = min(n, 4 * self.v.decks)
        faces = [s for _ in range(self.v.decks) for s in range(4)]
        self.rng.shuffle(faces)
        return [card(rank, NO_SUIT if self.rng.random() < 0.25 else s) for s in faces[:n]]

    def _jokers(self) -> list[int]:
        """A biased number of jokers; mostly wild ones, sometimes any joker."""
        counts, weights = zip(*JOKER_COUNT_WEIGHTS, strict=True)
        k = min(self.rng.choices(counts, weights)[0], 2 * self.v.joker_copies)
        pool = [card(SJ)] * self.v.joker_copies + [card(BJ)] * self.v.joker_copies
        if self.wild and self.rng.random() < 0.85:
            pool = [c for c in pool if c in self.wild]
        self.rng.shuffle(pool)
        return pool[:k]

    def _drop(self, cards: list[int], k: int) -> list[int]:
        """Remove k random cards (to be replaced by wilds)."""
        cards = list(cards)
        for _ in range(min(k, len(cards) - 1)):
            cards.pop(self.rng.randrange(len(cards)))
        return cards

    def _finish(self, cards: list[int]) -> list[int]:
        while len(cards) > self.v.hand_size:
            cards.pop(self.rng.randrange(len(cards)))
        self.rng.shuffle(cards)
        return cards

    # -------------------------------------------------------------- strategies
    def sub_hand(self) -> list[int]:
        """A random handful of a random deal's hand (small plays most likely)."""
        hand = deal(self.v, self.rng)[0]
        k = min(len(hand), self.rng.choice((1, 1, 2, 2, 3, 4, 5, 5, 6, 7, 8, 10, 12)))
        return self.rng.sample(hand, k)

    def same_rank(self) -> list[int]:
        """Single, pair, triple or N-bomb of one rank, possibly with wilds standing in."""
        rank = self.rng.choice(self.ranks)
        n = self.rng.choice((1, 2, 3, 4, 4, 5, 5, 6, 7, 8, 4 * self.v.decks))
        jokers = self._jokers()
        return self._finish(self._drop(self._naturals(rank, n), len(jokers) // 2) + jokers)

    def run(self) -> list[int]:
        """A straight, pair chain or triple chain attempt, with wilds filling gaps."""
        per = self.rng.choice((1, 2, 3))
        length = self.rng.randint(3, 8) if per > 1 else self.rng.randint(4, 10)
        start = self.rng.randrange(len(self.ranks))
        cards = []
        for i in range(length):
            rank = self.ranks[(start + i) % len(self.ranks)]
            cards += self._naturals(rank, per)
        jokers = self._jokers()
        return self._finish(self._drop(cards, len(jokers)) + jokers)

    def chain_bomb(self) -> list[int]:
        """Y >= 2 adjacent bombs (window may wrap through 2), counts 4..8, wilds mixed in."""
        y = self.rng.choice((2, 3, 3, 3, 4, 4, 5, 6))
        if self.v.chain_wrap != "none" and self.rng.random() < 0.4:
            start = self.rng.choice((ACE - y + 1, ACE - y + 2, ACE - 1, ACE, TWO)) % 13
        else:
            start = self.rng.choice(self.ranks)
        equal = self.rng.random() < 0.5
        base = self.rng.choice((4, 4, 4, 5, 5, 6))
        cards = []
        for i in range(y):
            rank = self.ranks[(start - self.v.lowest_rank + i) % len(self.ranks)]
            count = base if equal else self.rng.choice((4, 4, 5, 5, 6, 7, 8))
            cards += self._naturals(rank, count)
        jokers = self._jokers()
        return self._finish(self._drop(cards, len(jokers)) + jokers)

    def jokers_only(self) -> list[int]:
        pool = [card(SJ)] * self.v.joker_copies + [card(BJ)] * self.v.joker_copies
        return self.rng.sample(pool, self.rng.randint(1, len(pool))) if pool else self.sub_hand()

    def near_miss(self) -> list[int]:
        """A pattern with one card swapped for a random one (mostly invalid plays)."""
        maker = self.rng.choice((self.same_rank, self.run, self.chain_bomb))
        cards = maker()
        if cards:
            cards[self.rng.randrange(len(cards))] = card(self.rng.choice(self.ranks),
                                                         self.rng.randrange(5))
        return cards

    def play(self) -> list[int]:
        makers, weights = zip(*self.strategies, strict=True)
        return self.rng.choices(makers, weights)[0]()

    def plays(self, n: int) -> Iterator[list[int]]:
        for _ in range(n):
            yield self.play()
