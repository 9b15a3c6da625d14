# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Legal plays from a hand: every distinct play exactly once (docs/enumeration.md).

A *play* is a sub-multiset of the hand's card faces (suits ignored; SJ and BJ are different
faces). Plays are never found by trying every sub-multiset of a hand (a 27-card hand has
millions); instead one generator per pattern walks the hand's count vector and proposes
exactly the multisets that could read as that pattern:

* singles, pairs, triples: one rank, its missing cards filled by wild jokers;
* straights, pair chains, triple chains: a *support* (the natural ranks used, first and
  last rank present, holes allowed) plus wilds that fill the holes and may extend the run
  at either end — each (support counts, wilds) pair is proposed once;
* N-bombs: one rank, k naturals, any number of wilds reaching 4 cards;
* chain bombs: every window the classifier accepts, per-link natural counts within the
  wild budget (equal-count variants: per common count K), two or more natural ranks;
* joker bombs: any three or four jokers.

Wherever a wild fills a slot, the generator also chooses how many of the wilds are SJ and
how many BJ (only jokers the variant makes wild; never a play of wilds alone). A multiset
is listed per *class*: once per ordinary type among its readings and once for all its bomb
readings. Classes are generated one at a time, in output order. Ordinary types come out
already sorted (ranks ascending, longer supports first), each with the strongest reading
of its type: the core's window reading for the highest window (chains) or the core's
classification (singles, pairs, triples). Bomb proposals are classified once each by the
core (``classify_counts``: the strongest bomb reading is the first), then sorted by the
variant's key; only chain-bomb proposals can repeat (a window with an all-wild end link
equals a shorter window with spare wilds) and those are de-duplicated with a small hash
set of packed count vectors. ``limit`` stops the work early.

All of that runs in C without the GIL; Python objects (:class:`Play`) are built only when
a caller indexes or iterates the :class:`LegalPlays` view.
"""

cimport cython
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memset
from libc.stdint cimport uint64_t
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF
from cpython.pyport cimport PY_SSIZE_T_MAX

from shuangkou.core._core cimport (
    KEYLEN, K_BOMB, K_CHAIN_BOMB, K_JOKER_BOMB_3, K_JOKER_BOMB_4, K_PAIR, K_PAIR_CHAIN,
    K_SINGLE, K_STRAIGHT, K_TRIPLE, K_TRIPLE_CHAIN, MAXCARDS, MAXREAD, NKINDS, RD,
    deadline_after, monotonic,
    Rules, RuleSet, classify_counts, count_codes, get_rules, key_cmp, make_reading,
    parse_into, rd_beats, reading_rd, sort_ints, u8, window_reading,
)
from shuangkou.core.cards cimport BJ, CODE_BJ, NFACES, SJ, code_rank

import operator

NO_LIMIT_FROM = 2**31    # a limit this large cuts nothing; larger ones mean "no limit"

from shuangkou.core._core import KINDS, Classification, Reading, classify, format_cards
from shuangkou.core.errors import DeadlineExceeded, InvalidPlay, ShuangkouError

__all__ = ["LegalPlays", "Play", "best_bomb", "count_plays", "legal_plays"]

cdef enum:
    CLS_BOMB = 6          # the class of every bomb reading; classes 0..5 are the ordinary kinds
    NCLASSES = 7
    MIN_STRAIGHT = 5      # links of the shortest straight (§5)
    MIN_CHAIN = 3         # links of the shortest pair/triple chain (§5)
    MIN_BOMB = 4          # cards of the smallest N-bomb / chain-bomb link (§6)
    TOP_CHAIN = 11        # ordinary chains run up to A (§5)
    SORTKEY = KEYLEN + 3 + NFACES

_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
assert ALL_KINDS == (1 << NKINDS) - 1 and BOMB_MASK == (
    (1 << K_BOMB) | (1 << K_JOKER_BOMB_3) | (1 << K_JOKER_BOMB_4) | (1 << K_CHAIN_BOMB))


# ----------------------------------------------------------------------------- C state

# Entry and Enum (the enumerator's C state) are declared in _enumerate.pxd.


cdef inline int class_of(int kind) noexcept nogil:
    return kind if kind < K_BOMB else CLS_BOMB


# ----------------------------------------------------------------------------- order

cdef int entry_cmp(const void* pa, const void* pb) noexcept nogil:
    """Output order within a class: weakest first, then by cards (docs/enumeration.md)."""
    cdef const Entry* a = <const Entry*>pa
    cdef const Entry* b = <const Entry*>pb
    cdef int c, r
    if a.rd.kind >= K_BOMB:
        c = key_cmp(&a.rd, &b.rd)
        if c:
            return c
        if a.rd.kind != b.rd.kind:
            return -1 if a.rd.kind < b.rd.kind else 1
    if a.rd.ncards != b.rd.ncards:
        return -1 if a.rd.ncards < b.rd.ncards else 1
    if a.rd.top != b.rd.top:
        return -1 if a.rd.top < b.rd.top else 1
    # same strength: more cards of the lower ranks first (the sorted rank lists, lexicographic)
    for r in range(NFACES):
        if a.c[r] != b.c[r]:
            return -1 if a.c[r] > b.c[r] else 1
    return 0


cdef struct SortRec:
    u8 k[SORTKEY]         # entry_cmp's order as bytes (memcmp order)
    Py_ssize_t index


cdef int rec_cmp(const void* pa, const void* pb) noexcept nogil:
    return memcmp((<const SortRec*>pa).k, (<const SortRec*>pb).k, SORTKEY)


cdef void sort_key(const Entry* e, u8* k) noexcept nogil:
    """entry_cmp as a byte string: key fields (signed, offset by 128), kind, cards, top,
    then the inverted count vector."""
    cdef int i
    for i in range(KEYLEN):
        k[i] = <u8>(e.rd.key[i] + 128) if e.rd.kind >= K_BOMB else 0
    k[KEYLEN] = e.rd.kind if e.rd.kind >= K_BOMB else 0
    k[KEYLEN + 1] = e.rd.ncards
    k[KEYLEN + 2] = e.rd.top
    for i in range(NFACES):
        k[KEYLEN + 3 + i] = 255 - e.c[i]


cdef void sort_by_links(Enum* E) noexcept nogil:
    """Order the current chain class by length, stably: the generator proposes every length
    at once, each length's plays already in output order."""
    cdef Py_ssize_t i, j, n = E.n - E.class_start
    cdef Py_ssize_t at[14]
    cdef Entry* base = &E.out[E.class_start]
    cdef Entry* tmp
    cdef int L, sorted_already = 1
    for i in range(1, n):
        if base[i].rd.length < base[i - 1].rd.length:
            sorted_already = 0
            break
    if sorted_already:
        return
    tmp = <Entry*>malloc(n * sizeof(Entry))
    if tmp == NULL:
        E.oom = 1
        E.stop = 1
        return
    memset(at, 0, sizeof(at))
    for i in range(n):
        at[base[i].rd.length] += 1
    i = 0
    for L in range(14):          # counts -> first slot of each length
        j = at[L]
        at[L] = i
        i += j
    for i in range(n):
        L = base[i].rd.length
        tmp[at[L]] = base[i]
        at[L] += 1
    memcpy(base, tmp, n * sizeof(Entry))
    free(tmp)


