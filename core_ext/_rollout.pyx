# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The rollout engine: a decision's candidate actions played out on random deals of the cards
the deciding seat cannot see, their outcomes tallied in pairs — without the GIL.

Everything that thinks by rollouts drives this one engine (_search.pyx): 托管's search, the
review's evaluation (复盘), self-play. A driver opens an :class:`Engine` on the decision's
round, gives it the candidates (the rule policy's action first: the reference every gain is
measured against), and runs deals:

1. **A deal** of a view (``Engine.known``: the seats whose hands it sees — the deciding
   seat's own; its partner's too, for the fair-play signal of a pair that shares hands; all
   four, the true deal): the cards it does not see (the deck minus the hands it sees and
   every card played; a partial deal's pool is the unseen hands' cards) dealt at random to
   the seats it does not see, in their card counts. Nothing else of those hands is read, so
   a view is information-fair by construction: re-dealing its unseen cards among the other
   seats changes no decision. With ``infer``, the deal (and the styles) are drawn again, up
   to INFER_TRIES times, until every seat that passed on the standing play would have
   passed holding what the deal gives it.
2. **Styles**: each other seat plays the rule policy in a style drawn per deal from the
   rollout model's row (core_ext/styles.py MODEL_TABLE) — or, with ``read``, by per-seat
   weights its actions so far make likely. The same styles for every candidate of the deal.
3. **Rollouts**: every live candidate is applied to a copy of the deal's position and the
   round is played to its end by the rule policy in all four seats (_suggest.pyx
   ``rule_choice``, on :c:type:`Position`, _round.pxd: the round's own transitions); with
   ``exact`` > 0, once the hands hold that many cards or fewer together, the rest is solved
   exactly on that deal (alpha-beta over every legal action, the team's settlement as the
   value) when it fits in EXACT_NODES positions. The deciding seat's team scores its
   settlement points (``position_amounts``: base × multiplier + contributions) plus a bonus
   for placing first (:func:`win_bonus`).
4. **Tallies**: per candidate its own outcomes, and its paired differences with candidate 0
   and with the taken action — every candidate meets the same deals, so the luck of the
   deal cancels out of the differences. With ``race``, a candidate clearly behind another
   (:func:`race_out`) stops being rolled out, the deals left going to the others.

A deal and its rollouts run without the GIL; :meth:`Engine.run` takes it only between deals,
at most every CHECK_EVERY seconds, to ask the driver's ``cancelled`` (a client that went
away). The clock is read without it. So two searches in one process use two cores, and a
search never holds up the process's other threads.

