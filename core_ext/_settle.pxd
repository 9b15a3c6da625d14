# C-level declarations of settlement (core_ext/_settle.pyx), for the compiled modules that
# score rounds without Python records: the 托管 search's rollouts (_search.pyx).
# _settle.pyx documents every field and rule.

from shuangkou.core._round cimport EndRule, RoundCore
from shuangkou.core.cards cimport SEATS

cdef enum:
    NSTAR = 512            # star-indexed tables; the variants' rows stop at star 64
    MAXB = 128             # bombs per seat a settlement reads at once


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

    cdef inline int capped(self, int star) noexcept:
        return star if self.cap < 0 or star <= self.cap else self.cap

    cdef inline long long m_for(self, int star) noexcept:
        return self.mult[star if star < NSTAR else NSTAR - 1]


cdef struct Bombs:
    int n[SEATS]                        # bombs each seat played
    int star[SEATS][MAXB]               # their stars, in play order
    unsigned char chain[SEATS][MAXB]    # chain bomb?


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


cpdef Tables tables(v)
cdef int round_star_of(const StarRules* t, const int* stars, const unsigned char* chain,
                       int nb, int* rule, int* a, int* b) noexcept nogil
cdef int round_stars(Tables t, const Bombs* b, Outcome* o) noexcept
cdef int settle_amounts(Tables t, const int* fin, int nfin, const Bombs* b,
                        const int* cards_left, list events, Outcome* o) except -1
cdef int round_amounts(RoundCore r, long long* amount) except -1