cdef void sort_class(Enum* E) noexcept nogil:
    """Sort the current class's entries (bombs: their order is the variant's key order;
    chains proposed for every length at once: by length)."""
    cdef Py_ssize_t i, n = E.n - E.class_start
    cdef Entry* base = &E.out[E.class_start]
    cdef SortRec* recs
    cdef Entry* tmp
    if n < 2:
        return
    if E.cls != CLS_BOMB:
        sort_by_links(E)
        return
    recs = <SortRec*>malloc(n * sizeof(SortRec))
    tmp = <Entry*>malloc(n * sizeof(Entry))
    if recs == NULL or tmp == NULL:        # no memory for the fast path: sort in place
        free(recs)
        free(tmp)
        qsort(base, n, sizeof(Entry), entry_cmp)
        return
    for i in range(n):
        sort_key(&base[i], recs[i].k)
        recs[i].index = i
    qsort(recs, n, sizeof(SortRec), rec_cmp)
    for i in range(n):
        tmp[i] = base[recs[i].index]
    memcpy(base, tmp, n * sizeof(Entry))
    free(recs)
    free(tmp)


# ----------------------------------------------------------------------------- emission

cdef inline uint64_t hash16(const u8* c) noexcept nogil:
    cdef uint64_t a, b, h
    memcpy(&a, c, 8)
    memcpy(&b, c + 8, 8)
    h = a ^ (b * <uint64_t>0x9E3779B97F4A7C15)
    # murmur3's finaliser: every input bit reaches the low bits used as the slot index
    h ^= h >> 33
    h *= <uint64_t>0xFF51AFD7ED558CCD
    h ^= h >> 33
    h *= <uint64_t>0xC4CEB9FE1A85EC53
    return h ^ (h >> 33)


cdef int seen_before(Enum* E, const u8* c) noexcept nogil:
    """1 if the multiset was proposed before in this call; else remember it and return 0."""
    cdef Py_ssize_t i, mask, newcap, j
    cdef u8* old
    cdef u8* slot
    if E.hused * 2 >= E.hcap:
        newcap = E.hcap * 2 if E.hcap else 64
        if E.max_hash and newcap > E.max_hash:
            E.nodedupe = 1      # the memory ceiling: repeats reach the sink from here on
            return 0
        old = E.hkeys
        E.hkeys = <u8*>malloc(newcap * 16)
        if E.hkeys == NULL:
            E.hkeys = old
            E.oom = 1
            E.stop = 1
            return 1
        memset(E.hkeys, 0, newcap * 16)
        for j in range(E.hcap):
            slot = old + j * 16
            if not _is_empty(slot):
                i = hash16(slot) & (newcap - 1)
                while not _is_empty(E.hkeys + i * 16):
                    i = (i + 1) & (newcap - 1)
                memcpy(E.hkeys + i * 16, slot, 16)
        free(old)
        E.hcap = newcap
    mask = E.hcap - 1
    i = hash16(c) & mask
    while True:
        slot = E.hkeys + i * 16
        if _is_empty(slot):
            memcpy(slot, c, 16)
            E.hused += 1
            return 0
        if _same16(slot, c):
            return 1
        i = (i + 1) & mask


cdef inline int _is_empty(const u8* s) noexcept nogil:
    cdef uint64_t a, b
    memcpy(&a, s, 8)
    memcpy(&b, s + 8, 8)
    return (a | b) == 0


