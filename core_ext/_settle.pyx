# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Round settlement, all of it compiled (RULES.md §9 round end, §10): round stars (§10.2),
places and the kind of win (§9), the multiplier (§10.3), contributions (§10.4), escapes
(§10.6) and the finals (§10.5), refused when the wire's 64 bits cannot carry them.

The rule data stays data. Every behaviour that differs between variants is named by a
variant field — ``round_end``, ``multiplier_star``, ``contribution_mode``,
``contribution_recipients``, ``escape`` — looked up once per variant to select a branch or
a small named function: the round end's row of core_ext/round_ends.py, and for the others
the C enums below, numbered as variants.py lists the names (``MULTIPLIER_STARS`` …
``ESCAPES``; tests/test_round_ends.py checks that they agree); the amounts
are the variant's rows and :data:`ESCAPE_AMOUNTS`, read into C tables once per variant
(:func:`tables`). The round end itself is ``ended_at`` of core_ext/_round.pxd (the one
round-over decision); seats come from core_ext/cards.pxd.

What a settlement returns are the records of core_ext/results.py, filled field by field
in their declared order (what their ``__init__`` does, without the Python frames), or the
JSON text of their ``to_dict()`` written from the same values (``_face``: one computation,
two faces; the batch scorer stores the text).
core_ext/scoring.py is the Python face: it checks a summary, then calls :func:`settle`,
as the compiled round does (``Round.result()``, replays), so both are one computation.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcpy, memset, strlen

from shuangkou.core._core cimport K_CHAIN_BOMB, Reading, RuleSet, get_rules
from shuangkou.core._round cimport Bombs, MAXB, Position, RoundCore, end_rule_from, ended_at
from shuangkou.core.cards cimport SEATS, is_seat, next_seat_of, partner_of, team_of

cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object o, object name, object value) except -1

from types import MappingProxyType

import orjson

from shuangkou.core._enumerate import best_bomb
from shuangkou.core.cards import check_seat
from shuangkou.core.errors import IllegalPlay, ShuangkouError
from shuangkou.core.results import ContributionEvent, SeatResult, StarSource
from shuangkou.core.round_ends import round_end
from shuangkou.core.variants import (
    CONTRIBUTION_MODES as _CONTRIBUTION_MODES,
    CONTRIBUTION_RECIPIENTS as _CONTRIBUTION_RECIPIENTS,
    ESCAPE_RULES as _ESCAPE_RULES,
    KINDS_OF_WIN,
    STAR_SOURCES as _STAR_SOURCES,
    numbered,
)

#: Largest stake and table fee accepted. With a house variant's table amounts (each up to
#: variants.MAX_AMOUNT) a settlement can still pass int64; :func:`settle` refuses those.
MAX_STAKE = 10**9
MAX_TABLE_FEE = 10**12
#: The wire carries amounts as int64 (protos/shuangkou/v1/scoring.proto).
INT64_MAX = 2**63 - 1

# The branches a variant field selects, numbered as variants.py lists the field's values
# (each named PREFIX_VALUE: tests/test_round_ends.py checks the numbers against the lists).
cpdef enum:                # whose star sets the multiplier (§10.3): STAR_SOURCES
    STAR_WINNING_TEAM = 0
    STAR_ALL = 1
    STAR_WINNER = 2

cpdef enum:                # when contributions are paid (§10.4): CONTRIBUTION_MODES
    MODE_PER_BOMB = 0
    MODE_ROUND_STAR = 1

cpdef enum:                # who receives them: CONTRIBUTION_RECIPIENTS
    TO_PLAYER = 0
    TO_TEAM = 1

cpdef enum:                # the escape rules (§10.6): ESCAPE_RULES
    ESCAPE_NONE = 0
    ESCAPE_BIANFENG = 1
    ESCAPE_FENGKUANG = 2
    ESCAPE_QIANBIAN = 3
    ESCAPE_HUOPIN = 4

cpdef enum:                # the kinds of win (§9), rows of the base and kou tables: KINDS_OF_WIN
    WIN_DOUBLE = 0
    WIN_SINGLE = 1
    WIN_FLAT = 2

cdef enum:                 # where a round star came from (StarSource.rule)
    SRC_NONE = 0
    SRC_BOMB = 1
    SRC_MULTI_BOMB = 2
    SRC_CHAIN_BONUS = 3

#: The variant fields that name a behaviour, and the branch each value selects (the round
#: end's is its row of round_ends.py).
MULTIPLIER_STARS = numbered(_STAR_SOURCES)
CONTRIBUTION_MODES = numbered(_CONTRIBUTION_MODES)
CONTRIBUTION_RECIPIENTS = numbered(_CONTRIBUTION_RECIPIENTS)
ESCAPES = numbered(_ESCAPE_RULES)
#: Contribution modes that survive an escape (§10.6): earned-when-played payments stand.
KEPT_ON_ESCAPE = frozenset({"per_bomb"})

