# C-level declarations of the 托管 rule policy (core_ext/_suggest.pyx), for the rollout
# engine (_rollout.pyx), which plays it in every rollout, and its drivers (_search.pyx).
# _suggest.pyx documents the policy.

from shuangkou.core._core cimport RD, Decl, Rules, u8
from shuangkou.core._round cimport MAXB, Position
from shuangkou.core._settle cimport StarRules
from shuangkou.core.cards cimport SEATS

cdef enum:
    MAXALT = 32          # alternatives one call ranks at most (the 提示 cycle, search candidates)

# Why an action was chosen: the policy's steps, then the alternatives' kinds — named as
# suggest.py's REASON_TABLE lists them, in its order (tests/test_styles.py checks both).
cpdef enum Reason:
    R_OUT = 0            # goes out with its last cards
    R_PARTNER            # lets the partner's winning play stand
    R_LAST_TWO           # leads the stronger of its last two plays
    R_SAFE               # an opponent has 1-2 cards: leads a shape they cannot answer
    R_LEAD_BOMB          # an opponent is about to go out: leads a bomb
    R_HIGH_SINGLE        # an opponent is about to go out: leads its highest single
    R_FEED               # the partner has 1 card: leads a low single for them
    R_SHED               # leads to shed its weakest cards
    R_ONLY_BOMBS         # only bombs left: leads the smallest
    R_CHEAP              # beats with its cheapest play
    R_NOTHING            # nothing beats without spending a wild or breaking a bomb
    R_BOMB_DANGER        # bombs: an opponent is about to go out
    R_BOMB_OUT           # bombs to take the lead and go out
    R_BOMB_PAYS          # bombs with a star that pays
    R_KEEP               # keeps its bombs for when they matter
    # alternatives (ranked 提示, search candidates)
    R_ALT_KIND           # the policy's best play of another type
    R_ALT_HIGH           # beats high, to win the trick
    R_ALT_BOMB           # its smallest bomb
    R_ALT_PASS           # passes
    R_ALT_NEXT           # the next play in the policy's order
    NREASONS


# The styles of the rule policy are the rows of core_ext/styles.py's STYLE_TABLE, copied
# into C at import (_suggest.pyx); a Policy plays the row its `style` indexes. Row 0 is the
# rule policy itself.
cdef enum:
    STYLE_RULE = 0
    MAXSTYLES = 16       # rows the C table holds (styles.MAX_STYLES)


# A small seeded generator (splitmix64): tie-breaks, deals, random play.
cdef struct Rng:
    unsigned long long s

cdef inline unsigned long long rng_next(Rng* g) noexcept nogil:
    cdef unsigned long long z
    g.s += 0x9E3779B97F4A7C15ULL
    z = g.s
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)

cdef inline unsigned long long rng_mix(unsigned long long a, unsigned long long b) noexcept nogil:
    """A seed for one stream from two numbers (a decision's seed and a deal's index)."""
    cdef Rng g
    g.s = a * 0x9E3779B97F4A7C15ULL + b
    return rng_next(&g)

cdef inline unsigned rng_below(Rng* g, unsigned n) noexcept nogil:
    """Uniform in 0..n-1 (n ≥ 1; the bias of a 64-bit modulo is negligible here)."""
    return <unsigned>(rng_next(g) % n)


# What the seat to act sees — all the policy reads (docs/rounds.md "托管"): its own hand,
# every seat's card count, the play standing and who made it, the bombs it played (its
# highest star so far), whether its team holds 1st place.
cdef struct Seen:
    int seat
    u8 hand[16]          # count vector
    int ncards
    int sizes[SEATS]
    int has_st
    RD st
    int st_seat
    int star
    int winning
    int nb               # the seat's bombs so far: stars, chain-bomb flags (§10.2)
    int bstar[MAXB]
    unsigned char bchain[MAXB]


# The policy's work space and the variant's stakes (what a bomb's star can earn).
cdef struct Policy:
    const Rules* R
    RD* scratch          # MAXREAD readings: the enumerator's
    RD* spare            # MAXREAD readings: the policy's own classifications
    double deadline      # CLOCK_MONOTONIC seconds (0: none); past it, the call stops
    int timed_out
    int seeded           # a seed picks among equally good plays (else the first)
    Rng rng
    int first_contrib    # the contribution table's first star (-1: none)
    int per_bomb         # contributions per bomb (else once, at the round star)
    int mult_first       # the multiplier table's first star (-1: none)
    int mult_pays        # the team's own star sets the multiplier (not only the winner's)
    StarRules stars      # the round-star rules (a reading's worth to the seat)
    int style            # the row of STYLE_TABLE it plays (the search's models of other seats)


# One action: a play (its count vector, the reading meant, whether it must be declared) or
# a pass, and why.
cdef struct Choice:
    int play
    u8 c[16]
    RD rd
    int declare
    int reason
    int danger


cdef int policy_open(Policy* P, object rules, object seed) except -1
cdef void policy_close(Policy* P) noexcept
cdef int nstyles() noexcept nogil
cdef int seen_of(const Position* p, int seat, Seen* S) noexcept nogil
cdef int rule_choice(Policy* P, const Seen* S, Choice* out) noexcept nogil
cdef int alternatives(Policy* P, const Seen* S, const Choice* first, Choice* out, int n,
                      int diverse) noexcept nogil
cdef int choice_decl(const Choice* ch, Decl* d) noexcept nogil
cdef int apply_choice(Position* p, const Rules* R, int seat, const Choice* ch) noexcept nogil