cdef inline int _same16(const u8* s, const u8* c) noexcept nogil:
    cdef uint64_t a, b, x, y
    memcpy(&a, s, 8)
    memcpy(&b, s + 8, 8)
    memcpy(&x, c, 8)
    memcpy(&y, c + 8, 8)
    return a == x and b == y


cdef void add_entry(Enum* E, const u8* c, const RD* rd) noexcept nogil:
    cdef Entry* grown
    cdef Py_ssize_t newcap
    if E.n == E.cap:
        newcap = E.cap * 2 if E.cap else 256
        grown = <Entry*>realloc(E.out, newcap * sizeof(Entry))
        if grown == NULL:
            E.oom = 1
            E.stop = 1
            return
        E.out = grown
        E.cap = newcap
    memcpy(E.out[E.n].c, c, 16)
    E.out[E.n].rd = rd[0]
    E.n += 1
    if E.keep < 0:
        return
    if E.cls != CLS_BOMB and not E.by_links:
        # ordinary classes are generated in output order: the first surplus play ends the work
        if E.n - E.class_start > E.keep:
            E.n -= 1
            E.cut = 1
            E.stop = 1
    elif E.n - E.class_start >= 2 * E.keep + 64:
        # bombs and chains are sorted afterwards: never hold more than about twice what can
        # be returned (the best ``keep`` so far can only be displaced by better ones)
        sort_class(E)
        E.n = E.class_start + E.keep
        E.cut = 1


cdef void visit(Enum* E, u8* c, int dedupe) noexcept nogil:
    """Classify one proposed multiset and emit its entry of the current class, if any."""
    cdef int nr, i
    cdef RD* rd = NULL
    if E.stop:
        return
    E.visits += 1
    if E.deadline > 0 and (E.visits & 63) == 0 and monotonic() > E.deadline:
        E.stop = 1          # out of time: the caller raises DeadlineExceeded
        E.timed_out = 1
        return
    if dedupe and not E.nodedupe and seen_before(E, c):
        return
    nr = classify_counts(E.R, c, E.scratch, MAXREAD)
    # readings come in §7 rule-2 order: the first of a class is its strongest
    for i in range(nr):
        if class_of(E.scratch[i].kind) == E.cls:
            rd = &E.scratch[i]
            break
    if rd != NULL:
        emit(E, c, rd)


cdef void emit(Enum* E, const u8* c, const RD* rd) noexcept nogil:
    """List a multiset with the strongest reading of the current class, if it qualifies."""
    if E.follow and not rd_beats(rd, &E.target):
        return              # the strongest reading of the class does not beat: none does
    if not (E.kinds >> rd.kind) & 1 or rd.ncards > E.max_cards:
        return
    if E.sink != NULL:
        if E.sink(E.ctx, c, rd):
            E.stop = 1
    elif E.exists_only:
        E.found = 1
        E.stop = 1
    elif E.count_only:
        E.counts[rd.kind] += 1
    else:
        add_entry(E, c, rd)


cdef void with_wilds(Enum* E, u8* c, int g, int dedupe) noexcept nogil:
    """Visit c plus g wild jokers, once per split of g into wild SJs and wild BJs (more SJs
    first: the output order)."""
    cdef int s, s_lo = g - E.wb, s_hi = g if g < E.ws else E.ws
    if s_lo < 0:
        s_lo = 0
    for s in range(s_hi, s_lo - 1, -1):
        c[SJ] = s
        c[BJ] = g - s
        visit(E, c, dedupe)
    c[SJ] = 0
    c[BJ] = 0


cdef void chain_with_wilds(Enum* E, u8* c, int g, int width, int first, int links) noexcept nogil:
    """Like with_wilds, for an ordinary chain whose strongest window is known (first rank
    ``first``, ``links`` long). Its entry holds only the part of the reading that the
    listing reads (kind, cards, top, first, length: enough to filter, order and beat); the
    rest — where the wilds stand — is the core's window reading of the entry's counts,
    built when the play becomes a Python object (:func:`entry_reading`), or here for a sink."""
    cdef int s, s_lo = g - E.wb, s_hi = g if g < E.ws else E.ws
    cdef RD rd, full
    memset(&rd, 0, sizeof(RD))
    rd.kind = K_STRAIGHT if width == 1 else (K_PAIR_CHAIN if width == 2 else K_TRIPLE_CHAIN)
    rd.ncards = width * links
    rd.first = first
    rd.top = first + links - 1
    rd.length = links
    if s_lo < 0:
        s_lo = 0
    for s in range(s_hi, s_lo - 1, -1):
        if E.stop:
            break
        c[SJ] = s
        c[BJ] = g - s
        if E.sink != NULL:      # a sink keeps no entry to complete later: the whole reading
            window_reading(E.R, c, rd.kind, width, first, links, &full)
            emit(E, c, &full)
        else:
            emit(E, c, &rd)
    c[SJ] = 0
    c[BJ] = 0


cdef inline const RD* entry_reading(const Rules* R, const Entry* e, RD* out) noexcept nogil:
    """The full reading of an entry: its own, or for a chain the core's window reading."""
    if e.rd.kind < K_STRAIGHT or e.rd.kind > K_TRIPLE_CHAIN:
        return &e.rd
    window_reading(R, e.c, e.rd.kind, e.rd.kind - K_STRAIGHT + 1, e.rd.first, e.rd.length, out)
    return out


# ----------------------------------------------------------------------------- generators