#: §10.6 escape amounts in units of the escape multiplier M (before the stake):
#: what the escaper pays and what each receiving seat gets.
ESCAPE_AMOUNTS = MappingProxyType({
    "bianfeng": MappingProxyType({"pay": 4 * 2, "receive": 0}),    # 双扣 base × M × 2, nobody receives
    "fengkuang": MappingProxyType({"pay": 4, "receive": 1}),       # 4th-place 双扣 base × M; half to the opponents
    "qianbian": MappingProxyType({"pay": 3 * 4, "receive": 4}),    # 3 × the 双扣 base × M(S); holders get the base
})

#: Place of the first finisher's partner -> kind of win (§9), by index into KINDS_OF_WIN.
cdef int KIND_BY_PARTNER_PLACE[5]
KIND_BY_PARTNER_PLACE[:] = [-1, -1, WIN_DOUBLE, WIN_SINGLE, WIN_FLAT]

cdef long long C_INT64_MAX = 9223372036854775807

cdef object _new = object.__new__
cdef dict _SOURCES = {}          # (rule, a, b) -> the shared frozen StarSource
cdef tuple _TO_PLAYER = tuple((s,) for s in range(SEATS))
cdef tuple _TO_TEAM = tuple((s, partner_of(s)) for s in range(SEATS))
cdef tuple _SEAT_FIELDS = ("seat", "team", "place", "base", "star", "star_source",
                           "multiplier", "contribution", "escape", "final")
cdef tuple _EVENT_FIELDS = ("seat", "star", "gain", "pay", "to", "bomb")
cdef tuple _RESULT_FIELDS = ("variant", "kind", "winning_team", "finish_order", "star",
                             "star_seat", "multiplier", "stake", "escaper", "table_fee",
                             "seats", "contributions")


cdef object _source(int rule, int a, int b):
    """The StarSource of a round star (shared: the records are frozen)."""
    key = (rule, a, b)
    src = _SOURCES.get(key)
    if src is None:
        if rule == SRC_NONE:
            src = StarSource()
        elif rule == SRC_BOMB:
            src = StarSource("bomb", bomb=a)
        elif rule == SRC_MULTI_BOMB:
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
    """A variant's settlement rules in C form (built once per Variant, see :func:`tables`;
    fields in _settle.pxd)."""

    def __init__(self, v):
        cdef int s, k
        self.variant = v
        end_rule_from(round_end(v.round_end), &self.end)
        self.star_rule = MULTIPLIER_STARS[v.multiplier_star]
        self.contrib_mode = CONTRIBUTION_MODES[v.contribution_mode]
        self.to_team = CONTRIBUTION_RECIPIENTS[v.contribution_recipients]
        self.cap = -1 if v.settlement_star_cap is None else v.settlement_star_cap
        need = dict(v.multi_bomb)
        self.stars.multi = 1 if need else 0
        self.stars.need4 = need.get(4, 99)
        self.stars.need5 = need.get(5, 99)
        self.stars.chain_bonus = 1 if v.chain_bonus else 0
        self.first_contrib = v.contribution[0][0] if v.contribution else -1
        self.escape_rule = ESCAPES[v.escape]
        self.kept_on_escape = v.contribution_mode in KEPT_ON_ESCAPE
        amounts = ESCAPE_AMOUNTS.get(v.escape)
        self.escape_pay = amounts["pay"] if amounts else 0
        self.escape_receive = amounts["receive"] if amounts else 0
        self.escape_fee = v.escape_fee
        memset(self.base, 0, sizeof(self.base))
        memset(self.kou, 0, sizeof(self.kou))
        for k, name in enumerate(KINDS_OF_WIN):
            if self.end.kou:
                self.kou[k] = v.kou[name]
            else:
                for s in range(SEATS):
                    self.base[k][s] = v.base[name][s]
        self.kou_double, self.kou_single = v.kou_thresholds
        for s in range(NSTAR):            # as Variant.multiplier_for / contribution_for
            self.mult[s] = v.multiplier_for(s)
            self.gain[s], self.pay[s] = v.contribution_for(s)



cdef inline int multi_star(const StarRules* t, int n, int k) noexcept nogil:
    """The multi-bomb table (§10.2): round star for k or more bombs of at least n cards."""
    if not t.multi:
        return 0
    if n == 4:
        return k + 2 if k >= t.need4 else 0
    return n + k - 1 if k >= t.need5 else 0


cpdef Tables tables(v):
    """The settlement tables of a variant, kept with its compiled rules (one cache for both,
    beside the frozen Variant, never inside it)."""
    cdef RuleSet rs = get_rules(v)
    t = rs.settlement
    if t is None:
        t = Tables(rs.variant)
        rs.settlement = t
    return <Tables>t


