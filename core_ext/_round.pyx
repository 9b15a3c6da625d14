# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The round flow in compiled code (RULES.md §9): turns, tricks, 接风, finishing, round end.

:class:`RoundCore` holds one round in table seats as C arrays — per seat the copies of each
suited face and the cards of each rank (a card written without a suit takes any card of its
rank, so the face counts are an upper bound), the cards left, the standing play's C reading,
the passes, the finishing order — and applies actions without building Python objects on
the hot path. The public façade :class:`shuangkou.core.Round` (core_ext/round.py) adds the deal,
settlement, legal plays and the serialised form; replay validation folds a document's
actions over it with :meth:`RoundCore._fold`.

Every sentence of a rule error here is the one replay validation reports (docs/replays.md),
so a replay and a live round fail alike.
"""

from cpython.unicode cimport PyUnicode_1BYTE_KIND, PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.dict cimport PyDict_Next
from cpython.object cimport PyObject
from libc.string cimport memcmp, memcpy, memmove, memset

from shuangkou.core._core cimport (
    K_BOMB,
    Decl,
    _parse_decl,
    decl_match,
    MAXCARDS,
    MAXREAD,
    NFACES,
    RD,
    RuleSet,
    classify_counts,
    get_rules,
    make_reading,
    parse_into,
    rd_beats,
    reading_rd,
    u8,
)

from shuangkou.core._core import KINDS as _KINDS
from shuangkou.core._core import Reading, format_cards, play_reading
from shuangkou.core.declaration import Declaration
from shuangkou.core._settle import settle as _settle_inputs
from shuangkou.core.cards import rank_name as _rank_name
from shuangkou.core.errors import InvalidPlay, RuleViolation, ShuangkouError
from shuangkou.core._settle import MAX_STAKE as _MAX_STAKE_PY
from shuangkou.core._settle import MAX_TABLE_FEE as _MAX_TABLE_FEE_PY
from shuangkou.core.round_records import ActionRecord, Standing

cdef enum:
    SEATS = 4
    NCODES = 76
    BODY = SEATS * (52 + NFACES) + NCODES   # bytes of _write_body()
    HEAD = 21 + 8 + 8 + 4 + 4               # struct "<21b QQ II" (core_ext/round.py _HEAD)

# ----------------------------------------------------------------------------- serialised form

cdef unsigned long long _MAX_STAKE = _MAX_STAKE_PY
cdef unsigned long long _MAX_TABLE_FEE = _MAX_TABLE_FEE_PY

#: The serialised form's first bytes (core_ext/round.py documents the whole layout).
MAGIC = b"SKR2"     # SKR1 had a standing slot one byte short of a whole-hand play
#: Actions a state may count (the counters are C ints; a real round has a few hundred).
MAX_ACTIONS = 2**31 - 1


def slot_sizes(int hand_size):
    """Bytes of the standing-play slot and of each seat's bomb slot for a hand of
    ``hand_size`` cards: a seat never plays more cards than it was dealt (a whole hand can
    be one play: a triple chain, a chain bomb), a bomb has at least three."""
    return 5 + hand_size, 1 + hand_size + 3 * (hand_size // 3)


cdef class Layout:
    """A variant's serialised form: its prefix (magic, id length, id), slot sizes, total."""
    cdef readonly bytes prefix
    cdef readonly int standing_slot, bomb_slot, size
    # A stored bomb's bytes (n, index, cards) -> (Reading, cards): bombs pile up as a
    # round goes on, and each would be classified again on every load.
    cdef dict bombs
    # A standing play's (reading index, cards) -> its Reading message's bytes (service).
    cdef dict readings

    def __init__(self, str vid, int hand_size):
        raw = vid.encode()
        self.prefix = MAGIC + bytes([len(raw)]) + raw
        self.standing_slot, self.bomb_slot = slot_sizes(hand_size)
        self.size = len(self.prefix) + HEAD + BODY + self.standing_slot + SEATS * self.bomb_slot
        self.bombs = {}
        self.readings = {}


cdef dict _LAYOUTS = {}         # by compiled rule set (identity): built-ins and cached customs


cdef Layout _layout(RuleSet rs):
    cdef Layout L = _LAYOUTS.get(rs)
    if L is None:
        L = Layout(rs.id, rs.variant.hand_size)
        if len(_LAYOUTS) >= 256:
            _LAYOUTS.clear()
        _LAYOUTS[rs] = L
    return L


def layout(variant):
    """The :class:`Layout` of a variant id or Variant's serialised rounds."""
    return _layout(get_rules(variant))


# ----------------------------------------------------------------------------- rule data

#: How the round ends once a seat has emptied its hand (§9), by the variant's ``round_end``:
#: ``finishing_order`` when both players of one team are out, ``first_out`` at once.
ROUND_END_RULES = {"finishing_order": 0, "first_out": 1}
#: Turn order: the seats that may act after each seat, nearest first (§9 "Tricks").
TURN_AFTER = tuple(tuple((s + k) % SEATS for k in (1, 2, 3)) for s in range(SEATS))
#: 接风 (§9): who leads when the trick's winner has gone out — the partner, then the next
#: seats in turn order (the partner can be out too only in a house variant).
WIND_ORDER = tuple(((s + 2) % SEATS, (s + 1) % SEATS, (s + 3) % SEATS) for s in range(SEATS))



def round_over_at(finish_order, round_end):
    """Index in ``finish_order`` (seats, in the order their hands emptied) of the finish that
    ended the round under the rule ``round_end`` (a variant's field), or None while it goes
    on: the one round-over decision (``ended_at`` in _round.pxd)."""
    cdef int fin[SEATS]
    cdef int i, n = len(finish_order)
    if n > SEATS:
        raise ValueError("a finishing order has at most 4 seats")
    for i in range(n):
        fin[i] = finish_order[i]
    i = ended_at(ROUND_END_RULES[round_end], fin, n)
    return None if i < 0 else i

cdef enum:
    OVER_NONE = 0        # the round goes on
    OVER_TEAM = 1        # both players of one team finished
    OVER_FIRST = 2       # the first finisher ends it (huopin)
    OVER_ESCAPE = 3      # a seat escaped
    LEAD_FIRST = 0       # why the seat to act leads: the first trick,
    LEAD_WON = 1         # everyone passed on its play,
    LEAD_WIND = 2        # 接风

cdef int AFTER[4][3]
cdef int WIND[4][3]
cdef int RANK[NCODES]
cdef u8 SUITED[NCODES]
for _s in range(SEATS):
    for _k in range(3):
        AFTER[_s][_k] = TURN_AFTER[_s][_k]
        WIND[_s][_k] = WIND_ORDER[_s][_k]
for _c in range(NCODES):
    RANK[_c] = (_c - 1) // 5 if _c else 0
    SUITED[_c] = 1 if _c and (_c - 1) // 5 < 13 and (_c - 1) % 5 < 4 else 0

# Card tokens of replays ("3S", "TH", "10H", "SJ", "5" …) decoded from the string's bytes:
# the C form of the token table core_ext/replay.py passes in (built from it, once).
cdef u8 TOK1[128]
cdef u8 TOK2[128][128]
cdef u8 TOK10[128]          # "10" followed by one character
cdef object _tok_source = None


cdef int _use_tokens(dict tokens) except -1:
    global _tok_source
    if tokens is _tok_source:
        return 0
    memset(TOK1, 0, sizeof(TOK1))
    memset(TOK2, 0, sizeof(TOK2))
    memset(TOK10, 0, sizeof(TOK10))
    for name, code in tokens.items():
        b = name.encode("ascii")
        if not 0 < code < NCODES:
            raise ValueError(f"token {name!r}: {code} is no card code")
        if len(b) == 1:
            TOK1[b[0]] = code
        elif len(b) == 2:
            TOK2[b[0]][b[1]] = code
        elif len(b) == 3 and b[:2] == b"10":
            TOK10[b[2]] = code
        else:
            raise ValueError(f"token {name!r} has no place in the compiled token table")
    _tok_source = tokens
    return 0


cdef inline int _tok(object t) noexcept:
    """The code of a card token as the token table has it; 0 when it is not in the table."""
    cdef Py_ssize_t n
    cdef const unsigned char* d
    if type(t) is not str or PyUnicode_KIND(t) != PyUnicode_1BYTE_KIND:
        return 0
    n = PyUnicode_GET_LENGTH(t)
    d = <const unsigned char*>PyUnicode_DATA(t)
    if n == 2:
        return TOK2[d[0]][d[1]] if d[0] < 128 and d[1] < 128 else 0
    if n == 1:
        return TOK1[d[0]] if d[0] < 128 else 0
    if n == 3 and d[0] == 49 and d[1] == 48:        # "10"
        return TOK10[d[2]] if d[2] < 128 else 0
    return 0