# Ordinary classes are generated directly in output order (docs/enumeration.md): by card
# count, then top, then count vector compared rank by rank from the 3 up, more cards first
# (jokers last, SJ before BJ). Hence ranks ascending, counts descending, and a chain's longer
# supports before its shorter ones.

cdef void gen_singles(Enum* E, u8* c, int t) noexcept nogil:
    """One card; ``t``: only tops above it (following)."""
    cdef int r
    for r in range(E.lo, NFACES):
        if E.h[r] and r > t:
            c[r] = 1
            visit(E, c, 0)
            c[r] = 0


cdef void gen_sets(Enum* E, u8* c, int width, int t) noexcept nogil:
    """Pairs (width 2) and triples (3) of one natural rank above t; pairs of jokers."""
    cdef int r, k, g
    if width > E.max_cards:
        return
    for r in range(E.lo, 13):
        if r <= t or E.stop:
            continue
        for k in range(min(width, E.h[r]), 0, -1):
            g = width - k
            if g <= E.w:
                c[r] = k
                with_wilds(E, c, g, 0)
        c[r] = 0
    if width == 2:
        for r in range(SJ, BJ + 1):
            if E.h[r] >= 2 and r > t:
                c[r] = 2
                visit(E, c, 0)
                c[r] = 0


cdef void chain_dfs(Enum* E, u8* c, int width, int min_l, int max_l, int m, int pos,
                    int deficit) noexcept nogil:
    """Chains of ``min_l``..``max_l`` links whose support runs from rank m to rank pos (both
    present).

    ``deficit``: wilds needed to complete every link of m..pos to ``width`` cards; the
    remaining links are all wild (the classifier places them at either end). Extensions of
    the support come first, then the support itself, at every length it can take: for each
    length this is the output order (the caller sorts the lengths apart).
    """
    cdef int nxt, k, hole, links, span = pos - m + 1, last = m + max_l - 1
    if E.stop:
        return
    if last > TOP_CHAIN:
        last = TOP_CHAIN
    for nxt in range(pos + 1, last + 1):
        hole = deficit + width * (nxt - pos - 1)
        if hole > E.w:
            break
        for k in range(min(width, E.h[nxt]), 0, -1):
            if hole + width - k <= E.w:
                c[nxt] = k
                chain_dfs(E, c, width, min_l, max_l, m, nxt, hole + width - k)
        c[nxt] = 0
    for links in range(min_l if min_l > span else span, max_l + 1):
        hole = deficit + width * (links - span)
        if hole > E.w:
            break
        # §7 rule 2.3: the highest window holding the support (wilds on top where they fit)
        chain_with_wilds(E, c, hole, width, min(m, TOP_CHAIN - links + 1), links)


cdef void gen_chains(Enum* E, u8* c, int width, int min_l, int want_l, int t) noexcept nogil:
    """Straights (width 1), pair chains (2), triple chains (3) with tops above t; want_l:
    only that many links. One proposal per (support counts, wilds), every length in one
    walk over the supports (E.by_links: the class is sorted by length afterwards)."""
    cdef int m, k, lo_m, lo_l = want_l or min_l, hi_l = want_l or (TOP_CHAIN - E.lo + 1)
    if hi_l > E.max_cards // width:
        hi_l = E.max_cards // width
    if lo_l > hi_l:
        return
    E.by_links = lo_l < hi_l
    lo_m = E.lo
    if t - hi_l + 2 > lo_m:
        lo_m = t - hi_l + 2          # a lower first rank cannot reach a top above t
    for m in range(lo_m, TOP_CHAIN + 1):
        for k in range(min(width, E.h[m]), 0, -1):
            c[m] = k
            chain_dfs(E, c, width, lo_l, hi_l, m, m, width - k)
        c[m] = 0


cdef void gen_nbombs(Enum* E, u8* c) noexcept nogil:
    """k naturals of one rank plus g wilds, k + g ≥ 4."""
    cdef int r, k, g
    for r in range(E.lo, 13):
        for k in range(1, E.h[r] + 1):
            g = MIN_BOMB - k if k < MIN_BOMB else 0
            while g <= E.w and k + g <= E.max_cards:
                if k + g >= E.tstar:
                    c[r] = k
                    with_wilds(E, c, g, 0)
                g += 1
        c[r] = 0


cdef void gen_joker_bombs(Enum* E, u8* c) noexcept nogil:
    """Any three or four jokers (read naturally, wild or not)."""
    cdef int s, b
    for s in range(min(E.h[SJ], 4) + 1):
        for b in range(min(E.h[BJ], 4) + 1):
            if (s + b == 3 or s + b == 4) and s + b <= E.max_cards:
                c[SJ] = s
                c[BJ] = b
                visit(E, c, 0)
    c[SJ] = 0
    c[BJ] = 0


