"""The card and seat vocabulary, in one place (RULES.md §1–§2, docs/design.md "Card codes").

Every other module takes card-code arithmetic, rank names and seat arithmetic from here.
The compiled core keeps a C twin of the code arithmetic (``code_rank``/``code_suit`` in
``_core.pxd``) for its hot loops; ``tests/test_cards.py`` checks the two agree.

A card is an ``int`` code ``1 + rank * 5 + suit``: ``rank`` is the position ``3`` = 0 …
``A`` = 11, ``2`` = 12, ``SJ`` = 13, ``BJ`` = 14; ``suit`` is ``S H D C`` = 0–3 or 4 for no
suit (rank-only cards such as ``7``; jokers). Code 0 is never a card.

    >>> card_code(RANK_CHARS.index("7"), SUIT_CHARS.index("S")), card_code(BJ)
    (21, 75)
    >>> card_rank(64), card_suit(64), rank_name(card_rank(64)), rank_name(SJ)
    (12, 3, '2', 'SJ')
    >>> partner(1), next_seat(3), seats_after(2), team(3)
    (3, 0, (3, 0, 1), 1)
    >>> len(deck(2, 0, 2)), deck_copies(card_code(0, 0), 3, 4, 2), rank_copies(TWO, 2, 0, 2)
    (108, 0, 8)
    >>> SUIT_SYMBOLS[card_suit(card_code(4, 1))], is_seat(3), is_seat(4), is_seat(True)
    ('♥', True, False, False)
"""

from __future__ import annotations

from typing import TypeGuard

from .errors import CardError, ShuangkouError

__all__ = [
    "RANK_CHARS", "SUIT_CHARS", "SUIT_SYMBOLS", "RED_SUITS", "SUITS", "NO_SUIT", "NATURAL_RANKS", "ACE", "TWO", "SJ", "BJ",
    "CARD_SJ", "CARD_BJ", "MAX_CODE", "SEATS",
    "CODE_RANKS", "JOKER_CODES", "card_code", "card_rank", "card_suit", "is_card", "is_suited", "rank_name", "rank_position",
    "partner", "next_seat", "seats_after", "team", "same_team", "is_seat", "check_seat", "deck",
    "deck_copies", "rank_copies",
]

# ------------------------------------------------------------------ ranks and suits
RANK_CHARS = "3456789TJQKA2"      # natural ranks by position 0..12
SUIT_CHARS = "SHDC"               # suits by index 0..3
SUIT_SYMBOLS = "♠♥♦♣"             # the same suits as people read them (pages, terminal)
RED_SUITS = (1, 2)                # ♥ ♦, printed red
SUITS = len(SUIT_CHARS)           # a natural rank has one card of each suit per deck
NO_SUIT = 4                       # the suit index of rank-only cards and jokers
NATURAL_RANKS = 13
ACE, TWO = 11, 12                 # positions of A and 2 (wrap-around chains run A 2 3)
SJ, BJ = 13, 14                   # joker positions in a count vector
JOKER_NAMES = ("SJ", "BJ")

# ------------------------------------------------------------------ card codes


def card_code(rank: int, suit: int = NO_SUIT) -> int:
    """The code of a card: ``1 + rank * 5 + suit`` (suit 4 = none; jokers have no suit)."""
    if not 0 <= rank <= BJ or not 0 <= suit <= NO_SUIT or (rank >= SJ and suit != NO_SUIT):
        raise CardError(f"no card has rank {rank} and suit {suit}", "cards")
    return 1 + rank * 5 + suit


CARD_SJ = card_code(SJ)           # 70
CARD_BJ = card_code(BJ)           # 75
MAX_CODE = CARD_BJ
JOKER_CODES = {"SJ": CARD_SJ, "BJ": CARD_BJ}    # a joker's name -> its code


def card_rank(code: int) -> int:
    """Rank position of a card code (0 = 3 … 12 = 2, 13 = SJ, 14 = BJ)."""
    return (code - 1) // 5


