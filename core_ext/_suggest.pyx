# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The 托管 rule policy in compiled code (core_ext/suggest.py is its Python face and
documents the steps; tests/suggest_reference.py is its slow twin, step for step).

The policy reads only what the seat to act sees (:c:type:`Seen`) and walks the hand's plays
with the enumerator's sink (_enumerate.pxd): every candidate is a count vector and a C
reading on the stack, compared as it arrives and never stored, so its memory does not grow
with the number of plays (a 40-card hand with eight wilds facing a 5-bomb has ~150,000
beating bombs) and the enumerator's deadline stops it. Each step keeps the best play under
its own order; equal plays keep the enumerator's order (the first listed wins) unless a
seed picks among them.

The same walk ranks alternatives: the 提示 cycle (every play in the policy's order of
preference) and the search's candidates (the best play of each type, a high beat, the
smallest bomb, the pass).
"""

from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from shuangkou.core._core cimport (
    K_BOMB,
    K_CHAIN_BOMB,
    K_PAIR,
    K_SINGLE,
    MAXCARDS,
    MAXREAD,
    NKINDS,
    RD,
    Decl,
    Reading,
    Rules,
    RuleSet,
    classify_counts,
    get_rules,
    key_cmp,
    make_reading,
    rd_beats,
    reading_rd,
    u8,
)
from shuangkou.core._enumerate cimport (
    ALL_KINDS,
    BOMB_MASK,
    ORDINARY_MASK,
    Entry,
    Enum,
    entry_cmp,
    _hand_counts,
    enum_begin,
    play_sink,
    enum_each,
    monotonic,
)
from shuangkou.core._round cimport MAXB, Position, RoundCore, pos_pass, pos_play
from shuangkou.core._settle cimport Tables, round_star_of, tables
from shuangkou.core.cards cimport (
    BJ,
    CODE_BJ,
    CODE_SJ,
    NFACES,
    NO_SUIT,
    SEATS,
    SJ,
    code_of,
    is_seat,
    partner_of,
    team_of,
)

from shuangkou.core import styles as _styles
from shuangkou.core.cards import check_seat
from shuangkou.core.errors import DeadlineExceeded, ShuangkouError
from shuangkou.core.rollouts import Proposal

cdef enum:
    DANGER = 5            # an opponent with this many cards or fewer may go out soon
    SMALL_AFTER_BOMB = 4  # a bomb that leaves this many cards or fewer clears the way out
    SPLIT = 6             # the cost of splitting a group of equal ranks (pair, triple)
    ENDGAME = 10          # hands (or what a bomb leaves) this small are tried as two-play finishes
    NO_DANGER = 99
    CLS_BOMB = 6          # the enumerator's class of every bomb reading

#: Python-visible copies of the policy's constants (suggest.py documents them).
POLICY_CONSTANTS = {"DANGER": DANGER, "SMALL_AFTER_BOMB": SMALL_AFTER_BOMB, "SPLIT": SPLIT,
                    "ENDGAME": ENDGAME, "NO_DANGER": NO_DANGER}


# The styles (core_ext/styles.py STYLE_TABLE) in C, by row: what rule_choice reads of the
# style a Policy plays.
cdef struct StyleRule:
    int over_partner      # plays over its partner's standing play
    int spend_within      # spends a wild / breaks a bomb to beat when danger <= this
    int bomb_within       # bombs an opponent's play when danger <= this
    int hold_beyond       # passes, keeping its bombs, when danger > this and none goes out

cdef StyleRule STYLES[MAXSTYLES]
cdef int NSTYLES = len(_styles.STYLE_TABLE)
if _styles.DANGER != DANGER or _styles.ANY < NO_DANGER or NSTYLES > MAXSTYLES \
        or _styles.MAX_STYLES != MAXSTYLES:
    raise ImportError("core_ext/styles.py's DANGER, ANY and MAX_STYLES must match the "
                      "compiled policy's DANGER, NO_DANGER and MAXSTYLES (_suggest.pyx)")
for _i, _row in enumerate(_styles.STYLE_TABLE):
    STYLES[_i].over_partner = _row.over_partner
    STYLES[_i].spend_within = _row.spend_within
    STYLES[_i].bomb_within = _row.bomb_within
    STYLES[_i].hold_beyond = _row.hold_beyond


cdef int nstyles() noexcept nogil:
    """How many styles the table holds (a Policy's ``style`` is below it)."""
    return NSTYLES


def style_rules():
    """The styles as the compiled policy holds them, by row: (over_partner, spend_within,
    bomb_within, hold_beyond) — a copy of styles.STYLE_TABLE made at import."""
    return [(bool(STYLES[i].over_partner), STYLES[i].spend_within, STYLES[i].bomb_within,
             STYLES[i].hold_beyond) for i in range(NSTYLES)]

# How much a card of each rank position is worth getting rid of when leading (3=0 … A=11,
# 2=12, SJ=13, BJ=14): low cards are liabilities, high ones regain the lead.
cdef int LIABILITY[NFACES]
for _r in range(NFACES):
    LIABILITY[_r] = max(0, 10 - _r)


# ----------------------------------------------------------------------------- set-up

cdef dict _STAKES = {}       # RuleSet -> (first_contrib, per_bomb, mult_first, mult_pays)


cdef tuple _stakes(RuleSet rs):
    """What a bomb's star can earn under the variant (§10.3, §10.4), once per rule set."""
    got = _STAKES.get(rs)
    if got is None:
        v = rs.variant
        got = (v.contribution[0][0] if v.contribution else -1,
               v.contribution_mode == "per_bomb",
               v.multiplier[0][0] if v.multiplier else -1,
               bool(v.multiplier) and v.multiplier_star != "winner")
        if len(_STAKES) >= 512:
            _STAKES.clear()
        _STAKES[rs] = got
    return <tuple>got


cdef int policy_open(Policy* P, object rules, object seed) except -1:
    """Work space for ``rules`` (a RuleSet); ``seed`` None: ties keep the enumerator's order."""
    cdef RuleSet rs = <RuleSet>rules
    memset(P, 0, sizeof(Policy))
    P.R = &rs.r
    stakes = _stakes(rs)
    P.stars = (<Tables>tables(rs)).stars
    P.first_contrib = stakes[0]
    P.per_bomb = stakes[1]
    P.mult_first = stakes[2]
    P.mult_pays = stakes[3]
    if seed is not None:
        P.seeded = 1
        P.rng.s = <unsigned long long>(seed & 0xFFFFFFFFFFFFFFFF)
    P.scratch = <RD*>malloc(2 * MAXREAD * sizeof(RD))
    if P.scratch == NULL:
        raise MemoryError()
    P.spare = P.scratch + MAXREAD
    return 0


cdef void policy_close(Policy* P) noexcept:
    free(P.scratch)
    P.scratch = P.spare = NULL


cdef int seen_of(const Position* p, int seat, Seen* S) noexcept nogil:
    """What ``seat`` sees of the position ``p``: its hand, the counts, the standing play,
    its bombs (their stars, its highest), whether its team holds 1st place."""
    cdef int s, i
    S.seat = seat
    S.ncards = p.nleft[seat]
    memset(S.hand, 0, 16)
    memcpy(S.hand, p.nranks[seat], NFACES)
    for s in range(SEATS):
        S.sizes[s] = p.nleft[s]
    S.has_st = p.has_st
    S.st_seat = p.st_seat if p.has_st else -1
    if p.has_st:
        S.st = p.st
    S.star = 0
    S.nb = min(p.bombs.n[seat], MAXB - 1)
    for i in range(S.nb):
        S.bstar[i] = p.bombs.star[seat][i]
        S.bchain[i] = p.bombs.chain[seat][i]
        if S.bstar[i] > S.star:
            S.star = S.bstar[i]
    S.winning = p.nfin > 0 and team_of(p.fin[0]) == team_of(seat)
    return 0


# ----------------------------------------------------------------------------- the shape of a play

cdef inline int liability(const u8* c) noexcept nogil:
    cdef int r, t = 0
    for r in range(NFACES):
        t += c[r] * LIABILITY[r]
    return t


cdef inline int splits(const u8* hand, const u8* c) noexcept nogil:
    """Groups of equal ranks (pairs, triples) the play leaves a part of."""
    cdef int r, n = 0
    for r in range(NFACES):
        if c[r] and c[r] < hand[r]:
            n += 1
    return n


cdef inline int has_wild(const Rules* R, const u8* c) noexcept nogil:
    return (R.wild_sj and c[SJ]) or (R.wild_bj and c[BJ])


cdef inline int precious(const Rules* R, const u8* hand, const u8* c) noexcept nogil:
    """Spends a wild joker in a mixed play, or splits a bomb (a rank held 4+ times)."""
    cdef int r, natural = 0
    for r in range(NFACES):
        if c[r] and hand[r] >= 4:
            return 1
        if r < SJ and c[r]:
            natural = 1
    return natural and has_wild(R, c)


cdef inline int ncards_of(const u8* c) noexcept nogil:
    cdef int r, n = 0
    for r in range(NFACES):
        n += c[r]
    return n


cdef void plain_of(const Rules* R, const u8* hand, u8* out) noexcept nogil:
    """The *plain* cards: neither a wild joker nor of a rank held 4+ times (weak plays)."""
    cdef int r
    memset(out, 0, 16)
    for r in range(NFACES):
        if hand[r] < 4 and not ((r == SJ and R.wild_sj) or (r == BJ and R.wild_bj)):
            out[r] = hand[r]


cdef int is_play(Policy* P, const u8* c) noexcept nogil:
    """Do these cards read as a play when leading?"""
    return ncards_of(c) > 0 and classify_counts(P.R, c, P.spare, MAXREAD) > 0


cdef int rest_is_play(Policy* P, const u8* hand, const u8* c) noexcept nogil:
    cdef u8 rest[16]
    cdef int r
    for r in range(16):
        rest[r] = hand[r] - c[r]
    return is_play(P, rest)


# ----------------------------------------------------------------------------- keeping the best

cdef enum:
    BY_SCORE = 0          # lowest (s0, s1, s2)
    BY_KEY = 1            # smallest bomb key (§8)
    BY_ORDER = 2          # first in the enumerator's order


cdef struct Pick:
    int have
    int mode
    int seeded            # equal plays: a seeded choice (else the first listed)
    double s0, s1, s2
    u8 c[16]
    RD rd
    unsigned ties


cdef inline int class_of(int kind) noexcept nogil:
    return kind if kind < K_BOMB else CLS_BOMB


cdef int order_cmp(const u8* ca, const RD* ra, const u8* cb, const RD* rb) noexcept nogil:
    """The enumerator's output order (docs/enumeration.md): class, then within it."""
    cdef Entry a, b
    cdef int ka = class_of(ra.kind), kb = class_of(rb.kind)
    if ka != kb:
        return -1 if ka < kb else 1
    memcpy(a.c, ca, 16)
    memcpy(b.c, cb, 16)
    a.rd = ra[0]
    b.rd = rb[0]
    return entry_cmp(&a, &b)


cdef inline void pick_init(Pick* p, int mode, int seeded) noexcept nogil:
    p.have = 0
    p.mode = mode
    p.seeded = seeded
    p.ties = 0


cdef inline void pick_set(Pick* p, double a0, double a1, double a2, const u8* c,
                          const RD* rd) noexcept nogil:
    p.have = 1
    p.s0, p.s1, p.s2 = a0, a1, a2
    memcpy(p.c, c, 16)
    p.rd = rd[0]


cdef void offer(Policy* P, Pick* p, double a0, double a1, double a2, const u8* c,
                const RD* rd) noexcept nogil:
    cdef int r = 0
    if not p.have:
        pick_set(p, a0, a1, a2, c, rd)
        p.ties = 1
        return
    if p.mode == BY_SCORE:
        if a0 != p.s0:
            r = -1 if a0 < p.s0 else 1
        elif a1 != p.s1:
            r = -1 if a1 < p.s1 else 1
        elif a2 != p.s2:
            r = -1 if a2 < p.s2 else 1
    elif p.mode == BY_KEY:
        r = key_cmp(rd, &p.rd)
    if r < 0:
        pick_set(p, a0, a1, a2, c, rd)
        p.ties = 1
    elif r == 0:
        if p.seeded and P.seeded:
            p.ties += 1
            if rng_below(&P.rng, p.ties) == 0:
                pick_set(p, a0, a1, a2, c, rd)
        elif order_cmp(c, rd, p.c, &p.rd) < 0:
            pick_set(p, a0, a1, a2, c, rd)


# ----------------------------------------------------------------------------- walking plays

cdef int walk(Policy* P, const u8* hand, const RD* target, unsigned kinds, int bombs_only,
              play_sink sink, void* ctx) noexcept nogil:
    """Hand every play of ``hand`` (beating ``target`` unless NULL) of ``kinds`` to ``sink``;
    -1 when the deadline stopped it."""
    cdef Enum E
    enum_begin(&E, P.R, hand, target, P.scratch)
    E.kinds = kinds
    E.deadline = P.deadline
    E.nodedupe = 1            # the sinks keep a best play: a repeated proposal changes nothing
    if enum_each(&E, bombs_only, sink, ctx) == -1:
        P.timed_out = 1
        return -1
    return 0


cdef struct Lead:
    Policy* P
    const u8* hand
    int danger
    int n
    Pick safe, high_single, low_single, shed


cdef int lead_sink(void* ctx, const u8* c, const RD* rd) noexcept nogil:
    cdef Lead* L = <Lead*>ctx
    cdef int liab = liability(c)
    L.n += 1
    if L.danger <= 2 and rd.kind != K_SINGLE and (L.danger == 1 or rd.kind != K_PAIR):
        offer(L.P, &L.safe, -liab - rd.ncards, 0, 0, c, rd)
    if rd.kind == K_SINGLE:
        offer(L.P, &L.high_single, -rd.top, 0, 0, c, rd)
        offer(L.P, &L.low_single, 0, 0, 0, c, rd)
    offer(L.P, &L.shed, SPLIT * splits(L.hand, c) - liab + rd.top / 16.0, 0, 0, c, rd)
    return 0


cdef struct Last:
    Policy* P
    const u8* hand
    Pick best


cdef int last_sink(void* ctx, const u8* c, const RD* rd) noexcept nogil:
    cdef Last* L = <Last*>ctx
    if rest_is_play(L.P, L.hand, c):
        offer(L.P, &L.best, 0 if rd.kind >= K_BOMB else 1, -rd.top, 0, c, rd)
    return 0


cdef struct Cheap:
    Policy* P
    const u8* hand
    Pick best


cdef int cheap_sink(void* ctx, const u8* c, const RD* rd) noexcept nogil:
    cdef Cheap* C = <Cheap*>ctx
    offer(C.P, &C.best, precious(C.P.R, C.hand, c), splits(C.hand, c), rd.top, c, rd)
    return 0


cdef struct Bombs:
    Policy* P
    const Seen* S
    int want_out          # look for a bomb that leaves a hand going out
    Pick small, out, pay


cdef inline int pays(const Policy* P, const Seen* S, const RD* rd) noexcept nogil:
    """Does this bomb's star earn points by itself? A per-bomb contribution (§10.4); a
    round-star contribution above the star already reached; or a higher multiplier for a
    team that already holds 1st place (§10.3)."""
    cdef int star = rd.star
    if P.first_contrib >= 0 and star >= P.first_contrib and (P.per_bomb or star > S.star):
        return 1
    return S.winning and P.mult_pays and P.mult_first >= 0 and star >= P.mult_first \
        and star > S.star


cdef int bomb_sink(void* ctx, const u8* c, const RD* rd) noexcept nogil:
    cdef Bombs* B = <Bombs*>ctx
    cdef int left
    offer(B.P, &B.small, 0, 0, 0, c, rd)
    if B.want_out:
        left = B.S.ncards - rd.ncards
        if left <= SMALL_AFTER_BOMB or (left <= ENDGAME and rest_is_play(B.P, B.S.hand, c)):
            offer(B.P, &B.out, 0, 0, 0, c, rd)
    if pays(B.P, B.S, rd) and not has_wild(B.P.R, c):
        offer(B.P, &B.pay, 0, 0, 0, c, rd)
    return 0


cdef int walk_bombs(Policy* P, const Seen* S, const RD* target, int want_out,
                    Bombs* B) noexcept nogil:
    """The hand's bombs (beating ``target`` unless NULL), keeping the smallest, the
    smallest that pays and (``want_out``) the first that leaves a hand going out."""
    B.P = P
    B.S = S
    B.want_out = want_out
    pick_init(&B.small, BY_KEY, 1)
    pick_init(&B.out, BY_ORDER, 0)
    pick_init(&B.pay, BY_KEY, 1)
    return walk(P, S.hand, target, BOMB_MASK, 1, bomb_sink, B)


# ----------------------------------------------------------------------------- the policy

cdef int danger_of(const Seen* S) noexcept nogil:
    """The fewest cards an opponent still holding cards has (NO_DANGER: none)."""
    cdef int s, d = NO_DANGER, mate = partner_of(S.seat)
    for s in range(SEATS):
        if s != S.seat and s != mate and S.sizes[s] and S.sizes[s] < d:
            d = S.sizes[s]
    return d


cdef int star_after(const Policy* P, const Seen* S, const RD* rd) noexcept nogil:
    """The seat's round star (§10.2) once it has played the bomb ``rd`` as well."""
    cdef int stars[MAXB]
    cdef unsigned char chain[MAXB]
    cdef int rule, a, b
    memcpy(stars, S.bstar, S.nb * sizeof(int))
    memcpy(chain, S.bchain, S.nb)
    stars[S.nb] = rd.star
    chain[S.nb] = rd.kind == K_CHAIN_BOMB
    return round_star_of(&P.stars, stars, chain, S.nb + 1, &rule, &a, &b)


cdef void finish(Policy* P, const Seen* S, const u8* c, const RD* meant, int reason,
                 Choice* out) noexcept nogil:
    """A play, with the reading to declare (§7 rules 4, 6): a bomb is meant as the reading
    of its cards that gives the seat the highest round star (qianbian's chain bonus can
    favour a lower one: S + the other bombs of exactly S stars), the listed one on a tie;
    declared whenever that is not what would stand undeclared (the first reading, in
    rule-2 order, that beats)."""
    cdef int i, nr, stands = -1, best_star, star
    cdef RD pick = meant[0]
    out.play = 1
    memcpy(out.c, c, 16)
    out.reason = reason
    out.declare = 0
    nr = classify_counts(P.R, c, P.spare, MAXREAD)
    for i in range(nr):
        if not S.has_st or rd_beats(&P.spare[i], &S.st):
            stands = i
            break
    if meant.kind >= K_BOMB and nr > 1:
        best_star = star_after(P, S, meant)
        for i in range(nr):
            if P.spare[i].kind >= K_BOMB and (not S.has_st or rd_beats(&P.spare[i], &S.st)):
                star = star_after(P, S, &P.spare[i])
                if star > best_star:
                    best_star = star
                    pick = P.spare[i]
    out.rd = pick
    if stands < 0 or P.spare[stands].kind != pick.kind or P.spare[stands].top != pick.top \
            or (pick.kind >= K_BOMB and key_cmp(&P.spare[stands], &pick) != 0):
        out.declare = 1


cdef inline void passes(int reason, Choice* out) noexcept nogil:
    out.play = 0
    out.declare = 0
    out.reason = reason
    memset(out.c, 0, 16)


cdef int rule_choice(Policy* P, const Seen* S, Choice* out) noexcept nogil:
    """The rule policy's action for the seat (suggest.py's steps 1-5); -1 when the deadline
    stopped it (``out`` is then undefined)."""
    cdef int i, nr, danger, mate = partner_of(S.seat)
    cdef u8 plain[16]
    cdef RD whole
    cdef const RD* target = &S.st if S.has_st else NULL
    cdef Lead L
    cdef Last T
    cdef Cheap C
    cdef Bombs B
    cdef const StyleRule* style = &STYLES[P.style]
    out.danger = danger = danger_of(S)
    # 1. go out when it can
    nr = classify_counts(P.R, S.hand, P.spare, MAXREAD)
    for i in range(nr):
        if target == NULL or rd_beats(&P.spare[i], target):
            whole = P.spare[i]
            finish(P, S, S.hand, &whole, R_OUT, out)
            return 0
    plain_of(P.R, S.hand, plain)
    C.P = L.P = T.P = P
    if target == NULL:
        # 3. leading
        if S.ncards <= ENDGAME:
            T.hand = S.hand
            pick_init(&T.best, BY_SCORE, 0)
            if walk(P, S.hand, NULL, ALL_KINDS, 0, last_sink, &T) < 0:
                return -1
            if T.best.have:
                finish(P, S, T.best.c, &T.best.rd, R_LAST_TWO, out)
                return 0
        L.hand = S.hand
        L.danger = danger
        L.n = 0
        pick_init(&L.safe, BY_SCORE, 1)
        pick_init(&L.high_single, BY_SCORE, 0)
        pick_init(&L.low_single, BY_ORDER, 0)
        pick_init(&L.shed, BY_SCORE, 1)
        if ncards_of(plain) and walk(P, plain, NULL, ALL_KINDS, 0, lead_sink, &L) < 0:
            return -1
        if not L.n and walk(P, S.hand, NULL, ORDINARY_MASK, 0, lead_sink, &L) < 0:
            return -1
        if danger <= 2:
            if L.safe.have:
                finish(P, S, L.safe.c, &L.safe.rd, R_SAFE, out)
                return 0
            if walk_bombs(P, S, NULL, 0, &B) < 0:
                return -1
            if B.small.have:
                finish(P, S, B.small.c, &B.small.rd, R_LEAD_BOMB, out)
                return 0
            if L.high_single.have:
                finish(P, S, L.high_single.c, &L.high_single.rd, R_HIGH_SINGLE, out)
                return 0
        if S.sizes[mate] == 1 and danger > 1 and L.low_single.have:
            finish(P, S, L.low_single.c, &L.low_single.rd, R_FEED, out)
            return 0
        if L.n:
            finish(P, S, L.shed.c, &L.shed.rd, R_SHED, out)
            return 0
        if walk_bombs(P, S, NULL, 0, &B) < 0:
            return -1
        if not B.small.have:
            return -2         # no play at all: not a hand of the variant
        finish(P, S, B.small.c, &B.small.rd, R_ONLY_BOMBS, out)
        return 0
    # 2. the partner's play stands (a partner-blind style plays over it)
    if S.st_seat == mate and not style.over_partner:
        passes(R_PARTNER, out)
        return 0
    # 4. following an opponent; the styles move the thresholds for spending wilds and bombs
    C.hand = S.hand
    pick_init(&C.best, BY_SCORE, 1)
    if ncards_of(plain) and walk(P, plain, target, ORDINARY_MASK, 0, cheap_sink, &C) < 0:
        return -1
    if not C.best.have and danger <= style.spend_within:
        # spend wilds or split a bomb to stop them
        if walk(P, S.hand, target, ORDINARY_MASK, 0, cheap_sink, &C) < 0:
            return -1
    if C.best.have:
        finish(P, S, C.best.c, &C.best.rd, R_CHEAP, out)
        return 0
    if walk_bombs(P, S, target, danger > DANGER, &B) < 0:
        return -1
    if not B.small.have:
        passes(R_NOTHING, out)
    elif danger > style.hold_beyond and not B.out.have:
        passes(R_KEEP, out)
    elif danger <= style.bomb_within:
        finish(P, S, B.small.c, &B.small.rd, R_BOMB_DANGER, out)
    elif B.out.have:
        finish(P, S, B.out.c, &B.out.rd, R_BOMB_OUT, out)
    elif B.pay.have:
        finish(P, S, B.pay.c, &B.pay.rd, R_BOMB_PAYS, out)
    else:
        passes(R_KEEP, out)
    return 0


# ----------------------------------------------------------------------------- alternatives

cdef struct Cand:
    u8 c[16]
    RD rd
    double s0, s1, s2


cdef int cand_cmp(const Cand* a, const Cand* b) noexcept nogil:
    """The policy's order of preference: ordinary plays by their cost (leading: precious,
    then the shedding score; following: precious, splits, top), then bombs smallest first;
    ties in the enumerator's order."""
    cdef int ab = a.rd.kind >= K_BOMB, bb = b.rd.kind >= K_BOMB, r = 0
    if ab != bb:
        return ab - bb
    if ab:
        r = key_cmp(&a.rd, &b.rd)
    elif a.s0 != b.s0:
        r = -1 if a.s0 < b.s0 else 1
    elif a.s1 != b.s1:
        r = -1 if a.s1 < b.s1 else 1
    elif a.s2 != b.s2:
        r = -1 if a.s2 < b.s2 else 1
    return r if r else order_cmp(a.c, &a.rd, b.c, &b.rd)


cdef inline int same_play(const u8* ca, const RD* ra, const u8* cb, const RD* rb) noexcept nogil:
    """The same cards listed in the same class (one entry of the enumerator)."""
    return class_of(ra.kind) == class_of(rb.kind) and memcmp16(ca, cb)


cdef inline int memcmp16(const u8* a, const u8* b) noexcept nogil:
    cdef int i
    for i in range(16):
        if a[i] != b[i]:
            return 0
    return 1


cdef struct Alt:
    Policy* P
    const Seen* S
    const Choice* first
    int n, cap            # the preference top-cap, sorted, in top[]
    Cand top[MAXALT]
    int nkind[NKINDS]
    Cand kind[NKINDS]     # the most preferred play of each ordinary type
    int nhigh
    Cand high             # following: the highest ordinary beat
    int nbomb
    Cand bomb             # the smallest bomb


cdef void keep_best(Cand* slot, int* have, const Cand* x) noexcept nogil:
    if not have[0] or cand_cmp(x, slot) < 0:
        slot[0] = x[0]
        have[0] = 1


cdef int alt_sink(void* ctx, const u8* c, const RD* rd) noexcept nogil:
    cdef Alt* A = <Alt*>ctx
    cdef Cand x
    cdef int i, j
    if A.first.play and same_play(c, rd, A.first.c, &A.first.rd):
        return 0
    memcpy(x.c, c, 16)
    x.rd = rd[0]
    x.s0 = precious(A.P.R, A.S.hand, c)
    if A.S.has_st:
        x.s1 = splits(A.S.hand, c)
        x.s2 = rd.top
    else:
        x.s1 = SPLIT * splits(A.S.hand, c) - liability(c) + rd.top / 16.0
        x.s2 = 0
    if rd.kind >= K_BOMB:
        keep_best(&A.bomb, &A.nbomb, &x)
    else:
        keep_best(&A.kind[rd.kind], &A.nkind[rd.kind], &x)
        if A.S.has_st and (not A.nhigh or rd.top > A.high.rd.top or (
                rd.top == A.high.rd.top and cand_cmp(&x, &A.high) < 0)):
            A.high = x
            A.nhigh = 1
    # insert into the sorted top list
    if A.n == A.cap and (A.cap == 0 or cand_cmp(&x, &A.top[A.n - 1]) >= 0):
        return 0
    i = A.n if A.n < A.cap else A.cap - 1
    while i > 0 and cand_cmp(&x, &A.top[i - 1]) < 0:
        A.top[i] = A.top[i - 1]
        i -= 1
    A.top[i] = x
    if A.n < A.cap:
        A.n += 1
    return 0


cdef int alternatives(Policy* P, const Seen* S, const Choice* first, Choice* out, int n,
                      int diverse) noexcept nogil:
    """``first`` (the policy's action) and up to ``n`` - 1 more actions for the seat, in
    ``out``: with ``diverse``, the search's candidates — the most preferred play of each
    type, the highest beat, the smallest bomb and the pass; else the 提示 cycle — the plays
    in the policy's order of preference, then the pass. Returns how many (-1: the deadline
    stopped it)."""
    cdef Alt A
    cdef int i, k, m = 1
    cdef Cand pool[NKINDS + 2]
    cdef int np = 0, reasons[NKINDS + 2]
    cdef Cand tmp
    cdef int rtmp
    if n > MAXALT:
        n = MAXALT
    out[0] = first[0]
    if n <= 1:
        return 1
    memset(&A, 0, sizeof(Alt))
    A.P = P
    A.S = S
    A.first = first
    A.cap = 0 if diverse else n - 1
    if walk(P, S.hand, &S.st if S.has_st else NULL, ALL_KINDS, 0, alt_sink, &A) < 0:
        return -1
    if diverse:
        for k in range(NKINDS):
            if A.nkind[k]:
                pool[np] = A.kind[k]
                reasons[np] = R_ALT_KIND
                np += 1
        if A.nhigh:
            for i in range(np):
                if same_play(pool[i].c, &pool[i].rd, A.high.c, &A.high.rd):
                    break
            else:
                pool[np] = A.high
                reasons[np] = R_ALT_HIGH
                np += 1
        if A.nbomb:
            pool[np] = A.bomb
            reasons[np] = R_ALT_BOMB
            np += 1
        for i in range(1, np):              # in the order of preference
            tmp, rtmp = pool[i], reasons[i]
            k = i
            while k > 0 and cand_cmp(&tmp, &pool[k - 1]) < 0:
                pool[k], reasons[k] = pool[k - 1], reasons[k - 1]
                k -= 1
            pool[k], reasons[k] = tmp, rtmp
    if diverse:
        for i in range(np):
            if m >= n:
                break
            finish(P, S, pool[i].c, &pool[i].rd, reasons[i], &out[m])
            m += 1
    else:
        for i in range(A.n):
            if m >= n:
                break
            finish(P, S, A.top[i].c, &A.top[i].rd, R_ALT_NEXT, &out[m])
            m += 1
    if S.has_st and first.play and m < n:
        passes(R_ALT_PASS, &out[m])
        out[m].danger = first.danger
        m += 1
    for i in range(1, m):
        out[i].danger = first.danger
    return m


# ----------------------------------------------------------------------------- applying

cdef int apply_choice(Position* p, const Rules* R, int seat, const Choice* ch) noexcept nogil:
    """Play ``ch`` (an action the policy proposed: the seat holds its cards, and a play's
    reading beats) in the position ``p``; -1 when the play has no reading that stands
    (never for the policy's own: the rollouts report it as an engine fault)."""
    cdef Decl d
    if not ch.play:
        pos_pass(p, seat)
        return 0
    choice_decl(ch, &d)
    return -1 if pos_play(p, R, seat, ch.c, &d) < 0 else 0


cdef int choice_decl(const Choice* ch, Decl* d) noexcept nogil:
    """What a play of ``ch`` declares (§7 rule 6): its reading's type, top and star when it
    must be declared, else nothing (the first reading that beats stands)."""
    d.kind = d.top = d.star = d.nwild = -1
    if ch.declare:
        d.kind = ch.rd.kind
        d.top = ch.rd.top
        d.star = ch.rd.star if ch.rd.star else -1
    return 0


# ----------------------------------------------------------------------------- Python face

cdef int _hand_of(RuleSet rs, object hand, int* codes, int* start, u8* counts) except -1:
    """Parse and check a hand (codes sorted); ``start[r]``: where rank r's codes begin."""
    cdef int r, i = 0
    cdef int n = _hand_counts(hand, rs, codes, counts)
    for r in range(NFACES):
        start[r] = i
        i += counts[r]
    counts[15] = 0
    return n


cdef list _answer(Policy* P, RuleSet rs, const Choice* got, int m, const int* codes,
                  const int* start):
    """The actions as records (rollouts.Proposal) with the hand's codes."""
    cdef int i, r, j
    out = []
    for i in range(m):
        if not got[i].play:
            out.append(Proposal((), None, False, got[i].reason, got[i].danger))
            continue
        cards = []
        for r in range(NFACES):
            for j in range(got[i].c[r]):
                cards.append(codes[start[r] + j])
        out.append(Proposal(tuple(cards), make_reading(&got[i].rd, rs), bool(got[i].declare),
                            got[i].reason, got[i].danger))
    return out


cdef list _run(Policy* P, RuleSet rs, const Seen* S, int count, bint diverse, object timeout,
               const int* codes, const int* start):
    cdef Choice got[MAXALT]
    cdef int m, rc
    if timeout is not None:
        P.deadline = monotonic() + max(float(timeout), 1e-9)
    if S.ncards <= 0:
        raise ShuangkouError("the seat holds no cards: nothing to suggest", "hand")
    with nogil:
        rc = rule_choice(P, S, &got[0])
        m = 1
        if rc == 0 and count > 1:
            m = alternatives(P, S, &got[0], got, count, diverse)
    if rc == -1 or m < 0:
        raise DeadlineExceeded("the suggestion ran out of its time budget")
    if rc == -2:
        raise ShuangkouError("the hand has no play", "hand")
    return _answer(P, rs, got, m, codes, start)


def choose(variant, int seat, hand, sizes, standing=None, *, seed=None, int star=0,
           bint winning=False, played=(), int count=1, bint diverse=False, timeout=None):
    """The rule policy on plain table facts (suggest.decide's engine): ``standing`` =
    (seat, Reading) of the play to beat or None; ``played`` the seat's bombs so far
    (Readings; ``star`` at least their highest). Returns ``count`` actions at most, the
    policy's first, as :class:`~shuangkou.core.rollouts.Proposal` records (a pass: cards
    ``()``, reading None); raises DeadlineExceeded past ``timeout`` seconds."""
    cdef RuleSet rs = get_rules(variant)
    cdef Policy P
    cdef Seen S
    cdef int codes[MAXCARDS]
    cdef int start[NFACES]
    cdef int s
    if not is_seat(seat):
        check_seat(seat)           # raises: the sentence has one home (cards.py)
    memset(&S, 0, sizeof(Seen))
    S.ncards = _hand_of(rs, hand, codes, start, S.hand)
    S.seat = seat
    for s in range(SEATS):
        S.sizes[s] = sizes[s]
    S.sizes[seat] = S.ncards
    S.star = star
    S.winning = winning
    S.nb = 0
    for x in played:
        if S.nb < MAXB - 1:
            reading_rd(x, rs, &S.st)
            S.bstar[S.nb] = S.st.star
            S.bchain[S.nb] = S.st.kind == K_CHAIN_BOMB
            S.star = max(S.star, S.st.star)
            S.nb += 1
    S.st_seat = -1
    if standing is not None:
        S.has_st = 1
        S.st_seat = standing[0]
        reading_rd(standing[1], rs, &S.st)
    policy_open(&P, rs, seed)
    try:
        return _run(&P, rs, &S, count, diverse, timeout, codes, start)
    finally:
        policy_close(&P)


def choose_in(RoundCore r, *, seed=None, int count=1, bint diverse=False, timeout=None):
    """The rule policy for the seat to act in a round (what that seat sees of it); as
    :func:`choose`."""
    cdef Policy P
    cdef Seen S
    cdef int codes[MAXCARDS]
    cdef int start[NFACES]
    cdef u8 counts[16]
    if r.pos.over_kind:
        raise ShuangkouError("the round is over: nothing to suggest", "state")
    seen_of(&r.pos, r.pos.turn, &S)
    _hand_of(r.rs, r.hand(r.pos.turn), codes, start, counts)
    policy_open(&P, r.rs, seed)
    try:
        return _run(&P, r.rs, &S, count, diverse, timeout, codes, start)
    finally:
        policy_close(&P)