cdef void chain_bomb_dfs(Enum* E, u8* c, int s, int i, int big_k, int deficit, int nd,
                         int sumk) noexcept nogil:
    """Link i of the window starting at rank s: choose its natural count.

    ``big_k`` > 0 (equal-count variants): every link has exactly big_k cards. Otherwise a
    link needs max(4 - k, 0) wilds and spare wilds may go anywhere (the classifier places
    them). Proposals need two natural ranks: one-rank multisets are the N-bomb generator's.
    """
    cdef const Rules* R = E.R
    cdef int r = (s + i) % 13, k, k_lo, k_hi, need, g, links = i + 1, total
    if E.stop or links > 12 or (R.wrap == 0 and s + i > TOP_CHAIN):
        return
    if big_k:
        k_lo = big_k - (E.w - deficit)
        if k_lo < 0:
            k_lo = 0
        k_hi = min(E.h[r], big_k)
    else:
        k_lo = 0
        k_hi = E.h[r]
    for k in range(k_lo, k_hi + 1):
        need = (big_k - k) if big_k else (MIN_BOMB - k if k < MIN_BOMB else 0)
        if deficit + need > E.w or sumk + k > E.max_cards:
            continue
        c[r] = k
        if links >= R.min_y and nd + (k > 0) >= 2:
            if big_k:
                g = deficit + need
                total = sumk + k + g
                if total <= E.max_cards and total >= E.tstar:
                    with_wilds(E, c, g, 1)
            else:
                for g in range(deficit + need, E.w + 1):
                    total = sumk + k + g
                    if total > E.max_cards:
                        break
                    if total >= E.tstar:
                        with_wilds(E, c, g, 1)
        chain_bomb_dfs(E, c, s, i + 1, big_k, deficit + need, nd + (k > 0), sumk + k)
    c[r] = 0


cdef void gen_chain_bombs(Enum* E, u8* c) noexcept nogil:
    """Every window the classifier accepts (§6: ≥ min links, wrap rule), per start rank."""
    cdef const Rules* R = E.R
    cdef int s, big_k, nat = 0, top_k = 0, r
    for r in range(13):
        nat += E.h[r]
        if E.h[r] > top_k:
            top_k = E.h[r]
    if nat + E.w < MIN_BOMB * R.min_y or nat + E.w < E.tstar:
        return
    for s in range(E.lo, TOP_CHAIN + 1):
        if R.equal:
            for big_k in range(MIN_BOMB, top_k + E.w + 1):
                chain_bomb_dfs(E, c, s, 0, big_k, 0, 0, 0)
        else:
            chain_bomb_dfs(E, c, s, 0, 0, 0, 0, 0)


cdef void generate(Enum* E) noexcept nogil:
    """Every play of class E.cls (E.follow: only those that beat E.target)."""
    cdef u8 c[16]
    cdef int t = E.target.top if E.follow else -1
    cdef int want = E.target.length if E.follow else 0
    memset(c, 0, 16)
    if E.cls == K_SINGLE:
        gen_singles(E, c, t)
    elif E.cls == K_PAIR:
        gen_sets(E, c, 2, t)
    elif E.cls == K_TRIPLE:
        gen_sets(E, c, 3, t)
    elif E.cls == K_STRAIGHT:
        gen_chains(E, c, 1, MIN_STRAIGHT, want, t)
    elif E.cls == K_PAIR_CHAIN:
        gen_chains(E, c, 2, MIN_CHAIN, want, t)
    elif E.cls == K_TRIPLE_CHAIN:
        gen_chains(E, c, 3, MIN_CHAIN, want, t)
    else:
        if E.kinds & (1 << K_BOMB):
            gen_nbombs(E, c)
        if E.kinds & ((1 << K_JOKER_BOMB_3) | (1 << K_JOKER_BOMB_4)) and E.tstar <= 7:
            gen_joker_bombs(E, c)
        if E.kinds & (1 << K_CHAIN_BOMB):
            gen_chain_bombs(E, c)


cdef int any_play(Enum* E, const int* classes, int nclasses) noexcept nogil:
    """Is there at least one play in these classes? (stops at the first one)"""
    cdef int i, saved_count = E.count_only
    E.exists_only = 1
    E.found = 0
    for i in range(nclasses):
        E.cls = classes[i]
        generate(E)
        if E.found:
            break
    E.exists_only = 0
    E.stop = E.oom
    E.count_only = saved_count
    return E.found


cdef void run(Enum* E, const int* classes, int nclasses, Py_ssize_t limit,
              int* truncated) noexcept nogil:
    """Generate the classes in output order (bombs sorted afterwards); stop at ``limit``."""
    cdef int i
    truncated[0] = 0
    for i in range(nclasses):
        if limit >= 0 and E.n >= limit:
            truncated[0] = any_play(E, classes + i, nclasses - i)
            return
        E.cls = classes[i]
        E.class_start = E.n
        E.keep = limit - E.n if limit >= 0 else -1
        generate(E)
        if E.oom:
            return
        if not E.count_only and (E.cls == CLS_BOMB or E.by_links):
            sort_class(E)
        E.by_links = 0
        if E.cut or (limit >= 0 and E.n > limit):
            E.n = limit
            truncated[0] = 1
            return


# ----------------------------------------------------------------------------- Python face

cdef class LegalPlays      # declared below: a Play refers to its listing