# ----------------------------------------------------------------------------- round stars (§10.2)

cdef int round_star_of(const StarRules* t, const int* stars, const unsigned char* chain,
                       int nb, int* rule, int* a, int* b) noexcept nogil:
    """§10.2 over one seat's bombs (stars and chain-bomb flags, in play order); the source
    is (rule, a, b): none, bomb a, multi_bomb n=a k=b, or chain_bonus bomb a bonus b.
    On equal stars the simplest source wins: a bomb, then the table, then the bonus."""
    cdef int star = 0, i, j, k, n, s, bonus, nsz = 0, tmp
    cdef int sizes[MAXB]
    cdef int ns[2]
    rule[0], a[0], b[0] = SRC_NONE, 0, 0
    for i in range(nb):
        if stars[i] > star:
            star, rule[0], a[0] = stars[i], SRC_BOMB, i
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
            # k bombs have at least sizes[k-1] cards; the star grows with N (N + k − 1 for
            # N ≥ 5, k + 2 for N = 4), so only N = sizes[k-1] and N = 4 need checking
            ns[0], ns[1] = sizes[k - 1], 4
            for j in range(2):
                n = ns[j]
                s = multi_star(t, n, k)
                if s > star:
                    star, rule[0], a[0], b[0] = s, SRC_MULTI_BOMB, n, k
    if t.chain_bonus:
        for i in range(nb):
            if chain[i]:
                bonus = 0
                for j in range(nb):
                    if j != i and stars[j] == stars[i]:
                        bonus += 1
                if stars[i] + bonus > star:
                    star, rule[0], a[0], b[0] = stars[i] + bonus, SRC_CHAIN_BONUS, i, bonus
    if rule[0] == SRC_NONE:
        a[0] = b[0] = 0
    return star


cdef int _read_bombs(bombs, int* stars, unsigned char* chain) except -1:
    """Stars and chain flags of one seat's bomb Readings."""
    cdef list rows = <list>bombs if type(bombs) is list else list(bombs)
    cdef int i, nb = len(rows)
    if nb > MAXB:
        raise ShuangkouError(f"at most {MAXB} bombs per seat can be settled", "bombs")
    for i in range(nb):
        r = rows[i]
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
    cdef int nb = _read_bombs(bombs, stars, chain)
    star = round_star_of(&t.stars, stars, chain, nb, &rule, &a, &b)
    return star, _source(rule, a, b)


# ----------------------------------------------------------------------------- contributions (§10.4)

cdef int _pay(Tables t, long long* contrib, int seat, int star) noexcept nogil:
    """One contribution payment at the capped star: the player (or the player's team) gets
    +gain, every other seat pays; 0 when it pays nothing (the sums unchanged), else 1."""
    cdef int s, c = t.capped(star)
    cdef int row = c if c < NSTAR else NSTAR - 1
    cdef long long gain = t.gain[row], pay = t.pay[row]
    if not gain and not pay:
        return 0
    for s in range(SEATS):
        if s == seat or (t.to_team == TO_TEAM and s == partner_of(seat)):
            contrib[s] += gain
        else:
            contrib[s] -= pay
    return 1


cdef int contributions(Tables t, const Bombs* b, const int* stars, long long* contrib,
                       Paid* paid) noexcept nogil:
    """The variant's mode — each bomb at its star (below the first row pays nothing), or
    once per seat at its round star: the sum per seat, and (``paid`` not NULL) each payment
    made, for its record."""
    cdef int s, i, star, bomb
    memset(contrib, 0, SEATS * sizeof(long long))
    if paid != NULL:
        paid.n = 0
    for s in range(SEATS):
        for i in range(b.n[s] if t.contrib_mode == MODE_PER_BOMB else 1):
            if t.contrib_mode == MODE_PER_BOMB:
                if t.first_contrib < 0 or b.star[s][i] < t.first_contrib:
                    continue
                star, bomb = b.star[s][i], i
            else:
                star, bomb = stars[s], -1
            if _pay(t, contrib, s, star) and paid != NULL:
                paid.seat[paid.n], paid.star[paid.n], paid.bomb[paid.n] = s, star, bomb
                paid.n += 1
    return 0


cdef list _events(Tables t, const Paid* paid):
    """The contribution records of the payments ``paid``, in payment order."""
    cdef int k, seat, c
    out = []
    for k in range(paid.n):
        seat = paid.seat[k]
        c = t.capped(paid.star[k])
        row = c if c < NSTAR else NSTAR - 1
        to = (<tuple>_TO_TEAM)[seat] if t.to_team == TO_TEAM else (<tuple>_TO_PLAYER)[seat]
        out.append(_record(ContributionEvent, _EVENT_FIELDS,
                           (seat, c, t.gain[row], t.pay[row], to,
                            None if paid.bomb[k] < 0 else paid.bomb[k])))
    return out