cdef enum:
    KEY_OTHER = 0
    KEY_SEAT = 1
    KEY_PLAY = 2
    KEY_PASS = 3
    KEY_ESCAPE = 4


cdef inline int _action_key(object k) noexcept:
    """Which of an action's usual fields the key names exactly (KEY_OTHER for any other)."""
    cdef Py_ssize_t n
    cdef const char* d
    if type(k) is not str or PyUnicode_KIND(k) != PyUnicode_1BYTE_KIND:
        return KEY_OTHER
    n = PyUnicode_GET_LENGTH(k)
    d = <const char*>PyUnicode_DATA(k)
    if n == 4:
        if memcmp(d, b"seat", 4) == 0:
            return KEY_SEAT
        if memcmp(d, b"play", 4) == 0:
            return KEY_PLAY
        if memcmp(d, b"pass", 4) == 0:
            return KEY_PASS
    elif n == 6 and memcmp(d, b"escape", 6) == 0:
        return KEY_ESCAPE
    return KEY_OTHER


def deal_codes(raw, dict tokens, int hand_size, int decks, int lowest, int jokers):
    """The fast path of reading a replay's dealt hands: 4 lists of card tokens from the
    table that hold ``hand_size`` cards each and together exactly the deck -> their codes;
    anything else -> None (the caller parses and checks in full, for its error sentences)."""
    cdef int counts[NCODES]
    cdef int s, j, c, n, want
    if type(raw) is not list or len(<list>raw) != SEATS:
        return None
    _use_tokens(tokens)
    memset(counts, 0, sizeof(counts))
    out = []
    for s in range(SEATS):
        hand = (<list>raw)[s]
        if type(hand) is not list or len(<list>hand) != hand_size:
            return None
        n = hand_size
        codes = [0] * n
        for j in range(n):
            c = _tok((<list>hand)[j])
            if not c:
                return None
            counts[c] += 1
            codes[j] = c
        out.append(codes)
    for c in range(1, NCODES):
        want = (decks if SUITED[c] and RANK[c] >= lowest
                else jokers if c == 70 or c == 75 else 0)
        if counts[c] != want:
            return None
    return out


cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object o, object name, object value) except -1

cdef object _new = object.__new__
cdef tuple _RECORD_FIELDS = ("seat", "kind", "cards", "reading", "trick_won_by", "finished",
                             "wind_to", "next_turn", "round_over")


cdef object _action_record(seat, kind, cards, reading, trick_won_by, finished, wind_to,
                           next_turn, round_over):
    """An :class:`ActionRecord`, its fields set in declared order (its frozen ``__init__``
    without the Python frame: the hot path of every action)."""
    rec = _new(ActionRecord)
    values = (seat, kind, cards, reading, trick_won_by, finished, wind_to, next_turn,
              round_over)
    cdef Py_ssize_t i
    for i in range(9):
        PyObject_GenericSetAttr(rec, (<tuple>_RECORD_FIELDS)[i], (<tuple>values)[i])
    return rec


_ORDINALS = {1: "st", 2: "nd", 3: "rd"}
_NO_ESCAPE = ("{} defines no escape settlement (its rules say nothing about a player leaving "
              "mid-round), so an escaped round cannot be scored")


cdef inline object _opt(int seat):
    return None if seat < 0 else seat


def _text(codes):
    return " ".join(format_cards(list(codes)))


# ----------------------------------------------------------------------------- the round