@cython.freelist(256)
@cython.no_gc       # refers to its LegalPlays, a tuple of ints and a Reading: never to a Play
cdef class Play:
    """One legal play: the card codes to play (taken from the hand) and its reading.

    A ``(cards, reading)`` pair — it unpacks, indexes, hashes and compares as that tuple:
    ``cards`` is a tuple of card codes (lowest codes of each rank first, in rank order),
    ``reading`` the :class:`~shuangkou.core.Reading` the play is listed with (when
    following: the reading that beats). A play taken from a :class:`LegalPlays` is a view
    of its entry there: ``cards`` and ``reading`` are built on first access (python-chess's
    ``Move`` from ``legal_moves``), ``kind`` reads the entry itself.
    """
    cdef LegalPlays owner       # None for a play built from its parts
    cdef Py_ssize_t index
    cdef tuple _cards
    cdef object _reading

    def __init__(self, cards, reading):
        if not isinstance(reading, Reading):
            raise TypeError(f"a Play's reading is a Reading, not {type(reading).__name__}")
        self._cards = tuple(cards)
        self._reading = reading

    @property
    def cards(self):
        """The card codes to play."""
        if self._cards is None:
            self._cards = self.owner._cards(self.index)
        return self._cards

    @property
    def reading(self):
        """The reading the play is listed with."""
        if self._reading is None:
            self._reading = self.owner._reading(self.index)
        return self._reading

    @property
    def kind(self):
        """The reading's type name."""
        if self._reading is None:
            return KINDS[self.owner.entries[self.index].rd.kind]
        return self._reading.kind

    @property
    def text(self):
        """The cards as text tokens, e.g. ``("7S", "7H", "BJ")``."""
        return tuple(format_cards(self.cards))

    def _pair(self):
        return (self.cards, self.reading)

    def __len__(self):
        return 2

    def __getitem__(self, index):
        return self._pair()[index]

    def __iter__(self):
        return iter(self._pair())

    def __hash__(self):
        return hash(self._pair())

    def __eq__(self, other):
        if isinstance(other, Play):
            return self._pair() == (<Play>other)._pair()
        return self._pair() == other if isinstance(other, tuple) else NotImplemented

    def __ne__(self, other):
        same = self.__eq__(other)
        return same if same is NotImplemented else not same

    def __lt__(self, other):
        return self._pair() < (other._pair() if isinstance(other, Play) else other)

    def __le__(self, other):
        return self._pair() <= (other._pair() if isinstance(other, Play) else other)

    def __gt__(self, other):
        return self._pair() > (other._pair() if isinstance(other, Play) else other)

    def __ge__(self, other):
        return self._pair() >= (other._pair() if isinstance(other, Play) else other)

    def __reduce__(self):
        return (Play, self._pair())

    def __str__(self):
        return " ".join(format_cards(self.cards))

    def __repr__(self):
        return f"<Play {self}: {self.reading.describe()}>"


@cython.final
cdef class _PlayIterator:
    """Iteration over a LegalPlays: one Play view per step."""
    cdef LegalPlays plays
    cdef Py_ssize_t i

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.plays.n:
            raise StopIteration
        self.i += 1
        return self.plays._play(self.i - 1)


cdef class LegalPlays:
    """The legal plays of a hand, in order (a read-only sequence of :class:`Play`).

    Plays are stored in C form and become :class:`Play` objects only when indexed or
    iterated. ``truncated``: ``limit`` cut the list. ``can_pass``: following (passing is
    always allowed then; it is not listed as a play).
    """
    cdef Entry* entries
    cdef Py_ssize_t n
    cdef RuleSet rs
    cdef int codes[MAXCARDS]
    cdef int start[16]
    cdef readonly bint truncated
    cdef readonly bint can_pass
    cdef readonly object to_beat
    cdef int nhand
    cdef tuple _hand

    def __dealloc__(self):
        free(self.entries)

    @property
    def variant(self):
        """The variant id."""
        return self.rs.id

    @property
    def hand(self):
        """The hand's card codes, sorted (built on first access)."""
        cdef int i
        if self._hand is None:
            self._hand = tuple([self.codes[i] for i in range(self.nhand)])
        return self._hand

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        cdef Py_ssize_t i
        if isinstance(index, slice):
            return [self._play(i) for i in range(*index.indices(self.n))]
        index = operator.index(index)      # Python ints: no overflow on huge indexes
        if index < 0:
            index += self.n
        if not 0 <= index < self.n:
            raise IndexError("legal play index out of range")
        i = index
        return self._play(i)

    def __iter__(self):
        cdef _PlayIterator it = _PlayIterator.__new__(_PlayIterator)
        it.plays = self
        return it

    def __contains__(self, play):
        cdef Py_ssize_t i
        cdef int r
        cdef u8 c[16]
        if isinstance(play, Play):
            play = (<Play>play)._pair()
        if not isinstance(play, tuple) or len(play) != 2:
            return False
        memset(c, 0, 16)
        for code in play[0]:
            if not isinstance(code, int) or not 1 <= code <= CODE_BJ:
                return False
            c[code_rank(code)] += 1
        for i in range(self.n):
            for r in range(NFACES):
                if self.entries[i].c[r] != c[r]:
                    break
            else:
                if self._play(i) == play:
                    return True
        return False

    cdef Play _play(self, Py_ssize_t i):
        cdef Play p = Play.__new__(Play)
        p.owner = self
        p.index = i
        return p

    cdef tuple _cards(self, Py_ssize_t i):
        """The codes of play i, taken from the hand."""
        cdef Entry* e = &self.entries[i]
        cdef int r, j, k = 0
        cdef object code
        cards = PyTuple_New(e.rd.ncards)
        for r in range(NFACES):
            for j in range(e.c[r]):
                code = self.codes[self.start[r] + j]
                Py_INCREF(code)
                PyTuple_SET_ITEM(cards, k, code)
                k += 1
        return cards

    cdef object _reading(self, Py_ssize_t i):
        cdef RD rd
        return make_reading(entry_reading(&self.rs.r, &self.entries[i], &rd), self.rs)

    def count(self, kind=None):
        """Number of plays listed (of one type when ``kind`` is given)."""
        cdef Py_ssize_t i, m = 0
        cdef int want
        if kind is None:
            return self.n
        want = _kind_index(kind, "kind")
        for i in range(self.n):
            m += self.entries[i].rd.kind == want
        return m

    def by_kind(self):
        """Plays listed per type: ``{kind: count}`` for every kind, in :data:`KINDS` order."""
        cdef Py_ssize_t i
        cdef long long counts[NKINDS]
        memset(counts, 0, sizeof(counts))
        for i in range(self.n):
            counts[self.entries[i].rd.kind] += 1
        return {KINDS[i]: counts[i] for i in range(NKINDS)}

    def __repr__(self):
        kinds = ", ".join(f"{k} {v}" for k, v in self.by_kind().items() if v)
        mode = "following" if self.can_pass else "leading"
        more = ", truncated" if self.truncated else ""
        return f"<LegalPlays {self.rs.id} {mode}: {self.n} plays ({kinds or 'none'}){more}>"