# ----------------------------------------------------------------------------- escapes (§10.6)

cdef struct Escape:
    long long amount[SEATS]    # per seat, before the stake
    long long m                # the escape multiplier
    int star                   # the star that set it
    int star_seat              # whose (-1: none)
    bint fee                   # the escaper also pays the table fee (after the stake)


cdef inline int _argmax(const int* x) noexcept:
    """The first seat with the largest value."""
    cdef int s, best = 0
    for s in range(1, SEATS):
        if x[s] > x[best]:
            best = s
    return best


cdef int _held_stars(v, hands, int* held) except -1:
    """Star of the best bomb each current hand could play (0 when it has none)."""
    if hands is None:
        raise ShuangkouError(f"{v.id}: settling an escape needs the four current hands (its "
                             "best bomb is part of the rule)", "hands")
    cdef int s
    for s in range(SEATS):
        hand = hands[s]
        best = best_bomb(list(hand), v) if hand else None
        held[s] = best.star if best is not None else 0
    return 0


cdef int _escape_none(Tables t, v, int escaper, const int* stars, const int* played, hands,
                      Escape* e) except -1:
    raise IllegalPlay(f"{v.id} defines no escape settlement (its rules say nothing about a "
                      "player leaving mid-round), so an escaped round cannot be scored",
                      "escape")


cdef int _escape_bianfeng(Tables t, v, int escaper, const int* stars, const int* played,
                          hands, Escape* e) except -1:
    """The escaper pays 双扣 × current M × 2 (M from the highest round star so far)."""
    cdef int seat = _argmax(stars)
    e.star = t.capped(stars[seat])
    e.star_seat = seat if e.star else -1
    e.m = t.m_for(e.star)
    e.amount[escaper] = -t.escape_pay * e.m
    return 0


cdef int _escape_fengkuang(Tables t, v, int escaper, const int* stars, const int* played,
                           hands, Escape* e) except -1:
    """M from the best bomb in any current hand; escaper pays 4M, each opponent gets M."""
    cdef int held[SEATS]
    _held_stars(v, hands, held)
    cdef int seat = _argmax(held)
    e.star = t.capped(held[seat])
    e.star_seat = seat if e.star else -1
    e.m = t.m_for(e.star)
    e.amount[escaper] = -t.escape_pay * e.m
    e.amount[next_seat_of(escaper)] = t.escape_receive * e.m
    e.amount[next_seat_of(partner_of(escaper))] = t.escape_receive * e.m
    return 0


cdef int _escape_qianbian(Tables t, v, int escaper, const int* stars, const int* played,
                          hands, Escape* e) except -1:
    """S = best single bomb played or held; escaper pays 12·M(S), S-bomb teams get 4·M(S)."""
    cdef int held[SEATS]
    cdef int best[SEATS]
    cdef int s, teams = 0
    _held_stars(v, hands, held)
    for s in range(SEATS):
        best[s] = held[s] if held[s] > played[s] else played[s]
    cdef int seat = _argmax(best)
    e.star = best[seat]
    e.star_seat = seat if e.star else -1
    e.m = t.m_for(t.capped(e.star))
    e.amount[escaper] = -t.escape_pay * e.m
    if e.star:
        # A team "played or holds a bomb of star S" when either member does; S is the
        # maximum, so holding one means the hand's best bomb has exactly star S.
        for s in range(SEATS):
            if played[s] == e.star or held[s] == e.star:
                teams |= 1 << team_of(s)
        for s in range(SEATS):
            if s != escaper and teams & (1 << team_of(s)):
                e.amount[s] = t.escape_receive * e.m
    return 0


cdef int _escape_huopin(Tables t, v, int escaper, const int* stars, const int* played,
                        hands, Escape* e) except -1:
    """The escaper pays escape_fee × stake plus the table fee; the others nothing."""
    e.star, e.star_seat, e.m, e.fee = 0, -1, 1, True
    e.amount[escaper] = -t.escape_fee
    return 0


ctypedef int (*escape_rule)(Tables, object, int, const int*, const int*, object,
                            Escape*) except -1
#: The escape rules by ESCAPES value (the variant's ``escape``).
cdef escape_rule ESCAPE_RULES[5]
ESCAPE_RULES[:] = [_escape_none, _escape_bianfeng, _escape_fengkuang, _escape_qianbian,
                   _escape_huopin]