cdef class RoundCore:
    """One round in progress, in table seats (after the §9 swap). Create with
    ``shuangkou.core.Round.deal``; see that class for the public API."""

    cdef RuleSet rs
    cdef readonly object variant
    cdef u8 faces[SEATS][NCODES]     # copies of each suited face (upper bound, see module doc)
    cdef u8 nranks[SEATS][NFACES]    # cards of each rank position
    cdef int nleft[SEATS]
    cdef u8 nplayed[NCODES]          # cards played so far, by the code they were played as
    cdef int fin[SEATS]
    cdef int nfin
    cdef int cturn, cleader, last, prev, npasses, holding, end_rule, escape_ok
    cdef int over_kind, over_seat, over_action, cescaper
    cdef int lead_why, lead_a, lead_b
    cdef int has_st, st_seat, st_index, st_n
    cdef RD st
    cdef u8 st_cards[MAXCARDS]
    cdef object st_reading           # the standing Reading, built on demand
    cdef list bomb_readings          # per seat: the bombs that stood (Readings)
    cdef list bomb_codes             # per seat: their cards
    cdef list bomb_index             # per seat: their reading's index among the cards' readings
    cdef readonly int actions_applied
    cdef readonly object stake
    cdef readonly object table_fee
    cdef readonly tuple hand_at
    cdef readonly bint partial_deal

    def __cinit__(self):
        self.bomb_readings = [[], [], [], []]
        self.bomb_codes = [[], [], [], []]
        self.bomb_index = [[], [], [], []]
        self.cturn = -1
        self.cescaper = -1
        self.last = self.prev = self.st_seat = -1
        self.hand_at = (0, 1, 2, 3)
        self.stake = 1
        self.table_fee = 0

    # -- set-up (the façade has checked the deal)
    def _start(self, variant, list hands, int leader, tuple hand_at, stake, table_fee,
               bint partial):
        """Seat ``hands`` (lists of codes, by table seat) with ``leader`` to lead."""
        cdef int s, c
        self._bind(variant)
        memset(self.faces, 0, sizeof(self.faces))
        memset(self.nranks, 0, sizeof(self.nranks))
        memset(self.nplayed, 0, sizeof(self.nplayed))
        self.holding = 0
        for s in range(SEATS):
            self.nleft[s] = len(hands[s])
            for c in hands[s]:
                self.nranks[s][RANK[c]] += 1
                if SUITED[c]:
                    self.faces[s][c] += 1
            if self.nleft[s]:
                self.holding += 1
        self.cturn = self.cleader = leader
        self.lead_why, self.lead_a, self.lead_b = LEAD_FIRST, leader, -1
        self.hand_at = hand_at
        self.stake = stake
        self.table_fee = table_fee
        self.partial_deal = partial

    def _bind(self, variant):
        self.rs = get_rules(variant)
        self.variant = self.rs.variant
        self.end_rule = ROUND_END_RULES[self.variant.round_end]
        self.escape_ok = self.variant.escape != "none"

    # -- reading the state
    @property
    def turn(self):
        """The seat to act; None once the round is over."""
        return None if self.over_kind else self.cturn

    @property
    def leader(self):
        """The seat that led the first trick."""
        return self.cleader

    @property
    def passes(self):
        """Passes since the standing play (0 when a seat leads)."""
        return self.npasses

    @property
    def finish_order(self):
        """Seats that emptied their hands, in order."""
        return tuple([self.fin[i] for i in range(self.nfin)])

    @property
    def is_over(self):
        return self.over_kind != OVER_NONE

    @property
    def escaper(self):
        """The seat that escaped, or None."""
        return _opt(self.cescaper)

    @property
    def escape_action(self):
        """Index of the escape among the applied actions, or None."""
        return self.over_action if self.over_kind == OVER_ESCAPE else None

    @property
    def cards_left(self):
        return (self.nleft[0], self.nleft[1], self.nleft[2], self.nleft[3])

    @property
    def standing(self):
        """The play standing on the table (:class:`Standing`), or None when a seat leads."""
        if not self.has_st:
            return None
        return Standing(self.st_seat, tuple([self.st_cards[i] for i in range(self.st_n)]),
                        self._standing_reading())

    @property
    def bombs(self):
        """Per seat, the bombs that stood (the readings :func:`score_round` settles)."""
        return tuple([tuple(b) for b in self.bomb_readings])

    @property
    def bomb_cards(self):
        """The same bombs as card codes."""
        return tuple([tuple(b) for b in self.bomb_codes])

    def _settle(self, result_type, dict extra=None):
        """The settlement (shuangkou.core.scoring.settle, compiled) of the state as it stands,
        as ``result_type`` with the ``extra`` fields (the caller checked it is over)."""
        escaper = _opt(self.cescaper)
        return _settle_inputs(
            self.variant, self.finish_order, self.bomb_readings, self.stake, self.cards_left,
            escaper, [self.hand(s) for s in range(SEATS)] if escaper is not None else None,
            self.table_fee, result_type, extra or {})

    cdef object _standing_reading(self):
        if self.st_reading is None and self.has_st:
            self.st_reading = make_reading(&self.st, self.rs)
        return self.st_reading

    def hand(self, int seat):
        """The cards ``seat`` holds (codes; suited where the deal and plays say so)."""
        cdef int r, f, n, k
        _check_seat(seat)
        out = []
        for r in range(NFACES):
            n = self.nranks[seat][r]
            if not n:
                continue
            if r < 13:
                for f in range(1 + r * 5, 5 + r * 5):
                    k = min(self.faces[seat][f], n)
                    out += [f] * k
                    n -= k
            out += [5 + r * 5] * n
        return tuple(out)

    # -- error sentences (cold)
    cdef str _lead_note(self):
        if self.lead_why == LEAD_FIRST:
            return f"seat {self.lead_a} leads the first trick"
        if self.lead_why == LEAD_WON:
            return f"seat {self.lead_a} leads: everyone passed on its play"
        return (f"接风: seat {self.lead_a} leads after seat {self.lead_b} went out and "
                "everyone passed")

    def _why_turn(self):
        """Why the seat to act acts (for messages)."""
        return self._lead_note() if not self.has_st else "a trick is in progress"

    cdef str _over_note(self):
        s = self.over_seat
        if self.over_kind == OVER_TEAM:
            return f"seats {(s + 2) % SEATS} and {s} have both finished"
        if self.over_kind == OVER_FIRST:
            return f"seat {s} went out first"
        return f"seat {s} escaped"

    cdef object _over_error(self):
        return RuleViolation(f"the round ended at action {self.over_action} "
                             f"({self._over_note()}); nothing may follow", "ROUND_OVER")

    cdef int _turn_check(self, int seat) except -1:
        cdef int place
        if self.over_kind:
            raise self._over_error()
        if seat == self.cturn:
            return 0
        _check_seat(seat)
        if not self.nleft[seat]:
            place = self.finish_order.index(seat) + 1
            raise RuleViolation(f"seat {seat} has no cards left (it finished {place}"
                                f"{_ORDINALS.get(place, 'th')}); it is seat {self.cturn}'s turn",
                                "SEAT_FINISHED")
        note = self._lead_note() if not self.has_st else (
            f"seat {self.cturn} follows seat {self.prev} in turn order")
        raise RuleViolation(f"seat {seat} acted but it is seat {self.cturn}'s turn ({note})",
                            "NOT_YOUR_TURN")

    cdef int _not_held(self, int seat, int c, const u8* fc, const u8* rk) except -1:
        name = format_cards([c])[0]
        r = RANK[c]
        n = rk[r]
        if not n:
            have = f"it holds no {_rank_name(r)}" if r < 13 else f"it holds no {name}"
        else:
            suited = [format_cards([f])[0] for f in range(1 + r * 5, 5 + r * 5)
                      for _ in range(fc[f])]
            have = (f"its {n} card(s) of rank {_rank_name(r)} left are "
                    f"{' '.join(suited) or 'without a suit'}"
                    + (" (and cards without a suit)" if suited and len(suited) < n else ""))
        raise RuleViolation(f"seat {seat} does not hold {name} ({have})", "CARDS_NOT_HELD",
                            "cards")

    cdef int _play_failed(self, int seat, list codes, const Decl* d) except -1:
        """Raise the error of a held play that cannot stand: the core's own sentence."""
        prefix = f"seat {seat} plays {_text(codes)}: "
        standing = self._standing_reading()
        declared = _decl_object(d)
        try:
            play_reading(codes, self.rs, standing, declared)
        except InvalidPlay as exc:        # no reading at all: malformed, not a rule
            raise InvalidPlay(prefix + str(exc), exc.field) from None
        except ShuangkouError as exc:
            reason = "NO_SUCH_READING" if (exc.field or "").startswith("declare") \
                else "DOES_NOT_BEAT"
            raise RuleViolation(prefix + str(exc), reason, exc.field) from None
        raise RuleViolation(prefix + f"no reading matches the declaration {declared}",
                            "NO_SUCH_READING", "declare")

    # -- the actions (C level)
    cdef int _play(self, int seat, const int* codes, int n, const Decl* d, bint commit,
                   RD* out) except -1:
        """Check (and with ``commit`` apply) a play; the reading that stands goes to ``out``."""
        cdef u8 fc[NCODES]
        cdef u8 rk[NFACES]
        cdef u8 counts[NFACES]
        cdef RD buf[MAXREAD]
        cdef int i, nr, pick = -1, mate
        self._turn_check(seat)
        if n <= 0:
            raise InvalidPlay("a play needs at least one card (use {\"pass\": true} to pass)",
                              "cards")
        self._take(seat, codes, n, fc, rk, counts)
        nr = classify_counts(&self.rs.r, counts, buf, MAXREAD)
        for i in range(nr):
            if not decl_match(&buf[i], d):
                continue
            if not self.has_st or rd_beats(&buf[i], &self.st):
                pick = i
                break
        if pick < 0:
            self._play_failed(seat, [codes[i] for i in range(n)], d)
        out[0] = buf[pick]
        if not commit:
            return pick
        memcpy(self.faces[seat], fc, NCODES)
        memcpy(self.nranks[seat], rk, NFACES)
        for i in range(n):
            self.nplayed[codes[i]] += 1
            self.st_cards[i] = codes[i]
        self.st = buf[pick]
        self.st_n = n
        self.st_index = pick
        self.st_seat = seat
        self.st_reading = None
        self.has_st = 1
        self.last = self.prev = seat
        self.npasses = 0
        if buf[pick].kind >= K_BOMB:
            self.st_reading = make_reading(&buf[pick], self.rs)
            (<list>self.bomb_readings[seat]).append(self.st_reading)
            (<list>self.bomb_codes[seat]).append(tuple([codes[i] for i in range(n)]))
            (<list>self.bomb_index[seat]).append(pick)
        self.nleft[seat] -= n
        self.actions_applied += 1
        if not self.nleft[seat]:
            self.holding -= 1
            self.fin[self.nfin] = seat
            self.nfin += 1
            if ended_at(self.end_rule, self.fin, self.nfin) >= 0:
                self.over_kind = OVER_FIRST if self.end_rule == END_FIRST else OVER_TEAM
                self.over_seat = seat
                self.over_action = self.actions_applied - 1
                return pick
        self.cturn = self._next_holding(seat)
        return pick

    cdef int _take(self, int seat, const int* codes, int n, u8* fc, u8* rk,
                   u8* counts) except -1:
        """The seat's counts after giving up ``codes`` (into fc/rk) and the play's rank
        counts; CARDS_NOT_HELD at the first card it does not hold."""
        cdef int i, c, r
        memcpy(fc, self.faces[seat], NCODES)
        memcpy(rk, self.nranks[seat], NFACES)
        memset(counts, 0, NFACES)
        for i in range(n):
            c = codes[i]
            r = RANK[c]
            if not rk[r] or (SUITED[c] and not fc[c]):
                self._not_held(seat, c, fc, rk)
            rk[r] -= 1
            if SUITED[c]:
                fc[c] -= 1
            counts[r] += 1
        return 0

    cdef inline int _next_holding(self, int seat) noexcept:
        cdef int k
        for k in range(3):
            if self.nleft[AFTER[seat][k]]:
                return AFTER[seat][k]
        return seat

    cdef int _check_pass(self, int seat) except -1:
        self._turn_check(seat)
        if not self.has_st:
            raise RuleViolation(f"seat {seat} leads the trick and may not pass "
                                f"({self._lead_note()})", "LEADER_MUST_PLAY")
        return 0

    cdef int _pass(self, int seat) except -1:
        """Apply a pass: 0 the trick goes on, 1 its winner leads, 2 接风 (the lead moved)."""
        cdef int k, s
        self._check_pass(seat)
        self.npasses += 1
        self.prev = seat
        self.actions_applied += 1
        if self.npasses < self.holding - (1 if self.nleft[self.last] else 0):
            self.cturn = self._next_holding(seat)
            return 0
        self.has_st = 0                   # everyone still holding cards passed: trick over
        self.st_reading = None
        self.npasses = 0
        if self.nleft[self.last]:
            self.cturn = self.last
            self.lead_why, self.lead_a, self.lead_b = LEAD_WON, self.last, -1
            return 1
        self.cturn = self._next_holding(self.last)
        for k in range(3):
            s = WIND[self.last][k]
            if self.nleft[s]:
                self.cturn = s
                break
        self.lead_why, self.lead_a, self.lead_b = LEAD_WIND, self.cturn, self.last
        return 2

    cdef int _check_escape(self, int seat) except -1:
        if self.over_kind:
            raise self._over_error()
        _check_seat(seat)
        if not self.nleft[seat]:
            raise RuleViolation(f"seat {seat} has no cards left and cannot escape",
                                "SEAT_FINISHED")
        if not self.escape_ok:
            raise RuleViolation(_NO_ESCAPE.format(self.variant.id), "ESCAPE_NOT_ALLOWED",
                                "escape")
        return 0

    cdef int _escape(self, int seat) except -1:
        self._check_escape(seat)
        self.over_kind = OVER_ESCAPE
        self.over_seat = self.cescaper = seat
        self.over_action = self.actions_applied
        self.actions_applied += 1
        return 0

    # -- the actions (Python API: verify / can / do)
    def verify_play(self, int seat, cards, declare=None):
        """The reading that would stand if ``seat`` played ``cards`` (declaring ``declare``,
        a :class:`~shuangkou.core.Declaration` or a kind name); raises the rule error otherwise."""
        cdef int codes[MAXCARDS]
        cdef RD rd
        cdef Decl d
        cdef int n = parse_into(cards, codes, MAXCARDS)
        _declared(declare, &d)
        self._play(seat, codes, n, &d, 0, &rd)
        return make_reading(&rd, self.rs)

    def can_play(self, int seat, cards, declare=None):
        try:
            self.verify_play(seat, cards, declare)
        except ShuangkouError:
            return False
        return True

    def play(self, int seat, cards, declare=None):
        """Play ``cards`` from ``seat``; returns the :class:`ActionRecord`."""
        cdef int codes[MAXCARDS]
        cdef RD rd
        cdef Decl d
        cdef int n = parse_into(cards, codes, MAXCARDS)
        _declared(declare, &d)
        self._play(seat, codes, n, &d, 1, &rd)
        reading = self._standing_reading()
        over = self.over_kind != OVER_NONE
        return _action_record(seat, "play", tuple([codes[i] for i in range(n)]), reading, None,
                            None if self.nleft[seat] else seat, None,
                            None if over else self.cturn, over)

    def verify_pass(self, int seat):
        self._check_pass(seat)

    def can_pass(self, int seat):
        try:
            self._check_pass(seat)
        except ShuangkouError:
            return False
        return True

    def pass_turn(self, int seat):
        """Pass; returns the :class:`ActionRecord` (the trick's winner when it ends)."""
        cdef int last = self.last
        cdef int how = self._pass(seat)
        return _action_record(seat, "pass", (), None, last if how else None, None,
                            self.cturn if how == 2 else None, self.cturn, False)

    def verify_escape(self, int seat):
        self._check_escape(seat)

    def can_escape(self, int seat):
        try:
            self._check_escape(seat)
        except ShuangkouError:
            return False
        return True

    def escape(self, int seat):
        """Abandon the round (逃跑, §9): it ends at once."""
        self._escape(seat)
        return _action_record(seat, "escape", (), None, None, None, None, None, True)

    # -- replays
    def _fold(self, list actions, err, dict tokens, declaration_of, cards_of, frozenset keys):
        """Apply a replay document's actions; ``err(detail, index)`` builds its errors.

        The checks run in the order replay validation has always used, so each corrupt
        replay keeps its error and index (docs/replays.md)."""
        cdef int i, j, n, seat
        cdef int codes[MAXCARDS]
        cdef u8 fc[NCODES]
        cdef u8 rk[NFACES]
        cdef u8 counts[NFACES]
        cdef RD rd
        cdef Decl decl
        cdef Py_ssize_t count = len(actions)
        cdef Py_ssize_t pos
        cdef PyObject* k
        cdef PyObject* v
        cdef int has_play, is_pass, is_escape, field
        cdef bint fast
        _use_tokens(tokens)
        for i in range(count):
            a = actions[i]
            if type(a) is not dict:
                raise err("an action must be an object such as {\"seat\": 0, \"pass\": true}", i)
            # the fields: one scan of a small action's items (no hashing), else lookups
            seat_o = play_o = None
            has_play = is_pass = is_escape = 0
            fast = len(<dict>a) <= 2
            if fast:
                pos = 0
                while PyDict_Next(a, &pos, &k, &v):
                    field = _action_key(<object>k)
                    if field == KEY_SEAT:
                        seat_o = <object>v
                    elif field == KEY_PLAY:
                        has_play, play_o = 1, <object>v
                    elif field == KEY_PASS:
                        is_pass = <object>v is True
                    elif field == KEY_ESCAPE:
                        is_escape = <object>v is True
                    else:
                        fast = 0
                        break
            if not fast:
                seat_o = (<dict>a).get("seat")
                has_play = "play" in a
                play_o = (<dict>a).get("play")
                is_pass = (<dict>a).get("pass", None) is True
                is_escape = (<dict>a).get("escape", None) is True
            if type(seat_o) is not int or not 0 <= seat_o < SEATS:
                raise err(f"seat must be a seat 0–3; got {seat_o!r}", i)
            seat = seat_o
            extra = len(<dict>a) > 2
            if extra and not a.keys() <= keys:
                raise err(f"unknown action field {sorted(set(a) - keys)[0]!r}", i)
            try:
                if has_play:
                    self._turn_check(seat)
                    if extra and ("pass" in a or "escape" in a):
                        raise err("an action is one of play, pass or escape", i)
                    raw = play_o
                    n = -1
                    if type(raw) is list and len(<list>raw) <= MAXCARDS:
                        n = len(<list>raw)
                        for j in range(n):
                            codes[j] = _tok((<list>raw)[j])
                            if not codes[j]:
                                n = -1
                                break
                    if n < 0:
                        lst = cards_of(i, raw)
                        if len(lst) > MAXCARDS:
                            raise err(f"play: too many cards (at most {MAXCARDS})", i)
                        n = len(lst)
                        for j in range(n):
                            codes[j] = lst[j]
                    if n == 0:
                        raise err("a play needs at least one card "
                                  "(use {\"pass\": true} to pass)", i)
                    decl.kind = decl.top = decl.star = decl.nwild = -1
                    if extra:
                        declared = declaration_of(i, a)
                        if declared is not None:
                            try:
                                _parse_decl(declared, None, &decl)
                            except ShuangkouError as exc:
                                self._take(seat, codes, n, fc, rk, counts)  # held first
                                raise err(f"seat {seat} plays "
                                          f"{_text([codes[j] for j in range(n)])}: {exc}", i)
                    self._play(seat, codes, n, &decl, 1, &rd)
                elif is_pass:
                    self._turn_check(seat)
                    if extra and ("escape" in a or "declare" in a or "play" in a):
                        raise err("a pass takes no other field", i)
                    self._pass(seat)
                elif is_escape:
                    if extra and ("pass" in a or "declare" in a or "play" in a):
                        raise err("an escape takes no other field", i)
                    self._escape(seat)
                else:
                    raise err("an action needs \"play\": [cards], \"pass\": true or "
                              "\"escape\": true", i)
            except ShuangkouError as exc:
                if isinstance(exc, err):
                    raise
                raise err(str(exc), i) from None
        if not self.over_kind:
            raise err(f"the replay ends before the round is over: seat {self.cturn} is to act "
                      f"({self._why_turn()})", None, "actions")

    # -- copying and the serialised form
    def _copy_into(self, RoundCore other):
        other.rs = self.rs
        other.variant = self.variant
        memcpy(other.faces, self.faces, sizeof(self.faces))
        memcpy(other.nranks, self.nranks, sizeof(self.nranks))
        memcpy(other.nleft, self.nleft, sizeof(self.nleft))
        memcpy(other.nplayed, self.nplayed, sizeof(self.nplayed))
        memcpy(other.fin, self.fin, sizeof(self.fin))
        memcpy(other.st_cards, self.st_cards, sizeof(self.st_cards))
        other.st = self.st
        other.nfin = self.nfin
        other.cturn, other.cleader, other.last, other.prev = (self.cturn, self.cleader,
                                                               self.last, self.prev)
        other.npasses, other.holding, other.end_rule, other.escape_ok = (
            self.npasses, self.holding, self.end_rule, self.escape_ok)
        other.over_kind, other.over_seat, other.over_action, other.cescaper = (
            self.over_kind, self.over_seat, self.over_action, self.cescaper)
        other.lead_why, other.lead_a, other.lead_b = self.lead_why, self.lead_a, self.lead_b
        other.has_st, other.st_seat, other.st_index, other.st_n = (
            self.has_st, self.st_seat, self.st_index, self.st_n)
        other.st_reading = self.st_reading
        other.bomb_readings = [list(b) for b in self.bomb_readings]
        other.bomb_codes = [list(b) for b in self.bomb_codes]
        other.bomb_index = [list(b) for b in self.bomb_index]
        other.actions_applied = self.actions_applied
        other.stake, other.table_fee = self.stake, self.table_fee
        other.hand_at = self.hand_at
        other.partial_deal = self.partial_deal

    def _state(self):
        """The small fields of the serialised form, as plain data (core_ext/round.py packs
        them; the hands and played cards travel as :meth:`_write_body`)."""
        return {
            "finish": self.finish_order,
            "turn": self.cturn, "leader": self.cleader, "last": self.last, "prev": self.prev,
            "passes": self.npasses, "over": self.over_kind, "over_seat": self.over_seat,
            "over_action": self.over_action, "escaper": self.cescaper,
            "lead": (self.lead_why, self.lead_a, self.lead_b),
            "standing": ((self.st_seat, tuple([self.st_cards[i] for i in range(self.st_n)]),
                          self.st_index) if self.has_st else None),
            "bombs": [list(zip(self.bomb_codes[s], self.bomb_index[s])) for s in range(SEATS)],
            "actions": self.actions_applied, "stake": self.stake, "table_fee": self.table_fee,
            "hand_at": self.hand_at, "partial": self.partial_deal,
        }

    cdef Py_ssize_t _write_body(self, unsigned char* b) noexcept:
        """The hands and played cards as the serialised form lays them out (``BODY`` bytes):
        per seat the copies of the 52 suited faces then the cards of the 15 ranks; then the
        cards played as each of the 76 codes. :meth:`_read_body` reads them back."""
        cdef int s, c, r
        cdef Py_ssize_t k = 0
        for s in range(SEATS):
            for c in range(NCODES):
                if SUITED[c]:
                    b[k] = self.faces[s][c]
                    k += 1
            for r in range(NFACES):
                b[k] = self.nranks[s][r]
                k += 1
        for c in range(NCODES):
            b[k] = self.nplayed[c]
            k += 1
        return k

    def _pack(self):
        """The whole serialised form (core_ext/round.py documents the layout): the prefix
        (magic and variant id), the head (struct ``<21b QQ II``), :meth:`_write_body`, the standing
        slot and the four bomb slots — written in one pass, no intermediate objects."""
        cdef Layout L = _layout(self.rs)
        cdef bytearray out = bytearray(L.size)
        self._pack_into(out, L)
        return bytes(out)

    cdef int _pack_into(self, unsigned char* b, Layout L) except -1:
        """Write :meth:`_pack`'s ``L.size`` bytes at ``b`` (zeroed by the caller)."""
        cdef bytes prefix = L.prefix
        cdef int standing_slot = L.standing_slot, bomb_slot = L.bomb_slot
        cdef Py_ssize_t n0 = len(prefix)
        cdef Py_ssize_t k, at, end
        cdef int s, i, j, n, idx
        cdef unsigned long long q
        cdef unsigned int w
        memcpy(b, <const char*>prefix, n0)
        k = n0
        b[k] = <unsigned char><signed char>self.cturn
        b[k + 1] = <unsigned char><signed char>self.cleader
        b[k + 2] = <unsigned char><signed char>self.last
        b[k + 3] = <unsigned char><signed char>self.prev
        b[k + 4] = <unsigned char><signed char>self.npasses
        b[k + 5] = <unsigned char><signed char>self.over_kind
        b[k + 6] = <unsigned char><signed char>self.over_seat
        b[k + 7] = <unsigned char><signed char>self.cescaper
        b[k + 8] = <unsigned char><signed char>self.lead_why
        b[k + 9] = <unsigned char><signed char>self.lead_a
        b[k + 10] = <unsigned char><signed char>self.lead_b
        b[k + 11] = <unsigned char>self.nfin
        for i in range(SEATS):
            b[k + 12 + i] = <unsigned char><signed char>(self.fin[i] if i < self.nfin else -1)
            b[k + 16 + i] = <unsigned char><signed char><int>self.hand_at[i]
        b[k + 20] = 1 if self.partial_deal else 0
        k += 21
        for q in (self.stake, self.table_fee):
            for i in range(8):
                b[k] = (q >> (8 * i)) & 0xff
                k += 1
        for w in (<unsigned int>self.actions_applied, <unsigned int>self.over_action):
            for i in range(4):
                b[k] = (w >> (8 * i)) & 0xff
                k += 1
        k += self._write_body(b + k)
        if self.has_st:                 # [1, seat, index (2, LE), n, cards]
            if 5 + self.st_n > standing_slot:
                raise AssertionError("round state slots overflowed")
            b[k], b[k + 1], b[k + 4] = 1, self.st_seat, self.st_n
            b[k + 2], b[k + 3] = self.st_index & 0xff, (self.st_index >> 8) & 0xff
            for i in range(self.st_n):
                b[k + 5 + i] = self.st_cards[i]
        k += standing_slot
        for s in range(SEATS):          # [count] then per bomb [n, index (2, LE), cards]
            codes = <list>self.bomb_codes[s]
            index = <list>self.bomb_index[s]
            n = len(codes)
            at, end = k + 1, k + bomb_slot
            if n > 255:
                raise AssertionError("round state slots overflowed")
            b[k] = n
            for j in range(n):
                cards = codes[j]
                idx = index[j]
                if at + 3 + len(cards) > end:
                    raise AssertionError("round state slots overflowed")
                b[at] = len(cards)
                b[at + 1] = idx & 0xff
                b[at + 2] = (idx >> 8) & 0xff
                at += 3
                for c in cards:
                    b[at] = <int>c
                    at += 1
            k += bomb_slot
        return 0

    cdef object _standing_wire(self, Layout L, reading_to_wire):
        """The standing reading as message bytes — ``reading_to_wire(reading)``, a pure
        function of the reading, called once per rule set, cards and reading index and
        kept — or None when a seat leads."""
        cdef unsigned char key[2 + MAXCARDS]
        if not self.has_st or reading_to_wire is None:
            return None
        key[0], key[1] = self.st_index & 0xff, (self.st_index >> 8) & 0xff
        memcpy(key + 2, self.st_cards, self.st_n)
        k = PyBytes_FromStringAndSize(<char*>key, 2 + self.st_n)
        wire = L.readings.get(k)
        if wire is None:
            wire = bytes(reading_to_wire(self._standing_reading()))
            if len(L.readings) >= 4096:
                L.readings.clear()
            L.readings[k] = wire
        return wire

    def _state_wire(self, reading_to_wire=None):
        """The ``RoundState`` message (protos/shuangkou/v1/rounds.proto) as wire bytes, one
        buffer for one parse: ``data`` (:meth:`_pack`) and ``view``, a ``RoundView`` — turn,
        hand_sizes, hands, standing (seat, cards and its Reading message,
        ``reading_to_wire(reading)``; none without that function), passes, finish_order,
        over, hand_at, actions_applied. Card codes and seats are below 128 (one varint
        byte)."""
        cdef Layout L = _layout(self.rs)
        cdef object wire = self._standing_wire(L, reading_to_wire)
        cdef Py_ssize_t nread = 0 if wire is None else len(<bytes>wire)
        cdef const unsigned char* rp = NULL if wire is None else <const unsigned char*><bytes>wire
        cdef bytearray out = bytearray(self._state_bound(L, nread))
        return bytes(out[:self._state_into(out, L, wire is not None, rp, nread)])

    def _response_wire(self, record, int action_type, reading_to_wire):
        """An ``ApplyActionResponse``'s ``state`` (:meth:`_state_wire`) and ``record`` (the
        ActionRecord ``record`` of the action just applied, whose ``ActionType`` number is
        ``action_type``) as wire bytes; readings become message bytes by
        ``reading_to_wire``."""
        cdef Layout L = _layout(self.rs)
        cdef object wire = self._standing_wire(L, reading_to_wire)
        cdef Py_ssize_t nread = 0 if wire is None else len(<bytes>wire)
        cdef const unsigned char* rp = NULL if wire is None else <const unsigned char*><bytes>wire
        cdef Py_ssize_t k, n
        cdef tuple cards = record.cards
        cdef int i
        played = record.reading
        own = wire                                    # the record's reading: the standing
        if played is not None and not (self.has_st and self.st_seat == record.seat):
            own = bytes(reading_to_wire(played))      # one unless the play no longer stands
        cdef Py_ssize_t nown = 0 if played is None else len(<bytes>own)
        cdef bytearray out = bytearray(4 + self._state_bound(L, nread) + 64 + len(cards) + nown)
        cdef unsigned char* b = out
        k = _close(b, 0, 0x0a, self._state_into(b + 4, L, wire is not None, rp, nread))
        n = 0                                         # 2: record (ActionRecord), at k + 4
        b += k + 4
        if record.seat:
            b[n], b[n + 1] = 0x08, record.seat       # 1: seat
            n += 2
        if action_type:
            b[n], b[n + 1] = 0x10, action_type       # 2: type
            n += 2
        if cards:
            b[n], b[n + 1] = 0x1a, len(cards)        # 3: cards, packed (codes < 128)
            n += 2
            for i in range(len(cards)):
                b[n] = <int>cards[i]
                n += 1
        if played is not None:
            b[n] = 0x22                               # 4: reading
            n = _varint(b, n + 1, nown)
            if nown:
                memcpy(b + n, <const char*><bytes>own, nown)
            n += nown
        for tag, value in ((0x28, record.trick_won_by), (0x30, record.finished),
                           (0x38, record.wind_to), (0x40, record.next_turn)):
            if value is not None:                     # 5-8: optional seats
                b[n], b[n + 1] = tag, value
                n += 2
        if record.round_over:
            b[n], b[n + 1] = 0x48, 1                  # 9: round_over
            n += 2
        b -= k + 4
        return bytes(out[:_close(b, k, 0x12, n)])

    cdef Py_ssize_t _state_bound(self, Layout L, Py_ssize_t nread) noexcept:
        return 8 + L.size + self._view_bound(nread)

    cdef Py_ssize_t _state_into(self, unsigned char* b, Layout L, bint has_reading,
                                const unsigned char* reading, Py_ssize_t nread) except -1:
        """Write the RoundState's fields at ``b`` (:meth:`_state_bound` bytes of room,
        zeroed); their length."""
        cdef Py_ssize_t head = 1 + _vlen(L.size)
        b[0] = 0x0a                                   # 1: data
        _varint(b, 1, L.size)
        self._pack_into(b + head, L)
        return _close(b, head + L.size, 0x12,         # 2: view
                      self._view_into(b + head + L.size + 4, has_reading, reading, nread))

    cdef Py_ssize_t _view_bound(self, Py_ssize_t nread) noexcept:
        cdef Py_ssize_t total = 0
        cdef int s
        for s in range(SEATS):
            total += self.nleft[s]
        return 96 + 12 * SEATS + total + self.st_n + nread

    cdef Py_ssize_t _view_into(self, unsigned char* b, bint has_reading,
                               const unsigned char* reading, Py_ssize_t nread) noexcept:
        """Write the view at ``b`` (:meth:`_view_bound` bytes of room); its length."""
        cdef Py_ssize_t inner
        cdef int s, r, f, n, m, i
        cdef Py_ssize_t k = 0
        if not self.over_kind:
            b[0] = 0x08                               # 1: turn
            b[1] = self.cturn
            k = 2
        m = 0
        for s in range(SEATS):
            m += _vlen(self.nleft[s])
        b[k] = 0x12                                   # 2: hand_sizes, packed
        k = _varint(b, k + 1, m)
        for s in range(SEATS):
            k = _varint(b, k, self.nleft[s])
        for s in range(SEATS):                        # 3: hands, one Cards each
            n = self.nleft[s]
            b[k] = 0x1a
            k += 1
            if n == 0:
                b[k] = 0
                k += 1
                continue
            k = _varint(b, k, 1 + _vlen(n) + n)
            b[k] = 0x0a                               # Cards.cards, packed
            k = _varint(b, k + 1, n)
            for r in range(NFACES):
                m = self.nranks[s][r]
                if not m:
                    continue
                if r < 13:
                    for f in range(1 + r * 5, 5 + r * 5):
                        i = min(self.faces[s][f], m)
                        m -= i
                        while i:
                            b[k] = f
                            k += 1
                            i -= 1
                while m:
                    b[k] = 5 + r * 5
                    k += 1
                    m -= 1
        if self.has_st:                               # 4: standing (StandingPlay)
            inner = (2 if self.st_seat else 0) + 1 + _vlen(self.st_n) + self.st_n
            if has_reading:
                inner += 1 + _vlen(nread) + nread
            b[k] = 0x22
            k = _varint(b, k + 1, inner)
            if self.st_seat:
                b[k] = 0x08                           # StandingPlay.seat
                b[k + 1] = self.st_seat
                k += 2
            b[k] = 0x12                               # StandingPlay.cards, packed
            k = _varint(b, k + 1, self.st_n)
            for i in range(self.st_n):
                b[k] = self.st_cards[i]
                k += 1
            if has_reading:
                b[k] = 0x1a                           # StandingPlay.reading
                k = _varint(b, k + 1, nread)
                if nread:
                    memcpy(b + k, reading, nread)
                k += nread
        if self.npasses:
            b[k] = 0x28                               # 5: passes
            k = _varint(b, k + 1, self.npasses)
        if self.nfin:
            b[k] = 0x32                               # 6: finish_order, packed
            b[k + 1] = self.nfin
            k += 2
            for i in range(self.nfin):
                b[k] = self.fin[i]
                k += 1
        if self.over_kind:
            b[k] = 0x38                               # 7: over
            b[k + 1] = 1
            k += 2
        b[k] = 0x42                                   # 8: hand_at, packed
        b[k + 1] = SEATS
        k += 2
        for i in range(SEATS):
            b[k] = <int>self.hand_at[i]
            k += 1
        if self.actions_applied:
            b[k] = 0x48                               # 9: actions_applied
            k = _varint(b, k + 1, self.actions_applied)
        return k

    def _load_body(self, const unsigned char[:] data, Py_ssize_t pos):
        """Load :meth:`_write_body`'s layout from ``data[pos:]`` (the caller checked the length)."""
        self._read_body(&data[pos])

    cdef void _read_body(self, const unsigned char* b) noexcept:
        cdef int s, c, r
        memset(self.faces, 0, sizeof(self.faces))
        self.holding = 0
        for s in range(SEATS):
            for c in range(NCODES):
                if SUITED[c]:
                    self.faces[s][c] = b[0]
                    b += 1
            self.nleft[s] = 0
            for r in range(NFACES):
                self.nranks[s][r] = b[0]
                self.nleft[s] += b[0]
                b += 1
            if self.nleft[s]:
                self.holding += 1
        for c in range(NCODES):
            self.nplayed[c] = b[0]
            b += 1

    cdef int _deck_fault(self, int decks, int lowest, int jokers, bint partial,
                         int* what) noexcept:
        """0 when the held and played cards can come from the deck; else 1 (played codes
        that are no card), 2 (rank position ``what[0]`` over or short of the deck) or 3
        (suited face ``what[0]`` held and played more than ``decks`` times)."""
        cdef int want[NFACES]
        cdef int total[NFACES]
        cdef int s, c, r, held
        for c in range(NCODES):
            if self.nplayed[c] and (c == 0 or (c > 65 and c != 70 and c != 75)):
                return 1
        for r in range(NFACES):
            want[r] = jokers if r >= 13 else (4 * decks if r >= lowest else 0)
            total[r] = 0
            for s in range(SEATS):
                total[r] += self.nranks[s][r]
        for c in range(1, NCODES):
            total[RANK[c]] += self.nplayed[c]
        for r in range(NFACES):
            if total[r] > want[r] or (not partial and total[r] != want[r]):
                what[0] = r
                return 2
        for c in range(NCODES):
            if SUITED[c]:
                held = self.nplayed[c]
                for s in range(SEATS):
                    held += self.faces[s][c]
                if held > decks:
                    what[0] = c
                    return 3
        return 0

    def _check_cards(self, int decks, int lowest, int jokers, bint partial):
        """Why the held and played cards cannot come from the deck (a sentence), or None:
        per rank held + played = the deck (at most, for a partial deal), per suited face
        at most ``decks`` copies."""
        cdef int what = 0, s, c, r, n
        cdef int fault = self._deck_fault(decks, lowest, jokers, partial, &what)
        if fault == 1:
            return "played cards include codes that are no card"
        if fault == 2:
            r, n = what, 0
            want = jokers if r >= 13 else (4 * decks if r >= lowest else 0)
            for s in range(SEATS):
                n += self.nranks[s][r]
            for c in range(1, NCODES):
                if RANK[c] == r:
                    n += self.nplayed[c]
            return f"{n} cards of rank {_rank_name(r)} held and played; the deck has {want}"
        if fault == 3:
            c, n = what, self.nplayed[what]
            for s in range(SEATS):
                n += self.faces[s][c]
            return (f"{n} copies of {format_cards([c])[0]} held and played; the deck has "
                    f"{decks}")
        return None

    def _played_ranks(self):
        """Cards played so far, per rank position."""
        cdef int c
        out = [0] * NFACES
        for c in range(1, NCODES):
            out[RANK[c]] += self.nplayed[c]
        return out

    def _restore(self, variant, dict st):
        """Load a state from :meth:`_state`'s form (after :meth:`_load_body`). The caller has
        checked it is consistent (cards, seats, turn); every reading is re-derived from its
        cards here."""
        cdef int s, c, r, i, idx
        cdef RD rd
        cdef RD buf[MAXREAD]
        self._bind(variant)
        self.nfin = len(st["finish"])
        for i in range(self.nfin):
            self.fin[i] = st["finish"][i]
        self.cturn, self.cleader, self.last, self.prev = (st["turn"], st["leader"], st["last"],
                                                          st["prev"])
        self.npasses = st["passes"]
        self.over_kind, self.over_seat, self.over_action = (st["over"], st["over_seat"],
                                                            st["over_action"])
        self.cescaper = st["escaper"]
        self.lead_why, self.lead_a, self.lead_b = st["lead"]
        self.has_st = 0
        self.st_reading = None
        if st["standing"] is not None:
            seat, cards, idx = st["standing"]
            self.st = _reading_at(self.rs, cards, idx, buf)
            self.has_st = 1
            self.st_seat, self.st_index, self.st_n = seat, idx, len(cards)
            for i in range(self.st_n):
                self.st_cards[i] = cards[i]
        self.bomb_readings = [[], [], [], []]
        self.bomb_codes = [[], [], [], []]
        self.bomb_index = [[], [], [], []]
        for s in range(SEATS):
            for cards, idx in st["bombs"][s]:
                rd = _reading_at(self.rs, cards, idx, buf)
                if rd.kind < K_BOMB:
                    raise ShuangkouError(f"bombs[{s}]: {_text(cards)} as stored is no bomb",
                                         "state")
                (<list>self.bomb_readings[s]).append(make_reading(&rd, self.rs))
                (<list>self.bomb_codes[s]).append(tuple(cards))
                (<list>self.bomb_index[s]).append(idx)
        self.actions_applied = st["actions"]
        self.stake, self.table_fee = st["stake"], st["table_fee"]
        self.hand_at = tuple(st["hand_at"])
        self.partial_deal = st["partial"]



    def _load_state(self, variant, const unsigned char[:] data):
        """The fast path of ``Round.from_bytes``: load ``data`` and answer True when it is a
        state the rules can reach, by the checks of core_ext/round.py's slow path (``_unpack``,
        ``_validate``, ``_restore``, ``_validate_live``) on C fields; False (this object is
        then unusable) leaves the precise sentence to that path. Never accepts what the slow
        path refuses (tests/test_round.py checks it on thousands of forged states). Loads into
        a new object only (``cls.__new__``), whose bomb lists are still empty."""
        if self.rs is not None:
            raise TypeError("_load_state loads into a new round object")
        cdef RuleSet rs = get_rules(variant)
        cdef Layout L = _layout(rs)
        cdef Py_ssize_t n0 = len(L.prefix), k, p, sp, bp
        cdef signed char h[21]
        cdef unsigned long long stake = 0, fee = 0
        cdef unsigned int actions = 0, over_action = 0
        cdef int i, s, r, c, j, nb, at, n, idx, nfin, mask, empty, end_at, over, turn, seat
        cdef int why, a, bb, holding, what = 0, nr, hand_size
        cdef bint found
        cdef int held[SEATS]
        cdef int fin[SEATS]
        cdef int played[NFACES]
        cdef int used[NFACES]
        cdef u8 counts[NFACES]
        cdef RD buf[MAXREAD]
        if data.shape[0] != L.size or memcmp(&data[0], <const char*>L.prefix, n0) != 0:
            return False
        k = n0
        for i in range(21):
            h[i] = <signed char>data[k + i]
        k += 21
        for i in range(8):
            stake |= (<unsigned long long>data[k + i]) << (8 * i)
            fee |= (<unsigned long long>data[k + 8 + i]) << (8 * i)
        k += 16
        for i in range(4):
            actions |= (<unsigned int>data[k + i]) << (8 * i)
            over_action |= (<unsigned int>data[k + 4 + i]) << (8 * i)
        k += 8
        # the head alone: seating, flags, stake, finishers
        nfin = h[11]
        if not 0 <= nfin <= SEATS or not 0 <= h[20] <= 1 or not 0 <= h[1] < SEATS:
            return False
        if not 1 <= stake <= _MAX_STAKE or fee > _MAX_TABLE_FEE:
            return False
        mask = 0
        for s in range(SEATS):
            i = h[16 + s]
            if not 0 <= i < SEATS or mask & (1 << i):
                return False
            mask |= 1 << i
        mask = 0
        for i in range(SEATS):
            if i < nfin:
                if not 0 <= h[12 + i] < SEATS or mask & (1 << h[12 + i]):
                    return False
                mask |= 1 << h[12 + i]
            elif h[12 + i] != -1:
                return False
        # the cards: against the deck, the empty hands are the finishers
        self._bind(rs)
        v = self.variant
        hand_size = v.hand_size
        self._read_body(&data[k])
        if self._deck_fault(v.decks, v.lowest_rank, v.joker_copies, h[20], &what):
            return False
        empty = holding = 0
        for s in range(SEATS):
            held[s] = self.nleft[s]
            if held[s] > hand_size:
                return False
            if held[s]:
                holding += 1
            else:
                empty |= 1 << s
        if empty != mask:
            return False
        # how the round stands (_validate)
        for i in range(nfin):
            fin[i] = h[12 + i]
        end_at = ended_at(self.end_rule, fin, nfin)
        over, turn = h[5], h[0]
        if over == OVER_NONE:
            if end_at != -1 or not 0 <= turn < SEATS or not held[turn]:
                return False
            if h[6] != 0 or h[7] != -1 or over_action != 0:
                return False
        elif over == OVER_TEAM or over == OVER_FIRST:
            if over != (OVER_FIRST if self.end_rule == END_FIRST else OVER_TEAM) or nfin == 0 \
                    or end_at != nfin - 1 or h[6] != h[12 + nfin - 1] or h[7] != -1:
                return False
        elif over == OVER_ESCAPE:
            seat = h[7]
            if end_at != -1 or not 0 <= seat < SEATS or not held[seat] or h[6] != seat \
                    or not self.escape_ok:
                return False
        else:
            return False
        if actions > <unsigned int>MAX_ACTIONS or (over and not over_action < actions):
            return False
        why, a, bb = h[8], h[9], h[10]
        if not 0 <= why <= 2 or not 0 <= a < SEATS or (why == 2) != (0 <= bb < SEATS) or \
                (why != 2 and bb != -1):
            return False
        if why == LEAD_FIRST and a != h[1]:
            return False
        # the standing slot
        sp = k + BODY
        memset(played, 0, sizeof(played))
        for c in range(1, NCODES):
            played[RANK[c]] += self.nplayed[c]
        self.has_st = 0
        self.st_reading = None
        if data[sp] == 0:
            for p in range(sp, sp + L.standing_slot):
                if data[p]:
                    return False
            if h[4] != 0 or (not over and a != turn):
                return False
        elif data[sp] == 1:
            seat, idx, n = data[sp + 1], data[sp + 2] | (data[sp + 3] << 8), data[sp + 4]
            if not 0 < n <= L.standing_slot - 5 or n > MAXCARDS:
                return False
            for p in range(sp + 5 + n, sp + L.standing_slot):
                if data[p]:
                    return False
            if not seat < SEATS or h[2] != seat or not 0 <= h[3] < SEATS:
                return False
            if not over and not h[4] < holding - (1 if held[seat] else 0):
                return False
            if not over and turn == seat and held[seat]:
                return False
            memset(counts, 0, NFACES)
            for i in range(n):
                c = data[sp + 5 + i]
                if not 0 < c < NCODES:
                    return False
                counts[RANK[c]] += 1
                self.st_cards[i] = c
            for r in range(NFACES):
                if counts[r] > played[r]:
                    return False
            nr = classify_counts(&rs.r, counts, buf, MAXREAD)
            if not idx < nr:
                return False
            self.st = buf[idx]
            self.has_st, self.st_seat, self.st_index, self.st_n = 1, seat, idx, n
        else:
            return False
        # the bomb slots: real bombs, made of played cards; a standing bomb among them
        memset(used, 0, sizeof(used))
        bp = sp + L.standing_slot      # (the per-seat bomb lists: empty, from __cinit__)
        found = not (self.has_st and self.st.kind >= K_BOMB)
        for s in range(SEATS):
            nb, at = data[bp], 1
            for j in range(nb):
                if at + 3 > L.bomb_slot:
                    return False
                n = data[bp + at]
                idx = data[bp + at + 1] | (data[bp + at + 2] << 8)
                if not n or at + 3 + n > L.bomb_slot or n > MAXCARDS:
                    return False
                for i in range(n):
                    c = data[bp + at + 3 + i]
                    if not 0 < c < NCODES:
                        return False
                    used[RANK[c]] += 1
                key = bytes(data[bp + at:bp + at + 3 + n])
                known = L.bombs.get(key)
                if known is None:
                    memset(counts, 0, NFACES)
                    for i in range(n):
                        counts[RANK[data[bp + at + 3 + i]]] += 1
                    nr = classify_counts(&rs.r, counts, buf, MAXREAD)
                    if not idx < nr or buf[idx].kind < K_BOMB:
                        return False
                    known = (make_reading(&buf[idx], rs), tuple(key[3:]))
                    if len(L.bombs) >= 4096:
                        L.bombs.clear()
                    L.bombs[key] = known
                if not found and s == self.st_seat and idx == self.st_index and \
                        n == self.st_n and _same_ranks(&data[bp + at + 3], self.st_cards, n):
                    found = True
                (<list>self.bomb_readings[s]).append((<tuple>known)[0])
                (<list>self.bomb_codes[s]).append((<tuple>known)[1])
                (<list>self.bomb_index[s]).append(idx)
                at += 3 + n
            for p in range(bp + at, bp + L.bomb_slot):
                if data[p]:
                    return False
            bp += L.bomb_slot
        if not found:
            return False
        for r in range(NFACES):
            if used[r] > played[r]:
                return False
        # accepted: the head's fields
        self.nfin = nfin
        for i in range(nfin):
            self.fin[i] = h[12 + i]
        self.cturn, self.cleader, self.last, self.prev, self.npasses = h[0], h[1], h[2], h[3], h[4]
        self.over_kind, self.over_seat, self.over_action, self.cescaper = over, h[6], over_action, h[7]
        self.lead_why, self.lead_a, self.lead_b = why, a, bb
        self.actions_applied = actions
        self.stake, self.table_fee = stake, fee
        self.hand_at = (h[16], h[17], h[18], h[19])
        self.partial_deal = h[20]
        return True


