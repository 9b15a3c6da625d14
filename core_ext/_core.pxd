# C-level declarations of the rules core, shared with other compiled modules
# (`from shuangkou.core._core cimport ...`). See _core.pyx for the documentation. The card
# vocabulary (NFACES, SJ, BJ, code_rank …) is core_ext/cards.pxd's.

from shuangkou.core.cards cimport NFACES

cdef enum:
    KEYLEN = 18          # bomb key length (huopin's rank list is the longest)
    MAXREAD = 512        # readings one play can have (far above what any play reaches)
    MAXCARDS = 64        # cards one play/hand may hold at C level (variants cap lower)

cdef enum Kind:
    K_SINGLE = 0
    K_PAIR = 1
    K_TRIPLE = 2
    K_STRAIGHT = 3
    K_PAIR_CHAIN = 4
    K_TRIPLE_CHAIN = 5
    K_BOMB = 6
    K_JOKER_BOMB_3 = 7
    K_JOKER_BOMB_4 = 8
    K_CHAIN_BOMB = 9
    NKINDS = 10

ctypedef unsigned char u8

# One reading of a set of cards (§7).
cdef struct RD:
    u8 kind
    u8 ncards          # number of cards
    u8 top             # top rank (last rank in chain order); 13/14 jokers
    u8 first           # first rank in chain order
    u8 length          # ranks in the pattern (links)
    u8 star            # bomb star, 0 for ordinary plays
    u8 phase           # bomb X
    u8 regular         # chain bomb with equal counts (1 for other bombs)
    u8 wrap_class      # 0 A23.., 1 ..KA2, 2 other
    u8 nwild           # wilds used
    u8 wild[8]         # ranks the wilds stand for (chain order)
    u8 cnt[13]         # cards per link, chain order (length entries)
    short key[KEYLEN]  # §8 bomb key (bombs only)

# A declared reading (§7 rule 4); -1 = not declared (matches anything).
cdef struct Decl:
    int kind
    int top
    int star
    int nwild          # -1: wilds not declared; else how many, ranks sorted in wild[]
    int wild[8]

# A variant's rules in the form the C code reads.
cdef struct Rules:
    int lo             # lowest natural rank position
    int wild_sj
    int wild_bj
    int min_y          # chain bomb minimum links
    int equal          # chain bomb counts must be equal
    int phase          # 0 common, 1 largest, 2 smallest
    int wrap           # 0 none, 1 through_ace, 2 natural_two
    int nkey
    int keyfield[8]
    int tier[10]       # tier per kind (bombs)
    int max_rank       # copies of a natural rank in the deck
    int max_face       # copies of a suited face (= decks)
    int max_joker      # copies of each joker
    int hand_size

cdef class RuleSet:
    cdef Rules r
    cdef readonly object variant
    cdef readonly str id
    cdef tuple invalid_texts        # why cards form no play, one sentence per reason
    cdef public object settlement   # shuangkou.core._settle's tables, built on first use

# One reading as a Python object: its C form and its rule set (compiled modules read rd).
cdef class Reading:
    cdef RD rd
    cdef readonly RuleSet rules

# Every reading of a play: its n readings' C forms in rule-2 order (compiled modules read
# them without a Reading object each), the rule set, and the play's codes as given.
cdef class Classification:
    cdef RD* rd
    cdef int n
    cdef readonly RuleSet rules
    cdef u8 codes[MAXCARDS]
    cdef int ncodes
    cdef tuple _cards
    cdef tuple _readings

cdef RuleSet get_rules(object variant)
cdef double monotonic() noexcept nogil
cdef double deadline_after(object timeout) except -1
cdef int classify_counts(const Rules* R, const u8* c, RD* out, int cap) noexcept nogil
cdef int rd_beats(const RD* b, const RD* a) noexcept nogil
cdef int key_cmp(const RD* x, const RD* y) noexcept nogil
cdef void sort_ints(int* a, int n) noexcept nogil
cdef int decl_match(const RD* rd, const Decl* d) noexcept nogil
cdef int _parse_decl(object declare, object declare_top, Decl* d) except -1
cdef int parse_into(object cards, int* codes, int cap) except -1
cdef int token_code(object t) noexcept
cdef int count_codes(RuleSet rs, const int* codes, int n, u8* counts) except -1
cdef object make_reading(const RD* rd, RuleSet rs)
cdef int reading_rd(object reading, RuleSet rs, RD* out) except -1
cdef void window_reading(const Rules* R, const u8* c, int kind, int width, int first, int links,
                         RD* out) noexcept nogil