Deterministic: the deals of a decision are drawn from its seed and the round's action count
(``base``) and the deal's index, so the same state, seed and rollout budget give the same
tallies on any machine. Memory is three positions, a stack of positions for the exact
endgame and the tallies, whatever the budget.
"""

from libc.math cimport sqrt
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from shuangkou.core._core cimport RD, make_reading, u8
from shuangkou.core._enumerate cimport Enum, enum_begin, enum_each, monotonic
from shuangkou.core._round cimport RoundCore, pos_next_holding
from shuangkou.core._settle cimport position_amounts, tables
from shuangkou.core._suggest cimport (
    STYLE_RULE,
    Seen,
    apply_choice,
    nstyles,
    policy_close,
    policy_open,
    rng_below,
    rng_mix,
    rng_next,
    rule_choice,
    seen_of,
)
from shuangkou.core.cards cimport NCODES, SJ, code_rank, partner_of, team_of

from shuangkou.core.errors import ShuangkouError
from shuangkou.core.styles import model as _model
from shuangkou.core.styles import style_index as _style_index

cdef enum:
    MAXDECK = 1024        # cards a deck may hold (house variants: decks × 52 + jokers)
    WIN_WEIGHT = 3        # a win is worth this many 双扣 base amounts on top of its points
    INFER_TRIES = 16      # deals drawn at most for one consistent with the passes seen
    MAXMOVES = 40         # an endgame position with more actions than this is rolled out
    EXACT_DEPTH = 96      # actions an exact endgame may look ahead (passes included)
    EXACT_NODES = 600     # positions one exact solve may visit; past it, roll out instead
    RACE_FROM = 16        # deals every candidate meets before any is dropped
    RACE_EVERY = 4        # deals between two looks

cdef double RACE_Z = 2.0         # standard errors apart: a candidate is clearly behind
#: Seconds between two looks at ``cancelled`` (with the GIL) while deals run.
CHECK_EVERY = 0.02
cdef double TWO_M53 = 1.0 / 9007199254740992.0     # a 53-bit integer to [0, 1)
#: What seeds a wider view's deals apart from the seat's own (the same decision's base).
cdef unsigned long long WIDE_SALT = 0x0AC1E5EED
#: What seeds the decoy hands of a wider view (one stream per decoy number).
cdef unsigned long long DECOY_SALT = 0xDEC0A5EED

#: The largest exact endgame (cards in play) a caller may ask for.
MAX_EXACT = 24
#: The most decoys a fair-play view may have.
MAX_DECOYS = MAX_DECOYS_C
#: The seat mask of the view that sees every hand (the true deal).
ALL_SEATS = EVERY_SEAT_MASK


# ----------------------------------------------------------------------------- deals

cdef int unseen_pool(RoundCore r, int seat, int known, int* pool) except -1:
    """Cards of each rank the view of ``seat`` knowing the hands ``known`` (a seat mask,
    ``seat`` in it) cannot see: the deck minus the hands it sees and the cards played; a
    partial deal's pool is the unseen hands' cards (the deal says which cards are in play)."""
    cdef const Position* p = r.view()
    cdef int s, rank, c, total = 0, held = 0
    memset(pool, 0, NFACES * sizeof(int))
    for s in range(SEATS):
        if not (known >> s) & 1:
            held += p.nleft[s]
    if not r.partial_deal:
        for rank in range(NFACES):
            if rank >= SJ:
                pool[rank] = r.rs.r.max_joker
            elif rank >= r.rs.r.lo:
                pool[rank] = r.rs.r.max_rank
            for s in range(SEATS):
                if (known >> s) & 1:
                    pool[rank] -= p.nranks[s][rank]
        for c in range(1, NCODES):
            if r.nplayed[c]:
                pool[code_rank(c)] -= r.nplayed[c]
        for rank in range(NFACES):
            if pool[rank] < 0:
                total = -1
                break
            total += pool[rank]
    if r.partial_deal or total != held:
        memset(pool, 0, NFACES * sizeof(int))
        for s in range(SEATS):
            if not (known >> s) & 1:
                for rank in range(NFACES):
                    pool[rank] += p.nranks[s][rank]
    return 0


cdef void deal_unseen(Position* p, int known, const int* pool, Rng* g) noexcept nogil:
    """Deal the pool at random to the seats not in ``known``, in their card counts."""
    cdef u8 cards[MAXDECK]
    cdef int n = 0, rank, k, i, j, s
    cdef u8 t
    for rank in range(NFACES):
        for k in range(pool[rank]):
            if n < MAXDECK:
                cards[n] = rank
                n += 1
    for i in range(n - 1, 0, -1):
        j = rng_below(g, i + 1)
        t = cards[i]
        cards[i] = cards[j]
        cards[j] = t
    i = 0
    for s in range(SEATS):
        if (known >> s) & 1:
            continue
        memset(p.nranks[s], 0, NFACES)
        for k in range(p.nleft[s]):
            if i < n:
                p.nranks[s][cards[i]] += 1
                i += 1


# ----------------------------------------------------------------------------- outcomes

cdef long long team_points(Engine e, const Position* p, int* won) noexcept nogil:
    """The settlement points of the deciding seat's team for the finished position ``p``;
    ``won``: the team placed first (§9)."""
    cdef long long amount[SEATS]
    if position_amounts(e.tables, p, amount) < 0:
        e.fault = 1
        amount[e.seat] = amount[partner_of(e.seat)] = 0
    won[0] = p.nfin > 0 and team_of(p.fin[0]) == team_of(e.seat)
    return amount[e.seat] + amount[partner_of(e.seat)]


def win_bonus(variant):
    """What placing first is worth beyond its settlement: WIN_WEIGHT × the winning team's
    双扣 base at ×1 (8 points where the base is 4 4 −4 −4; huopin: 2 × 3). Measured
    (docs/decisions.md): points alone trade wins for contributions where bombs pay a lot
    (fengkuang_crazy: 43 % of rounds won, +11.5 points; with the bonus 71 %, +12.7)."""
    t = tables(variant)
    if t.end.kou:
        return float(WIN_WEIGHT * 2 * t.kou[0])
    return float(WIN_WEIGHT * (t.base[0][0] + t.base[0][1]))


# ----------------------------------------------------------------------------- rollouts

cdef int play_out(Engine e, Position* r, const int* styles, Leaf* leaf) noexcept nogil:
    """Play ``r`` to its end with the rule policy in every seat, each in its style
    (``styles[seat]``); once the hands hold ``e.exact`` cards or fewer together (0: never),
    solve the rest exactly instead (:func:`solve`) — then 1 is returned and ``leaf`` holds
    its outcome; 0 when played to the end; -1 when the policy's deadline stopped it."""
    cdef Seen S
    cdef Choice ch
    cdef int seat, rc, exact = e.exact
    cdef long nodes
    while not r.over_kind:
        if exact and cards_in_play(r) <= exact:
            nodes = 0
            if solve(e, 0, r, -1e300, 1e300, &nodes, leaf) == 0:
                e.actions += nodes
                return 1
            exact = 0         # too large to solve: roll the rest out
        if e.P.deadline and (e.actions & 15) == 0 and monotonic() > e.P.deadline:
            e.P.style = STYLE_RULE
            return -1             # the time budget is spent: the deal is not counted
        seat = r.turn
        seen_of(r, seat, &S)
        e.P.style = styles[seat]
        rc = rule_choice(&e.P, &S, &ch)
        e.P.style = STYLE_RULE
        if rc < 0:
            return -1
        if apply_choice(r, e.P.R, seat, &ch) < 0:
            e.fault = 1
            return -1
        e.actions += 1
    return 0