cdef int _kind_index(object kind, str field) except -1:
    index = _KIND_INDEX.get(kind) if isinstance(kind, str) else None
    if index is None:
        raise InvalidPlay(f"unknown play type {kind!r} in {field}; types are "
                          f"{', '.join(KINDS)}", field)
    return index


cdef object _count_arg(object value, str field):
    """A non-negative integer argument (``limit``, ``max_cards``)."""
    try:
        number = operator.index(value)
    except TypeError:
        raise ShuangkouError(f"{field} must be an integer, not {type(value).__name__}",
                             field) from None
    if number < 0:
        raise ShuangkouError(f"{field} must be 0 or more, not {number}", field)
    return number


cdef int _hand_counts(object hand, RuleSet rs, int* codes, u8* counts) except -1:
    """Parse and check the hand; fill its codes (sorted) and count vector; return the size."""
    cdef int n
    try:
        n = parse_into(hand, codes, MAXCARDS)
        count_codes(rs, codes, n, counts)
    except ShuangkouError as exc:
        raise type(exc)(f"hand: {exc}", "hand") from None
    sort_ints(codes, n)
    return n


cdef object _target(object to_beat, RuleSet rs, RD* out):
    """The reading standing on the table: a Reading (a Play's), or the primary of cards."""
    if isinstance(to_beat, Play):
        to_beat = to_beat.reading
    if isinstance(to_beat, Reading):
        reading_rd(to_beat, rs, out)
        return to_beat
    try:
        reading = to_beat.primary if isinstance(to_beat, Classification) else \
            classify(to_beat, rs.variant).primary
    except ShuangkouError as exc:
        raise type(exc)(f"to_beat: {exc}", "to_beat") from None
    reading_rd(reading, rs, out)
    return reading


cdef void enum_begin(Enum* E, const Rules* R, const u8* counts, const RD* target,
                     RD* scratch) noexcept nogil:
    """Fill E for a hand's count vector and the reading to beat (NULL: leading); every
    kind accepted, no card limit, no deadline. ``scratch``: MAXREAD readings of work space
    (NULL: _enumerate allocates it)."""
    memset(E, 0, sizeof(Enum))
    E.R = R
    E.lo = R.lo
    memcpy(E.h, counts, NFACES)
    E.ws = counts[SJ] if R.wild_sj else 0
    E.wb = counts[BJ] if R.wild_bj else 0
    E.w = E.ws + E.wb
    E.max_cards = MAXCARDS
    E.kinds = ALL_KINDS
    E.scratch = scratch
    if target != NULL:
        E.target = target[0]
        E.follow = 1
        if E.target.kind >= K_BOMB:
            E.tstar = E.target.star


cdef int enum_each(Enum* E, int bombs_only, play_sink sink, void* ctx) noexcept nogil:
    """Hand every play E accepts to ``sink`` (in output order within the ordinary classes;
    bombs in generation order), storing nothing but the chain-bomb de-duplication, which it
    frees. Returns -1 when the deadline stopped it, -2 when memory ran out, else 0."""
    cdef int classes[NCLASSES]
    cdef int truncated = 0
    cdef int nclasses = _classes(E, classes, bombs_only)
    E.sink = sink
    E.ctx = ctx
    run(E, classes, nclasses, -1, &truncated)
    free(E.hkeys)
    E.hkeys = NULL
    E.hcap = E.hused = 0
    return -1 if E.timed_out else (-2 if E.oom else 0)


cdef object _setup(Enum* E, RuleSet rs, object to_beat, const u8* counts):
    """Fill E for a hand and a target; return the standing reading (or None)."""
    cdef RD target
    cdef object standing = None
    if to_beat is not None:
        standing = _target(to_beat, rs, &target)
    enum_begin(E, &rs.r, counts, &target if to_beat is not None else NULL, NULL)
    return standing


cdef int _classes(Enum* E, int* out, int bombs_only) noexcept nogil:
    """The classes to generate, in output order: ordinary types (KINDS order), then bombs."""
    cdef int n = 0, k
    if E.follow and E.target.kind >= K_BOMB:
        out[n] = CLS_BOMB
        return 1
    for k in range(K_BOMB):
        if bombs_only or not (E.kinds >> k) & 1 or (E.follow and k != E.target.kind):
            continue
        out[n] = k
        n += 1
    if E.kinds & BOMB_MASK:
        out[n] = CLS_BOMB
        n += 1
    return n


