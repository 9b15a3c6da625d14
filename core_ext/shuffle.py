"""The fair deal: a variant's deck shuffled from a seed, the same on every machine and version.

A game server that lets the service deal (StartRound ``seed``) can show players, before the
deal, the seed's commitment (:func:`commitment`, SHA-256), reveal the seed after the round,
and anyone can re-derive the deal with :func:`deal_from_seed` (docs/rounds.md "A fair deal").
The shuffle is fixed by this module alone — no platform random generator is involved:

1. the deck is the variant's cards in ascending card-code order (``cards.deck``);
2. random numbers come from SHA-256 in counter mode: block *i* (from 0) is
   ``SHA-256(DOMAIN || seed || i as 8 bytes big-endian)``, read as four 64-bit big-endian
   words, in order;
3. a number below *n* is the next word *w* accepted by rejection (``w < 2**64 - 2**64 % n``),
   taken modulo *n*, so every value is equally likely;
4. Fisher–Yates: for *i* from the last position down to 1, swap position *i* with a number
   below *i* + 1;
5. the shuffled deck is dealt one card at a time, card *k* to dealt seat *k* mod 4;
6. the revealed card (明牌, §9) is the card at the next number below the deck's size; its
   holder (that position mod 4) is the leader. In a three-deck variant the revealed card
   cannot form the teams, so none is revealed (the request states the teams, or they are as
   dealt).

:data:`SHUFFLE` names this procedure; a change to any step would be a new name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from .cards import SEATS, card_rank, deck
from .errors import ShuangkouError
from .variants import Variant, get_variant

__all__ = ["SHUFFLE", "DOMAIN", "SeededDeal", "deal_from_seed", "commitment", "check_seed",
           "MIN_SEED_BYTES", "MAX_SEED_BYTES"]

SHUFFLE = "sha256-ctr-fisher-yates-v1"
DOMAIN = b"shuangkou deal v1\x00"
MIN_SEED_BYTES = 16       # 128 bits: a seed a player cannot guess from their own hand
MAX_SEED_BYTES = 64


@dataclass(frozen=True)
class SeededDeal:
    """What a seed deals: the four hands by dealt seat (sorted codes), the leader, and the
    revealed card (None in a three-deck variant)."""

    hands: tuple[tuple[int, ...], ...]
    leader: int
    revealed: int | None


def check_seed(seed: bytes, field: str = "seed") -> bytes:
    """``seed`` if it is 16 to 64 bytes; else ShuangkouError naming ``field``."""
    if not isinstance(seed, (bytes, bytearray)) or not MIN_SEED_BYTES <= len(seed) <= MAX_SEED_BYTES:
        size = len(seed) if isinstance(seed, (bytes, bytearray)) else "no"
        raise ShuangkouError(f"a seed is {MIN_SEED_BYTES} to {MAX_SEED_BYTES} bytes (e.g. 32 "
                             f"random bytes); got {size} bytes", field)
    return bytes(seed)


def commitment(seed: bytes) -> bytes:
    """The seed's commitment: SHA-256 of the seed (published before the deal)."""
    return hashlib.sha256(check_seed(seed)).digest()


def _words(seed: bytes) -> Iterator[int]:
    block = 0
    while True:
        digest = hashlib.sha256(DOMAIN + seed + block.to_bytes(8, "big")).digest()
        for k in range(0, 32, 8):
            yield int.from_bytes(digest[k:k + 8], "big")
        block += 1


def _below(words: Iterator[int], n: int) -> int:
    limit = 2**64 - 2**64 % n
    while True:
        w = next(words)
        if w < limit:
            return w % n


def deal_from_seed(variant: str | Variant, seed: bytes) -> SeededDeal:
    """The deal of ``seed`` under ``variant`` (the module's procedure, step by step).

    >>> d = deal_from_seed("baibian", bytes(range(32)))
    >>> [len(h) for h in d.hands], d.leader, d.revealed in d.hands[d.leader]
    ([27, 27, 27, 27], 2, True)
    """
    v = get_variant(variant)
    words = _words(check_seed(seed))
    cards = deck(v.decks, v.lowest_rank, v.joker_copies)
    for i in range(len(cards) - 1, 0, -1):
        j = _below(words, i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    hands = tuple(tuple(sorted(cards[s::SEATS])) for s in range(SEATS))
    at = _below(words, len(cards))
    card = cards[at]
    copies = v.joker_copies if card_rank(card) >= 13 else v.decks
    return SeededDeal(hands, at % SEATS, card if copies == 2 else None)