cdef inline bint _same_ranks(const unsigned char* x, const u8* y, int n) noexcept:
    """Whether two plays of ``n`` cards hold the same cards per rank position."""
    cdef int cnt[NFACES]
    cdef int i
    memset(cnt, 0, sizeof(cnt))
    for i in range(n):
        cnt[RANK[x[i]]] += 1
        cnt[RANK[y[i]]] -= 1
    for i in range(NFACES):
        if cnt[i]:
            return False
    return True


cdef inline Py_ssize_t _varint(unsigned char* b, Py_ssize_t k, unsigned int v) noexcept:
    """Write ``v`` as a protobuf varint at ``b[k]``; the position after it."""
    while v >= 0x80:
        b[k] = (v & 0x7f) | 0x80
        v >>= 7
        k += 1
    b[k] = v
    return k + 1


cdef inline Py_ssize_t _close(unsigned char* b, Py_ssize_t k, int tag, Py_ssize_t n) noexcept:
    """Finish a length-delimited field whose ``n`` payload bytes were written at
    ``b + k + 4`` (room left for its tag and a length below 2**21): tag and length at
    ``b + k``, the payload moved up behind them. The position after the field."""
    cdef int vl = _vlen(<unsigned int>n)
    b[k] = tag
    _varint(b, k + 1, <unsigned int>n)
    memmove(b + k + 1 + vl, b + k + 4, n)
    return k + 1 + vl + n