cdef object _settle_escape(Tables t, v, tuple order, const Bombs* b, const int* stars,
                           list sources, hands, int escaper, stake, table_fee, result_type,
                           dict extra):
    """§10.6: the variant's escape rule, the contributions that stand (per bomb), the
    finals (the huopin escaper's table fee after the stake); finishers keep their places."""
    cdef Escape e
    cdef long long contrib[SEATS]
    cdef int played[SEATS]
    cdef int places[SEATS]
    cdef int s, i
    if hands is not None and not hands[escaper]:
        raise ShuangkouError(f"seat {escaper} escaped but hands[{escaper}] is empty", "hands")
    for s in range(SEATS):                  # the best single bomb each seat played
        played[s] = 0
        for i in range(b.n[s]):
            if b.star[s][i] > played[s]:
                played[s] = b.star[s][i]
    memset(&e, 0, sizeof(e))
    ESCAPE_RULES[t.escape_rule](t, v, escaper, stars, played, hands, &e)
    cdef Paid paid
    events = []
    if t.kept_on_escape:
        contributions(t, b, stars, contrib, &paid)
        events = _events(t, &paid)
    else:
        memset(contrib, 0, sizeof(contrib))
    memset(places, 0, sizeof(places))
    for i in range(len(order)):
        places[<int>order[i]] = i + 1
    finals = [(e.amount[s] + contrib[s]) * stake - (table_fee if e.fee and s == escaper else 0)
              for s in range(SEATS)]           # Python ints: exact
    _check_fits(v, finals, stake)
    seats = [(s, team_of(s), places[s] or None, 0, stars[s], sources[s], e.m, contrib[s],
              e.amount[s], finals[s]) for s in range(SEATS)]
    return _face(result_type, extra,
                 (v.id, "escape", None, order, e.star,
                  e.star_seat if e.star_seat >= 0 else None, e.m, stake, escaper, table_fee),
                 seats, finals, events)


# ----------------------------------------------------------------------------- finals (§10.5)

cdef int _check_fits(v, list finals, stake) except -1:
    """Refuse a settlement the wire cannot carry exactly: every final amount and their sum
    must fit int64 (only house variants with huge tables reach this;
    docs/decisions/rules.md R15)."""
    total = sum(finals)
    worst = max([*finals, total], key=abs)
    if abs(worst) > INT64_MAX:
        raise ShuangkouError(
            f"the settlement does not fit the 64-bit amounts results carry: an amount of "
            f"{worst:.3e} (base × multiplier + contributions in {v.id}, × stake {stake:,}); "
            f"lower the stake or the variant's table amounts", "stake")
    return 0


cdef object _face(result_type, dict extra, tuple head, list seats, list finals, list events):
    """The settlement as ``result_type`` (its ``extra`` fields set too), or as the JSON text
    of that record's ``to_dict()`` when ``result_type`` is None. ``head``: the result's
    fields before ``seats`` (in :data:`_RESULT_FIELDS` order); ``seats``: each seat's
    values in :data:`_SEAT_FIELDS` order; ``events``: the ContributionEvent records."""
    if result_type is None:
        return _json(head, seats, finals, events, extra)
    res = _record(result_type, _RESULT_FIELDS,
                  head + (tuple([_record(SeatResult, _SEAT_FIELDS, <tuple>values)
                                 for values in seats]), tuple(events)))
    if extra:
        for name, value in extra.items():
            PyObject_GenericSetAttr(res, name, value)
    return res


# ----------------------------------------------------------------------------- as JSON text
# What a batch scorer writes: the record's to_dict() as orjson's compact text, straight from
# the settlement's values (building the records and their dicts cost more than a tenth of
# scoring a replay). to_dict (core_ext/results.py) stays the one definition of the
# document; this writer follows it key by key, and the tests hold the two equal on every
# variant, escapes and per-bomb contributions included. Strings go through orjson once per
# distinct value (its escaping, not ours).

cdef struct Text:
    char* p
    Py_ssize_t n
    Py_ssize_t cap

cdef dict _STRINGS = {}          # str -> its JSON text (variant ids, kinds)
cdef dict _SOURCE_JSON = {}      # id(StarSource) -> (the source, its to_dict() as JSON)
cdef Py_ssize_t _KEEP = 4096     # distinct values remembered at most


cdef int _grow(Text* t, Py_ssize_t more) except -1:
    cdef Py_ssize_t cap = t.cap
    while t.n + more > cap:
        cap *= 2
    cdef char* p = <char*>PyMem_Realloc(t.p, cap)
    if p == NULL:
        raise MemoryError()
    t.p = p
    t.cap = cap
    return 0


cdef inline int _raw(Text* t, const char* s, Py_ssize_t n) except -1:
    if t.n + n > t.cap:
        _grow(t, n)
    memcpy(t.p + t.n, s, n)
    t.n += n
    return 0


