# C-level declarations of the round (core_ext/_round.pyx), shared with the compiled modules
# that read or drive a round: the state format (_state.pyx), replay folding (_replay.pyx)
# and settlement (_settle.pyx). _round.pyx documents every field.

from shuangkou.core._core cimport MAXCARDS, RD, Decl, RuleSet, u8
from shuangkou.core.cards cimport NCODES, NFACES, SEATS, partner_of

cdef enum:
    OVER_NONE = 0        # the round goes on
    OVER_ESCAPE = 3      # a seat escaped; a round a rule ended records its row's `over`
    LEAD_FIRST = 0       # why the seat to act leads: the first trick,
    LEAD_WON = 1         # everyone passed on its play,
    LEAD_WIND = 2        # 接风


# The round end (§9): one row of core_ext/round_ends.py (the table; a variant's round_end
# names its row), in C. Read into the round (RoundCore.end) and into settlement (Tables.end).
cdef struct EndRule:
    int team             # the round ends as soon as both players of one team are out
    int outs             # ... and at the latest at this finish
    int kou              # scored by kou (the cards the losers hold), not by places
    int over             # what a state records for a round it ended (OVER_* above excluded)


cdef inline int end_rule_from(object row, EndRule* rule) except -1:
    """``rule``: the row (a round_ends.RoundEnd) in C."""
    rule.team, rule.outs, rule.kou, rule.over = row.team, row.outs, row.kou, row.over
    return 0


# The round end (§9), decided here only: live rounds, stored states and settlement ask it.
# The twin of round_ends.RoundEnd.ended_at (tests/test_round_ends.py checks they agree).
cdef inline int ended_at(const EndRule* rule, const int* fin, int nfin) noexcept nogil:
    """Index in the finishing order ``fin[:nfin]`` of the finish that ended the round, or -1
    while it goes on."""
    cdef int i, out = 0
    for i in range(nfin):
        if i + 1 >= rule.outs or (rule.team and out & (1 << partner_of(fin[i]))):
            return i
        out |= 1 << fin[i]
    return -1


cdef enum:
    SEED_BYTES = 32       # RoundCore.seed_sha256: SHA-256 of a seeded deal's seed; zeros: hands given
    ROUND_ID_BYTES = 16   # RoundCore.round_id: which round a state belongs to (round.py deal)


cdef class RoundCore:
    cdef RuleSet rs
    cdef readonly object variant
    cdef u8 faces[SEATS][NCODES]     # copies of each suited face (an upper bound, see _round.pyx)
    cdef u8 nranks[SEATS][NFACES]    # cards of each rank position
    cdef int nleft[SEATS]
    cdef u8 nplayed[NCODES]          # cards played so far, by the code they were played as
    cdef int fin[SEATS]
    cdef int nfin
    cdef int cturn, cleader, last, prev, npasses, holding, escape_ok
    cdef EndRule end                 # the variant's round end (round_ends.py)
    cdef int over_kind, over_seat, over_action, cescaper
    cdef int lead_why, lead_a, lead_b
    cdef int has_st, st_seat, st_index, st_n
    cdef RD st
    cdef u8 st_cards[MAXCARDS]
    cdef object st_reading           # the standing Reading, built on demand
    cdef list bomb_readings          # per seat: the bombs that stood (Readings)
    cdef list bomb_codes             # per seat: their cards
    cdef list bomb_index             # per seat: their reading's index among the cards' readings
    cdef readonly int actions_applied
    cdef readonly object stake
    cdef readonly object table_fee
    cdef readonly tuple hand_at
    cdef readonly bint partial_deal
    cdef readonly bytes seed_sha256      # the commitment of a seeded deal (shuffle.py); 32 zero bytes: hands given
    cdef readonly bytes round_id         # the round's identity, fixed at the deal (ROUND_ID_BYTES)

    cdef int bind(self, object variant) except -1
    cdef object standing_reading(self)
    cdef int turn_check(self, int seat) except -1
    cdef int take(self, int seat, const int* codes, int n, u8* fc, u8* rk, u8* counts) except -1
    cdef int do_play(self, int seat, const int* codes, int n, const Decl* d, bint commit,
                     RD* out) except -1
    cdef int do_pass(self, int seat) except -1
    cdef int do_escape(self, int seat) except -1
    cpdef int _copy_into(self, RoundCore other) except -1
    # the module's own helpers (cold sentences, turn order)
    cdef str _lead_note(self)
    cdef str _over_note(self)
    cdef object _over_error(self)
    cdef int _not_held(self, int seat, int c, const u8* fc, const u8* rk) except -1
    cdef int _play_failed(self, int seat, list codes, const Decl* d) except -1
    cdef int _next_holding(self, int seat) noexcept
    cdef int _check_pass(self, int seat) except -1
    cdef int _check_escape(self, int seat) except -1