cdef int cards_in_play(const Position* r) noexcept nogil:
    cdef int s, n = 0
    for s in range(SEATS):
        n += r.nleft[s]
    return n


cdef struct Moves:
    int n
    Choice m[MAXMOVES]


cdef int move_sink(void* ctx, const u8* c, const RD* rd) noexcept nogil:
    cdef Moves* M = <Moves*>ctx
    if M.n >= MAXMOVES:
        M.n += 1
        return 1              # too many actions for an exact search: stop listing
    M.m[M.n].play = 1
    memcpy(M.m[M.n].c, c, 16)
    M.m[M.n].rd = rd[0]
    M.m[M.n].declare = 0      # undeclared: the first reading that beats stands (always legal)
    M.m[M.n].reason = 0
    M.m[M.n].danger = 0
    M.n += 1
    return 0


cdef int solve(Engine e, int depth, const Position* r, double alpha, double beta,
               long* nodes, Leaf* out) noexcept nogil:
    """The round at ``r`` played to its end with every hand known (a deal's), each team
    choosing its best by the deciding seat's team's settlement (max for its team, min for
    the other: alpha-beta). Fills ``out`` with the value and its leaf's points; returns 0,
    or 1 when it gave up (more than EXACT_NODES positions or MAXMOVES actions, too deep, or
    the deadline): the caller rolls out instead."""
    cdef Moves M
    cdef Enum E
    cdef Leaf child
    cdef u8 h[16]
    cdef int k, turn, maximise, rc
    cdef Position* y
    if r.over_kind:
        out.points = team_points(e, r, &out.won)
        out.value = out.points + e.win_value * out.won
        return 0
    nodes[0] += 1
    if nodes[0] > EXACT_NODES or depth >= EXACT_DEPTH:
        return 1
    if e.P.deadline and (nodes[0] & 15) == 0 and monotonic() > e.P.deadline:
        return 1
    turn = r.turn
    memset(h, 0, 16)
    memcpy(h, r.nranks[turn], NFACES)
    M.n = 0
    enum_begin(&E, e.P.R, h, &r.st if r.has_st else NULL, e.P.scratch)
    E.deadline = e.P.deadline
    E.max_hash = 1 << 16
    rc = enum_each(&E, 0, move_sink, &M)
    if rc == -1 or M.n > MAXMOVES or (r.has_st and M.n == MAXMOVES):
        return 1
    if r.has_st:
        M.m[M.n].play = 0
        memset(M.m[M.n].c, 0, 16)
        M.m[M.n].declare = M.m[M.n].reason = M.m[M.n].danger = 0
        M.n += 1
    maximise = team_of(turn) == team_of(e.seat)
    out.value = -1e300 if maximise else 1e300
    y = &e.stack[depth]
    for k in range(M.n):
        y[0] = r[0]
        if apply_choice(y, e.P.R, turn, &M.m[k]) < 0:
            e.fault = 1
            return 1
        if solve(e, depth + 1, y, alpha, beta, nodes, &child):
            return 1
        if (child.value > out.value) if maximise else (child.value < out.value):
            out[0] = child
        if maximise:
            alpha = max(alpha, out.value)
        else:
            beta = min(beta, out.value)
        if alpha >= beta:
            break
    return 0