cdef inline int _key(Text* t, const char* s) except -1:
    """``,"name":`` or ``{"name":`` (the literal as written)."""
    return _raw(t, s, strlen(s))


cdef int _int(Text* t, long long v) except -1:
    cdef char digits[24]
    cdef int i = 24
    cdef unsigned long long u = (<unsigned long long>(-(v + 1)) + 1) if v < 0 else <unsigned long long>v
    while True:
        i -= 1
        digits[i] = c'0' + <char>(u % 10)
        u //= 10
        if u == 0:
            break
    if v < 0:
        i -= 1
        digits[i] = c'-'
    return _raw(t, &digits[i], 24 - i)


cdef inline int _opt(Text* t, object v) except -1:
    """An int, or null for None."""
    if v is None:
        return _raw(t, "null", 4)
    return _int(t, v)


cdef int _ints(Text* t, object values) except -1:
    cdef Py_ssize_t i
    _raw(t, "[", 1)
    for i in range(len(values)):
        if i:
            _raw(t, ",", 1)
        _int(t, values[i])
    return _raw(t, "]", 1)


cdef int _string(Text* t, str s) except -1:
    got = _STRINGS.get(s)
    if got is None:
        got = orjson.dumps(s)          # TypeError for a lone surrogate, as orjson.dumps
        if len(_STRINGS) < _KEEP:
            _STRINGS[s] = got
    cdef bytes text = got
    return _raw(t, text, len(text))


cdef int _source_json(Text* t, object src) except -1:
    got = _SOURCE_JSON.get(id(src))
    if got is None or (<tuple>got)[0] is not src:        # the source kept: its id its own
        got = (src, orjson.dumps(src.to_dict()))
        if len(_SOURCE_JSON) < _KEEP:
            _SOURCE_JSON[id(src)] = got
    cdef bytes text = (<tuple>got)[1]
    return _raw(t, text, len(text))


cdef int _json_seat(Text* t, tuple s, object dealt) except -1:
    _key(t, '{"seat":'); _int(t, s[0])
    _key(t, ',"team":'); _int(t, s[1])
    _key(t, ',"place":'); _opt(t, s[2])
    _key(t, ',"base":'); _int(t, s[3])
    _key(t, ',"star":'); _int(t, s[4])
    _key(t, ',"star_source":'); _source_json(t, s[5])
    _key(t, ',"multiplier":'); _int(t, s[6])
    _key(t, ',"contribution":'); _int(t, s[7])
    _key(t, ',"escape":'); _int(t, s[8])
    _key(t, ',"final":'); _int(t, s[9])
    if dealt is not None:
        _key(t, ',"dealt_seat":'); _int(t, dealt)
    return _raw(t, "}", 1)


cdef int _json_event(Text* t, dict e) except -1:
    _key(t, '{"seat":'); _int(t, e["seat"])
    _key(t, ',"star":'); _int(t, e["star"])
    _key(t, ',"gain":'); _int(t, e["gain"])
    _key(t, ',"pay":'); _int(t, e["pay"])
    _key(t, ',"to":'); _ints(t, e["to"])
    _key(t, ',"bomb":'); _opt(t, e["bomb"])
    return _raw(t, "}", 1)


cdef int _json_result(Text* t, tuple head, list seats, list finals, list events,
                      dict extra) except -1:
    cdef Py_ssize_t i
    hand_at = extra.get("hand_at") if extra else None     # a ReplayResult's: to_dict adds
    if extra and (hand_at is None or len(extra) != 2 or "actions" not in extra):
        raise TypeError(f"no JSON text for a result with the fields {sorted(extra)}")
    _key(t, '{"variant":'); _string(t, head[0])
    _key(t, ',"kind":'); _string(t, head[1])
    _key(t, ',"winning_team":'); _opt(t, head[2])
    _key(t, ',"finish_order":'); _ints(t, head[3])
    _key(t, ',"star":'); _int(t, head[4])
    _key(t, ',"star_seat":'); _opt(t, head[5])
    _key(t, ',"multiplier":'); _int(t, head[6])
    _key(t, ',"stake":'); _int(t, head[7])
    _key(t, ',"escaper":'); _opt(t, head[8])
    _key(t, ',"table_fee":'); _int(t, head[9])
    _key(t, ',"final":'); _ints(t, finals)
    _key(t, ',"total":'); _int(t, sum(finals))
    _key(t, ',"seats":[')
    for i in range(SEATS):
        if i:
            _raw(t, ",", 1)
        _json_seat(t, <tuple>seats[i], None if hand_at is None else hand_at[i])
    _key(t, '],"contributions":[')
    for i in range(len(events)):
        if i:
            _raw(t, ",", 1)
        _json_event(t, (<object>events[i]).__dict__)
    _raw(t, "]", 1)
    if hand_at is not None:
        _key(t, ',"hand_at":'); _ints(t, hand_at)
        _key(t, ',"actions":'); _int(t, extra["actions"])
    return _raw(t, "}", 1)


