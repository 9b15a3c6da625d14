# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""托管 by search: determinized rollouts of the rule policy, in compiled code.

A decision of the seat to act is searched as follows (docs/rounds.md "托管 and 提示"):

1. **Candidates**: the rule policy's action and the most different alternatives it ranks
   (_suggest.pyx ``alternatives``: the preferred play of each type, the highest beat, the
   smallest bomb, the pass), ``width`` of them at most. One candidate: nothing to search.
2. **Deals of the unseen cards** consistent with what the seat sees: the deck minus its
   own hand and every card played, dealt at random to the other seats in their card
   counts (a partial deal: the cards the other seats hold together, re-dealt). Nothing
   else of the other hands is read, so the search is information-fair by construction:
   re-dealing the unseen cards among the other seats changes no decision. With ``infer``,
   a deal is also consistent with the passes on the standing play: drawn again until
   every seat that passed would pass with the hand drawn (:func:`passed_alike`) —
   still read from the drawn deal only.
3. **Rollouts**: for every deal, each candidate is applied to a copy of the round
   (``RoundCore``, the one state machine, through its C API) and the round is played to its
   end by the rule policy in all four seats — with ``model="mix"`` each other seat in a style
   drawn per deal (the rule policy, bold, cautious or partner-blind: _suggest.pxd ``Style``),
   so a choice does not hinge on one assumed opponent (with ``read``, each seat's style is
   drawn by weights its actions so far in the round make likely: :func:`read_weights`,
   opt-in, docs/decisions.md 77); with ``exact`` > 0, once the hands
   hold that many cards or fewer together, the rest of the round is solved exactly on that
   deal (every hand known: alpha-beta over every legal action, the team's settlement as the
   value) when it fits in EXACT_NODES positions, else rolled out; the seat's team then scores what settlement
   gives it (``round_amounts``: base × multiplier + contributions — points, not only the
   win), plus a bonus for placing first (``win_bonus``: three 双扣 base amounts). Every candidate meets the same deals (paired comparison: the luck of the deal
   cancels out of the differences).
