# C-level declarations of the round (core_ext/_round.pyx), shared with the compiled modules
# that read or drive a round: the state format (_state.pyx), replay folding (_replay.pyx),
# settlement (_settle.pyx), the rule policy (_suggest.pyx), the rollout engine (_rollout.pyx)
# and the service's reply writers. _round.pyx documents every field.

from shuangkou.core._core cimport MAXCARDS, RD, Decl, Rules, RuleSet, u8
from shuangkou.core.cards cimport NCODES, NFACES, SEATS, partner_of

cdef enum:
    OVER_NONE = 0        # the round goes on
    OVER_ESCAPE = 3      # a seat escaped; a round a rule ended records its row's `over`
    LEAD_FIRST = 0       # why the seat to act leads: the first trick,
    LEAD_WON = 1         # everyone passed on its play,
    LEAD_WIND = 2        # 接风
    MAXB = 128           # bombs per seat a position records and a settlement reads (a hand
                         # of MAXCARDS cards plays at most 21)


# The round end (§9): one row of core_ext/round_ends.py (the table; a variant's round_end
# names its row), in C. Read into the round (Position.end) and into settlement (Tables.end).
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


# The bombs that stood, per seat, in play order: what the round star (§10.2), the
# contributions (§10.4) and the rule policy read of them.
cdef struct Bombs:
    int n[SEATS]                        # bombs each seat played
    int star[SEATS][MAXB]               # their stars, in play order
    unsigned char chain[SEATS][MAXB]    # chain bomb?


# The position: everything the rules of play read of a round in progress, in C, with no
# Python object — by rank (a position has no suits: the cards a seat holds of each rank
# position). A live round (RoundCore) holds one and applies every action to it through
# pos_play / pos_pass; the rollouts (_rollout.pyx) copy and play positions without the GIL.
# Outside _round.pyx and _state.pyx it is read-only: RoundCore.view() gives it.
cdef struct Position:
    u8 nranks[SEATS][NFACES]    # cards of each rank position per seat
    int nleft[SEATS]            # cards per seat
    int fin[SEATS]              # the finishing order so far
    int nfin
    int turn                    # the seat to act (meaningless once over_kind is set)
    int last                    # who made the standing play (or the last one)
    int prev                    # who acted last
    int npasses                 # passes since the standing play
    int holding                 # seats still holding cards
    EndRule end                 # the variant's round end (round_ends.py)
    int over_kind               # OVER_NONE, OVER_ESCAPE or the end rule's `over`
    int over_seat, over_action  # who ended it, at which action (counting from 0)
    int lead_why, lead_a, lead_b    # why the seat to act leads (LEAD_*), for messages
    int has_st                  # a play stands (else the seat to act leads)
    int st_seat, st_index, st_n # ... who made it, its reading's index among the cards'
    RD st                       # ... readings (rule-2 order), how many cards, the reading
    int actions                 # actions applied (plays, passes, an escape)
    Bombs bombs                 # the bombs that stood


# The transitions of a position (§9), without the GIL; the caller has checked the action
# (RoundCore's verify faces, or a policy that only proposes held plays).
cdef int pos_reading(const Position* p, const Rules* R, const u8* counts, const Decl* d,
                     RD* buf, RD* out) noexcept nogil
cdef int pos_commit_play(Position* p, int seat, const u8* rest, int n, const RD* rd,
                         int pick) noexcept nogil
cdef int pos_play(Position* p, const Rules* R, int seat, const u8* counts,
                  const Decl* d) noexcept nogil
cdef int pos_pass(Position* p, int seat) noexcept nogil
cdef int pos_next_holding(const Position* p, int seat) noexcept nogil


cdef enum:
    SEED_BYTES = 32       # RoundCore.seed_sha256: SHA-256 of a seeded deal's seed; zeros: hands given
    ROUND_ID_BYTES = 16   # RoundCore.round_id: which round a state belongs to (round.py deal)


cdef class RoundCore:
    cdef RuleSet rs
    cdef readonly object variant
    cdef Position pos                # the rules' view of the round (above)
    cdef u8 faces[SEATS][NCODES]     # copies of each suited face (an upper bound, see _round.pyx)
    cdef u8 nplayed[NCODES]          # cards played so far, by the code they were played as
    cdef int cleader, escape_ok, cescaper
    cdef u8 st_cards[MAXCARDS]       # the standing play's codes (pos.st_n of them)
    cdef object st_reading           # the standing Reading, built on demand
    cdef list bomb_readings          # per seat: the bombs that stood (Readings)
    cdef list bomb_codes             # per seat: their cards
    cdef list bomb_index             # per seat: their reading's index among the cards' readings
    cdef readonly object stake
    cdef readonly object table_fee
    cdef readonly tuple hand_at
    cdef readonly bint partial_deal
    cdef readonly bytes seed_sha256      # the commitment of a seeded deal (shuffle.py); 32 zero bytes: hands given
    cdef readonly bytes round_id         # the round's identity, fixed at the deal (ROUND_ID_BYTES)

    # The public, read-only view of a round for compiled modules outside the core (the
    # service's reply writers): its position, its hands as codes, the standing play's codes,
    # its rules. No service module reads RoundCore's other fields (tests/test_layers.py).
    cdef inline const Position* view(self) noexcept:
        return &self.pos

    cdef inline const u8* standing_codes(self) noexcept:
        """The standing play's codes (``view().st_n`` of them; meaningless while a seat
        leads)."""
        return self.st_cards

    cdef inline RuleSet rules(self):
        return self.rs

    cdef int hand_codes(self, int seat, u8* out) noexcept

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
    cdef int _check_pass(self, int seat) except -1
    cdef int _check_escape(self, int seat) except -1