cdef inline int _vlen(unsigned int v) noexcept:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef RD _reading_at(RuleSet rs, cards, int idx, RD* buf) except *:
    """Reading number ``idx`` (rule-2 order) of ``cards``; ShuangkouError if there is none."""
    cdef u8 counts[NFACES]
    cdef int i, nr, c
    memset(counts, 0, NFACES)
    if not 0 < len(cards) <= MAXCARDS:
        raise ShuangkouError("a stored play holds 1–64 cards", "state")
    for c in cards:
        if not 0 < c < NCODES:
            raise ShuangkouError(f"invalid card code {c} in a stored play", "state")
        counts[RANK[c]] += 1
    nr = classify_counts(&rs.r, counts, buf, MAXREAD)
    if not 0 <= idx < nr:
        raise ShuangkouError(f"{_text(cards)} has no reading #{idx} in {rs.id}", "state")
    return buf[idx]


cdef int _check_seat(int seat) except -1:
    if not 0 <= seat < SEATS:
        raise ShuangkouError(f"seat must be a seat 0–3; got {seat}", "seat")
    return 0


cdef int _declared(object declare, Decl* d) except -1:
    """Fill ``d`` from a declaration: a kind name, a :class:`~shuangkou.core.Declaration` (kind,
    top, star, wilds: every reading can be named) or a :class:`~shuangkou.core.Reading`."""
    if isinstance(declare, Reading):
        declare = declare.declaration
    _parse_decl(declare, None, d)
    return 0


