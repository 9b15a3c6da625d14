# C-level declarations of the legal-play enumerator (core_ext/_enumerate.pyx), for the
# compiled modules that walk a hand's plays without building Python objects: the 托管
# policy and its search (_suggest.pyx, _search.pyx). _enumerate.pyx documents the order.

from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from shuangkou.core._core cimport NKINDS, RD, Rules, RuleSet, u8

cdef enum:
    ALL_KINDS = 1023      # a bit per kind (KINDS order): every kind
    BOMB_MASK = 960       # the bomb kinds (bomb, joker_bomb_3, joker_bomb_4, chain_bomb)
    ORDINARY_MASK = 63    # the ordinary kinds

# A play handed to a sink: its count vector (16 bytes) and the reading it is listed with.
# Return nonzero to stop the enumeration (the caller has what it needs).
ctypedef int (*play_sink)(void* ctx, const u8* c, const RD* rd) noexcept nogil


cdef struct Entry:
    u8 c[16]              # the play's count vector (15 faces + a zero pad): also its identity
    RD rd                 # the reading it is listed with (chains: see chain_with_wilds)


cdef struct Enum:
    const Rules* R
    int lo                # lowest natural rank of the deck
    u8 h[16]              # the hand's count vector
    int ws, wb, w         # SJ / BJ usable as wilds, and their sum
    int cls               # class being generated
    int follow            # 1 when following ``target``
    RD target
    int tstar             # following a bomb: smaller stars cannot beat (star is key field 1)
    int max_cards
    unsigned kinds        # bit per kind accepted
    int count_only        # count per kind instead of storing entries
    long long counts[NKINDS]
    int exists_only       # stop at the first play found
    int found
    int stop
    int oom
    double deadline       # CLOCK_MONOTONIC seconds after which the work stops (0: none)
    unsigned visits
    int timed_out
    # chain-bomb de-duplication: open addressing over 16-byte keys (all-zero = empty slot)
    u8* hkeys
    Py_ssize_t hcap, hused
    Py_ssize_t max_hash   # slots the de-duplication may grow to (0: no ceiling); past it,
    int nodedupe          # ... or with nodedupe set, repeats reach the sink (argmin callers)
    # output: entries, or a sink that receives each play instead (nothing is stored)
    Entry* out
    Py_ssize_t n, cap
    Py_ssize_t class_start
    Py_ssize_t keep       # entries of this class that can still be returned (-1: no limit)
    int cut               # entries were dropped because of ``keep``
    int by_links          # the class is generated for every chain length at once: sort after
    RD* scratch           # readings of one multiset (MAXREAD of them)
    play_sink sink
    void* ctx


cdef inline double monotonic() noexcept nogil:
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef void enum_begin(Enum* E, const Rules* R, const u8* counts, const RD* target,
                     RD* scratch) noexcept nogil
cdef int enum_each(Enum* E, int bombs_only, play_sink sink, void* ctx) noexcept nogil
cdef int entry_cmp(const void* pa, const void* pb) noexcept nogil
cdef int _hand_counts(object hand, RuleSet rs, int* codes, u8* counts) except -1