cdef int passed_alike(Engine e, const Position* det, const int* styles) noexcept nogil:
    """Whether every seat that passed on the standing play since it was made would pass
    again holding what ``det`` deals it, playing its drawn style: the inference from
    passes. Everything such a seat saw when it passed is still as it was (only passes
    came after the standing play), so its decision is asked again as it stood."""
    cdef Seen S
    cdef Choice ch
    cdef int k, s, rc
    if not det.has_st:
        return 1
    s = det.st_seat
    for k in range(det.npasses):
        s = pos_next_holding(det, s)
        seen_of(det, s, &S)
        e.P.style = styles[s]
        rc = rule_choice(&e.P, &S, &ch)
        e.P.style = STYLE_RULE
        if rc == 0 and ch.play:
            return 0
    return 1


# ----------------------------------------------------------------------------- tallies

cdef inline void pair_add(Pair* t, double value, long long points, int won) noexcept nogil:
    """One deal's differences (value, points, placed first) with the anchor's."""
    t.n += 1
    t.vsum += value
    t.vsq += value ** 2
    t.psum += points
    t.psq += (<double>points) ** 2
    t.wsum += won


cdef inline double mean_of(int n, double s) noexcept nogil:
    return s / n if n else 0


cdef inline double se_of(int n, double s, double sq) noexcept nogil:
    """The standard error of a mean of ``n`` paired differences summing to ``s`` whose
    squares sum to ``sq`` (0 under two deals)."""
    cdef double mean = mean_of(n, s)
    if n < 2:
        return 0
    return sqrt(max(sq / n - mean * mean, 0) / (n - 1))


cdef int race_out(Engine e, const Tally* t) noexcept nogil:
    """Drop the candidates clearly behind another: those whose gain over candidate 0 (the
    rule policy's action), plus RACE_Z standard errors, is below some candidate's gain minus
    RACE_Z standard errors — or below 0, candidate 0 itself. The anchors (candidate 0 and
    the taken action) are never dropped: every gain is measured against them. A dropped
    candidate could not be chosen (the choice needs a gain above the margin's standard
    errors, and above every other's), so the deals left go to those that could
    (docs/decisions.md 72). The sum of two standard errors bounds the paired difference's,
    so "clearly behind" is conservative. Returns the candidates still live."""
    cdef double up[MAXC]
    cdef double lo = 0, mean, se
    cdef int k, n = 1
    for k in range(1, e.m):
        if e.live[k]:
            mean = mean_of(t.ref[k].n, t.ref[k].vsum)
            se = se_of(t.ref[k].n, t.ref[k].vsum, t.ref[k].vsq)
            up[k] = mean + RACE_Z * se
            lo = max(lo, mean - RACE_Z * se)
    for k in range(1, e.m):
        if e.live[k]:
            if up[k] < lo and k != e.taken:
                e.live[k] = 0
            else:
                n += 1
    return n


cdef int settled(Engine e, const Tally* t) noexcept nogil:
    """Whether the decision's best candidate in points is clearly ahead of every other: its
    gain over candidate 0 minus RACE_Z standard errors above every other's plus RACE_Z
    (candidate 0's gain is 0, its standard error 0). The sum of two standard errors bounds
    the paired difference's, so "clearly" is conservative. Every candidate met every deal:
    the figures of all of them stay comparable (the review's ``race``)."""
    cdef double g[MAXC]
    cdef double se[MAXC]
    cdef int k, best = 0
    for k in range(e.m):
        g[k] = mean_of(t.ref[k].n, t.ref[k].psum)
        se[k] = se_of(t.ref[k].n, t.ref[k].psum, t.ref[k].psq)
        if g[k] > g[best]:
            best = k
    for k in range(e.m):
        if k != best and g[best] - RACE_Z * se[best] <= g[k] + RACE_Z * se[k]:
            return 0
    return 1


