# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The round flow in compiled code (RULES.md §9): turns, tricks, 接风, finishing, round end.

:class:`RoundCore` holds one round in table seats. What the rules of play read of it is its
:c:type:`Position` (_round.pxd): per seat the cards of each rank, the cards left, the
standing play's C reading, the passes, the finishing order, the bombs that stood — a plain C
struct, which ``pos_play`` and ``pos_pass`` (below) take from one action to the next without
the GIL; the rollouts (_rollout.pyx) play copies of it. Around it RoundCore keeps what only a
live round needs: per seat the copies of each suited face (a card written without a suit
takes any card of its rank, so the face counts are an upper bound), the cards played by
code, the standing play's codes and the bombs as Readings. Its actions check the seat and
the cards, then apply the transition the rollouts apply. Its fields are declared in
_round.pxd for the modules that read a round: the state format (_state.pyx), replay folding
(_replay.pyx) and settlement. The public façade :class:`shuangkou.core.Round`
(core_ext/round.py) adds the deal, settlement, legal plays and the serialised form.

Every sentence of a rule error here is the one replay validation reports (docs/replays.md),
so a replay and a live round fail alike.
"""

from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.string cimport memcpy, memset

from shuangkou.core._core cimport (
    K_BOMB,
    K_CHAIN_BOMB,
    MAXCARDS,
    MAXREAD,
    RD,
    Decl,
    Rules,
    RuleSet,
    _parse_decl,
    classify_counts,
    decl_match,
    get_rules,
    make_reading,
    parse_into,
    rd_beats,
    u8,
)
from shuangkou.core.cards cimport (
    NCODES,
    NFACES,
    NO_SUIT,
    SEATS,
    code_of,
    code_rank,
    deck_copies,
    is_seat,
    is_suited_code,
    next_seat_of,
    partner_of,
)

from shuangkou.core._core import KINDS as _KINDS
from shuangkou.core._core import Reading, format_cards, play_reading
from shuangkou.core.cards import check_seat
from shuangkou.core.cards import rank_name as _rank_name
from shuangkou.core.declaration import Declaration
from shuangkou.core.errors import InvalidPlay, RuleViolation, ShuangkouError
from shuangkou.core.round_ends import ROUND_END_TABLE as _ROUND_END_TABLE
from shuangkou.core.round_ends import round_end as _round_end
from shuangkou.core.round_records import ActionRecord, Standing


# ----------------------------------------------------------------------------- rule data

#: ``seed_sha256`` of a round whose hands were given rather than dealt from a seed.
NO_SEED = bytes(SEED_BYTES)
#: ``round_id`` of a round object not dealt through ``Round.deal`` (a search's sampled deals).
NO_ROUND_ID = bytes(ROUND_ID_BYTES)
#: Turn order: the seats that may act after each seat, nearest first (§9 "Tricks").
TURN_AFTER = tuple(tuple((s + k) % SEATS for k in (1, 2, 3)) for s in range(SEATS))
#: 接风 (§9): who leads when the trick's winner has gone out — the partner, then the next
#: seats in turn order (the partner can be out too only in a house variant).
WIND_ORDER = tuple((partner_of(s), next_seat_of(s), next_seat_of(partner_of(s)))
                   for s in range(SEATS))


cdef enum:
    MAXENDS = 64         # round-end rules the table may hold

# The table's rows in C, by their index in _END_INDEX: a round takes its row with one dict
# lookup (a round is bound on every state loaded, so this is on the path of every RPC).
cdef EndRule END_RULES[MAXENDS]
cdef dict _END_INDEX = {}
if len(_ROUND_END_TABLE) > MAXENDS:
    raise ImportError(f"the round-end table holds at most {MAXENDS} rules (_round.pyx)")
for _i, _row in enumerate(_ROUND_END_TABLE):
    end_rule_from(_row, &END_RULES[_i])
    _END_INDEX[_row.name] = _i


def round_over_at(finish_order, round_end):
    """Index in ``finish_order`` (seats, in the order their hands emptied) of the finish that
    ended the round under the rule ``round_end`` (a variant's field), or None while it goes
    on: the one round-over decision (``ended_at`` in _round.pxd)."""
    cdef int fin[SEATS]
    cdef EndRule rule
    cdef int i, n = len(finish_order)
    if n > SEATS:
        raise ValueError("a finishing order has at most 4 seats")
    end_rule_from(_round_end(round_end), &rule)
    for i in range(n):
        fin[i] = finish_order[i]
    i = ended_at(&rule, fin, n)
    return None if i < 0 else i


cdef enum:
    MAXHAND = 255        # cards one seat can hold (a seat's rank counts are bytes)

cdef int AFTER[4][3]
cdef int WIND[4][3]
for _s in range(SEATS):
    for _k in range(3):
        AFTER[_s][_k] = TURN_AFTER[_s][_k]
        WIND[_s][_k] = WIND_ORDER[_s][_k]


# ----------------------------------------------------------------------------- the position

cdef int pos_next_holding(const Position* p, int seat) noexcept nogil:
    """The next seat after ``seat`` in turn order that still holds cards (``seat`` itself
    when none does)."""
    cdef int k
    for k in range(3):
        if p.nleft[AFTER[seat][k]]:
            return AFTER[seat][k]
    return seat


cdef int pos_reading(const Position* p, const Rules* R, const u8* counts, const Decl* d,
                     RD* buf, RD* out) noexcept nogil:
    """The reading a play of rank ``counts`` stands as (§7 rule 6): the first of its readings
    (rule-2 order, ``buf``: MAXREAD of them) that matches the declaration ``d`` and beats the
    standing play; its index, or -1 when none does."""
    cdef int i, nr = classify_counts(R, counts, buf, MAXREAD)
    for i in range(nr):
        if not decl_match(&buf[i], d):
            continue
        if not p.has_st or rd_beats(&buf[i], &p.st):
            out[0] = buf[i]
            return i
    return -1


cdef int pos_commit_play(Position* p, int seat, const u8* rest, int n, const RD* rd,
                         int pick) noexcept nogil:
    """Apply ``seat``'s play of ``n`` cards standing as ``rd`` (reading number ``pick``),
    which leaves it ``rest`` (rank counts): the standing play, a bomb recorded, the finish,
    the round end (§9), the next seat to act."""
    cdef int b
    memcpy(p.nranks[seat], rest, NFACES)
    p.st = rd[0]
    p.st_n = n
    p.st_index = pick
    p.st_seat = seat
    p.has_st = 1
    p.last = p.prev = seat
    p.npasses = 0
    if rd.kind >= K_BOMB:
        b = p.bombs.n[seat]
        if b < MAXB:              # a hand of MAXCARDS cards plays at most 21 bombs
            p.bombs.star[seat][b] = rd.star
            p.bombs.chain[seat][b] = rd.kind == K_CHAIN_BOMB
            p.bombs.n[seat] = b + 1
    p.nleft[seat] -= n
    p.actions += 1
    if not p.nleft[seat]:
        p.holding -= 1
        p.fin[p.nfin] = seat
        p.nfin += 1
        if ended_at(&p.end, p.fin, p.nfin) >= 0:
            p.over_kind = p.end.over
            p.over_seat = seat
            p.over_action = p.actions - 1
            return 0
    p.turn = pos_next_holding(p, seat)
    return 0


cdef int pos_play(Position* p, const Rules* R, int seat, const u8* counts,
                  const Decl* d) noexcept nogil:
    """``seat`` plays cards of rank ``counts`` (held: the caller's check), as the first
    reading matching ``d`` that beats the standing play; the reading's index, or -1 (nothing
    applied) when no reading does."""
    cdef RD buf[MAXREAD]
    cdef RD rd
    cdef u8 rest[NFACES]
    cdef int r, n = 0, pick = pos_reading(p, R, counts, d, buf, &rd)
    if pick < 0:
        return -1
    for r in range(NFACES):
        rest[r] = p.nranks[seat][r] - counts[r]
        n += counts[r]
    pos_commit_play(p, seat, rest, n, &rd, pick)
    return pick


cdef int pos_pass(Position* p, int seat) noexcept nogil:
    """``seat`` passes (it follows a standing play: the caller's check): 0 the trick goes
    on, 1 its winner leads, 2 接风 (the lead moved: the winner is out)."""
    cdef int k, s
    p.npasses += 1
    p.prev = seat
    p.actions += 1
    if p.npasses < p.holding - (1 if p.nleft[p.last] else 0):
        p.turn = pos_next_holding(p, seat)
        return 0
    p.has_st = 0                      # everyone still holding cards passed: trick over
    p.npasses = 0
    if p.nleft[p.last]:
        p.turn = p.last
        p.lead_why, p.lead_a, p.lead_b = LEAD_WON, p.last, -1
        return 1
    p.turn = pos_next_holding(p, p.last)
    for k in range(3):
        s = WIND[p.last][k]
        if p.nleft[s]:
            p.turn = s
            break
    p.lead_why, p.lead_a, p.lead_b = LEAD_WIND, p.turn, p.last
    return 2

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
_NTH = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}
_COUNTS = {1: "one", 2: "two", 3: "three", 4: "four"}


def _held_again(name, held):
    """The copy a play asks for beyond the ``held`` the seat has: ``a second 3S``."""
    return f"a {_NTH.get(held + 1, f'{held + 1}th')} {name}"


def _held_text(name, rank, held, bint by_rank):
    """What the seat holds of the card a play names too often: ``it holds one 3S``; of a
    rank-only card (``by_rank``: any suit counts), ``it holds two card(s) of rank 3``."""
    count = _COUNTS.get(held, str(held))
    return (f"it holds {count} card(s) of rank {name}" if by_rank
            else f"it holds {count} {name}")


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

    def __cinit__(self):
        self.bomb_readings = [[], [], [], []]
        self.bomb_codes = [[], [], [], []]
        self.bomb_index = [[], [], [], []]
        self.pos.turn = -1
        self.cescaper = -1
        self.pos.last = self.pos.prev = self.pos.st_seat = -1
        self.hand_at = (0, 1, 2, 3)
        self.stake = 1
        self.table_fee = 0
        self.seed_sha256 = NO_SEED
        self.round_id = NO_ROUND_ID

    # -- set-up (the façade has checked the deal)
    def _start(self, variant, list hands, int leader, tuple hand_at, stake, table_fee,
               bint partial, bytes seed_sha256=NO_SEED, bytes round_id=NO_ROUND_ID):
        """Seat ``hands`` (lists of codes, by table seat) with ``leader`` to lead;
        ``seed_sha256``: the commitment of the seed they were dealt from (shuffle.py);
        ``round_id``: the round's identity (``Round.deal`` draws it)."""
        if len(seed_sha256) != SEED_BYTES:
            raise ValueError(f"seed_sha256 is {SEED_BYTES} bytes")
        if len(round_id) != ROUND_ID_BYTES:
            raise ValueError(f"round_id is {ROUND_ID_BYTES} bytes")
        cdef int s, c
        self.bind(variant)
        memset(self.faces, 0, sizeof(self.faces))
        memset(self.pos.nranks, 0, sizeof(self.pos.nranks))
        memset(self.nplayed, 0, sizeof(self.nplayed))
        self.pos.holding = 0
        for s in range(SEATS):
            self.pos.nleft[s] = len(hands[s])
            for c in hands[s]:
                self.pos.nranks[s][code_rank(c)] += 1
                if is_suited_code(c):
                    self.faces[s][c] += 1
            if self.pos.nleft[s]:
                self.pos.holding += 1
        self.pos.turn = self.cleader = leader
        self.pos.lead_why, self.pos.lead_a, self.pos.lead_b = LEAD_FIRST, leader, -1
        self.hand_at = hand_at
        self.stake = stake
        self.table_fee = table_fee
        self.partial_deal = partial
        self.seed_sha256 = seed_sha256
        self.round_id = round_id

    cdef int bind(self, object variant) except -1:
        """Take the variant's compiled rules (and the rules of its round end, escapes)."""
        self.rs = get_rules(variant)
        self.variant = self.rs.variant
        i = _END_INDEX.get(self.variant.round_end)
        if i is None:
            _round_end(self.variant.round_end)     # raises: no row has the name
        self.pos.end = END_RULES[<int>i]
        self.escape_ok = self.variant.escape != "none"
        return 0

    # -- reading the state
    @property
    def turn(self):
        """The seat to act; None once the round is over."""
        return None if self.pos.over_kind else self.pos.turn

    @property
    def actions_applied(self):
        """Actions applied so far (plays, passes, an escape)."""
        return self.pos.actions

    @property
    def leader(self):
        """The seat that led the first trick."""
        return self.cleader

    @property
    def passes(self):
        """Passes since the standing play (0 when a seat leads)."""
        return self.pos.npasses

    @property
    def finish_order(self):
        """Seats that emptied their hands, in order."""
        return tuple([self.pos.fin[i] for i in range(self.pos.nfin)])

    @property
    def is_over(self):
        return self.pos.over_kind != OVER_NONE

    @property
    def escaper(self):
        """The seat that escaped, or None."""
        return _opt(self.cescaper)

    @property
    def escape_action(self):
        """Index of the escape among the applied actions, or None."""
        return self.pos.over_action if self.pos.over_kind == OVER_ESCAPE else None

    @property
    def cards_left(self):
        return (self.pos.nleft[0], self.pos.nleft[1], self.pos.nleft[2], self.pos.nleft[3])

    @property
    def standing(self):
        """The play standing on the table (:class:`Standing`), or None when a seat leads."""
        if not self.pos.has_st:
            return None
        rec = _new(Standing)        # its frozen __init__ without the Python frame
        PyObject_GenericSetAttr(rec, "seat", self.pos.st_seat)
        PyObject_GenericSetAttr(rec, "cards",
                                tuple([self.st_cards[i] for i in range(self.pos.st_n)]))
        PyObject_GenericSetAttr(rec, "reading", self.standing_reading())
        return rec

    @property
    def bombs(self):
        """Per seat, the bombs that stood (the readings :func:`score_round` settles)."""
        return tuple([tuple(b) for b in self.bomb_readings])

    @property
    def bomb_cards(self):
        """The same bombs as card codes."""
        return tuple([tuple(b) for b in self.bomb_codes])

    cdef object standing_reading(self):
        if self.st_reading is None and self.pos.has_st:
            self.st_reading = make_reading(&self.pos.st, self.rs)
        return self.st_reading

    def hand(self, int seat):
        """The cards ``seat`` holds (codes; suited where the deal and plays say so)."""
        cdef u8 codes[MAXHAND]
        cdef int k, n
        _check_seat(seat)
        n = self.hand_codes(seat, codes)
        out = PyTuple_New(n)
        for k in range(n):
            item = codes[k]
            Py_INCREF(item)
            PyTuple_SET_ITEM(out, k, item)
        return out

    cdef int hand_codes(self, int seat, u8* out) noexcept:
        """The cards ``seat`` holds as codes, lowest rank first, each rank's suited faces
        first (the face counts are an upper bound: a card written without a suit took any
        of its rank), then the rank-only cards; at most MAXHAND. Returns how many."""
        cdef int r, f, n, k, i = 0
        for r in range(NFACES):
            n = self.pos.nranks[seat][r]
            if not n:
                continue
            if r < 13:
                for f in range(code_of(r, 0), code_of(r, NO_SUIT)):
                    k = min(self.faces[seat][f], n)
                    n -= k
                    while k and i < MAXHAND:
                        out[i] = f
                        i += 1
                        k -= 1
            while n and i < MAXHAND:
                out[i] = code_of(r, NO_SUIT)
                i += 1
                n -= 1
        return i

    # -- error sentences (cold)
    cdef str _lead_note(self):
        cdef const Position* p = &self.pos
        if p.lead_why == LEAD_FIRST:
            return f"seat {p.lead_a} leads the first trick"
        if p.lead_why == LEAD_WON:
            return f"seat {p.lead_a} leads: everyone passed on its play"
        return (f"接风: seat {p.lead_a} leads after seat {p.lead_b} went out and "
                "everyone passed")

    def _why_turn(self):
        """Why the seat to act acts (for messages)."""
        return self._lead_note() if not self.pos.has_st else "a trick is in progress"

    cdef str _over_note(self):
        s = self.pos.over_seat
        if self.pos.over_kind == OVER_ESCAPE:
            return f"seat {s} escaped"
        return _round_end(self.variant.round_end).finished.format(seat=s, partner=partner_of(s))

    cdef object _over_error(self):
        # Actions count from 0 (as a replay's): say how many that was, which the state's
        # actions_applied shows.
        return RuleViolation(f"the round ended at action {self.pos.over_action} (counting "
                             f"from 0: after {self.pos.over_action + 1} actions; "
                             f"{self._over_note()}); nothing may follow", "ROUND_OVER")

    cdef int turn_check(self, int seat) except -1:
        cdef int place
        cdef const Position* p = &self.pos
        if p.over_kind:
            raise self._over_error()
        if seat == p.turn:
            return 0
        _check_seat(seat)
        if not p.nleft[seat]:
            place = self.finish_order.index(seat) + 1
            raise RuleViolation(f"seat {seat} has no cards left (it finished {place}"
                                f"{_ORDINALS.get(place, 'th')}); it is seat {p.turn}'s turn",
                                "SEAT_FINISHED")
        note = self._lead_note() if not p.has_st else (
            f"seat {p.turn} follows seat {p.prev} in turn order")
        raise RuleViolation(f"seat {seat} acted but it is seat {p.turn}'s turn ({note})",
                            "NOT_YOUR_TURN")

    cdef int _not_held(self, int seat, int c, const u8* fc, const u8* rk) except -1:
        name = format_cards([c])[0]
        r = code_rank(c)
        n = rk[r]
        # what the seat held of this card before the play, when the play's own earlier
        # cards took it all: the play names it more often than held ("3S 3S" from one 3S),
        # the card is not missing
        suited_card = is_suited_code(c)
        held = (self.faces[seat][c] if not fc[c] else 0) if suited_card \
            else self.pos.nranks[seat][r]
        had = self.pos.nranks[seat][r]
        if not n and had:       # "3 3 3H" from 3S 3H: the rank-only 3s took both
            have = f"the play's other cards take its {had} card(s) of rank {_rank_name(r)}"
        elif not n:
            have = f"it holds no {_rank_name(r)}" if r < 13 else f"it holds no {name}"
        else:
            suited = [format_cards([f])[0] for f in range(code_of(r, 0), code_of(r, NO_SUIT))
                      for _ in range(fc[f])]
            have = (f"its {n} card(s) of rank {_rank_name(r)} left are "
                    f"{' '.join(suited) or 'without a suit'}"
                    + (" (and cards without a suit)" if suited and len(suited) < n else ""))
        if held:
            raise RuleViolation(f"seat {seat} does not hold {_held_again(name, held)} "
                                f"({_held_text(name, r, held, r < 13 and not suited_card)}"
                                + (f"; {have}" if n else "") + ")", "CARDS_NOT_HELD", "cards")
        raise RuleViolation(f"seat {seat} does not hold {name} ({have})", "CARDS_NOT_HELD",
                            "cards")

    cdef int _play_failed(self, int seat, list codes, const Decl* d) except -1:
        """Raise the error of a held play that cannot stand: the core's own sentence."""
        prefix = f"seat {seat} plays {_text(codes)}: "
        standing = self.standing_reading()
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
    cdef int do_play(self, int seat, const int* codes, int n, const Decl* d, bint commit,
                     RD* out) except -1:
        """Check (and with ``commit`` apply) a play; the reading that stands goes to ``out``."""
        cdef u8 fc[NCODES]
        cdef u8 rk[NFACES]
        cdef u8 counts[NFACES]
        cdef RD buf[MAXREAD]
        cdef int i, pick
        self.turn_check(seat)
        if n <= 0:
            raise InvalidPlay("a play needs at least one card (use {\"pass\": true} to pass)",
                              "cards")
        self.take(seat, codes, n, fc, rk, counts)
        pick = pos_reading(&self.pos, &self.rs.r, counts, d, buf, out)
        if pick < 0:
            self._play_failed(seat, [codes[i] for i in range(n)], d)
        if not commit:
            return pick
        memcpy(self.faces[seat], fc, NCODES)
        for i in range(n):
            self.nplayed[codes[i]] += 1
            self.st_cards[i] = codes[i]
        self.st_reading = None
        if out.kind >= K_BOMB:
            self.st_reading = make_reading(out, self.rs)
            (<list>self.bomb_readings[seat]).append(self.st_reading)
            (<list>self.bomb_codes[seat]).append(tuple([codes[i] for i in range(n)]))
            (<list>self.bomb_index[seat]).append(pick)
        pos_commit_play(&self.pos, seat, rk, n, out, pick)
        return pick

    cdef int take(self, int seat, const int* codes, int n, u8* fc, u8* rk,
                  u8* counts) except -1:
        """The seat's counts after giving up ``codes`` (into fc/rk) and the play's rank
        counts; CARDS_NOT_HELD at the first card it does not hold."""
        cdef int i, c, r
        memcpy(fc, self.faces[seat], NCODES)
        memcpy(rk, self.pos.nranks[seat], NFACES)
        memset(counts, 0, NFACES)
        for i in range(n):
            c = codes[i]
            r = code_rank(c)
            if not rk[r] or (is_suited_code(c) and not fc[c]):
                self._not_held(seat, c, fc, rk)
            rk[r] -= 1
            if is_suited_code(c):
                fc[c] -= 1
            counts[r] += 1
        return 0

    cdef int _check_pass(self, int seat) except -1:
        self.turn_check(seat)
        if not self.pos.has_st:
            raise RuleViolation(f"seat {seat} leads the trick and may not pass "
                                f"({self._lead_note()})", "LEADER_MUST_PLAY")
        return 0

    cdef int do_pass(self, int seat) except -1:
        """Apply a pass: 0 the trick goes on, 1 its winner leads, 2 接风 (the lead moved)."""
        cdef int how
        self._check_pass(seat)
        how = pos_pass(&self.pos, seat)
        if how:
            self.st_reading = None
        return how

    cdef int _check_escape(self, int seat) except -1:
        if self.pos.over_kind:
            raise self._over_error()
        _check_seat(seat)
        if not self.pos.nleft[seat]:
            raise RuleViolation(f"seat {seat} has no cards left and cannot escape",
                                "SEAT_FINISHED")
        if not self.escape_ok:
            raise RuleViolation(_NO_ESCAPE.format(self.variant.id), "ESCAPE_NOT_ALLOWED",
                                "escape")
        return 0

    cdef int do_escape(self, int seat) except -1:
        self._check_escape(seat)
        self.pos.over_kind = OVER_ESCAPE
        self.pos.over_seat = self.cescaper = seat
        self.pos.over_action = self.pos.actions
        self.pos.actions += 1
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
        self.do_play(seat, codes, n, &d, 0, &rd)
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
        self.do_play(seat, codes, n, &d, 1, &rd)
        reading = self.standing_reading()
        over = self.pos.over_kind != OVER_NONE
        return _action_record(seat, "play", tuple([codes[i] for i in range(n)]), reading, None,
                            None if self.pos.nleft[seat] else seat, None,
                            None if over else self.pos.turn, over)

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
        cdef int last = self.pos.last
        cdef int how = self.do_pass(seat)
        return _action_record(seat, "pass", (), None, last if how else None, None,
                            self.pos.turn if how == 2 else None, self.pos.turn, False)

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
        self.do_escape(seat)
        return _action_record(seat, "escape", (), None, None, None, None, None, True)

    # -- copying
    cpdef int _copy_into(self, RoundCore other) except -1:
        """Make ``other`` this round (the façade's copy)."""
        other.rs = self.rs
        other.variant = self.variant
        other.pos = self.pos
        memcpy(other.faces, self.faces, sizeof(self.faces))
        memcpy(other.nplayed, self.nplayed, sizeof(self.nplayed))
        memcpy(other.st_cards, self.st_cards, sizeof(self.st_cards))
        other.cleader, other.escape_ok, other.cescaper = (self.cleader, self.escape_ok,
                                                          self.cescaper)
        other.st_reading = self.st_reading
        other.bomb_readings = [list(b) for b in self.bomb_readings]
        other.bomb_codes = [list(b) for b in self.bomb_codes]
        other.bomb_index = [list(b) for b in self.bomb_index]
        other.stake, other.table_fee = self.stake, self.table_fee
        other.hand_at = self.hand_at
        other.partial_deal = self.partial_deal
        other.seed_sha256 = self.seed_sha256
        other.round_id = self.round_id
        return 0



cdef int _check_seat(int seat) except -1:
    if not is_seat(seat):
        check_seat(seat)           # raises: the sentence has one home (cards.py)
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
    cdef int c
    memset(counts, 0, sizeof(counts))
    for hand in hands:
        for c in hand:
            if not 0 < c < NCODES:
                return False
            counts[c] += 1
    for c in range(1, NCODES):
        if counts[c] != deck_copies(c, decks, lowest, jokers):
            return False
    return True

