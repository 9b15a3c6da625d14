# C-level declarations of the rollout engine (core_ext/_rollout.pyx documents it), for its
# drivers (_search.pyx): the 托管 search, the review's evaluation, self-play.

from shuangkou.core._round cimport Position, RoundCore
from shuangkou.core._settle cimport Tables
from shuangkou.core._suggest cimport MAXALT, MAXSTYLES, Choice, Policy, Rng
from shuangkou.core.cards cimport NFACES, SEATS

cdef enum:
    MAXC = MAXALT + 1     # candidates of one decision: the 提示 list and the action taken
    MAX_DECOYS_C = 8      # decoys of a wider view (the fair-play signals' reference)
    NVIEWS = 2 + 4 * (1 + MAX_DECOYS_C)  # views one engine rolls out: the seat's own, the
                                        # true deal, and four wider kinds with their decoys
    # what a run of deals ended on (Engine.run)
    RUN_BUDGET = 0        # its rollouts or its time (``stop``) were spent, or its deals done
    RUN_RACED = 1         # every candidate but the anchors fell clearly behind (race)
    RUN_CANCELLED = 2     # ``cancelled()`` was true
    RUN_DEADLINE = 3      # the hard deadline passed between deals
    RUN_STOPPED = 4       # the policy's deadline stopped a rollout (that deal not counted)
    EVERY_SEAT_MASK = 0xF # a view's seat mask that sees every hand: the true deal


# The paired differences of one candidate's outcomes with an anchor candidate's, over the
# deals both were rolled out on.
cdef struct Pair:
    int n
    double vsum, vsq      # value: the team's points plus the win bonus
    double psum, psq      # the team's settlement points
    double wsum           # placed first (1) or not (0)


# One view's rollouts of a decision: the deals drawn, and per candidate its own outcomes
# and its differences with the two anchors (candidate 0, the rule policy's action; and
# ``Engine.taken``, the action a replay took).
cdef struct Tally:
    int deals
    int n[MAXC]           # deals each candidate was rolled out on
    double psum[MAXC]     # its team points, summed
    double wsum[MAXC]     # ... placed first, summed
    Pair ref[MAXC]        # minus candidate 0's
    Pair tk[MAXC]         # minus the taken action's


# A leaf of a rollout: the searching seat's team's outcome.
cdef struct Leaf:
    double value          # points + the win bonus
    long long points
    int won


cdef class Engine:
    cdef Policy P                 # the rule policy's work space (every seat's)
    cdef Tables tables            # the variant's settlement tables
    cdef double win_value         # the win bonus, in points
    cdef Position root            # the decision's position
    cdef Position vbase[NVIEWS]   # per view, the position its deals start from: the root,
                                  # or for a decoy the root with its known hands drawn anew
    cdef Position det             # a deal of it (the unseen cards drawn)
    cdef Position x               # a candidate played out on that deal
    cdef Position* stack          # the exact endgame's positions, one per depth
    cdef int seat                 # the seat that decides
    cdef int known[NVIEWS]        # per view: the seats whose hands it sees (bit mask)
    cdef int pool[NVIEWS][NFACES] # ... the cards it does not see, by rank
    cdef unsigned long long salt[NVIEWS]
    cdef int draws[64]            # the model's draws (style indices), or
    cdef int ndraws
    cdef int has_read             # per seat, cumulative style weights (read)
    cdef double read[SEATS * MAXSTYLES]
    cdef int infer, exact, race
    cdef int settle               # the deals end once the best candidate (points) is clear
    cdef unsigned long long base  # the decision's seed
    cdef Choice cands[MAXC]
    cdef int m                    # candidates
    cdef int taken                # the second anchor (0: none but the rule policy's action)
    cdef int live[MAXC]           # still rolled out (race)
    cdef int nlive
    cdef Tally tally[NVIEWS]
    cdef long rollouts            # rollouts played (every view)
    cdef long actions             # actions played in them
    cdef int solved               # rollouts an exact endgame finished
    cdef int fault                # a candidate had no reading that stands (an engine fault)

    cdef int open(self, RoundCore root, object seed, str model, int exact, bint infer,
                  bint race, object read, object win, bint seeded_policy) except -1
    cdef int see(self, int view, RoundCore root, int known, unsigned long long salt,
                 int decoy) except -1
    cdef int candidates(self, int m) except -1
    cdef int deal(self, int view) noexcept nogil
    cdef void draw_styles(self, Rng* g, int* styles) noexcept nogil
    cdef int run(self, int view, long max_rollouts, int min_deals, int max_deals,
                 double stop, double hard, object cancelled) except -1
    cdef int _deals(self, int view, long max_rollouts, int min_deals, int max_deals,
                    double stop, double hard, double due) noexcept nogil
    cdef object outcomes(self, RoundCore root, object hint_ranks)
    cdef tuple view_points(self, int view)


# A rollout of ``r`` to its end by the rule policy in every seat, each in its style
# (_rollout.pyx documents it): the self-play drivers play whole rounds with it.
cdef int play_out(Engine e, Position* r, const int* styles, Leaf* leaf) noexcept nogil