cdef int _set_deadline(Enum* E, object timeout) except -1:
    E.deadline = deadline_after(timeout)
    return 0


cdef int _enumerate(Enum* E, const int* classes, int nclasses, Py_ssize_t limit) except -1:
    cdef int truncated = 0
    cdef RD scratch[MAXREAD]      # one multiset's readings (~35 KB, as _core's classify)
    E.scratch = scratch
    try:
        with nogil:
            run(E, classes, nclasses, limit, &truncated)
    finally:
        E.scratch = NULL
        free(E.hkeys)
        E.hkeys = NULL
    if E.oom:
        free(E.out)
        E.out = NULL
        raise MemoryError("out of memory while enumerating legal plays")
    if E.timed_out:
        free(E.out)
        E.out = NULL
        raise DeadlineExceeded("the enumeration ran out of its time budget")
    return truncated


def legal_plays(hand, variant, to_beat=None, *, kinds=None, bombs_only=False,
                max_cards=None, limit=None, timeout=None):
    """Every legal play from ``hand`` under ``variant`` (§7, §8), each exactly once.

    Leading (``to_beat`` None): every distinct play; a multiset of cards with readings of
    several ordinary types is listed once per type (its strongest reading of that type), all
    its bomb readings as one entry (its strongest bomb reading). Following: exactly the plays
    that beat ``to_beat`` (cards, whose primary reading stands, or a Reading or Play), each
    with the strongest reading of its type that beats. Order: ordinary types in :data:`KINDS` order,
    then bombs; weakest first; ties by cards. Filters: ``kinds`` (type names; a play's type
    is its listed reading's), ``bombs_only``, ``max_cards``; ``limit`` caps the number
    returned (``truncated`` says when it cut). Returns a :class:`LegalPlays` view.
    """
    cdef RuleSet rs = get_rules(variant)
    cdef LegalPlays res = LegalPlays.__new__(LegalPlays)
    cdef Enum E
    cdef u8 counts[NFACES]
    cdef int classes[NCLASSES]
    cdef int nclasses, n, r, i
    cdef Py_ssize_t lim = -1
    n = _hand_counts(hand, rs, res.codes, counts)
    res.rs = rs
    res.nhand = n
    i = 0
    for r in range(NFACES):
        res.start[r] = i
        i += counts[r]
    res.to_beat = _setup(&E, rs, to_beat, counts)
    res.can_pass = to_beat is not None
    if kinds is not None:
        if isinstance(kinds, str):
            kinds = (kinds,)
        try:
            kinds = list(kinds)
        except TypeError:
            raise InvalidPlay(f"kinds must be a type name or a collection of them, not "
                              f"{type(kinds).__name__}", "kinds") from None
        E.kinds = 0
        for k in kinds:
            E.kinds |= 1 << _kind_index(k, "kinds")
    if bombs_only:
        E.kinds &= BOMB_MASK
    if max_cards is not None:
        E.max_cards = min(_count_arg(max_cards, "max_cards"), MAXCARDS)
    if limit is not None:
        # a limit past any hand's play count cuts nothing: no limit (and no overflow)
        lim = min(_count_arg(limit, "limit"), NO_LIMIT_FROM)
        if lim == NO_LIMIT_FROM:
            lim = -1
    _set_deadline(&E, timeout)
    nclasses = _classes(&E, classes, bombs_only)
    res.truncated = _enumerate(&E, classes, nclasses, lim)
    res.entries = E.out
    res.n = E.n
    return res


def count_plays(hand, variant, to_beat=None, *, timeout=None):
    """Number of legal plays per type, ``{kind: count}`` for every kind in :data:`KINDS` order.

    Counts exactly what :func:`legal_plays` would list (same arguments), without building
    the plays.
    """
    cdef RuleSet rs = get_rules(variant)
    cdef Enum E
    cdef u8 counts[NFACES]
    cdef int codes[MAXCARDS]
    cdef int classes[NCLASSES]
    cdef int nclasses, i
    _hand_counts(hand, rs, codes, counts)
    _setup(&E, rs, to_beat, counts)
    E.count_only = 1
    _set_deadline(&E, timeout)
    nclasses = _classes(&E, classes, 0)
    _enumerate(&E, classes, nclasses, -1)
    return {KINDS[i]: E.counts[i] for i in range(NKINDS)}


def best_bomb(hand, variant, *, timeout=None):
    """The strongest bomb the hand can play (by the variant's §8 key), or None.

    Among equally strong bombs, the one :func:`legal_plays` lists first (an N-bomb before a
    chain bomb, natural cards before wild jokers).
    """
    cdef RuleSet rs = get_rules(variant)
    cdef Enum E
    cdef u8 counts[NFACES]
    cdef int codes[MAXCARDS]
    cdef int classes[1]
    cdef Py_ssize_t i, best = 0
    cdef int c
    _hand_counts(hand, rs, codes, counts)
    _setup(&E, rs, None, counts)
    _set_deadline(&E, timeout)
    classes[0] = CLS_BOMB
    try:
        _enumerate(&E, classes, 1, -1)
        if E.n == 0:
            return None
        for i in range(1, E.n):
            c = key_cmp(&E.out[i].rd, &E.out[best].rd)
            if c > 0 or (c == 0 and entry_cmp(&E.out[i], &E.out[best]) < 0):
                best = i
        return make_reading(&E.out[best].rd, rs)
    finally:
        free(E.out)