cdef str _json(tuple head, list seats, list finals, list events, dict extra):
    cdef Text t
    t.cap = 2048
    t.n = 0
    t.p = <char*>PyMem_Malloc(t.cap)
    if t.p == NULL:
        raise MemoryError()
    try:
        _json_result(&t, head, seats, finals, events, extra)
        return PyUnicode_DecodeUTF8(t.p, t.n, NULL)
    finally:
        PyMem_Free(t.p)


# ----------------------------------------------------------------------------- settlement

cdef int round_stars(Tables t, const Bombs* b, Outcome* o) noexcept nogil:
    """§10.2: every seat's round star and where it came from."""
    cdef int s
    for s in range(SEATS):
        o.stars[s] = round_star_of(&t.stars, b.star[s], b.chain[s], b.n[s], &o.src_rule[s],
                                 &o.src_a[s], &o.src_b[s])
    return 0


cdef int settle_core(Tables t, const int* fin, int nfin, const Bombs* b,
                     const int* cards_left, Outcome* o, Paid* paid) noexcept nogil:
    """A round that ended by its finishing order (``fin[:nfin]``, ended at its last
    finish), in C: round stars, places, base, multiplier, contributions (each payment in
    ``paid`` unless NULL) and each seat's amount before the stake. ``cards_left``: cards
    each seat holds (the huopin kind of win reads them; NULL: not given). 0, or the
    inconsistency that stopped it (SETTLE_*: :func:`settle_amounts` words it)."""
    cdef int s, i, winner, nxt, held, star_seat
    cdef int capped[SEATS]
    round_stars(t, b, o)
    # -- places (finishers in order, then turn order after the last one) and base amounts
    winner = fin[0]
    o.winner = winner
    memset(o.places, 0, sizeof(o.places))
    for i in range(nfin):
        o.places[fin[i]] = i + 1
    nxt = nfin + 1
    s = fin[nfin - 1]
    for i in range(1, SEATS):
        s = next_seat_of(s)
        if not o.places[s]:
            o.places[s] = nxt
            nxt += 1
    if not t.end.kou:
        o.kind = KIND_BY_PARTNER_PLACE[o.places[partner_of(winner)]]
        for s in range(SEATS):
            o.base[s] = t.base[o.kind][o.places[s] - 1]
    else:
        if cards_left == NULL:
            return SETTLE_NO_CARDS_LEFT
        if cards_left[winner] != 0:
            return SETTLE_WINNER_HOLDS
        held = cards_left[next_seat_of(winner)] + cards_left[next_seat_of(partner_of(winner))]
        o.kind = (WIN_DOUBLE if held >= t.kou_double else WIN_SINGLE if held >= t.kou_single
                  else WIN_FLAT)
        for s in range(SEATS):
            o.base[s] = t.kou[o.kind] if team_of(s) == team_of(winner) else -t.kou[o.kind]
    # -- whose star sets the multiplier (§10.3)
    for s in range(SEATS):
        capped[s] = t.capped(o.stars[s])
    if t.star_rule == STAR_WINNING_TEAM:
        star_seat = winner if capped[winner] >= capped[partner_of(winner)] else partner_of(winner)
    elif t.star_rule == STAR_ALL:
        star_seat = 0
        for s in range(1, SEATS):       # highest star; on a tie the winner, else the first
            if capped[s] > capped[star_seat] or (capped[s] == capped[star_seat]
                                                 and s == winner and star_seat != winner):
                star_seat = s
    else:
        star_seat = winner
    o.star_seat = star_seat
    o.star = capped[star_seat]
    o.m = t.m_for(o.star)
    # -- contributions (§10.4) and the amounts before the stake (§10.5)
    contributions(t, b, o.stars, o.contrib, paid)
    for s in range(SEATS):
        o.amount[s] = o.base[s] * o.m + o.contrib[s]
    return 0


cdef int settle_amounts(Tables t, const int* fin, int nfin, const Bombs* b,
                        const int* cards_left, list events, Outcome* o) except -1:
    """:func:`settle_core` with its inconsistencies raised (ShuangkouError naming
    ``cards_left``) and the contribution records appended to ``events`` unless None."""
    cdef Paid paid
    cdef int rc = settle_core(t, fin, nfin, b, cards_left, o,
                              &paid if events is not None else NULL)
    if rc == SETTLE_NO_CARDS_LEFT:
        raise ShuangkouError(f"{t.variant.id}: scoring needs the cards each seat still "
                             "holds (cards_left or hands)", "cards_left")
    if rc == SETTLE_WINNER_HOLDS:
        raise ShuangkouError(f"seat {fin[0]} finished first but cards_left says it holds "
                             f"{cards_left[fin[0]]} cards", "cards_left")
    if events is not None:
        events.extend(_events(t, &paid))
    return 0


