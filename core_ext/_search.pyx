# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The drivers of the rollout engine (core_ext/_rollout.pyx): each chooses the candidates of
a decision, runs the engine's deals and returns its records (core_ext/rollouts.py).

* :func:`search` — 托管 (docs/rounds.md "托管 and 提示"): the rule policy's action and its most
  different alternatives (_suggest.pyx ``alternatives``: the preferred play of each type,
  the highest beat, the smallest bomb, the pass), ``width`` of them at most, rolled out on
  the seat's own view until the rollouts or the time are spent (a race drops the
  candidates clearly behind). Which it plays is suggest.py's: the engine's choice
  (rollouts.py ``choose``) at the Budget's margin.
* :func:`evaluate` — the review (复盘, core_ext/review.py): the ranked 提示 list and the action
  a replay took, each valued absolutely, on the seat's own view and optionally on a wider
  one (the true deal, or the partner's hand seen too).
* :func:`selfplay` — whole rounds, deal to settlement, with the random or the rule policy in
  compiled code: the rollout speed bench (bench/bench_search.py).
* :func:`style_counts` and :func:`read_weights` — reading a seat's style from its actions:
  the rates each style (core_ext/styles.py) does what in each context, counted by self-play.

The budget is rollouts (deterministic: the same state, seed and rollout budget give the same
answer on any machine) or milliseconds (stops inside a rollout: the enumerator checks the
clock). Deals are complete for every candidate or not counted.
"""

from libc.math cimport exp, log
from libc.string cimport memcpy, memset

from shuangkou.core._core cimport K_BOMB, MAXCARDS, RD, Decl, RuleSet, key_cmp, reading_rd, u8
from shuangkou.core._enumerate cimport ALL_KINDS, Enum, enum_begin, enum_each, monotonic
from shuangkou.core._round cimport Position, RoundCore
from shuangkou.core._rollout cimport (
    EVERY_SEAT_MASK,
    MAX_DECOYS_C,
    MAXC,
    RUN_CANCELLED,
    RUN_DEADLINE,
    RUN_RACED,
    RUN_STOPPED,
    Engine,
    Leaf,
    play_out,
)
from shuangkou.core._settle cimport position_amounts
from shuangkou.core._suggest cimport (
    MAXALT,
    MAXSTYLES,
    R_ALT_BOMB,
    R_ALT_NEXT,
    STYLE_RULE,
    Choice,
    Rng,
    Seen,
    alternatives,
    apply_choice,
    choice_decl,
    nstyles,
    rng_below,
    rng_mix,
    rule_choice,
    seen_of,
)
from shuangkou.core.cards cimport NCODES, NFACES, NO_SUIT, SEATS, code_of, code_rank, partner_of, team_of

from shuangkou.core._suggest import POLICY_CONSTANTS as _POLICY
from shuangkou.core.errors import DeadlineExceeded, ShuangkouError
from shuangkou.core.rollouts import Evaluation, View
from shuangkou.core.styles import STYLE_TABLE as _STYLE_TABLE
from shuangkou.core.styles import model as _model

#: Upper bounds a caller may ask for (a budget checks them: suggest.py RolloutBudget).
MAX_WIDTH = MAXALT
MAX_ROLLOUTS = 1_000_000
#: The wider views :func:`evaluate` can roll out beside the seat's own: the partner's hand
#: seen too (what a pair that shares hands knows), or every hand (the true deal).
WIDE_VIEWS = ("partner", "all")
#: The fair-play views :func:`evaluate` can roll out: the seat's hand with its partner's, with
#: its left opponent's (the next seat), with its right opponent's, and every hand.
FAIR_VIEWS = ("partner", "left", "right", "all")
#: What seeds the partner view's deals apart from the seat's own and the true deal's.
cdef unsigned long long WIDE_SALT_PARTNER = 0x9A27E5EED
#: What seeds the fair-play views of every hand (the true deal and its decoys).
cdef unsigned long long WIDE_SALT_ALL = 0xA11E5EED


cdef int check_width(int width) except -1:
    """The guard of the candidate arrays (MAXALT entries). A budget's values are checked
    once, by its dataclass (suggest.py ``RolloutBudget``), before they reach a driver."""
    if not 1 <= width <= MAXALT:
        raise ShuangkouError(f"width must be 1–{MAXALT}; got {width}", "width")
    return 0


cdef object _evaluation(Engine e, RoundCore root, object hint_ranks, object taken,
                        bint forced, double t0, bint cancelled, bint raced, tuple views):
    if e.fault:
        raise ShuangkouError("the rollouts met an action with no reading that stands: an "
                             "engine fault, not a fault of the request", "state")
    return Evaluation(e.seat, e.outcomes(root, hint_ranks), taken, forced, e.tally[0].deals,
                      e.tally[1].deals, e.rollouts, e.actions, e.solved,
                      monotonic() - t0, cancelled, raced, views)


cdef int _seats_mask(object seats) except -1:
    """The bit mask of ``seats`` (ShuangkouError naming ``sees`` for a seat that is none)."""
    cdef int mask = 0
    for s in seats:
        if type(s) is not int or not 0 <= s < SEATS:
            raise ShuangkouError(f"sees must list seats 0–3; got {s!r}", "sees")
        mask |= 1 << s
    return mask


# ----------------------------------------------------------------------------- 托管

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
           timeout=None, win=None, cancelled=None, str model="rule", int exact=0,
           bint infer=False, bint race=False, read=None, bint partner_bomb=True, sees=()):
    """Roll out the decision of the seat to act in ``root`` (module doc): at most
    ``rollouts`` rollouts (0: no count limit) and ``ms`` milliseconds (0: no time limit);
    ``timeout`` (seconds) bounds the whole call like an RPC deadline. ``win``: the win
    bonus in points (None: _rollout.win_bonus). ``model``: how the rollouts play the other
    seats (styles.MODELS); ``exact``: a rollout whose hands hold this many cards or fewer
    together is finished by an exact search of that deal (0: never; at most MAX_EXACT);
    ``infer``: deals (and styles) are drawn again until the seats that passed on the
    standing play would have passed; ``race``: a candidate clearly behind another stops
    being rolled out (the rollouts end when only the rule policy's action is left);
    ``read``: per seat, weights of the styles its rollouts draw each other seat's style
    from, in place of ``model``'s row; ``partner_bomb``: false drops the smallest bomb from
    the candidates when the partner's play stands (:func:`spare_partner`); ``sees``: other
    seats whose hands the rollouts keep as they are, as if the seat saw them — the
    fair-play panel's cheats (a pair that shares hands, a client that sees every hand);
    托管 never sees anything but its own. ``cancelled``:
    asked between deals (with the GIL, at most every _rollout.CHECK_EVERY seconds); true ends
    the rollouts there as their budget would (the caller went away). Returns an
    :class:`~shuangkou.core.rollouts.Evaluation` of the candidates."""
    cdef Engine e = Engine()
    cdef Seen S
    cdef int rc, m, status = 0
    cdef double t0 = monotonic(), hard = 0, stop = 0
    if root.view().over_kind:
        raise ShuangkouError("the round is over: nothing to suggest", "state")
    check_width(width)
    e.open(root, seed, model, exact, infer, race, read, win, True)
    if sees:
        e.see(0, root, _seats_mask(sees), 0, 0)
    if timeout is not None:
        hard = t0 + max(float(timeout), 1e-9)
    stop = t0 + ms / 1e3 if ms > 0 else hard
    if hard and (not stop or hard < stop):
        stop = hard
    seen_of(&e.root, e.seat, &S)
    # the rule policy's action is the floor (bounded by the call's deadline only); the
    # alternatives and rollouts spend the search budget
    e.P.deadline = hard
    with nogil:
        rc = rule_choice(&e.P, &S, &e.cands[0])
    if rc == -1:
        raise DeadlineExceeded("the suggestion ran out of its time budget")
    if rc == -2:
        raise ShuangkouError("the hand has no play", "hand")
    e.P.deadline = stop
    e.P.timed_out = 0
    with nogil:
        m = alternatives(&e.P, &S, &e.cands[0], e.cands, width, 1)
    if m < 0:
        m = 1                 # no time left to rank alternatives: the policy's action
    if not partner_bomb and S.has_st and S.st_seat == partner_of(e.seat):
        m = spare_partner(e.cands, m)
    e.candidates(m)
    if m > 1 and (rollouts or ms):
        status = e.run(0, rollouts, 0, 0, stop, 0, cancelled)
    return _evaluation(e, root, None, None, m == 1, t0, status == RUN_CANCELLED,
                       status == RUN_RACED, ())


# ----------------------------------------------------------------------------- the review

cdef enum:
    MIN_DEALS = 2         # an evaluation's fewest deals: a paired standard error needs two


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
    replay declared it — checked to be an action of the seat in ``root``."""
    cdef int code, rank, j, n = 0
    cdef int codes[MAXCARDS]
    cdef Decl d
    cdef RD rd
    cards, reading, declared = taken
    memset(out, 0, sizeof(Choice))
    out.reason = R_ALT_NEXT
    if cards:
        out.play = 1
        for code in cards:
            if not 1 <= code < NCODES:
                raise ShuangkouError(f"taken: {code!r} is not a card code", "taken")
            out.c[code_rank(code)] += 1
        if reading is None:
            raise ShuangkouError("taken: a play needs the reading that stood", "taken")
        reading_rd(reading, root.rs, &out.rd)
        out.declare = 1 if declared else 0
    # the action as the round checks it (by rank, as the rollouts play it)
    x = RoundCore.__new__(RoundCore)
    root._copy_into(x)
    try:
        if not out.play:
            (<RoundCore>x).do_pass(seat)
        else:
            for rank in range(NFACES):
                for j in range(out.c[rank]):
                    if n < MAXCARDS:
                        codes[n] = code_of(rank, NO_SUIT)
                        n += 1
            choice_decl(out, &d)
            (<RoundCore>x).do_play(seat, codes, n, &d, 0, &rd)
    except ShuangkouError as exc:
        raise ShuangkouError(f"taken: not an action of seat {seat} here: {exc}",
                             "taken") from None
    return 0


def evaluate(RoundCore root, taken=None, *, long rollouts=0, double ms=0, seed=None,
             int width=6, timeout=None, cancelled=None, str model="mix", int exact=0,
             wide=None, win=None, bint race=False, int decoys=0, int fair_deals=0,
             fair_views=("partner", "all")):
    """Evaluate given candidates of the decision of the seat to act in ``root``, absolutely:
    the review's engine (core_ext/review.py, docs/review.md).

    Candidates: the ranked 提示 list (the rule policy's action, then the plays in its order
    of preference, then the pass: ``_suggest.choose_in(..., diverse=False)``'s order, never
    seeded) up to ``width``, and the action ``taken`` — (cards, reading, declared): the codes
    played (empty: a pass), the reading that stood, whether it was declared — appended when
    it is not one of them. Every candidate is rolled out on the same deals of the seat's
    own view (``model`` and ``exact`` as :func:`search`), at least two deals, then while
    ``rollouts`` (over all candidates, as the search counts them) and ``ms`` allow; with
    ``race``, the deals end early once the best candidate in points is clearly ahead of
    every other (_rollout.pyx ``settled``): every candidate meets every deal, so their
    figures stay comparable (no candidate's mean is of fewer, unlucky deals). With ``wide`` (:data:`WIDE_VIEWS`): as many deals again on the
    view that also sees the partner's hand (``"partner"``) or every hand (``"all"``: the
    true deal, the other seats' styles still drawn per deal). With ``decoys`` (1 to
    _rollout.MAX_DECOYS): the fair-play views, ``fair_deals`` deals each, every candidate
    on each — the view that also sees the partner's hand and the view that sees every
    hand, each first with the true hands and then with ``decoys`` decoys of them (the hands
    made up from what the seat sees: core_ext/fairplay.py reads them). A decision with one
    legal action (``forced``) is not rolled out.

    Returns an :class:`~shuangkou.core.rollouts.Evaluation` (the candidates' ``hint_rank``:
    their place in the 提示 list, -1 for a taken action not in it; ``views``: the fair-play
    views); ``cancelled`` in it: the caller went away and the figures are partial. Raises
    DeadlineExceeded when ``timeout`` seconds end it early."""
    cdef Engine e = Engine()
    cdef Seen S
    cdef Choice tk
    cdef int k, m, mh = 0, rc, t = -1, th, status = 0, forced, v
    cdef double t0 = monotonic(), hard = 0, stop = 0
    if root.view().over_kind:
        raise ShuangkouError("the round is over: nothing to evaluate", "state")
    check_width(width)
    if wide is not None and wide not in WIDE_VIEWS:
        raise ShuangkouError(f"wide must be one of {', '.join(WIDE_VIEWS)}; got {wide!r}",
                             "wide")
    fair_views = tuple(fair_views)
    if any(kind not in FAIR_VIEWS for kind in fair_views) or len(set(fair_views)) != len(
            fair_views):
        raise ShuangkouError(f"fair_views must be distinct, of {', '.join(FAIR_VIEWS)}; got "
                             f"{fair_views!r}", "fair_views")
    if not 0 <= decoys <= MAX_DECOYS_C:
        raise ShuangkouError(f"decoys must be 0–{MAX_DECOYS_C}; got {decoys}", "decoys")
    if decoys and fair_deals < MIN_DEALS:
        raise ShuangkouError(f"fair_deals must be {MIN_DEALS} or more; got {fair_deals}",
                             "fair_deals")
    if timeout is not None:
        hard = t0 + max(float(timeout), 1e-9)
    if ms > 0:
        stop = t0 + ms / 1e3
    e.open(root, seed, model, exact, False, False, None, win, False)  # the 提示 order: unseeded
    e.settle = race
    if wide == "partner":
        e.see(1, root, 1 << partner_of(e.seat), WIDE_SALT_PARTNER, 0)
    kinds = []
    if decoys:
        v = 2
        masks = {"partner": 1 << partner_of(e.seat), "left": 1 << ((e.seat + 1) % SEATS),
                 "right": 1 << ((e.seat + 3) % SEATS), "all": EVERY_SEAT_MASK}
        for n, kind in enumerate(fair_views):
            for k in range(decoys + 1):
                e.see(v, root, masks[kind], WIDE_SALT_ALL + n, k)
                kinds.append((v, kind, k))
                v += 1
    seen_of(&e.root, e.seat, &S)
    e.P.deadline = hard
    with nogil:
        rc = rule_choice(&e.P, &S, &e.cands[0])
        if rc == 0:
            mh = alternatives(&e.P, &S, &e.cands[0], e.cands, max(width, 2), 0)
    if rc == -1 or (rc == 0 and mh < 0):
        raise DeadlineExceeded("the evaluation ran out of its time budget")
    if rc == -2:
        raise ShuangkouError("the hand has no play", "hand")
    forced = mh == 1
    m = min(mh, width)
    hint = list(range(m))
    if taken is not None:
        taken_choice(root, e.seat, taken, &tk)
        th = -1
        for k in range(mh):
            if same_action(&e.cands[k], &tk):
                tk = e.cands[k]           # the 提示 entry (its reason, its declaration)
                th = k
                break
        if 0 <= th < m:
            t = th
        else:                             # past the width in the 提示 list, or not in it
            e.cands[m] = tk
            hint.append(th)
            t = m
            m += 1
    if seed is not None:                  # the rollouts' ties: seeded, as the search's
        e.P.seeded = 1
        e.P.rng.s = <unsigned long long>(seed & 0xFFFFFFFFFFFFFFFF)
    e.candidates(m)
    e.taken = t if t >= 0 else 0
    raced = False
    views = []
    if not forced and (rollouts or ms):
        status = e.run(0, rollouts, MIN_DEALS, 0, stop, hard, cancelled)
        raced = status == RUN_RACED
        if raced:
            status = 0
        _deals_done(e, status, root, hint, t0)
        if wide is not None and status != RUN_CANCELLED:
            status = e.run(1, 0, 0, e.tally[0].deals, 0, hard, cancelled)
            _deals_done(e, status, root, hint, t0)
        for v, kind, k in kinds:
            if status == RUN_CANCELLED:
                break
            status = e.run(v, 0, 0, fair_deals, 0, hard, cancelled)
            _deals_done(e, status, root, hint, t0)
            views.append(View(kind, k, e.tally[v].deals, e.view_points(v)))
    return _evaluation(e, root, hint, t if t >= 0 else None, forced, t0,
                       status == RUN_CANCELLED, raced, tuple(views))


cdef int _deals_done(Engine e, int status, RoundCore root, object hint, double t0) except -1:
    """Raise what a run of deals ended on, if it ended early: an engine fault, or the
    deadline (DeadlineExceeded)."""
    if status == RUN_DEADLINE or status == RUN_STOPPED:
        if e.fault:
            _evaluation(e, root, hint, None, False, t0, False, False, ())  # raises
        raise DeadlineExceeded("the evaluation ran out of its time budget")
    return 0


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


cdef int random_choice(Engine e, const Seen* S, Rng* g, Choice* out) noexcept nogil:
    """Uniformly one of the seat's legal actions (every distinct play, and the pass when
    following); -1 when the deadline stopped it."""
    cdef Enum E
    cdef Uniform U
    U.g = g
    U.n = 0
    enum_begin(&E, e.P.R, S.hand, &S.st if S.has_st else NULL, e.P.scratch)
    E.deadline = e.P.deadline
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


cdef class _Dealer:
    """Random whole deals of a variant (self-play): the deck, shuffled anew for each."""
    cdef object v
    cdef int cards[1024]
    cdef int n, hs

    def __cinit__(self, v):
        from shuangkou.core.cards import deck
        codes = deck(v.decks, v.lowest_rank, v.joker_copies)
        self.v, self.n, self.hs = v, len(codes), v.hand_size
        if self.n > 1024 or self.hs * SEATS > self.n:
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


cdef int play_random(Engine e, Position* p, Rng* g) noexcept nogil:
    """Play ``p`` to its end with uniformly random legal actions in every seat."""
    cdef Seen S
    cdef Choice ch
    cdef int seat
    while not p.over_kind:
        seat = p.turn
        seen_of(p, seat, &S)
        if random_choice(e, &S, g, &ch) < 0 or apply_choice(p, e.P.R, seat, &ch) < 0:
            return -1
        e.actions += 1
    return 0


def selfplay(variant, int rounds, str policy="rule", seed=0, timeout=None):
    """Play ``rounds`` whole rounds, deal to settlement, with ``policy`` ("rule" or
    "random") in all four seats, in compiled code, without the GIL between deals: the
    rollout engine's speed (bench/bench_search.py). Returns a
    :class:`~shuangkou.core.rollouts.SelfPlay`."""
    from shuangkou.core._core import rules_for
    from shuangkou.core.rollouts import SelfPlay
    cdef Engine e = Engine()
    cdef RuleSet rs = rules_for(variant)
    cdef Rng g
    cdef Position p
    cdef Leaf leaf
    cdef int rc, i
    cdef int styles[SEATS]
    cdef long long amount[SEATS]
    cdef double points = 0
    cdef _Dealer dealer
    if policy not in ("rule", "random"):
        raise ShuangkouError(f"policy must be 'rule' or 'random'; got {policy!r}", "policy")
    cdef bint use_rule = policy == "rule"
    dealer = _Dealer(rs.variant)
    g.s = rng_mix(<unsigned long long>seed, 0x5E1F)
    for i in range(SEATS):
        styles[i] = STYLE_RULE
    for _ in range(rounds):
        r = dealer.deal(&g)
        if e.m == 0:                       # the engine's work space, once
            e.open(r, seed, "rule", 0, False, False, None, None, True)
            e.m = 1
            if timeout is not None:
                e.P.deadline = monotonic() + float(timeout)
        p = (<RoundCore>r).view()[0]
        e.seat = 0
        with nogil:
            if use_rule:
                rc = play_out(e, &p, styles, &leaf)
            else:
                rc = play_random(e, &p, &g)
        if rc < 0 or e.fault:
            raise DeadlineExceeded("self-play ran out of its time budget")
        position_amounts(e.tables, &p, amount)
        points += amount[0] + amount[2]
    return SelfPlay(rounds, e.actions, points)


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


cdef int context_at(const Position* r) noexcept nogil:
    """The context of the seat to act for reading its style (CONTEXTS), -1 when its action
    says nothing of it (it leads, or the round is over). Public: the standing play's seat and
    the card counts."""
    cdef int seat = r.turn, s, few = NO_FEW
    if r.over_kind or not r.has_st:
        return -1
    if r.st_seat == partner_of(seat):
        return 0
    for s in range(SEATS):
        if team_of(s) != team_of(seat) and 0 < r.nleft[s] < few:
            few = r.nleft[s]
    return 2 if few <= DANGER_AT else 1


cdef int outcome_at(const Position* r, int seat, int before) noexcept nogil:
    """What ``seat``, which held ``before`` cards, did (OUTCOMES), -1 when it went out.
    Public: its card count, and the play standing after it."""
    if r.nleft[seat] == before:
        return 0
    if r.nleft[seat] == 0:
        return -1
    return 2 if r.st.kind >= K_BOMB else 1


def action_context(RoundCore r):
    """The context (an index in :data:`CONTEXTS`) of the seat to act in ``r``, or -1."""
    return context_at(r.view())


def action_outcome(RoundCore r, int seat, int before):
    """What ``seat``, holding ``before`` cards before its action, did (an index in
    :data:`OUTCOMES`), or -1 (it went out: that says nothing of its style)."""
    return outcome_at(r.view(), seat, before)


cdef int tally_styles(Engine e, Position* p, const int* styles, long* tally) noexcept nogil:
    """Play ``p`` to its end, each seat in its style, tallying what each style did in each
    context (``tally[style][context][outcome]``, NCTX × NOUT per style)."""
    cdef Seen S
    cdef Choice ch
    cdef int seat, rc, ctx, out, before
    while not p.over_kind:
        seat = p.turn
        ctx, before = context_at(p), p.nleft[seat]
        seen_of(p, seat, &S)
        e.P.style = styles[seat]
        rc = rule_choice(&e.P, &S, &ch)
        e.P.style = STYLE_RULE
        if rc < 0 or apply_choice(p, e.P.R, seat, &ch) < 0:
            return -1
        out = outcome_at(p, seat, before)
        if ctx >= 0 and out >= 0:
            tally[(styles[seat] * NCTX + ctx) * NOUT + out] += 1
    return 0


def style_counts(variant, int rounds, seed=0):
    """How often each style does what in each context, by self-play in compiled code:
    ``rounds`` random deals, every seat playing a style drawn per round (uniformly among
    the styles of core_ext/styles.py). Returns ``counts[style][context][outcome]``: the
    rates :func:`read_weights` reads a seat's actions by. Deterministic for a seed."""
    from shuangkou.core._core import rules_for
    cdef Engine e = Engine()
    cdef RuleSet rs = rules_for(variant)
    cdef Rng g
    cdef Position p
    cdef int seat, rc, k, c, o, ns = nstyles()
    cdef int styles[SEATS]
    cdef long tally[MAXSTYLES * NCTX * NOUT]
    cdef _Dealer dealer = _Dealer(rs.variant)
    memset(tally, 0, sizeof(tally))
    g.s = rng_mix(<unsigned long long>seed, 0x57E1E)
    for _ in range(rounds):
        r = dealer.deal(&g)
        if e.m == 0:
            e.open(r, seed, "rule", 0, False, False, None, None, True)
            e.m = 1
        for seat in range(SEATS):
            styles[seat] = rng_below(&g, ns)
        p = (<RoundCore>r).view()[0]
        with nogil:
            rc = tally_styles(e, &p, styles, tally)
        if rc < 0:
            raise ShuangkouError("the rule policy found no action", "variant")
    return [[[tally[(k * NCTX + c) * NOUT + o] for o in range(NOUT)] for c in range(NCTX)]
            for k in range(ns)]


def log_rates(counts):
    """The styles' log outcome rates, ``[style][context][outcome]``, from
    :func:`style_counts`' ``counts`` (half a count added to every cell, so no outcome is
    impossible): what :func:`read_weights` reads a seat's actions by, computed once per
    rule set (core.suggest caches them)."""
    return [[[log((counts[k][c][o] + 0.5) / (sum(counts[k][c]) + 0.5 * NOUT))
              for o in range(NOUT)] for c in range(NCTX)] for k in range(len(counts))]


def read_weights(seen, rates, str model="mix"):
    """Per seat, the weight of each style (styles.STYLE_TABLE order) given what the seat was
    seen doing: ``seen[seat][context][outcome]``, the tally of its actions
    (:func:`action_context`, :func:`action_outcome`); ``rates``, :func:`log_rates` of the
    styles' calibration. The weight is the ``model``'s prior of the style (its row's share)
    times the likelihood of the seat's actions under it (each context's outcome rates),
    normalised, with READ_FLOOR of the prior mixed back in: a seat never seen following
    keeps the prior. The model "rule" reads nothing."""
    draws = _model(model).draws
    names = [row.name for row in _STYLE_TABLE]
    prior = [draws.count(name) / len(draws) for name in names]
    out = []
    for s in range(SEATS):
        logs = [log(prior[k]) + sum(seen[s][c][o] * rates[k][c][o]
                                    for c in range(NCTX) for o in range(NOUT))
                if prior[k] > 0 else None for k in range(len(names))]
        top = max(x for x in logs if x is not None)
        post = [exp(x - top) if x is not None else 0.0 for x in logs]
        total = sum(post)
        out.append(tuple((1 - READ_FLOOR) * p / total + READ_FLOOR * q
                         for p, q in zip(post, prior)))
    return tuple(out)