# ----------------------------------------------------------------------------- the engine

cdef class Engine:
    """The rollouts of one decision (module doc). A driver opens it with :meth:`open`, sets
    ``cands``/``m`` (candidate 0 the rule policy's action) and ``taken``, then :meth:`run`s
    deals per view and reads the tallies (:meth:`outcomes`)."""

    def __cinit__(self):
        self.P.scratch = NULL
        self.stack = NULL

    def __dealloc__(self):
        policy_close(&self.P)
        free(self.stack)
        self.stack = NULL

    cdef int open(self, RoundCore root, object seed, str model, int exact, bint infer,
                  bint race, object read, object win, bint seeded_policy) except -1:
        """Ready the engine for the decision of the seat to act in ``root``: the policy's
        work space (ties broken by ``seed`` when ``seeded_policy``), the settlement tables,
        the model's draws or ``read``'s weights, the seat's own view."""
        cdef int k
        if not 0 <= exact <= MAX_EXACT:
            raise ShuangkouError(f"exact must be 0–{MAX_EXACT}; got {exact}", "exact")
        row = _model(model)
        self.ndraws = len(row.draws)
        for k in range(self.ndraws):
            self.draws[k] = _style_index(row.draws[k])
        self.has_read = 0
        if read is not None:
            cumulative_weights(read, self.read)
            self.has_read = 1
        policy_open(&self.P, root.rs, seed if seeded_policy else None)
        self.tables = tables(root.rs)
        self.win_value = win_bonus(root.rs) if win is None else float(win)
        self.root = root.view()[0]
        self.seat = root.view().turn
        self.exact, self.infer, self.race = exact, infer, race
        self.settle = 0
        if exact and self.stack == NULL:
            self.stack = <Position*>malloc(EXACT_DEPTH * sizeof(Position))
            if self.stack == NULL:
                raise MemoryError()
        self.base = rng_mix(<unsigned long long>(seed & 0xFFFFFFFFFFFFFFFF) if seed is not None
                        else 0, <unsigned long long>root.view().actions)
        memset(self.tally, 0, sizeof(self.tally))
        self.m = self.nlive = 0
        self.taken = 0
        self.rollouts = self.actions = 0
        self.solved = self.fault = 0
        self.see(0, root, 1 << self.seat, 0, 0)
        self.see(1, root, EVERY_SEAT_MASK, WIDE_SALT, 0)
        return 0

    cdef int see(self, int view, RoundCore root, int known, unsigned long long salt,
                 int decoy) except -1:
        """Make ``view`` the view knowing the hands ``known`` (the deciding seat's own always
        among them), its deals salted by ``salt``. ``decoy`` > 0: a decoy of that view — the
        hands it knows (but the seat's own) are not the true ones but decoy number ``decoy``,
        drawn from what the seat itself sees as its own view's deals are: what the seat
        could not know, made up. A player who does not see those hands plays the true view
        as it plays its decoys (the fair-play signals' reference, core_ext/fairplay.py)."""
        cdef Rng g
        cdef int s, rank
        known |= 1 << self.seat
        self.known[view] = known
        self.salt[view] = salt
        self.vbase[view] = self.root
        if decoy:
            g.s = rng_mix(self.base ^ DECOY_SALT, <unsigned long long>decoy)
            deal_unseen(&self.vbase[view], 1 << self.seat, self.pool[0], &g)
        if known == EVERY_SEAT_MASK:
            return 0
        if view == 0:
            unseen_pool(root, self.seat, known, self.pool[0])
            return 0
        memset(self.pool[view], 0, NFACES * sizeof(int))    # the unseen hands of its base
        for s in range(SEATS):
            if not (known >> s) & 1:
                for rank in range(NFACES):
                    self.pool[view][rank] += self.vbase[view].nranks[s][rank]
        return 0

    cdef int candidates(self, int m) except -1:
        """``m`` candidates are in ``cands``: all live, nothing tallied."""
        cdef int k
        self.m = self.nlive = m
        for k in range(m):
            self.live[k] = 1
        memset(self.tally, 0, sizeof(self.tally))
        return 0

    cdef int deal(self, int view) noexcept nogil:
        """One deal of ``view`` (its next): drawn, every live candidate rolled out on it and
        tallied. 0, or -1 when the policy's deadline (or an engine fault) stopped a rollout:
        the deal is then not counted."""
        cdef Tally* t = &self.tally[view]
        cdef Rng g
        cdef int styles[SEATS]
        cdef long long points[MAXC]
        cdef int won[MAXC]
        cdef double values[MAXC]
        cdef int k, rc, n = 0, dealing = self.known[view] != EVERY_SEAT_MASK
        cdef int tries = INFER_TRIES if self.infer and dealing else 1
        cdef Leaf leaf
        g.s = rng_mix(self.base ^ self.salt[view], <unsigned long long>t.deals)
        self.det = self.vbase[view]
        for k in range(tries):      # deal_unseen deals every unseen hand anew: no copy between
            if dealing:
                deal_unseen(&self.det, self.known[view], self.pool[view], &g)
            self.draw_styles(&g, styles)
            if tries == 1 or passed_alike(self, &self.det, styles):
                break
        for k in range(self.m):
            if view == 0 and not self.live[k]:   # a wider view meets every candidate: the
                continue                         # best there may be one the race dropped
            self.x = self.det
            if apply_choice(&self.x, self.P.R, self.seat, &self.cands[k]) < 0:
                self.fault = 1
                return -1
            rc = play_out(self, &self.x, styles, &leaf)
            if rc < 0:
                return -1
            if rc == 1:
                points[k], won[k], values[k] = leaf.points, leaf.won, leaf.value
                self.solved += 1
            else:
                points[k] = team_points(self, &self.x, &won[k])
                values[k] = points[k] + self.win_value * won[k]
            n += 1
        for k in range(self.m):
            if view == 0 and not self.live[k]:
                continue
            t.n[k] += 1
            t.psum[k] += points[k]
            t.wsum[k] += won[k]
            pair_add(&t.ref[k], values[k] - values[0], points[k] - points[0], won[k] - won[0])
            pair_add(&t.tk[k], values[k] - values[self.taken], points[k] - points[self.taken],
                     won[k] - won[self.taken])
        t.deals += 1
        self.rollouts += n
        return 0

    cdef void draw_styles(self, Rng* g, int* styles) noexcept nogil:
        """The style of each seat in one deal's rollouts (the same for every candidate):
        drawn from the model's row (a row of one style draws nothing) or, with ``read``, by
        each seat's cumulative weights."""
        cdef int s, k, ns = nstyles()
        cdef double u
        for s in range(SEATS):
            styles[s] = STYLE_RULE
            if s == self.seat:
                continue
            if self.has_read:
                u = (rng_next(g) >> 11) * TWO_M53 * self.read[s * ns + ns - 1]
                k = 0
                while k < ns - 1 and self.read[s * ns + k] <= u:
                    k += 1
                styles[s] = k
            elif self.ndraws > 1:
                styles[s] = self.draws[rng_below(g, self.ndraws)]
            else:
                styles[s] = self.draws[0]

    cdef int run(self, int view, long max_rollouts, int min_deals, int max_deals,
                 double stop, double hard, object cancelled) except -1:
        """Deal ``view`` until its budget is spent: ``max_rollouts`` rollouts (0: no count
        limit; the engine's count, every view's) once ``min_deals`` are in, ``stop`` (a
        monotonic time; 0: none) once ``min_deals`` are in, ``max_deals`` deals of the view
        (0: no limit), the race; ``hard`` (0: none) and ``cancelled`` end it early. The
        deals run without the GIL; it is taken only between deals, every CHECK_EVERY
        seconds, to ask ``cancelled``. Returns the RUN_* it ended on."""
        cdef int rc
        cdef double due = monotonic() + CHECK_EVERY if cancelled is not None else 0
        while True:
            with nogil:
                rc = self._deals(view, max_rollouts, min_deals, max_deals, stop, hard, due)
            if rc >= 0:
                return rc
            if cancelled():
                return RUN_CANCELLED
            due = monotonic() + CHECK_EVERY

    cdef int _deals(self, int view, long max_rollouts, int min_deals, int max_deals,
                    double stop, double hard, double due) noexcept nogil:
        cdef Tally* t = &self.tally[view]
        cdef double now
        while True:
            if max_deals and t.deals >= max_deals:
                return RUN_BUDGET
            if t.deals >= min_deals:
                if max_rollouts and self.rollouts + self.nlive > max_rollouts:
                    return RUN_BUDGET
            if stop or hard or due:
                now = monotonic()
                if stop and t.deals >= min_deals and now >= stop:
                    return RUN_BUDGET
                if hard and now >= hard:
                    return RUN_DEADLINE
                if due and now >= due:
                    return -1
            if self.deal(view) < 0:
                return RUN_STOPPED
            if view == 0 and t.deals >= RACE_FROM and t.deals % RACE_EVERY == 0:
                if self.race:
                    self.nlive = race_out(self, t)
                    if self.nlive == (1 if self.taken == 0 else 2):
                        return RUN_RACED
                elif self.settle and settled(self, t):
                    return RUN_RACED

    cdef object outcomes(self, RoundCore root, object hint_ranks):
        """The candidates as records (core_ext/rollouts.py ``Evaluated``), in candidate
        order: their cards from the seat's hand, readings, and tallies of both views."""
        from shuangkou.core.rollouts import Evaluated
        cdef const Tally* own = &self.tally[0]
        cdef const Tally* wide = &self.tally[1]
        cdef int k
        out = []
        for k in range(self.m):
            cards, reading = _cards(root, self.seat, &self.cands[k])
            out.append(Evaluated(
                cards, reading, bool(self.cands[k].declare), self.cands[k].reason,
                self.cands[k].danger, hint_ranks[k] if hint_ranks is not None else k,
                bool(self.live[k]), own.n[k],
                own.psum[k] / own.n[k] if own.n[k] else None,
                own.wsum[k] / own.n[k] if own.n[k] else None,
                mean_of(own.ref[k].n, own.ref[k].vsum),
                se_of(own.ref[k].n, own.ref[k].vsum, own.ref[k].vsq),
                mean_of(own.ref[k].n, own.ref[k].psum),
                se_of(own.ref[k].n, own.ref[k].psum, own.ref[k].psq),
                mean_of(own.ref[k].n, own.ref[k].wsum),
                mean_of(own.tk[k].n, own.tk[k].psum),
                se_of(own.tk[k].n, own.tk[k].psum, own.tk[k].psq),
                wide.psum[k] / wide.n[k] if wide.n[k] else None,
                wide.wsum[k] / wide.n[k] if wide.n[k] else None))
        return tuple(out)

    cdef tuple view_points(self, int view):
        """Per candidate (in candidate order) its team's mean points on ``view``'s deals
        (NaN for a candidate it did not meet)."""
        cdef const Tally* t = &self.tally[view]
        return tuple([t.psum[k] / t.n[k] if t.n[k] else float("nan") for k in range(self.m)])