cdef int position_amounts(Tables t, const Position* p, long long* amount) noexcept nogil:
    """Each seat's amount before the stake for the position of a round that ended by its
    finishing order (no escape): what a rollout scores. -1 for a position settlement
    refuses (it cannot arise from play: the finishers hold no cards)."""
    cdef Outcome o
    cdef int s
    if settle_core(t, p.fin, p.nfin, &p.bombs, p.nleft, &o, NULL):
        return -1
    for s in range(SEATS):
        amount[s] = o.amount[s]
    return 0


def settle(v, tuple order, played, stake, cards_left, escaper, hands, table_fee,
           result_type, dict extra):
    """Settle consistent inputs (shuangkou.core.scoring.settle; positional, the compiled
    round calls it once per round): ``order`` the finishing order, ``played`` per seat the
    bomb Readings in play order, ``escaper`` the seat that escaped or None, ``hands`` the
    current hands' codes (escapes whose rule reads them), ``result_type`` the record to
    fill (results.RoundResult or a subclass) and ``extra`` its further fields; with
    ``result_type`` None, the JSON text of that record's ``to_dict()`` (orjson's bytes,
    decoded): a RoundResult's, or with ``extra`` ``hand_at`` and ``actions`` a
    ReplayResult's."""
    cdef Tables t = tables(v)
    cdef Bombs b
    cdef Outcome o
    cdef int fin[SEATS]
    cdef int left[SEATS]
    cdef int s, i, end
    cdef int nfin = len(order)
    cdef long long total, limit
    # -- the round end (§9): where the finishing order ended the round
    if nfin > SEATS:
        raise ShuangkouError(f"finish_order {list(order)} lists more than {SEATS} seats",
                             "finish_order")
    for i in range(nfin):
        fin[i] = order[i]
        if not is_seat(fin[i]):
            check_seat(order[i], f"finish_order[{i}]", "finish_order")    # raises
    if escaper is not None and not is_seat(escaper):
        check_seat(escaper, "escape")                                    # raises
    end = ended_at(&t.end, fin, nfin)
    if end != (-1 if escaper is not None else nfin - 1):
        raise ShuangkouError(f"finish_order {list(order)} is not where a round "
                             f"{'escaped' if escaper is not None else 'ended'} "
                             "(settle takes consistent inputs; score_round checks a summary)",
                             "finish_order")
    for s in range(SEATS):
        b.n[s] = _read_bombs(played[s], b.star[s], b.chain[s])
    if escaper is not None:
        round_stars(t, &b, &o)
        sources = [_source(o.src_rule[s], o.src_a[s], o.src_b[s]) for s in range(SEATS)]
        return _settle_escape(t, v, order, &b, o.stars, sources, hands, escaper, stake,
                              table_fee, result_type, extra)
    if cards_left is not None:
        for s in range(SEATS):
            left[s] = cards_left[s]
    events = []
    settle_amounts(t, fin, nfin, &b, left if cards_left is not None else NULL, events, &o)
    # -- the finals, checked against the wire's 64 bits
    total = 0
    limit = C_INT64_MAX // <long long>stake if stake <= C_INT64_MAX else 0
    fits = True
    for s in range(SEATS):
        total += o.amount[s]
        if o.amount[s] > limit or -o.amount[s] > limit:
            fits = False
    if total > limit or -total > limit:
        fits = False
    finals = [o.amount[s] * stake for s in range(SEATS)]   # Python ints: exact
    if not fits:
        _check_fits(v, finals, stake)
    seats = [(s, team_of(s), o.places[s], o.base[s], o.stars[s],
              _source(o.src_rule[s], o.src_a[s], o.src_b[s]), o.m, o.contrib[s], 0, finals[s])
             for s in range(SEATS)]
    return _face(result_type, extra,
                 (v.id, KINDS_OF_WIN[o.kind], team_of(o.winner), order, o.star,
                  o.star_seat if o.star else None, o.m, stake, None, table_fee),
                 seats, finals, events)


def settle_round(RoundCore r, result_type, dict extra):
    """The settlement of a round as it stands, read off the round itself (``Round.result()``
    and a replay's score; the caller checked it is over): a ``result_type`` record, or with
    None the JSON text of its ``to_dict()``."""
    escaper = None if r.cescaper < 0 else r.cescaper
    return settle(r.variant, r.finish_order, r.bomb_readings, r.stake, r.cards_left, escaper,
                  [r.hand(s) for s in range(SEATS)] if escaper is not None else None,
                  r.table_fee, result_type, extra)
