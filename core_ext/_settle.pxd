# C-level declarations of settlement (core_ext/_settle.pyx), for the compiled modules that
# score rounds without Python records: the rollouts (_rollout.pyx), the rule policy.
# _settle.pyx documents every field and rule.

from shuangkou.core._round cimport MAXB, Bombs, EndRule, Position, RoundCore
from shuangkou.core.cards cimport SEATS

cdef enum:
    NSTAR = 512            # star-indexed tables; the variants' rows stop at star 64
    SETTLE_NO_CARDS_LEFT = 1    # settle_core: kou scoring without the cards each seat holds
    SETTLE_WINNER_HOLDS = 2     # ... the first to finish holds cards


# The round-star rules (§10.2) in C: multi-bomb tables and qianbian's chain bonus.
cdef struct StarRules:
    int multi                           # multi-bomb tables apply
    int need4, need5                    # k from which 4-card / 5+-card bombs count
    int chain_bonus


cdef class Tables:
    cdef readonly object variant
    cdef StarRules stars
    cdef EndRule end                    # the round end's row (round_ends.py)
    cdef int star_rule, contrib_mode, to_team, cap
    cdef int first_contrib, kou_double, kou_single
    cdef int escape_rule, kept_on_escape
    cdef long long escape_pay, escape_receive, escape_fee
    cdef long long base[3][SEATS]
    cdef long long kou[3]
    cdef long long mult[NSTAR]
    cdef long long gain[NSTAR]
    cdef long long pay[NSTAR]

    cdef inline int capped(self, int star) noexcept nogil:
        return star if self.cap < 0 or star <= self.cap else self.cap

    cdef inline long long m_for(self, int star) noexcept nogil:
        return self.mult[star if star < NSTAR else NSTAR - 1]


# A settled round in C (no escape): what settle() turns into records.
cdef struct Outcome:
    int stars[SEATS]                    # round stars (§10.2) and their sources
    int src_rule[SEATS]
    int src_a[SEATS]
    int src_b[SEATS]
    int places[SEATS]
    long long base[SEATS]
    int kind                            # index into KINDS_OF_WIN
    int winner
    int star                            # the star that set the multiplier, and whose
    int star_seat
    long long m
    long long contrib[SEATS]
    long long amount[SEATS]             # base × M + contribution, before the stake


# The contribution payments of a settlement (§10.4), for their records: who, at which star
# (before the cap), for which of its bombs (-1: once, at the round star).
cdef struct Paid:
    int n
    int seat[SEATS * MAXB]
    int star[SEATS * MAXB]
    int bomb[SEATS * MAXB]


cpdef Tables tables(v)
cdef int round_star_of(const StarRules* t, const int* stars, const unsigned char* chain,
                       int nb, int* rule, int* a, int* b) noexcept nogil
cdef int round_stars(Tables t, const Bombs* b, Outcome* o) noexcept nogil
cdef int settle_core(Tables t, const int* fin, int nfin, const Bombs* b,
                     const int* cards_left, Outcome* o, Paid* paid) noexcept nogil
cdef int settle_amounts(Tables t, const int* fin, int nfin, const Bombs* b,
                        const int* cards_left, list events, Outcome* o) except -1
cdef int position_amounts(Tables t, const Position* p, long long* amount) noexcept nogil