cdef object _decl_object(const Decl* d):
    """The :class:`~shuangkou.core.Declaration` a C declaration stands for (None: nothing declared)."""
    if d.kind < 0 and d.top < 0 and d.star < 0 and d.nwild < 0:
        return None
    return Declaration(None if d.kind < 0 else _KINDS[d.kind], None if d.top < 0 else d.top,
                       None if d.star < 0 else d.star,
                       None if d.nwild < 0 else tuple([d.wild[i] for i in range(d.nwild)]))


def unpack_slots(const unsigned char[:] data, Py_ssize_t pos, int standing_slot,
                 int bomb_slot):
    """Parse the serialised form's standing slot and four bomb slots at ``data[pos:]`` (the
    caller checked the length): ``(standing, bombs, standing_ranks, bomb_ranks)`` —
    ``standing`` None or (seat, cards, reading index), ``bombs`` per seat a list of
    (cards, index), and the cards of each rank position in the standing play and in all the
    bombs. Raises ShuangkouError (field ``state``) for a malformed slot, in the words of
    core_ext/round.py's ``_bad``."""
    cdef int s, i, k, at, nb, j
    cdef Py_ssize_t p
    cdef list need = [0] * NFACES
    cdef list used = [0] * NFACES
    cdef int cnt[NFACES]
    standing = None
    if data[pos] == 0:
        for p in range(pos, pos + standing_slot):
            if data[p]:
                raise ShuangkouError("round state: bytes in an empty standing slot", "state")
    elif data[pos] == 1:
        k = data[pos + 4]
        if not 0 < k <= standing_slot - 5:
            raise ShuangkouError("round state: a malformed standing play", "state")
        for p in range(pos + 5 + k, pos + standing_slot):
            if data[p]:
                raise ShuangkouError("round state: a malformed standing play", "state")
        memset(cnt, 0, sizeof(cnt))
        for p in range(pos + 5, pos + 5 + k):
            cnt[RANK[data[p]] if data[p] < NCODES else 0] += 1
        for i in range(NFACES):
            need[i] = cnt[i]
        standing = (data[pos + 1], tuple(bytes(data[pos + 5:pos + 5 + k])),
                    data[pos + 2] | (data[pos + 3] << 8))
    else:
        raise ShuangkouError("round state: a malformed standing play", "state")
    pos += standing_slot
    bombs = []
    memset(cnt, 0, sizeof(cnt))
    for s in range(SEATS):
        seat_bombs = []
        nb = data[pos]
        at = 1
        for j in range(nb):
            if at + 3 > bomb_slot:
                raise ShuangkouError(f"round state: seat {s}'s bombs overflow their slot",
                                     "state")
            k = data[pos + at]
            if not k or at + 3 + k > bomb_slot:
                raise ShuangkouError(f"round state: seat {s}'s bombs are malformed", "state")
            for p in range(pos + at + 3, pos + at + 3 + k):
                cnt[RANK[data[p]] if data[p] < NCODES else 0] += 1
            seat_bombs.append((tuple(bytes(data[pos + at + 3:pos + at + 3 + k])),
                               data[pos + at + 1] | (data[pos + at + 2] << 8)))
            at += 3 + k
        for p in range(pos + at, pos + bomb_slot):
            if data[p]:
                raise ShuangkouError(f"round state: bytes after seat {s}'s bombs", "state")
        bombs.append(seat_bombs)
        pos += bomb_slot
    for i in range(NFACES):
        used[i] = cnt[i]
    return standing, bombs, need, used


def copies_held(hands, int card):
    """Copies of ``card`` in each hand (lists of codes)."""
    cdef int s, n, c
    out = [0, 0, 0, 0]
    for s in range(SEATS):
        n = 0
        hand = hands[s]
        if type(hand) is list:
            for c in <list>hand:
                if c == card:
                    n += 1
        else:
            n = hand.count(card)
        out[s] = n
    return out


def deck_exact(list hands, int decks, int lowest, int jokers):
    """Are the hands together exactly the deck, card for card (the usual deal)?"""
    cdef int counts[NCODES]
    cdef int c, want
    memset(counts, 0, sizeof(counts))
    for hand in hands:
        for c in hand:
            if not 0 < c < NCODES:
                return False
            counts[c] += 1
    for c in range(1, NCODES):
        want = (decks if SUITED[c] and RANK[c] >= lowest
                else jokers if c == 70 or c == 75 else 0)
        if counts[c] != want:
            return False
    return True