4. **Choice**: the candidate whose mean gain over the rule policy's action is largest, if
   that gain exceeds ``margin`` standard errors of the paired differences (one here, issue
   24's; the 托管 Budget asks for two: docs/decisions.md 73); else the rule policy's action
   (it is a strong default, and noise should not overturn it). With ``race``, a
   candidate clearly behind another (:func:`race_out`) stops being rolled out from then on
   and cannot be chosen; the rollouts left go to the others, and the search ends when only
   the rule policy's action is left.

The budget is rollouts (deterministic: the same state, seed and rollout budget give the
same answer on any machine) or milliseconds (stops inside a rollout: the enumerator checks
the clock). Deals are complete for every candidate or not counted. Memory is a few round
copies and per-candidate sums, whatever the budget.

:func:`evaluate` is the review's engine (复盘, core_ext/review.py): the same deals and
rollouts (:func:`roll_deal`, shared with :func:`search`), but for given candidates — the
ranked 提示 list and the action a replay took — each valued absolutely (mean points, share
of wins, the paired standard error between any two), and optionally on the true deal.

:func:`selfplay` plays whole rounds (deal to settlement) with the random or the rule policy
in compiled code: the rollout speed bench (bench/bench_search.py).
"""

import sys

cimport cython
from libc.math cimport sqrt
from libc.string cimport memcpy, memset

from shuangkou.core._core cimport K_BOMB, RD, RuleSet, key_cmp, make_reading, reading_rd, u8
from shuangkou.core._enumerate cimport ALL_KINDS, Enum, enum_begin, enum_each, monotonic
from shuangkou.core._round cimport RoundCore
from shuangkou.core._settle cimport Tables, round_amounts, tables
from shuangkou.core._suggest cimport (
    MAXALT,
    R_ALT_BOMB,
    R_ALT_NEXT,
    R_ALT_PASS,
    STYLE_BLIND,
    STYLE_BOLD,
    STYLE_CAUTIOUS,
    STYLE_RULE,
    NSTYLES,
    Choice,
    Policy,
    Rng,
    Seen,
    alternatives,
    apply_choice,
    policy_close,
    policy_open,
    rng_below,
    rng_next,
    rule_choice,
    seen_of,
)
from shuangkou.core.cards cimport NCODES, NFACES, SEATS, SJ, BJ, code_rank, partner_of, team_of

from shuangkou.core._suggest import POLICY_CONSTANTS as _POLICY
from shuangkou.core.errors import DeadlineExceeded, ShuangkouError

cdef enum:
    MAXDECK = 1024        # cards a deck may hold (house variants: decks × 52 + jokers)
    WIN_WEIGHT = 3        # a win is worth this many 双扣 base amounts on top of its points

#: Upper bounds a caller may ask for (the RPC checks them, docs/api.md).
MAX_WIDTH = MAXALT
MAX_ROLLOUTS = 1_000_000
MAX_EXACT = 24


# ----------------------------------------------------------------------------- deals

cdef inline unsigned long long mix(unsigned long long a, unsigned long long b) noexcept nogil:
    cdef Rng g
    g.s = a * 0x9E3779B97F4A7C15ULL + b
    return rng_next(&g)


cdef int unseen_pool(RoundCore r, int seat, int* pool) except -1:
    """Cards of each rank the seat cannot see (the other hands together), from what it
    sees: the deck minus its hand and the cards played; a partial deal's pool is the other
    hands' cards (the deal says which cards are in play)."""
    cdef int s, rank, c, total = 0, held = 0
    cdef const int* R
    memset(pool, 0, NFACES * sizeof(int))
    for s in range(SEATS):
        if s != seat:
            held += r.nleft[s]
    if not r.partial_deal:
        for rank in range(NFACES):
            if rank >= SJ:
                pool[rank] = r.rs.r.max_joker
            elif rank >= r.rs.r.lo:
                pool[rank] = r.rs.r.max_rank
            pool[rank] -= r.nranks[seat][rank]
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
            if s != seat:
                for rank in range(NFACES):
                    pool[rank] += r.nranks[s][rank]
    return 0


cdef int deal_unseen(RoundCore r, int seat, const int* pool, Rng* g) except -1:
    """Deal the pool at random to the seats other than ``seat``, in their card counts."""
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
        if s == seat:
            continue
        memset(r.nranks[s], 0, NFACES)
        memset(r.faces[s], 0, NCODES)
        for k in range(r.nleft[s]):
            if i < n:
                r.nranks[s][cards[i]] += 1
                i += 1
    return 0


# ----------------------------------------------------------------------------- rollouts

cdef int play_out(Policy* P, RoundCore r, const int* styles, int* actions, int exact,
                  list stack, int seat0, double win_value, Leaf* leaf) except -2:
    """Play ``r`` to its end with the rule policy in every seat, each in its style
    (``styles[seat]``, STYLE_*); once the hands hold ``exact`` cards or fewer together
    (0: never), solve the rest exactly instead (:func:`solve`) — then 1 is returned and
    ``leaf`` holds the value for ``seat0``'s team; -1 when the deadline stopped it."""
    cdef Seen S
    cdef Choice ch
    cdef int seat, rc
    cdef long nodes
    while not r.over_kind:
        if exact and cards_in_play(r) <= exact:
            nodes = 0
            if solve(P, stack, 0, r, seat0, win_value, -1e300, 1e300, &nodes, leaf) == 0:
                actions[0] += nodes
                return 1
            exact = 0         # too large to solve: roll the rest out
        if P.deadline and (actions[0] & 15) == 0 and monotonic() > P.deadline:
            P.style = STYLE_RULE
            return -1             # the time budget is spent: the deal is not counted
        seat = r.cturn
        seen_of(r, seat, &S)
        P.style = styles[seat]
        rc = rule_choice(P, &S, &ch)
        P.style = STYLE_RULE
        if rc < 0:
            return -1
        apply_choice(r, seat, &ch)
        actions[0] += 1
    return 0


#: The search's models of the other seats: "rule" plays the rule policy in every seat of a
#: rollout (issue 24's search); "mix" draws each other seat's style per deal — the rule
#: policy 2 in 5, bold, cautious and partner-blind 1 in 5 each — so a choice does not hinge on
#: one assumed opponent (docs/decisions.md, docs/BENCHMARKS.md "a search robust to who it
#: plays"); "sound" is "mix" without the partner-blind style (the rule policy 2 in 4, bold
#: and cautious 1 in 4 each): every seat plays for its team. The seat searching plays the
#: rule policy in all of them. One row per model: the styles a draw picks among, uniformly.
MODELS = ("rule", "mix", "sound")
cdef int MODEL_STYLES[3][5]
cdef int MODEL_DRAWS[3]
MODEL_STYLES[0][:] = [STYLE_RULE, STYLE_RULE, STYLE_RULE, STYLE_RULE, STYLE_RULE]
MODEL_STYLES[1][:] = [STYLE_RULE, STYLE_RULE, STYLE_BOLD, STYLE_CAUTIOUS, STYLE_BLIND]
MODEL_STYLES[2][:] = [STYLE_RULE, STYLE_RULE, STYLE_BOLD, STYLE_CAUTIOUS, STYLE_RULE]
MODEL_DRAWS[:] = [1, 5, 4]


cdef double TWO_M53 = 1.0 / 9007199254740992.0     # a 53-bit integer to [0, 1)


cdef void draw_styles(int seat, int model, const double* read, Rng* g,
                      int* styles) noexcept nogil:
    """The style of each seat in one deal's rollouts (the same for every candidate):
    ``model`` indexes :data:`MODELS`; a model of one style draws nothing. ``read`` (not
    NULL): per seat, the cumulative weights of the NSTYLES styles its actions so far make
    likely (:func:`read_weights`), drawn from in place of the model's row."""
    cdef int s, k
    cdef double u
    for s in range(SEATS):
        styles[s] = STYLE_RULE
        if s == seat:
            continue
        if read != NULL:
            u = (rng_next(g) >> 11) * TWO_M53 * read[s * NSTYLES + NSTYLES - 1]
            k = 0
            while k < NSTYLES - 1 and read[s * NSTYLES + k] <= u:
                k += 1
            styles[s] = k
        elif MODEL_DRAWS[model] > 1:
            styles[s] = MODEL_STYLES[model][rng_below(g, MODEL_DRAWS[model])]


cdef long long team_points(RoundCore r, int seat, int* won) except? -1:
    """The settlement points of the seat's team for the finished round ``r``; ``won``: the
    team placed first (§9)."""
    cdef long long amount[SEATS]
    round_amounts(r, amount)
    won[0] = r.nfin > 0 and team_of(r.fin[0]) == team_of(seat)
    return amount[seat] + amount[partner_of(seat)]


cdef double win_bonus(RoundCore r) except? -1:
    """What placing first is worth beyond its settlement: WIN_WEIGHT × the winning team's
    双扣 base at ×1 (8 points where the base is 4 4 −4 −4; huopin: 2 × 3). Measured
    (docs/decisions.md): points alone trade wins for contributions where bombs pay a lot
    (fengkuang_crazy: 43 % of rounds won, +11.5 points; with the bonus 71 %, +12.7)."""
    cdef Tables t = tables(r.rs)
    if t.end.kou:
        return WIN_WEIGHT * 2 * t.kou[0]
    return WIN_WEIGHT * (t.base[0][0] + t.base[0][1])


# ----------------------------------------------------------------------------- exact endgames

cdef enum:
    MAXMOVES = 40         # an endgame position with more actions than this is rolled out
    EXACT_DEPTH = 96      # actions an exact endgame may look ahead (passes included)
    EXACT_NODES = 600     # positions one exact solve may visit; past it, roll out instead


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


cdef struct Leaf:
    double value          # the seat's team: points + the win bonus
    long long points
    int won


cdef int cards_in_play(RoundCore r) noexcept:
    cdef int s, n = 0
    for s in range(SEATS):
        n += r.nleft[s]
    return n


cdef int solve(Policy* P, list stack, int depth, RoundCore r, int seat, double win_value,
               double alpha, double beta, long* nodes, Leaf* out) except -2:
    """The round ``r`` played to its end with every hand known (a sampled deal's), each
    team choosing its best by the seat's team's settlement (max for its team, min for the
    other: alpha-beta). Fills ``out`` with the value and its leaf's points; returns 0, or 1
    when it gave up (more than EXACT_NODES positions or MAXMOVES actions, too deep, or the
    deadline): the caller rolls out instead."""
    cdef Moves M
    cdef Enum E
    cdef Leaf child
    cdef u8 h[16]
    cdef int k, turn, maximise, rc
    cdef RoundCore y
    if r.over_kind:
        out.points = team_points(r, seat, &out.won)
        out.value = out.points + win_value * out.won
        return 0
    nodes[0] += 1
    if nodes[0] > EXACT_NODES or depth >= EXACT_DEPTH:
        return 1
    if P.deadline and (nodes[0] & 15) == 0 and monotonic() > P.deadline:
        return 1
    turn = r.cturn
    memset(h, 0, 16)
    memcpy(h, r.nranks[turn], NFACES)
    M.n = 0
    enum_begin(&E, P.R, h, &r.st if r.has_st else NULL, P.scratch)
    E.deadline = P.deadline
    E.max_hash = 1 << 16
    rc = enum_each(&E, 0, move_sink, &M)
    if rc == -1 or M.n > MAXMOVES or (r.has_st and M.n == MAXMOVES):
        return 1
    if r.has_st:
        M.m[M.n].play = 0
        memset(M.m[M.n].c, 0, 16)
        M.m[M.n].declare = M.m[M.n].reason = M.m[M.n].danger = 0
        M.n += 1
    maximise = team_of(turn) == team_of(seat)
    out.value = -1e300 if maximise else 1e300
    if len(stack) <= depth:
        stack.append(RoundCore.__new__(RoundCore))
    y = <RoundCore>stack[depth]
    for k in range(M.n):
        r._copy_into(y)
        apply_choice(y, turn, &M.m[k])
        if solve(P, stack, depth + 1, y, seat, win_value, alpha, beta, nodes, &child):
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


cdef enum:
    INFER_TRIES = 16      # deals drawn at most for one consistent with the passes seen


cdef int passed_alike(Policy* P, RoundCore det, const int* styles) except -1:
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
        s = det._next_holding(s)
        seen_of(det, s, &S)
        P.style = styles[s]
        rc = rule_choice(P, &S, &ch)
        P.style = STYLE_RULE
        if rc == 0 and ch.play:
            return 0
    return 1


cdef int roll_deal(Policy* P, RoundCore root, RoundCore det, RoundCore x, int seat,
                   const int* pool, int model, const double* read, int infer, Rng* g,
                   const Choice* cands, int m, const int* live, int exact, list stack,
                   double win_value, int* actions, int* solved, long long* points, int* won,
                   double* values) except -2:
    """One deal of a decision: ``root`` copied into ``det`` with the unseen cards dealt at
    random to the other seats (``pool`` NULL: the true deal kept, the oracle's), the other
    seats' styles drawn — with ``infer``, drawn again (deal and styles, up to INFER_TRIES
    times) until every seat that passed on the standing play would have passed
    (:func:`passed_alike`) — then every candidate applied to a copy (``x``) and played out —
    each candidate's team points, win and value in ``points``/``won``/``values`` (only
    those ``live`` marks, when not NULL: :func:`race_out`), ``solved``: how many an exact
    endgame finished. 0, or -1 when the deadline stopped a
    rollout (the deal is then not to be counted)."""
    cdef int styles[SEATS]
    cdef int k, rc, tries = INFER_TRIES if infer and pool != NULL else 1
    cdef Leaf leaf
    root._copy_into(det)
    for k in range(tries):      # deal_unseen deals every other hand anew: no copy between
        if pool != NULL:
            deal_unseen(det, seat, pool, g)
        draw_styles(seat, model, read, g, styles)
        if tries == 1 or passed_alike(P, det, styles):
            break
    solved[0] = 0
    for k in range(m):
        if live != NULL and not live[k]:
            continue
        det._copy_into(x)
        apply_choice(x, seat, &cands[k])
        rc = play_out(P, x, styles, actions, exact, stack, seat, win_value, &leaf)
        if rc < 0:
            return -1
        if rc == 1:
            points[k], won[k], values[k] = leaf.points, leaf.won, leaf.value
            solved[0] += 1
        else:
            points[k] = team_points(x, seat, &won[k])
            values[k] = points[k] + win_value * won[k]
    return 0


cdef struct Tally:
    int n                 # deals counted
    double dsum, dsq      # paired differences of value with the rule policy's action
    double psum           # ... of points
    double wsum           # ... of wins (1 placed first, 0 not)


cdef inline double tally_mean(const Tally* t) noexcept nogil:
    return t.dsum / t.n if t.n else 0


cdef inline double tally_se(const Tally* t) noexcept nogil:
    """The standard error of the mean paired difference (0 under two deals)."""
    cdef double mean = tally_mean(t)
    if t.n < 2:
        return 0
    return sqrt(max(t.dsq / t.n - mean * mean, 0) / (t.n - 1))


cdef enum:
    RACE_FROM = 16        # deals every candidate meets before any is dropped
    RACE_EVERY = 4        # deals between two looks
cdef double RACE_Z = 2.0  # standard errors apart: a candidate is clearly behind


cdef int race_out(const Tally* tally, int* live, int m) noexcept nogil:
    """Drop the candidates clearly behind another: those whose gain over the rule
    policy's action, plus RACE_Z standard errors, is below some candidate's gain minus
    RACE_Z standard errors — or below 0, the rule policy's action itself, which is never
    dropped (every gain is measured against it). They could not be chosen (the choice
    needs a gain above ``margin`` standard errors, and above every other's), so the deals left
    go to those that could: more deals for the same rollouts where it matters
    (docs/decisions.md 72). The sum of two standard errors bounds the paired difference's,
    so "clearly behind" is conservative. Returns the candidates still live."""
    cdef double up[MAXALT]
    cdef double lo = 0, mean, se
    cdef int k, n = 1
    for k in range(1, m):
        if live[k]:
            mean, se = tally_mean(&tally[k]), tally_se(&tally[k])
            up[k] = mean + RACE_Z * se
            lo = max(lo, mean - RACE_Z * se)
    for k in range(1, m):
        if live[k]:
            if up[k] < lo:
                live[k] = 0
            else:
                n += 1
    return n


cdef int check_budget(int width, long rollouts, double ms, int exact, str model) except -1:
    """The checks of a search's or an evaluation's arguments (ShuangkouError naming the
    field); ``model``'s index in :data:`MODELS`."""
    if not 1 <= width <= MAXALT:
        raise ShuangkouError(f"width must be 1–{MAXALT}; got {width}", "width")
    if rollouts < 0 or ms < 0:
        raise ShuangkouError("the budget must be 0 or more", "budget")
    if not 0 <= exact <= MAX_EXACT:
        raise ShuangkouError(f"exact must be 0–{MAX_EXACT}; got {exact}", "exact")
    return model_index(model)


cdef int model_index(str model) except -1:
    """``model``'s index in :data:`MODELS` (ShuangkouError naming ``model`` when not one)."""
    if model not in MODELS:
        raise ShuangkouError(f"model must be one of {', '.join(MODELS)}; got {model!r}",
                             "model")
    return MODELS.index(model)


cdef struct Pause:
    double every          # seconds between pauses: twice the interpreter's switch interval
    double next           # when the next pause is due


cdef void pause_open(Pause* p):
    p.every = 2 * sys.getswitchinterval()
    p.next = monotonic() + p.every


cdef int pause_due(Pause* p, object cancelled) except -1:
    """Between two deals, at most every ``p.every`` seconds: ask ``cancelled`` (1: the
    caller went away) and let the process's other threads take the GIL. Not every deal:
    CPython's GIL waiter asks the holder to hand over only after a whole switch interval
    in which the GIL did not change hands, and a release and re-take per deal (0.4 ms)
    counts as a change — so the waiter never asked and every other thread of a server
    (its event loop, its probes, gRPC's pollers) waited for the whole search. With a pause
    every two intervals the waiter's request is pending at the next pause, which hands
    over (docs/decisions.md "A search shares the GIL")."""
    cdef double now = monotonic()
    if now < p.next:
        return 0
    p.next = now + p.every
    if cancelled is not None and cancelled():
        return 1
    with nogil:
        pass
    return 0


cdef int spare_partner(Choice* cands, int m) noexcept nogil:
    """``cands`` without the smallest bomb (the rule policy's action, first, is kept): over
    the partner's standing play. Played out with the true hands, that departure lost points
    against both players it was measured against, though the rollouts saw it gain
    (docs/decisions.md 79). Returns how many are left."""
    cdef int i, k = 1
    for i in range(1, m):
        if cands[i].reason != R_ALT_BOMB:
            cands[k] = cands[i]
            k += 1
    return k


def search(RoundCore root, *, long rollouts=0, double ms=0, seed=None, int width=6,
           int count=1, timeout=None, win=None, cancelled=None, str model="rule", int exact=0,
           bint infer=False, bint race=False, double margin=1.0, read=None,
           bint partner_bomb=True):
    """Search the decision of the seat to act in ``root`` (module doc). Budget: at most
    ``rollouts`` rollouts (0: no count limit) and ``ms`` milliseconds (0: no time limit);
    ``timeout`` (seconds) bounds the whole call like an RPC deadline. Returns
    ``(ranked, stats)``: up to ``count`` candidates, the chosen first, each as (cards,
    reading, declared, reason, danger, points, wins, se, deals) — ``points`` and ``wins`` the
    mean differences with the rule policy's action in the team's settlement points and in
    the share of deals it placed first, ``se`` the standard error of the value's (points +
    the win bonus) — and stats (rollouts, deals, actions, seconds, width, kept: the rule
    policy's action was chosen; exact: the rollouts an exact endgame finished). ``win``:
    the win bonus in points (None: win_bonus). ``model``: how the rollouts play the other seats
    (:data:`MODELS`); ``exact``: a rollout whose hands hold this many cards or fewer
    together is finished by an exact search of that deal (0: never; at most
    :data:`MAX_EXACT`); ``infer``: deals (and styles) are drawn again until the seats that
    passed on the standing play would have passed (:func:`roll_deal`); ``race``: a
    candidate clearly behind another stops being rolled out and the budget goes to the rest
    (:func:`race_out`; the search ends when only the rule policy's action is left);
    ``margin``: the standard errors a gain must exceed to overturn the rule policy's action;
    ``read``: per seat, weights of the styles (:func:`read_weights`) its rollouts draw each
    other seat's style from, in place of ``model``'s row; ``partner_bomb``: false drops the
    smallest bomb from the candidates when the partner's play stands (:func:`spare_partner`).
    ``cancelled``: a callable asked between deals (every two switch intervals at most:
    :func:`pause_due`); true ends the search there as its budget would (the caller went
    away: an RPC's client)."""
    cdef Policy P
    cdef Seen S
    cdef Choice cands[MAXALT]
    cdef Tally tally[MAXALT]
    cdef double values[MAXALT]
    cdef long long points[MAXALT]
    cdef int won[MAXALT]
    cdef int pool[NFACES]
    cdef list stack = []
    cdef int live[MAXALT]
    cdef int seat, model_at, k, m, rc, best, deal = 0, actions = 0, solved = 0, exact_now = 0
    cdef int nlive
    cdef double rw[SEATS * NSTYLES]
    cdef const double* rp = NULL
    cdef long done = 0
    cdef double t0 = monotonic(), hard = 0, stop = 0, mean, gain
    cdef Rng g
    cdef Pause pause
    cdef RoundCore det, x
    cdef unsigned long long base
    cdef double win_value = win_bonus(root) if win is None else win
    if root.over_kind:
        raise ShuangkouError("the round is over: nothing to suggest", "state")
    model_at = check_budget(width, rollouts, ms, exact, model)
    if read is not None:
        cumulative_weights(read, rw)
        rp = rw
    if not margin >= 0:         # NaN too
        raise ShuangkouError(f"margin must be 0 or more standard errors; got {margin}",
                             "margin")
    if timeout is not None:
        hard = t0 + max(float(timeout), 1e-9)
    stop = t0 + ms / 1e3 if ms > 0 else hard
    if hard and (not stop or hard < stop):
        stop = hard
    seat = root.cturn
    seen_of(root, seat, &S)
    policy_open(&P, root.rs, seed)
    try:
        # the rule policy's action is the floor (bounded by the call's deadline only); the
        # alternatives and rollouts spend the search budget
        P.deadline = hard
        with nogil:
            rc = rule_choice(&P, &S, &cands[0])
        if rc == -1:
            raise DeadlineExceeded("the suggestion ran out of its time budget")
        if rc == -2:
            raise ShuangkouError("the hand has no play", "hand")
        P.deadline = stop
        P.timed_out = 0
        with nogil:
            m = alternatives(&P, &S, &cands[0], cands, width, 1)
        if m < 0:
            m = 1                 # no time left to rank alternatives: the policy's action
        if not partner_bomb and S.has_st and S.st_seat == partner_of(seat):
            m = spare_partner(cands, m)
        memset(tally, 0, sizeof(tally))
        for k in range(m):
            live[k] = 1
        nlive = m
        base = mix(<unsigned long long>(seed & 0xFFFFFFFFFFFFFFFF) if seed is not None else 0,
                   <unsigned long long>root.actions_applied)
        if m > 1 and (rollouts or ms):
            unseen_pool(root, seat, pool)
            pause_open(&pause)
            det = RoundCore.__new__(RoundCore)
            x = RoundCore.__new__(RoundCore)
            while not rollouts or done + nlive <= rollouts:
                if stop and monotonic() >= stop:
                    break
                if pause_due(&pause, cancelled):
                    break
                g.s = mix(base, <unsigned long long>deal)
                if roll_deal(&P, root, det, x, seat, pool, model_at, rp, infer, &g, cands, m,
                             live, exact, stack, win_value, &actions, &exact_now, points, won,
                             values) < 0:
                    break
                for k in range(m):
                    if not live[k]:
                        continue
                    tally[k].n += 1
                    tally[k].dsum += values[k] - values[0]
                    tally[k].dsq += (values[k] - values[0]) ** 2
                    tally[k].psum += points[k] - points[0]
                    tally[k].wsum += won[k] - won[0]
                done += nlive
                deal += 1
                solved += exact_now
                if race and deal >= RACE_FROM and deal % RACE_EVERY == 0:
                    nlive = race_out(tally, live, m)
                    if nlive == 1:
                        break     # every alternative is clearly behind: the choice is made
        best = 0
        gain = 0
        for k in range(1, m):
            if not live[k] or tally[k].n < 2:
                continue
            mean = tally_mean(&tally[k])
            if mean > margin * tally_se(&tally[k]) and mean > gain:
                best, gain = k, mean
        # the live first (a dropped candidate's mean is of fewer deals, and behind)
        order = sorted(range(m), key=lambda i: (i != best, not live[i],
                                                 -tally_mean(&tally[i]), i))
        ranked = []
        for k in order[:max(count, 1)]:
            cards, reading = _cards(root, seat, &cands[k])
            n = tally[k].n
            ranked.append((cards, reading, bool(cands[k].declare), cands[k].reason,
                           cands[k].danger, tally[k].psum / n if n else 0.0,
                           tally[k].wsum / n if n else 0.0, tally_se(&tally[k]), n))
        stats = {"rollouts": done, "deals": deal, "actions": actions, "width": m,
                 "exact": solved,
                 "kept": best == 0, "seconds": monotonic() - t0}
        return ranked, stats
    finally:
        policy_close(&P)


# ----------------------------------------------------------------------------- evaluation

cdef enum:
    MAXC = MAXALT + 1     # the 提示 candidates and the action taken, when it is not one of them
    MIN_DEALS = 2         # an evaluation's fewest deals: a paired standard error needs two

#: What seeds the oracle's rollouts apart from the fair deals' (the same per-decision base).
cdef unsigned long long ORACLE_SALT = 0x0AC1E5EED


cdef int same_action(const Choice* a, const Choice* b) noexcept nogil:
    """The same action: both passes, or the same cards standing as the same reading (type,
    top, and for a bomb its key) — a play declared as what would stand anyway is that play."""
    cdef int i
    if a.play != b.play:
        return 0
    if not a.play:
        return 1
    for i in range(16):
        if a.c[i] != b.c[i]:
            return 0
    if a.rd.kind != b.rd.kind or a.rd.top != b.rd.top:
        return 0
    return a.rd.kind < K_BOMB or key_cmp(&a.rd, &b.rd) == 0


cdef int taken_choice(RoundCore root, int seat, object taken, Choice* out) except -1:
    """The action a replay took, as a Choice: ``taken`` = (cards, reading, declared) — the
    codes played (empty: a pass), the reading that stood (None for a pass) and whether the
    replay declared it."""
    cdef int code
    cards, reading, declared = taken
    memset(out, 0, sizeof(Choice))
    out.reason = R_ALT_NEXT
    if not cards:
        return 0
    out.play = 1
    for code in cards:
        if not 1 <= code < NCODES:
            raise ShuangkouError(f"taken: {code!r} is not a card code", "taken")
        out.c[code_rank(code)] += 1
    if reading is None:
        raise ShuangkouError("taken: a play needs the reading that stood", "taken")
    reading_rd(reading, root.rs, &out.rd)
    out.declare = 1 if declared else 0
    return 0


def evaluate(RoundCore root, taken=None, *, long rollouts=0, double ms=0, seed=None,
             int width=6, timeout=None, cancelled=None, str model="mix", int exact=0,
             bint oracle=False, win=None):
    """Evaluate given candidates of the decision of the seat to act in ``root``, absolutely:
    the review's engine (core_ext/review.py, docs/review.md).

    Candidates: the ranked 提示 list (the rule policy's action, then the plays in its order
    of preference, then the pass: ``_suggest.choose_in(..., diverse=False)``'s order, never
    seeded) up to ``width``, and the action ``taken`` — (cards, reading, declared): the codes
    played (empty: a pass), the reading that stood, whether it was declared — appended when
    it is not one of them. Every candidate is rolled out on the same deals of the unseen
    cards as :func:`search` does (what the seat sees only; ``model`` and ``exact`` as
    there), at least two deals, then while ``rollouts`` (over all candidates, as the search
    counts them) and ``ms`` allow. With ``oracle``, as many rollouts again on the TRUE deal
    (the real hidden hands, the other seats' styles still drawn per rollout): the collusion
    signal's reference. A decision with one legal action (``forced``) is not rolled out.

    Returns ``(rows, stats)``: per candidate (cards, reading, declared, reason, hint_rank
    (-1: not in the 提示 list), points, first, true_points, true_first) — the seat's team's
    mean settlement points and share of deals it placed first (None without deals), the
    same on the true deal (None without ``oracle``); stats: ``taken`` (the taken action's
    row, None without one), ``forced``, ``deals``, ``rollouts``, ``actions``, ``exact``,
    ``oracle_deals``, ``seconds``, ``cancelled`` (``cancelled()`` was true: the evaluation
    is partial) and ``se``: ``se[j][k]`` the standard error of row j's points minus row k's
    over the paired deals. Raises DeadlineExceeded when ``timeout`` seconds end it early."""
    cdef Policy P
    cdef Seen S
    cdef Choice cands[MAXC]
    cdef Choice tk
    cdef long long points[MAXC]
    cdef int won[MAXC]
    cdef double values[MAXC]
    cdef double psum[MAXC]
    cdef double wsum[MAXC]
    cdef double tpsum[MAXC]
    cdef double twsum[MAXC]
    cdef double cross[MAXC][MAXC]
    cdef int hr[MAXC]
    cdef int pool[NFACES]
    cdef list stack = []
    cdef int seat, model_at, j, k, m, mh = 0, rc, t = -1, th, deal = 0, odeal = 0, actions = 0
    cdef int solved = 0, exact_now = 0, forced, stopped = 0
    cdef long done = 0
    cdef double t0 = monotonic(), hard = 0, stop = 0, mean, var
    cdef Rng g
    cdef Pause pause
    cdef RoundCore det, x
    cdef unsigned long long base
    cdef double win_value = win_bonus(root) if win is None else win
    if root.over_kind:
        raise ShuangkouError("the round is over: nothing to evaluate", "state")
    model_at = check_budget(width, rollouts, ms, exact, model)
    if timeout is not None:
        hard = t0 + max(float(timeout), 1e-9)
    if ms > 0:
        stop = t0 + ms / 1e3
    seat = root.cturn
    seen_of(root, seat, &S)
    det = RoundCore.__new__(RoundCore)
    x = RoundCore.__new__(RoundCore)
    policy_open(&P, root.rs, None)       # the 提示 order is the unseeded policy's
    try:
        P.deadline = hard
        with nogil:
            rc = rule_choice(&P, &S, &cands[0])
            if rc == 0:
                mh = alternatives(&P, &S, &cands[0], cands, max(width, 2), 0)
        if rc == -1 or (rc == 0 and mh < 0):
            raise DeadlineExceeded("the evaluation ran out of its time budget")
        if rc == -2:
            raise ShuangkouError("the hand has no play", "hand")
        forced = mh == 1
        m = min(mh, width)
        for k in range(m):
            hr[k] = k
        if taken is not None:
            taken_choice(root, seat, taken, &tk)
            root._copy_into(x)
            try:
                apply_choice(x, seat, &tk)
            except ShuangkouError as exc:
                raise ShuangkouError(f"taken: not an action of seat {seat} here: {exc}",
                                     "taken") from None
            th = -1
            for k in range(mh):
                if same_action(&cands[k], &tk):
                    tk = cands[k]         # the 提示 entry (its reason, its declaration)
                    th = k
                    break
            if 0 <= th < m:
                t = th
            else:                         # past the width in the 提示 list, or not in it
                cands[m] = tk
                hr[m] = th
                t = m
                m += 1
        if seed is not None:
            P.seeded = 1
            P.rng.s = <unsigned long long>(seed & 0xFFFFFFFFFFFFFFFF)
        memset(psum, 0, sizeof(psum))
        memset(wsum, 0, sizeof(wsum))
        memset(tpsum, 0, sizeof(tpsum))
        memset(twsum, 0, sizeof(twsum))
        memset(cross, 0, sizeof(cross))
        base = mix(<unsigned long long>(seed & 0xFFFFFFFFFFFFFFFF) if seed is not None else 0,
                   <unsigned long long>root.actions_applied)
        if not forced and (rollouts or ms):
            unseen_pool(root, seat, pool)
            pause_open(&pause)
            while True:
                if deal >= MIN_DEALS and ((rollouts and done + m > rollouts)
                                          or (stop and monotonic() >= stop)):
                    break
                if hard and monotonic() >= hard:
                    raise DeadlineExceeded("the evaluation ran out of its time budget")
                if pause_due(&pause, cancelled):
                    stopped = 1
                    break
                g.s = mix(base, <unsigned long long>deal)
                if roll_deal(&P, root, det, x, seat, pool, model_at, NULL, 0, &g, cands, m, NULL,
                             exact, stack, win_value, &actions, &exact_now, points, won,
                             values) < 0:
                    raise DeadlineExceeded("the evaluation ran out of its time budget")
                for j in range(m):
                    psum[j] += points[j]
                    wsum[j] += won[j]
                    for k in range(j, m):
                        cross[j][k] += <double>points[j] * points[k]
                done += m
                deal += 1
                solved += exact_now
            while oracle and not stopped and odeal < deal:
                if hard and monotonic() >= hard:
                    raise DeadlineExceeded("the evaluation ran out of its time budget")
                if pause_due(&pause, cancelled):
                    stopped = 1
                    break
                g.s = mix(base ^ ORACLE_SALT, <unsigned long long>odeal)
                if roll_deal(&P, root, det, x, seat, NULL, model_at, NULL, 0, &g, cands, m, NULL,
                             exact, stack, win_value, &actions, &exact_now, points, won,
                             values) < 0:
                    raise DeadlineExceeded("the evaluation ran out of its time budget")
                for j in range(m):
                    tpsum[j] += points[j]
                    twsum[j] += won[j]
                done += m
                odeal += 1
                solved += exact_now
        rows = []
        for k in range(m):
            cards, reading = _cards(root, seat, &cands[k])
            rows.append((cards, reading, bool(cands[k].declare), cands[k].reason,
                         hr[k],
                         psum[k] / deal if deal else None, wsum[k] / deal if deal else None,
                         tpsum[k] / odeal if odeal else None,
                         twsum[k] / odeal if odeal else None))
        se = []
        for j in range(m):
            row = []
            for k in range(m):
                if deal < 2 or j == k:
                    row.append(0.0)
                    continue
                mean = (psum[j] - psum[k]) / deal
                var = (cross[min(j, k)][min(j, k)] + cross[max(j, k)][max(j, k)]
                       - 2 * cross[min(j, k)][max(j, k)]) / deal - mean * mean
                row.append(sqrt(max(var, 0) / (deal - 1)))
            se.append(row)
        stats = {"taken": t if t >= 0 else None, "forced": bool(forced), "deals": deal,
                 "rollouts": done, "actions": actions, "exact": solved,
                 "oracle_deals": odeal, "cancelled": bool(stopped), "se": se,
                 "seconds": monotonic() - t0}
        return rows, stats
    finally:
        policy_close(&P)


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


# ----------------------------------------------------------------------------- self-play

cdef struct Uniform:
    Rng* g
    int n
    u8 c[16]
    RD rd


cdef int uniform_sink(void* ctx, const u8* c, const RD* rd) noexcept nogil:
    cdef Uniform* U = <Uniform*>ctx
    U.n += 1
    if rng_below(U.g, U.n) == 0:          # reservoir: each play kept with probability 1/n
        memcpy(U.c, c, 16)
        U.rd = rd[0]
    return 0


cdef int random_choice(Policy* P, const Seen* S, Rng* g, Choice* out) noexcept nogil:
    """Uniformly one of the seat's legal actions (every distinct play, and the pass when
    following); -1 when the deadline stopped it."""
    cdef Enum E
    cdef Uniform U
    U.g = g
    U.n = 0
    enum_begin(&E, P.R, S.hand, &S.st if S.has_st else NULL, P.scratch)
    E.deadline = P.deadline
    E.max_hash = 1 << 16      # 1 MiB of de-duplication at most (chain bombs only)
    if enum_each(&E, 0, uniform_sink, &U) == -1:
        return -1
    out.declare = 0
    out.reason = 0
    out.danger = 0
    if S.has_st and rng_below(g, U.n + 1) == <unsigned>U.n:
        out.play = 0
        memset(out.c, 0, 16)
    else:
        out.play = 1
        memcpy(out.c, U.c, 16)
        out.rd = U.rd
    return 0


@cython.auto_pickle(False)      # a work space, never data
cdef class _Dealer:
    """Random whole deals of a variant (self-play): the deck, shuffled anew for each."""
    cdef object v
    cdef int cards[MAXDECK]
    cdef int n, hs

    def __cinit__(self, v):
        from shuangkou.core.cards import deck
        codes = deck(v.decks, v.lowest_rank, v.joker_copies)
        self.v, self.n, self.hs = v, len(codes), v.hand_size
        if self.n > MAXDECK or self.hs * SEATS > self.n:
            raise ShuangkouError(f"{v.id}: a deal of {self.hs} cards per seat from {self.n}",
                                 "variant")
        for i in range(self.n):
            self.cards[i] = codes[i]

    cdef RoundCore deal(self, Rng* g):
        cdef int i, j, t, s
        for i in range(self.n - 1, 0, -1):
            j = rng_below(g, i + 1)
            t = self.cards[i]
            self.cards[i] = self.cards[j]
            self.cards[j] = t
        hands = [[self.cards[s * self.hs + i] for i in range(self.hs)] for s in range(SEATS)]
        cdef RoundCore r = RoundCore.__new__(RoundCore)
        r._start(self.v, hands, rng_below(g, SEATS), (0, 1, 2, 3), 1, 0, False)
        return r


def selfplay(variant, int rounds, str policy="rule", seed=0, timeout=None):
    """Play ``rounds`` whole rounds, deal to settlement, with ``policy`` ("rule" or
    "random") in all four seats, in compiled code. Returns (rounds, actions, plays, team
    0's total points): the rollout engine's speed (bench/bench_search.py)."""
    cdef RuleSet rs
    cdef Policy P
    cdef Seen S
    cdef Choice ch
    cdef Rng g
    cdef int seat, rc, use_rule
    cdef long actions = 0, plays = 0
    cdef long long amount[SEATS]
    cdef double points = 0
    cdef RoundCore r
    cdef _Dealer dealer
    from shuangkou.core._core import rules_for
    rs = rules_for(variant)
    if policy not in ("rule", "random"):
        raise ShuangkouError(f"policy must be 'rule' or 'random'; got {policy!r}", "policy")
    use_rule = policy == "rule"
    dealer = _Dealer(rs.variant)
    g.s = mix(<unsigned long long>seed, 0x5E1F)
    policy_open(&P, rs, seed)
    try:
        if timeout is not None:
            P.deadline = monotonic() + float(timeout)
        for _ in range(rounds):
            r = dealer.deal(&g)
            while not r.over_kind:
                seat = r.cturn
                seen_of(r, seat, &S)
                rc = rule_choice(&P, &S, &ch) if use_rule else random_choice(&P, &S, &g, &ch)
                if rc < 0:
                    raise DeadlineExceeded("self-play ran out of its time budget")
                apply_choice(r, seat, &ch)
                actions += 1
                plays += ch.play
            round_amounts(r, amount)
            points += amount[0] + amount[2]
        return rounds, actions, plays, points
    finally:
        policy_close(&P)


# ----------------------------------------------------------------------------- reading styles

cdef enum:
    NCTX = 3      # what a seat follows: its partner's play; an opponent's with no opponent about
                  # to go out; an opponent's with one about to go out (DANGER cards or fewer)
    NOUT = 3      # what it does: passes, an ordinary play, a bomb (going out says nothing)
    NO_FEW = 1 << 30

cdef int DANGER_AT = _POLICY["DANGER"]
#: The contexts and outcomes a seat's actions are tallied by (:func:`action_context`,
#: :func:`action_outcome`) and the styles' rates are counted by (:func:`style_counts`).
CONTEXTS = ("partner", "calm", "danger")
OUTCOMES = ("pass", "play", "bomb")
#: The share of the model's prior kept in read weights: reading never rules a style out.
READ_FLOOR = 0.2


cdef int context_at(RoundCore r) noexcept:
    """The context of the seat to act for reading its style (CONTEXTS), -1 when its action
    says nothing of it (it leads, or the round is over). Public: the standing play's seat and
    the card counts."""
    cdef int seat = r.cturn, s, few = NO_FEW
    if r.over_kind or not r.has_st:
        return -1
    if r.st_seat == partner_of(seat):
        return 0
    for s in range(SEATS):
        if team_of(s) != team_of(seat) and 0 < r.nleft[s] < few:
            few = r.nleft[s]
    return 2 if few <= DANGER_AT else 1


cdef int outcome_at(RoundCore r, int seat, int before) noexcept:
    """What ``seat``, which held ``before`` cards, did (OUTCOMES), -1 when it went out.
    Public: its card count, and the play standing after it."""
    if r.nleft[seat] == before:
        return 0
    if r.nleft[seat] == 0:
        return -1
    return 2 if r.st.kind >= K_BOMB else 1


def action_context(RoundCore r):
    """The context (an index in :data:`CONTEXTS`) of the seat to act in ``r``, or -1."""
    return context_at(r)


def action_outcome(RoundCore r, int seat, int before):
    """What ``seat``, holding ``before`` cards before its action, did (an index in
    :data:`OUTCOMES`), or -1 (it went out: that says nothing of its style)."""
    return outcome_at(r, seat, before)


def style_counts(variant, int rounds, seed=0):
    """How often each style does what in each context, by self-play in compiled code:
    ``rounds`` random deals, every seat playing a style drawn per round (uniformly among
    the NSTYLES). Returns ``counts[style][context][outcome]``: the rates :func:`read_weights`
    reads a seat's actions by. Deterministic for a seed."""
    cdef RuleSet rs
    cdef Policy P
    cdef Seen S
    cdef Choice ch
    cdef Rng g
    cdef int seat, rc, ctx, out, before, k, c, o
    cdef int styles[SEATS]
    cdef long tally[NSTYLES][NCTX][NOUT]
    cdef RoundCore r
    cdef _Dealer dealer
    from shuangkou.core._core import rules_for
    rs = rules_for(variant)
    dealer = _Dealer(rs.variant)
    memset(tally, 0, sizeof(tally))
    g.s = mix(<unsigned long long>seed, 0x57E1E)
    policy_open(&P, rs, seed)
    try:
        for _ in range(rounds):
            r = dealer.deal(&g)
            for seat in range(SEATS):
                styles[seat] = rng_below(&g, NSTYLES)
            while not r.over_kind:
                seat = r.cturn
                ctx, before = context_at(r), r.nleft[seat]
                seen_of(r, seat, &S)
                P.style = styles[seat]
                rc = rule_choice(&P, &S, &ch)
                P.style = STYLE_RULE
                if rc < 0:
                    raise ShuangkouError("the rule policy found no action", "variant")
                apply_choice(r, seat, &ch)
                out = outcome_at(r, seat, before)
                if ctx >= 0 and out >= 0:
                    tally[styles[seat]][ctx][out] += 1
        return [[[tally[k][c][o] for o in range(NOUT)] for c in range(NCTX)]
                for k in range(NSTYLES)]
    finally:
        policy_close(&P)


def log_rates(counts):
    """The styles' log outcome rates, ``[style][context][outcome]``, from
    :func:`style_counts`' ``counts`` (half a count added to every cell, so no outcome is
    impossible): what :func:`read_weights` reads a seat's actions by, computed once per
    rule set (core.suggest caches them)."""
    from math import log
    return [[[log((counts[k][c][o] + 0.5) / (sum(counts[k][c]) + 0.5 * NOUT))
              for o in range(NOUT)] for c in range(NCTX)] for k in range(NSTYLES)]


def read_weights(seen, rates, str model="mix"):
    """Per seat, the weight of each style (NSTYLES, STYLE_* order) given what the seat was
    seen doing: ``seen[seat][context][outcome]``, the tally of its actions
    (:func:`action_context`, :func:`action_outcome`); ``rates``, :func:`log_rates` of the
    styles' calibration. The weight is the ``model``'s prior of the style (its row's share)
    times the likelihood of the seat's actions under it (each context's outcome rates),
    normalised, with READ_FLOOR of the prior mixed back in: a seat never seen following
    keeps the prior. The model "rule" reads nothing."""
    from math import exp, log
    cdef int at = model_index(model)
    prior = [sum(MODEL_STYLES[at][i] == k for i in range(MODEL_DRAWS[at])) / MODEL_DRAWS[at]
             for k in range(NSTYLES)]
    out = []
    for s in range(SEATS):
        logs = [log(prior[k]) + sum(seen[s][c][o] * rates[k][c][o]
                                    for c in range(NCTX) for o in range(NOUT))
                if prior[k] > 0 else None for k in range(NSTYLES)]
        top = max(x for x in logs if x is not None)
        post = [exp(x - top) if x is not None else 0.0 for x in logs]
        total = sum(post)
        out.append(tuple((1 - READ_FLOOR) * p / total + READ_FLOOR * q
                         for p, q in zip(post, prior)))
    return tuple(out)


cdef int cumulative_weights(object read, double* out) except -1:
    """``read`` (per seat, NSTYLES weights: :func:`read_weights`) as cumulative sums in
    ``out`` (SEATS × NSTYLES), checked: ShuangkouError naming ``read``."""
    cdef int s, k
    cdef double w, total
    try:
        rows = [list(map(float, row)) for row in read]
    except (TypeError, ValueError):
        raise ShuangkouError("read must hold, per seat, a weight per style", "read") from None
    if len(rows) != SEATS or any(len(row) != NSTYLES for row in rows):
        raise ShuangkouError(f"read must hold {SEATS} rows of {NSTYLES} weights", "read")
    for s in range(SEATS):
        total = 0
        for k in range(NSTYLES):
            w = rows[s][k]
            if not w >= 0 or w == float("inf"):
                raise ShuangkouError(f"read: seat {s}'s weights must be finite and 0 or more",
                                     "read")
            total += w
            out[s * NSTYLES + k] = total
        if not total > 0:
            raise ShuangkouError(f"read: seat {s}'s weights are all 0", "read")
    return 0
