# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Round settlement in compiled code (RULES.md §9 round end, §10): round stars, the
multiplier, contribution events and the final amounts, over tables read once from the
:class:`~shuangkou.core.variants.Variant` (the rule data stays data: each named behaviour —
``round_end``, ``multiplier_star``, ``contribution_mode``, ``contribution_recipients`` —
is looked up in a table here and selects a branch; the amounts are the variant's rows).

core_ext/scoring.py owns the records and the escape rules; its :func:`settle` is this
module's :func:`settle`, so ``score_round`` and ``Round.result()`` are one computation.
The result records are the frozen dataclasses of core_ext/scoring.py, filled field by
field in their declared order (what their ``__init__`` does, without the Python frames).
"""

from cpython.object cimport PyObject
from libc.string cimport memset

from shuangkou.core._core cimport RuleSet, get_rules

cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object o, object name, object value) except -1

from shuangkou.core.errors import ShuangkouError

cdef enum:
    SEATS = 4
    NSTAR = 512            # star-indexed tables; the variants' rows stop at star 64
    MAXB = 128             # bombs per seat a settlement reads at once

#: The variant fields that name a behaviour, and the branch each value selects.
ROUND_ENDS = {"finishing_order": 0, "first_out": 1}
MULTIPLIER_STARS = {"winning_team": 0, "all": 1, "winner": 2}
CONTRIBUTION_MODES = {"per_bomb": 0, "round_star": 1}
CONTRIBUTION_RECIPIENTS = {"player": 0, "team": 1}
#: Place of the first finisher's partner -> kind of win (§9), by index into KINDS_OF_WIN.
KINDS_OF_WIN = ("double", "single", "flat")
cdef int KIND_BY_PARTNER_PLACE[5]
KIND_BY_PARTNER_PLACE[:] = [-1, -1, 0, 1, 2]

cdef long long INT64_MAX = 9223372036854775807

# The records (core_ext/scoring.py binds them at import: it defines them and imports this).
cdef object StarSource = None
cdef object SeatResult = None
cdef object ContributionEvent = None
cdef object _check_fits = None
cdef object _new = object.__new__
cdef dict _SOURCES = {}          # (rule, a, b) -> the shared frozen StarSource
cdef tuple _TO_PLAYER = tuple((s,) for s in range(SEATS))
cdef tuple _TO_TEAM = tuple((s, (s + 2) % SEATS) for s in range(SEATS))
cdef tuple _SEAT_FIELDS = ("seat", "team", "place", "base", "star", "star_source",
                           "multiplier", "contribution", "escape", "final")
cdef tuple _EVENT_FIELDS = ("seat", "star", "gain", "pay", "to", "bomb")
cdef tuple _RESULT_FIELDS = ("variant", "kind", "winning_team", "finish_order", "star",
                             "star_seat", "multiplier", "stake", "escaper", "table_fee",
                             "seats", "contributions")


def bind_records(star_source, seat_result, contribution_event, check_fits):
    """Called once by core_ext/scoring.py with its record classes."""
    global StarSource, SeatResult, ContributionEvent, _check_fits
    StarSource, SeatResult, ContributionEvent = star_source, seat_result, contribution_event
    _check_fits = check_fits
    _SOURCES.clear()


cdef object _source(int rule, int a, int b):
    """The StarSource of a round star (shared: the records are frozen)."""
    key = (rule, a, b)
    src = _SOURCES.get(key)
    if src is None:
        if rule == 0:
            src = StarSource()
        elif rule == 1:
            src = StarSource("bomb", bomb=a)
        elif rule == 2:
            src = StarSource("multi_bomb", n=a, k=b)
        else:
            src = StarSource("chain_bonus", bomb=a, bonus=b)
        if len(_SOURCES) < 4096:
            _SOURCES[key] = src
    return src


cdef object _record(cls, tuple names, tuple values):
    """A frozen dataclass instance with ``names`` set to ``values`` (its __init__, in C)."""
    obj = _new(cls)
    cdef Py_ssize_t i
    for i in range(len(names)):
        PyObject_GenericSetAttr(obj, names[i], values[i])
    return obj


# ----------------------------------------------------------------------------- tables

cdef class Tables:
    """A variant's settlement rules in C form (built once per Variant, see :func:`tables`)."""

    cdef readonly object variant
    cdef int end_rule, star_rule, contrib_mode, to_team, cap, multi, need4, need5
    cdef int chain_bonus, first_contrib, kou_double, kou_single
    cdef long long base[3][SEATS]
    cdef long long kou[3]
    cdef long long mult[NSTAR]
    cdef long long gain[NSTAR]
    cdef long long pay[NSTAR]

    def __init__(self, v):
        cdef int s, k
        self.variant = v
        self.end_rule = ROUND_ENDS[v.round_end]
        self.star_rule = MULTIPLIER_STARS[v.multiplier_star]
        self.contrib_mode = CONTRIBUTION_MODES[v.contribution_mode]
        self.to_team = CONTRIBUTION_RECIPIENTS[v.contribution_recipients]
        self.cap = -1 if v.settlement_star_cap is None else v.settlement_star_cap
        need = dict(v.multi_bomb)
        self.multi = 1 if need else 0
        self.need4 = need.get(4, 99)
        self.need5 = need.get(5, 99)
        self.chain_bonus = 1 if v.chain_bonus else 0
        self.first_contrib = v.contribution[0][0] if v.contribution else -1
        memset(self.base, 0, sizeof(self.base))
        memset(self.kou, 0, sizeof(self.kou))
        for k, name in enumerate(KINDS_OF_WIN):
            if self.end_rule == 0:
                for s in range(SEATS):
                    self.base[k][s] = v.base[name][s]
            else:
                self.kou[k] = v.kou[name]
        self.kou_double, self.kou_single = v.kou_thresholds
        for s in range(NSTAR):            # as Variant.multiplier_for / contribution_for
            self.mult[s] = v.multiplier_for(s)
            self.gain[s], self.pay[s] = v.contribution_for(s)

    cdef inline int capped(self, int star) noexcept:
        return star if self.cap < 0 or star <= self.cap else self.cap

    cdef inline long long m_for(self, int star) noexcept:
        return self.mult[star if star < NSTAR else NSTAR - 1]

    cdef int multi_star(self, int n, int k) noexcept:
        """Variant.multi_bomb_star: round star for k or more bombs of at least n cards."""
        if not self.multi:
            return 0
        if n == 4:
            return k + 2 if k >= self.need4 else 0
        return n + k - 1 if k >= self.need5 else 0


cpdef Tables tables(v):
    """The settlement tables of a variant, kept with its compiled rules (one cache for both,
    beside the frozen Variant, never inside it)."""
    cdef RuleSet rs = get_rules(v)
    t = rs.settlement
    if t is None:
        t = Tables(rs.variant)
        rs.settlement = t
    return <Tables>t


# ----------------------------------------------------------------------------- round stars

cdef int _round_star(Tables t, const int* stars, const unsigned char* chain, int nb,
                     int* rule, int* a, int* b) noexcept:
    """§10.2 over one seat's bombs (stars and chain-bomb flags, in play order); the source
    is (rule, a, b): 0 none, 1 bomb a, 2 multi_bomb n=a k=b, 3 chain_bonus bomb a bonus b.
    On equal stars the simplest source wins: a bomb, then the table, then the bonus."""
    cdef int star = 0, i, j, k, n, s, bonus, nsz = 0, tmp
    cdef int sizes[MAXB]
    cdef int ns[2]
    rule[0] = a[0] = b[0] = 0
    for i in range(nb):
        if stars[i] > star:
            star, rule[0], a[0] = stars[i], 1, i
    if t.multi:
        for i in range(nb):
            if not chain[i]:
                sizes[nsz] = stars[i]
                nsz += 1
        for i in range(1, nsz):          # descending insertion sort (a handful of bombs)
            tmp = sizes[i]
            j = i - 1
            while j >= 0 and sizes[j] < tmp:
                sizes[j + 1] = sizes[j]
                j -= 1
            sizes[j + 1] = tmp
        for k in range(1, nsz + 1):
            # k bombs have at least sizes[k-1] cards; only N = sizes[k-1] and N = 4 count
            ns[0], ns[1] = sizes[k - 1], 4
            for j in range(2):
                n = ns[j]
                s = t.multi_star(n, k)
                if s > star:
                    star, rule[0], a[0], b[0] = s, 2, n, k
    if t.chain_bonus:
        for i in range(nb):
            if chain[i]:
                bonus = 0
                for j in range(nb):
                    if j != i and stars[j] == stars[i]:
                        bonus += 1
                if stars[i] + bonus > star:
                    star, rule[0], a[0], b[0] = stars[i] + bonus, 3, i, bonus
    if rule[0] == 0:
        a[0] = b[0] = 0
    return star


cdef int _read_bombs(list bombs, int* stars, unsigned char* chain) except -1:
    """Stars and chain flags of one seat's bomb Readings."""
    cdef int i, nb = len(bombs)
    if nb > MAXB:
        raise ShuangkouError(f"at most {MAXB} bombs per seat can be settled", "bombs")
    for i in range(nb):
        r = bombs[i]
        stars[i] = r.star
        chain[i] = r.kind == "chain_bomb"
    return nb


def round_star(bombs, v):
    """(star, StarSource) of one seat's bombs (Readings, in play order) — see
    shuangkou.core.scoring.round_star."""
    cdef int stars[MAXB]
    cdef unsigned char chain[MAXB]
    cdef int rule, a, b, star
    cdef Tables t = tables(v)
    cdef int nb = _read_bombs(list(bombs), stars, chain)
    star = _round_star(t, stars, chain, nb, &rule, &a, &b)
    return star, _source(rule, a, b)


def round_stars(played, v):
    """[(star, StarSource)] per seat."""
    return [round_star(played[s], v) for s in range(SEATS)]


# ----------------------------------------------------------------------------- settlement

def settle(v, tuple order, played, stake, cards_left, escaper, hands, table_fee,
           result_type, escape_settle, dict extra):
    """Settle consistent inputs (shuangkou.core.scoring.settle): ``played`` per seat the bomb
    Readings; escapes go to ``escape_settle`` (core_ext/scoring.py) with the round stars.
    Positional (the compiled round calls it per replay)."""
    cdef Tables t = tables(v)
    cdef int stars[SEATS]
    cdef int capped[SEATS]
    cdef int bstar[SEATS][MAXB]
    cdef unsigned char bchain[SEATS][MAXB]
    cdef int nb[SEATS]
    cdef int places[SEATS]
    cdef long long base[SEATS]
    cdef long long contrib[SEATS]
    cdef long long amount[SEATS]
    cdef int rule, a, b, s, i, k, winner, mate, kind, nxt, last, star, star_seat, held
    cdef int nfin = len(order)
    cdef long long m, gain, pay, total, limit
    sources = [None] * SEATS
    for s in range(SEATS):
        nb[s] = _read_bombs(<list>played[s] if type(played[s]) is list else list(played[s]),
                            bstar[s], bchain[s])
        stars[s] = _round_star(t, bstar[s], bchain[s], nb[s], &rule, &a, &b)
        sources[s] = _source(rule, a, b)
    if escaper is not None:
        rounds = [(stars[s], sources[s]) for s in range(SEATS)]
        return escape_settle(v, order, played, rounds, hands, escaper, stake, table_fee,
                             result_type, extra)
    # -- round end (§9): places, the kind of win, base amounts
    winner = order[0]
    memset(places, 0, sizeof(places))
    for i in range(nfin):
        places[<int>order[i]] = i + 1
    nxt = nfin + 1
    last = order[nfin - 1]
    for i in range(1, SEATS):
        s = (last + i) % SEATS
        if not places[s]:
            places[s] = nxt
            nxt += 1
    if t.end_rule == 0:
        kind = KIND_BY_PARTNER_PLACE[places[(winner + 2) % SEATS]]
        for s in range(SEATS):
            base[s] = t.base[kind][places[s] - 1]
    else:
        if cards_left is None:
            raise ShuangkouError(f"{v.id}: scoring needs the cards each seat still holds "
                                 "(cards_left or hands)", "cards_left")
        if cards_left[winner] != 0:
            raise ShuangkouError(f"seat {winner} finished first but cards_left says it holds "
                                 f"{cards_left[winner]} cards", "cards_left")
        held = cards_left[(winner + 1) % SEATS] + cards_left[(winner + 3) % SEATS]
        kind = 0 if held >= t.kou_double else 1 if held >= t.kou_single else 2
        for s in range(SEATS):
            base[s] = t.kou[kind] if s % 2 == winner % 2 else -t.kou[kind]
    # -- whose star sets the multiplier (§10.3)
    for s in range(SEATS):
        capped[s] = t.capped(stars[s])
    if t.star_rule == 0:
        mate = (winner + 2) % SEATS
        star_seat = winner if capped[winner] >= capped[mate] else mate
    elif t.star_rule == 1:
        star_seat = 0
        for s in range(1, SEATS):       # highest star; on a tie the winner, else the first
            if capped[s] > capped[star_seat] or (capped[s] == capped[star_seat]
                                                 and s == winner and star_seat != winner):
                star_seat = s
    else:
        star_seat = winner
    star = capped[star_seat]
    m = t.m_for(star)
    # -- contributions (§10.4)
    memset(contrib, 0, sizeof(contrib))
    events = []
    for s in range(SEATS):
        if t.contrib_mode == 0:
            for i in range(nb[s]):
                if t.first_contrib >= 0 and bstar[s][i] >= t.first_contrib:
                    _event(t, events, contrib, s, bstar[s][i], i)
        else:
            _event(t, events, contrib, s, stars[s], -1)
    # -- finals, checked against the wire's 64 bits
    total = 0
    limit = INT64_MAX // <long long>stake if stake <= INT64_MAX else 0
    fits = True
    for s in range(SEATS):
        amount[s] = base[s] * m + contrib[s]
        total += amount[s]
        if amount[s] > limit or -amount[s] > limit:
            fits = False
    if total > limit or -total > limit:
        fits = False
    finals = [amount[s] * stake for s in range(SEATS)]   # Python ints: exact
    if not fits:
        _check_fits(v, finals, stake)
    seats = tuple([_record(SeatResult, _SEAT_FIELDS,
                           (s, s % 2, places[s], base[s], stars[s], sources[s], m, contrib[s],
                            0, finals[s]))
                   for s in range(SEATS)])
    res = _record(result_type, _RESULT_FIELDS,
                  (v.id, KINDS_OF_WIN[kind], winner % 2, order, star,
                   star_seat if star else None, m, stake, None, table_fee, seats,
                   tuple(events)))
    if extra:
        for name, value in extra.items():
            PyObject_GenericSetAttr(res, name, value)
    return res


cdef int _event(Tables t, list events, long long* contrib, int seat, int star,
                int bomb) except -1:
    """One contribution payment (§10.4) at the capped star, unless it pays nothing."""
    cdef int s, c = t.capped(star)
    cdef long long gain, pay
    c = c if c < NSTAR else NSTAR - 1
    gain, pay = t.gain[c], t.pay[c]
    if not gain and not pay:
        return 0
    to = (<tuple>_TO_TEAM)[seat] if t.to_team else (<tuple>_TO_PLAYER)[seat]
    events.append(_record(ContributionEvent, _EVENT_FIELDS,
                          (seat, t.capped(star), gain, pay, to,
                           None if bomb < 0 else bomb)))
    for s in range(SEATS):
        if s == seat or (t.to_team and s == (seat + 2) % SEATS):
            contrib[s] += gain
        else:
            contrib[s] -= pay
    return 0
