# The card and seat vocabulary in C, for the compiled modules (`from shuangkou.core.cards
# cimport ...`): the twin of core_ext/cards.py, which documents every name (tests/test_cards.py
# checks that the two agree). Only enums and inline functions: nothing to import at run time.

cdef enum:
    NRANKS = 13          # natural ranks 3..A, 2 (positions 0..12)
    SJ = 13              # small joker position in a count vector
    BJ = 14              # big joker position
    NFACES = 15          # length of a count vector: 13 ranks + SJ + BJ
    NO_SUIT = 4          # the suit index of rank-only cards and jokers
    SUITS = 4            # suits S H D C: one card of each per natural rank and deck
    NCODES = 76          # card codes are 1..75 (0 is never a card)
    CODE_LAST_NATURAL = 65   # 2C, the highest natural card code
    CODE_SJ = 70
    CODE_BJ = 75
    SEATS = 4            # seats 0..3 in turn order; 0 & 2 and 1 & 3 are partners


cdef inline int code_of(int rank, int suit) noexcept nogil:
    return 1 + rank * 5 + suit

cdef inline int code_rank(int code) noexcept nogil:
    return (code - 1) // 5

cdef inline int code_suit(int code) noexcept nogil:
    return (code - 1) % 5

cdef inline bint is_card_code(int code) noexcept nogil:
    return 1 <= code <= CODE_LAST_NATURAL or code == CODE_SJ or code == CODE_BJ

cdef inline bint is_suited_code(int code) noexcept nogil:
    return 1 <= code <= CODE_LAST_NATURAL and (code - 1) % 5 != NO_SUIT

cdef inline int deck_copies(int code, int decks, int lowest, int jokers) noexcept nogil:
    """Copies of card ``code`` in a deck of ``decks`` decks from rank ``lowest`` up with
    ``jokers`` copies of each joker (rank-only codes: 0, they are no card of the deck)."""
    if code == CODE_SJ or code == CODE_BJ:
        return jokers
    return decks if is_suited_code(code) and code_rank(code) >= lowest else 0

cdef inline int rank_copies(int rank, int decks, int lowest, int jokers) noexcept nogil:
    """Cards of rank position ``rank`` in that deck (cards.rank_copies)."""
    if rank >= SJ:
        return jokers
    return SUITS * decks if rank >= lowest else 0

cdef inline bint is_seat(object value) noexcept:
    """Is ``value`` an ``int`` 0–3? (cards.is_seat; ``cards.check_seat`` raises the sentence.)
    An object, not a C int: any Python int is compared, never overflows a conversion."""
    return type(value) is int and 0 <= value < SEATS

cdef inline int partner_of(int seat) noexcept nogil:
    return (seat + 2) % SEATS

cdef inline int next_seat_of(int seat) noexcept nogil:
    return (seat + 1) % SEATS

cdef inline int team_of(int seat) noexcept nogil:
    return seat % 2