#: ``card_rank`` as a table, indexed by code (for loops over a hand's cards).
CODE_RANKS = tuple(card_rank(c) for c in range(MAX_CODE + 1))


def card_suit(code: int) -> int:
    """Suit index of a card code (0–3 = S H D C, 4 = no suit)."""
    return (code - 1) % 5


def is_card(code: int) -> bool:
    """Is ``code`` the code of some card (a natural card, suited or not, or a joker)?"""
    return 1 <= code <= card_code(TWO, NO_SUIT) or code in (CARD_SJ, CARD_BJ)


def is_suited(code: int) -> bool:
    """Does the card code name a suit (``7S``, not ``7`` or a joker)?"""
    return is_card(code) and card_suit(code) != NO_SUIT


def rank_name(rank: int) -> str:
    """The name of a rank position: ``"3"`` … ``"A"``, ``"2"``, ``"SJ"``, ``"BJ"``."""
    return RANK_CHARS[rank] if rank < SJ else JOKER_NAMES[rank - SJ]


def rank_position(name: str) -> int | None:
    """The position of a rank name (``"9"``, ``"10"``/``"T"``, ``"sj"``), or None."""
    text = name.strip().upper()
    if text == "10":
        text = "T"
    if text in JOKER_NAMES:
        return SJ + JOKER_NAMES.index(text)
    return RANK_CHARS.index(text) if len(text) == 1 and text in RANK_CHARS else None


def deck_copies(code: int, decks: int, lowest: int, jokers: int) -> int:
    """Copies of card ``code`` in a deck of ``decks`` decks of the ranks from position
    ``lowest`` up and ``jokers`` copies of each joker (§3); 0 for a rank-only code, which
    names no card of the deck."""
    if code in (CARD_SJ, CARD_BJ):
        return jokers
    return decks if is_suited(code) and card_rank(code) >= lowest else 0


def rank_copies(rank: int, decks: int, lowest: int, jokers: int) -> int:
    """Cards of rank position ``rank`` in a deck of ``decks`` decks of the ranks from
    position ``lowest`` up and ``jokers`` copies of each joker (§3): the most one rank can
    be played or dealt."""
    if rank >= SJ:
        return jokers
    return SUITS * decks if rank >= lowest else 0


def deck(decks: int, lowest: int, jokers: int) -> list[int]:
    """The deck as sorted card codes (a variant's: ``decks``, ``lowest_rank``, ``joker_copies``)."""
    return [c for c in range(1, MAX_CODE + 1) for _ in range(deck_copies(c, decks, lowest, jokers))]


# ------------------------------------------------------------------ seats (§1, §9)
SEATS = 4                         # seats 0..3 in turn order; 0 & 2 and 1 & 3 are partners


def partner(seat: int) -> int:
    """The seat opposite, the partner's (§1)."""
    return (seat + 2) % SEATS


def next_seat(seat: int) -> int:
    """The seat that acts after ``seat``."""
    return (seat + 1) % SEATS


def seats_after(seat: int) -> tuple[int, ...]:
    """The other three seats in turn order, starting after ``seat``."""
    return tuple((seat + k) % SEATS for k in range(1, SEATS))


def team(seat: int) -> int:
    """The team of a seat: 0 for seats 0 and 2, 1 for seats 1 and 3 (§1)."""
    return seat % 2


def same_team(a: int, b: int) -> bool:
    """Do seats ``a`` and ``b`` play on one team (dealt seating, §1)?"""
    return team(a) == team(b)


def is_seat(value: object) -> TypeGuard[int]:
    """Is ``value`` a seat, an ``int`` 0–3 (not a bool)?"""
    return type(value) is int and 0 <= value < SEATS


def check_seat(value: object, name: str = "seat", field: str | None = None) -> int:
    """``value`` if it is a seat 0–3, else ShuangkouError naming it (``field``, else ``name``)."""
    if not is_seat(value):
        raise ShuangkouError(f"{name} must be a seat 0–3; got {value!r}", field or name)
    return value