cdef tuple _cards(RoundCore r, int seat, const Choice* ch):
    """A candidate with the seat's own card codes (lowest codes of each rank first)."""
    cdef int taken[NFACES]
    cdef int rank
    if not ch.play:
        return (), None
    memset(taken, 0, sizeof(taken))
    out = []
    for code in r.hand(seat):
        rank = code_rank(code)
        if taken[rank] < ch.c[rank]:
            taken[rank] += 1
            out.append(code)
    return tuple(out), make_reading(&ch.rd, r.rs)


cdef int cumulative_weights(object read, double* out) except -1:
    """``read`` (per seat, a weight per style: :func:`read_weights`) as cumulative sums in
    ``out`` (SEATS × the styles), checked: ShuangkouError naming ``read``."""
    cdef int s, k, ns = nstyles()
    cdef double w, total
    try:
        rows = [list(map(float, row)) for row in read]
    except (TypeError, ValueError):
        raise ShuangkouError("read must hold, per seat, a weight per style", "read") from None
    if len(rows) != SEATS or any(len(row) != ns for row in rows):
        raise ShuangkouError(f"read must hold {SEATS} rows of {ns} weights", "read")
    for s in range(SEATS):
        total = 0
        for k in range(ns):
            w = rows[s][k]
            if not w >= 0 or w == float("inf"):
                raise ShuangkouError(f"read: seat {s}'s weights must be finite and 0 or more",
                                     "read")
            total += w
            out[s * ns + k] = total
        if not total > 0:
            raise ShuangkouError(f"read: seat {s}'s weights are all 0", "read")
    return 0
