# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The compiled rules core: cards, readings (classification) and bomb order.

Everything works on a *count vector*: 15 small integers, the number of cards of each
natural rank (positions 0..12 = 3..A, 2) plus the small and the big joker. Suits never
matter for reading or comparing plays, so they are dropped as soon as a card is parsed.

Wild jokers are never tried rank by rank. For each pattern the core reasons over the
count vector instead: a window of consecutive ranks either covers every natural rank of
the play or not, and the wilds a window needs are its gaps (``width - count`` per rank);
a chain bomb's spare wilds (those not needed to lift every link to four cards) are the
only thing ever distributed, and there are at most four of them.
"""

from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, free
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec
from cpython.unicode cimport (PyUnicode_1BYTE_KIND, PyUnicode_DATA, PyUnicode_GET_LENGTH,
                              PyUnicode_KIND, PyUnicode_READ, Py_UNICODE_ISSPACE)

from shuangkou.core.cards cimport (
    BJ,
    CODE_BJ,
    CODE_LAST_NATURAL,
    CODE_SJ,
    NFACES,
    NRANKS,
    SJ,
    code_rank,
    code_suit,
)

from array import array

from shuangkou.core.errors import CardError, IllegalPlay, InvalidPlay, VariantError
from shuangkou.core import variants as _variants
from shuangkou.core.cards import (CARD_BJ, CARD_SJ, MAX_CODE, RANK_CHARS, SUIT_CHARS, card_code,
                            rank_name, rank_position)
from shuangkou.core.declaration import Declaration, check_parts
from shuangkou.core.records import BatchErrors, BatchResult, Comparison

# ----------------------------------------------------------------------------- constants

KINDS = ("single", "pair", "triple", "straight", "pair_chain", "triple_chain",
         "bomb", "joker_bomb_3", "joker_bomb_4", "chain_bomb")
_KIND_INDEX = {k: i for i, k in enumerate(KINDS)}
BOMB_KINDS = frozenset(("bomb", "joker_bomb_3", "joker_bomb_4", "chain_bomb"))

# The branches of the variant fields read here, numbered as variants.py lists their values
# (each named PREFIX_VALUE: tests/test_round_ends.py checks the numbers against the lists).
cpdef enum:                # bomb-key fields: variants.BOMB_KEY_FIELDS
    F_STAR, F_TIER, F_TOP, F_NEG_CARDS, F_CARDS, F_NEG_Y, F_Y, F_WRAP_CLASS, F_RANK_LIST
cpdef enum:                # which count is a chain bomb's X: variants.CHAIN_PHASES
    PHASE_COMMON, PHASE_LARGEST, PHASE_SMALLEST
cpdef enum:                # may a chain run through 2: variants.CHAIN_WRAPS
    WRAP_NONE, WRAP_THROUGH_ACE, WRAP_NATURAL_TWO
_FIELD_IDS = _variants.numbered(_variants.BOMB_KEY_FIELDS)
_PHASES = _variants.numbered(_variants.CHAIN_PHASES)
_WRAPS = _variants.numbered(_variants.CHAIN_WRAPS)


# ----------------------------------------------------------------------------- cards

def _build_tokens():
    names = {}
    table = {}
    for r, ch in enumerate(RANK_CHARS):
        for spelled in ((ch, "10") if ch == "T" else (ch,)):
            for s, sc in enumerate(SUIT_CHARS):
                code = card_code(r, s)
                for tok in (spelled + sc, (spelled + sc).lower(), spelled + sc.lower(),
                            spelled.lower() + sc):
                    table[tok] = code
            table[spelled] = card_code(r)
            table[spelled.lower()] = card_code(r)
        for s in range(5):
            names[card_code(r, s)] = ch + (SUIT_CHARS[s] if s < 4 else "")
    for tok in ("SJ", "sj", "Sj", "sJ", "小王"):
        table[tok] = CARD_SJ
    for tok in ("BJ", "bj", "Bj", "bJ", "大王"):
        table[tok] = CARD_BJ
    names[CARD_SJ] = "SJ"
    names[CARD_BJ] = "BJ"
    return table, names

_TOKENS, _NAMES = _build_tokens()

# The one card tokenizer, compiled: every token of the table ("3S", "th", "10H", "SJ", "5",
# 小王 …) is decoded from the string's characters with no hashing and no slicing. ASCII
# tokens index these tables; the two non-ASCII ones (小王, 大王) are three code points.
cdef u8 TOK1[128]
cdef u8 TOK2[128][128]
cdef u8 TOK10[128]          # "10" followed by one character
cdef Py_UCS4 HAN_SMALL, HAN_BIG, HAN_KING   # 小, 大, 王
cdef int CODE_TEN = _TOKENS["10"]           # a "10" inside a rank run
memset(TOK1, 0, sizeof(TOK1))
memset(TOK2, 0, sizeof(TOK2))
memset(TOK10, 0, sizeof(TOK10))
for _name, _code in _TOKENS.items():
    if not _name.isascii():
        if len(_name) != 2 or _name[1] != "王" or _name[0] not in "小大":
            raise AssertionError(f"token {_name!r} has no place in the compiled tokenizer")
        continue
    _b = _name.encode("ascii")
    if len(_b) == 1:
        TOK1[_b[0]] = _code
    elif len(_b) == 2:
        TOK2[_b[0]][_b[1]] = _code
    elif len(_b) == 3 and _b[:2] == b"10":
        TOK10[_b[2]] = _code
    else:
        raise AssertionError(f"token {_name!r} has no place in the compiled token table")
HAN_SMALL, HAN_BIG, HAN_KING = ord("小"), ord("大"), ord("王")
if _TOKENS["小王"] != CARD_SJ or _TOKENS["大王"] != CARD_BJ:
    raise AssertionError("the joker names moved")
# A rank run's characters are exactly the one-character tokens (ranks, either case) and "10".
if {chr(i) for i in range(128) if TOK1[i]} != set(RANK_CHARS + RANK_CHARS.lower()):
    raise AssertionError("one-character tokens are not the rank characters")


cdef inline Py_UCS4 _at(int kind, const void* data, Py_ssize_t i) noexcept:
    return PyUnicode_READ(kind, <void*>data, i)


cdef int segment_code(int kind, const void* data, Py_ssize_t a, Py_ssize_t n) noexcept:
    """The card code of the table token ``text[a:a + n]``, or 0 when it is not one."""
    cdef Py_UCS4 c0, c1, c2
    if n == 2:
        c0 = _at(kind, data, a)
        c1 = _at(kind, data, a + 1)
        if c0 < 128 and c1 < 128:
            return TOK2[c0][c1]
        if c1 == HAN_KING:
            return CARD_SJ if c0 == HAN_SMALL else (CARD_BJ if c0 == HAN_BIG else 0)
        return 0
    if n == 1:
        c0 = _at(kind, data, a)
        return TOK1[c0] if c0 < 128 else 0
    if n == 3:
        c0 = _at(kind, data, a)
        c1 = _at(kind, data, a + 1)
        c2 = _at(kind, data, a + 2)
        return TOK10[c2] if c0 == 49 and c1 == 48 and c2 < 128 else 0     # "10?"
    return 0


cdef int token_code(object t) noexcept:
    """The card code of a one-card token (``"7S"``, ``"10h"``, ``"BJ"``, ``"7"``), or 0 when
    ``t`` is not one: the tokenizer every list and replay reader uses. Tokens are almost
    always ASCII strings: their bytes index the tables directly."""
    cdef Py_ssize_t n
    cdef const unsigned char* d
    if type(t) is not str:
        return 0
    n = PyUnicode_GET_LENGTH(t)
    if PyUnicode_KIND(t) != PyUnicode_1BYTE_KIND:
        return segment_code(PyUnicode_KIND(t), PyUnicode_DATA(t), 0, n)
    d = <const unsigned char*>PyUnicode_DATA(t)
    if n == 2:
        return TOK2[d[0]][d[1]] if d[0] < 128 and d[1] < 128 else 0
    if n == 1:
        return TOK1[d[0]] if d[0] < 128 else 0
    if n == 3 and d[0] == 49 and d[1] == 48:        # "10?"
        return TOK10[d[2]] if d[2] < 128 else 0
    return 0


cdef inline bint is_separator(Py_UCS4 ch) noexcept:
    """Between the tokens of card text: whitespace (what ``str.isspace`` and the regular
    expressions' whitespace class accept), ``,`` and ``+``."""
    return ch == 44 or ch == 43 or Py_UNICODE_ISSPACE(ch)


cdef Py_ssize_t run_fault(int kind, const void* data, Py_ssize_t a, Py_ssize_t n) noexcept:
    """Offset in ``text[a:a + n]`` of the first character that breaks a rank run such as
    ``7777`` or ``10JQKA`` (rank-only cards: ranks in either case, ``10``), or -1."""
    cdef Py_ssize_t i = 0
    cdef Py_UCS4 ch
    while i < n:
        ch = _at(kind, data, a + i)
        if ch == 49 and i + 1 < n and _at(kind, data, a + i + 1) == 48:     # "10"
            i += 2
        elif ch < 128 and TOK1[ch]:
            i += 1
        else:
            return i
    return -1


def _run_error(tok, i):
    """The CardError of a rank run ``tok`` broken at character ``i``."""
    up = tok.upper()
    if "SJ" in up or "BJ" in up:
        why = "jokers must be tokens of their own (write '7 SJ', not '7SJ')"
    else:
        why = f"{tok[i]!r} is not a rank (3-9, T/10, J, Q, K, A, 2), suit (S H D C) or joker (SJ, BJ)"
    return CardError(f"invalid card {tok!r}: {why}", "cards")


cdef int run_into(str text, Py_ssize_t a, Py_ssize_t n, int* codes, int m, int cap) except -1:
    """Append the rank run ``text[a:a + n]`` (checked whole first) to ``codes[m:]``."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t i = 0, bad = run_fault(kind, data, a, n)
    cdef Py_UCS4 ch
    if bad >= 0:
        raise _run_error(text[a:a + n], bad)
    while i < n:
        if m >= cap:
            raise CardError(f"too many cards (at most {cap})", "cards")
        ch = _at(kind, data, a + i)
        if ch == 49:            # the run was checked: a "1" starts "10"
            codes[m] = CODE_TEN
            i += 2
        else:
            codes[m] = TOK1[ch]
            i += 1
        m += 1
    return m


cdef int text_into(str text, int* codes, int cap) except -1:
    """Card text (``"7S 7H BJ"``, ``"7777+BJ"``, ``"10h,th"``) into ``codes``: tokens between
    separators, each a table token or else a rank run. Returns the count."""
    cdef int kind = PyUnicode_KIND(text)
    cdef const void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t i = 0, a, size = PyUnicode_GET_LENGTH(text)
    cdef int m = 0, code
    while True:
        while i < size and is_separator(_at(kind, data, i)):
            i += 1
        if i >= size:
            return m
        a = i
        while i < size and not is_separator(_at(kind, data, i)):
            i += 1
        code = segment_code(kind, data, a, i - a)
        if code:
            if m >= cap:
                raise CardError(f"too many cards (at most {cap})", "cards")
            codes[m] = code
            m += 1
        else:
            m = run_into(text, a, i - a, codes, m, cap)


cdef int parse_into(object cards, int* codes, int cap) except -1:
    """Parse text, tokens or codes into ``codes``; returns the count. Raises CardError."""
    cdef int n = 0
    cdef object tok
    cdef const unsigned char[:] buf
    cdef Py_ssize_t i, a, b
    cdef int kind
    cdef const void* data
    if isinstance(cards, str):
        return text_into(cards, codes, cap)
    elif isinstance(cards, memoryview) and (cards.itemsize != 1 or cards.ndim != 1):
        raise CardError("a buffer of card codes must be flat with one byte per card", "cards")
    elif isinstance(cards, (bytes, bytearray, memoryview)):
        buf = cards
        if buf.shape[0] > cap:
            raise CardError(f"too many cards: {buf.shape[0]} (at most {cap})", "cards")
        for i in range(buf.shape[0]):
            if buf[i] < 1 or buf[i] > CODE_BJ or (buf[i] > CODE_LAST_NATURAL and buf[i] != CODE_SJ
                                                 and buf[i] != CODE_BJ):
                raise CardError(f"invalid card code {buf[i]} at position {i}", "cards")
            codes[i] = buf[i]
        return <int>buf.shape[0]
    try:
        cards = iter(cards)
    except TypeError:
        raise CardError(f"cards must be text, a list of cards or a buffer of codes, not "
                        f"{type(cards).__name__}", "cards") from None
    cdef int code1
    cdef long value
    for tok in cards:
        code1 = token_code(tok)
        if code1:
            if n >= cap:
                raise CardError(f"too many cards (at most {cap})", "cards")
            codes[n] = code1
            n += 1
        elif type(tok) is int or (isinstance(tok, int) and not isinstance(tok, bool)):
            try:
                value = tok         # a C integer: the range checks below run in C
            except OverflowError:
                value = -1
            if value < 1 or value > CODE_BJ or (value > CODE_LAST_NATURAL and value != CODE_SJ
                                                and value != CODE_BJ):
                raise CardError(f"invalid card code {tok}", "cards")
            if n >= cap:
                raise CardError(f"too many cards (at most {cap})", "cards")
            codes[n] = value
            n += 1
        elif isinstance(tok, str):
            # one list item is one token: a table token as given, else a rank run (stripped)
            kind = PyUnicode_KIND(tok)
            data = PyUnicode_DATA(tok)
            a = 0
            b = PyUnicode_GET_LENGTH(tok)
            while a < b and Py_UNICODE_ISSPACE(_at(kind, data, a)):
                a += 1
            while b > a and Py_UNICODE_ISSPACE(_at(kind, data, b - 1)):
                b -= 1
            if a == b:
                raise CardError("empty card token", "cards")
            n = run_into(tok, a, b - a, codes, n, cap)
        else:
            raise CardError(f"a card must be a string or an int code, not {type(tok).__name__}", "cards")
    return n


cdef int count_codes(RuleSet rs, const int* codes, int n, u8* counts) except -1:
    """Fill a count vector and check the hand/play is possible in the variant's deck."""
    cdef const Rules* R = &rs.r
    cdef int i, r, s
    cdef u8 faces[76]
    memset(counts, 0, NFACES)
    memset(faces, 0, 76)
    if n > R.hand_size:
        raise CardError(f"{n} cards: a hand holds at most {R.hand_size} in {rs.id}", "cards")
    for i in range(n):
        r = code_rank(codes[i])
        counts[r] += 1
        faces[codes[i]] += 1
    for i in range(n):
        r = code_rank(codes[i])
        s = code_suit(codes[i])
        if r < R.lo:
            raise CardError(f"card {_NAMES[codes[i]]!r}: {rs.id} has no {RANK_CHARS[r]}s "
                            f"(its deck runs {RANK_CHARS[R.lo]}…2)", "cards")
        if r >= 13:
            if counts[r] > R.max_joker:
                raise CardError(f"card {_NAMES[codes[i]]!r}: {counts[r]} copies, the deck has "
                                f"{R.max_joker}", "cards")
        elif counts[r] > R.max_rank:
            raise CardError(f"card {RANK_CHARS[r]!r}: {counts[r]} copies of rank {RANK_CHARS[r]}, "
                            f"the deck has {R.max_rank}", "cards")
        elif s < 4 and faces[codes[i]] > R.max_face:
            raise CardError(f"card {_NAMES[codes[i]]!r}: {faces[codes[i]]} copies, the deck has "
                            f"{R.max_face}", "cards")
    return 0


def parse_cards(cards, variant=None):
    """Parse cards into a list of codes.

    ``cards`` is text (``"7S 7H BJ"``, ``"7777+BJ"``), an iterable of tokens or codes, or a
    bytes-like buffer of codes. With a ``variant`` the cards are also checked against its
    deck. Raises :class:`~shuangkou.core.errors.CardError` naming the offending card.
    """
    cdef int codes[MAXCARDS * 4]
    cdef u8 counts[NFACES]
    cdef int n = parse_into(cards, codes, MAXCARDS * 4)
    if variant is not None:
        count_codes(get_rules(variant), codes, n, counts)
    return [codes[i] for i in range(n)]


def validate_hand(cards, variant):
    """Parse and check a hand against the variant's deck; returns its codes."""
    return parse_cards(cards, variant)


def format_cards(codes):
    """Card codes (or tokens) as text tokens, e.g. ``["7S", "7", "BJ"]``."""
    out = []
    for c in codes:
        if isinstance(c, str):
            out.extend(format_cards(parse_cards(c)))
            continue
        name = _NAMES.get(c)
        if name is None:
            raise CardError(f"invalid card code {c!r}", "cards")
        out.append(name)
    return out


# ----------------------------------------------------------------------------- rules

cdef class RuleSet:
    """A variant compiled to the C form the core reads. Obtain with ``get_rules``."""

    def __init__(self, variant):
        cdef Rules* R = &self.r
        v = _variants.get_variant(variant)
        self.variant = v
        self.id = v.id
        memset(R, 0, sizeof(Rules))
        R.lo = v.lowest_rank
        R.wild_sj = "SJ" in v.wild_jokers
        R.wild_bj = "BJ" in v.wild_jokers
        R.min_y = v.chain_min_links
        R.equal = v.chain_counts == "equal"
        R.phase = _PHASES[v.chain_phase]
        R.wrap = _WRAPS[v.chain_wrap]
        key = v.bomb_key_fields
        R.nkey = len(key)
        for i, f in enumerate(key):
            R.keyfield[i] = _FIELD_IDS[f]
        for kind, tier in v.bomb_tiers.items():
            R.tier[_KIND_INDEX[kind]] = tier
        R.max_rank = v.copies_per_rank
        R.max_face = v.decks
        R.max_joker = v.joker_copies
        R.hand_size = min(v.hand_size, MAXCARDS)
        self.invalid_texts = _invalid_texts(v)

    def __repr__(self):
        return f"RuleSet({self.id!r})"


_BUILTIN_RULES = {vid: RuleSet(v) for vid, v in _variants.BUILTIN.items()}

# Compiled rules of custom variants, kept beside them rather than inside the frozen
# Variant: keyed by the variant's value (Variant is hashable), so the same custom rule set
# rebuilt on every request compiles once. Bounded in entries and in bytes, least recently
# used out first; the last variant looked up is remembered by identity, the common case of
# one variant reused.
RULES_CACHE_SIZE = 256
RULES_CACHE_BYTES = 4 << 20
#: What an entry costs (tracemalloc, tests/test_variants.py): the variant, its compiled
#: rules and settlement tables (~13.4 KB), each table row (~135 bytes), its text.
RULES_ENTRY_BYTES = 14_000
RULES_ROW_BYTES = 140
cdef dict _custom_rules = {}              # variant -> (rules, cost, the variant object kept)
cdef Py_ssize_t _custom_bytes = 0         # the cost of every entry kept
cdef tuple _last_rules = (None, None)     # (variant, rules): one object, swapped atomically
# The same Variant objects come back again and again (the built-ins, a server's house
# variants, a batch alternating between variants): found by identity, a Variant's hash —
# every field — is computed once per object, not once per call. Only the objects the
# value-keyed cache keeps are indexed, and they leave it with them.
cdef dict _rules_by_id = {}


def rules_bytes(v):
    """What a custom variant's entry in the rules cache costs, by the estimate above."""
    rows = len(v.multiplier) + len(v.contribution) + len(v.multi_bomb)
    text = len(v.id) + len(v.name) + len(v.source) + len(v.extends or "")
    return RULES_ENTRY_BYTES + RULES_ROW_BYTES * rows + 4 * text


def rules_cache_bytes():
    """What the custom rule sets kept cost, by :func:`rules_bytes`."""
    return _custom_bytes


cdef RuleSet _custom_rules_for(object variant):
    global _last_rules, _custom_bytes
    cdef tuple last = _last_rules
    cdef tuple entry
    if last[0] is variant:
        return last[1]
    hit = _rules_by_id.get(id(variant))
    if hit is not None and (<tuple>hit)[0] is variant:
        _last_rules = hit
        return (<tuple>hit)[1]
    found = _custom_rules.pop(variant, None)
    if found is None:
        entry = (RuleSet(variant), rules_bytes(variant), variant)
        _custom_bytes += entry[1]
        while _custom_rules and (len(_custom_rules) >= RULES_CACHE_SIZE
                                 or _custom_bytes > RULES_CACHE_BYTES):
            try:
                old = next(iter(_custom_rules))
                gone = _custom_rules.pop(old)
            except (KeyError, RuntimeError, StopIteration):
                continue            # another thread evicted it first
            _custom_bytes -= (<tuple>gone)[1]
            _rules_by_id.pop(id((<tuple>gone)[2]), None)
        if not _custom_rules:
            _custom_bytes = entry[1]      # nothing else kept: no drift survives
    else:
        entry = <tuple>found
    _custom_rules[variant] = entry        # re-inserted: dict order is recency order
    if entry[2] is variant:
        _rules_by_id[id(variant)] = (variant, entry[0])
    _last_rules = (variant, entry[0])
    return entry[0]


cdef RuleSet get_rules(object variant):
    cdef RuleSet rs
    if type(variant) is str:
        rs = _BUILTIN_RULES.get(variant)
        if rs is None:     # a registered house variant's id, or VariantError naming the built-ins
            return _custom_rules_for(_variants.get_variant(variant))
        return rs
    if isinstance(variant, RuleSet):
        return variant
    if isinstance(variant, _variants.Variant):
        return _custom_rules_for(variant)
    raise VariantError(f"variant must be a variant id or Variant, not {type(variant).__name__}",
                       "variant")


def rules_for(variant):
    """The compiled :class:`RuleSet` of a variant id or Variant (cached)."""
    return get_rules(variant)


# ----------------------------------------------------------------------------- time budgets

cdef double monotonic() noexcept nogil:
    """CLOCK_MONOTONIC in seconds: what every time budget of the core is measured by."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef double deadline_after(object timeout) except -1:
    """The monotonic time ``timeout`` seconds from now; 0 for no deadline (None, or a budget
    of 10**9 s and more). A budget of 0 or less is already spent."""
    if timeout is None:
        return 0
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        raise InvalidPlay(f"timeout must be a number of seconds, not {timeout!r}",
                          "timeout") from None
    if seconds != seconds:
        raise InvalidPlay("timeout must be a number of seconds, not NaN", "timeout")
    return monotonic() + max(seconds, 1e-9) if seconds < 1e9 else 0


# ----------------------------------------------------------------------------- classification

# Window masks: WMASK[s][y] = bit set of the ranks of the cyclic window starting at s, y long.
cdef int WMASK[13][14]
for _s in range(13):
    for _y in range(14):
        WMASK[_s][_y] = sum(1 << ((_s + _i) % 13) for _i in range(_y))


cdef inline void set_key(const Rules* R, RD* rd) noexcept nogil:
    """Fill rd.key from the variant's bomb-key fields (§8)."""
    cdef int i, j, f, pos = 0, n
    cdef int rk[13]
    cdef int rc[13]
    cdef int t, tc, k
    for i in range(KEYLEN):
        rd.key[i] = -1
    for i in range(R.nkey):
        f = R.keyfield[i]
        if f == F_STAR:
            rd.key[pos] = rd.star
        elif f == F_TIER:
            rd.key[pos] = R.tier[rd.kind]
        elif f == F_TOP:
            rd.key[pos] = rd.top
        elif f == F_NEG_CARDS:
            rd.key[pos] = -rd.ncards
        elif f == F_CARDS:
            rd.key[pos] = rd.ncards
        elif f == F_NEG_Y:
            rd.key[pos] = -rd.length
        elif f == F_Y:
            rd.key[pos] = rd.length
        elif f == F_WRAP_CLASS:
            rd.key[pos] = rd.wrap_class
        elif f == F_RANK_LIST:
            # the chain's ranks by count desc, then natural rank desc; joker bombs have none
            n = 0
            if rd.kind == K_BOMB or rd.kind == K_CHAIN_BOMB:
                n = rd.length
                for j in range(n):
                    rk[j] = (rd.first + j) % 13
                    rc[j] = rd.cnt[j]
                for j in range(1, n):          # insertion sort, n <= 13
                    t = rk[j]
                    tc = rc[j]
                    k = j - 1
                    while k >= 0 and (rc[k] < tc or (rc[k] == tc and rk[k] < t)):
                        rk[k + 1] = rk[k]
                        rc[k + 1] = rc[k]
                        k -= 1
                    rk[k + 1] = t
                    rc[k + 1] = tc
            for j in range(KEYLEN - pos):
                rd.key[pos + j] = rk[j] if j < n else -1
            return
        pos += 1


cdef inline int key_cmp(const RD* x, const RD* y) noexcept nogil:
    cdef int i
    for i in range(KEYLEN):
        if x.key[i] != y.key[i]:
            return 1 if x.key[i] > y.key[i] else -1
    return 0


cdef inline int is_bomb_kind(int kind) noexcept nogil:
    return kind >= K_BOMB


cdef int rd_beats(const RD* b, const RD* a) noexcept nogil:
    """§8: does reading b, played on top of a, beat it?"""
    if is_bomb_kind(a.kind):
        return is_bomb_kind(b.kind) and key_cmp(b, a) > 0
    if is_bomb_kind(b.kind):
        return 1
    return b.kind == a.kind and b.ncards == a.ncards and b.top > a.top


cdef inline int order_cmp(const RD* x, const RD* y) noexcept nogil:
    """§7 rule 2 order: >0 when x comes first (bombs strongest first, then by type, top)."""
    cdef int c
    cdef int bx = is_bomb_kind(x.kind), by = is_bomb_kind(y.kind)
    if bx != by:
        return 1 if bx else -1
    if bx:
        c = key_cmp(x, y)
        if c:
            return c
        # equal strength, different kinds: N-bomb before chain bomb
        return (y.kind > x.kind) - (y.kind < x.kind)
    if x.kind != y.kind:    # kinds are numbered single < pair < … < triple chain
        return 1 if x.kind > y.kind else -1
    return (x.top > y.top) - (x.top < y.top)


cdef inline void init_rd(RD* rd, int kind, int ncards) noexcept nogil:
    memset(rd, 0, sizeof(RD))
    rd.kind = kind
    rd.ncards = ncards
    rd.wrap_class = 2
    rd.length = 1


cdef int add_window_reading(const Rules* R, const u8* c, RD* out, int n, int cap,
                            int kind, int width, int s, int L, int total) noexcept nogil:
    """Ordinary chain (straight/pair chain/triple chain) on window s..s+L-1."""
    cdef RD* rd
    cdef int i, r, k
    if n >= cap:
        return n
    rd = &out[n]
    init_rd(rd, kind, total)
    rd.first = s
    rd.top = s + L - 1
    rd.length = L
    for i in range(L):
        r = s + i
        rd.cnt[i] = width
        for k in range(width - c[r]):
            rd.wild[rd.nwild] = r
            rd.nwild += 1
    return n + 1


cdef int add_chain_bomb(const Rules* R, RD* out, int n, int cap, int nchain_start,
                        int s, int Y, const int* k, const u8* c, int total) noexcept nogil:
    """Chain bomb on cyclic window s (Y links) with per-link counts k; dedup by key."""
    cdef RD* rd
    cdef int i, j, r, mx = 0, mn = 99, last
    if n >= cap:
        return n
    rd = &out[n]
    init_rd(rd, K_CHAIN_BOMB, total)
    rd.first = s
    rd.length = Y
    last = s + Y - 1
    rd.top = last % 13
    rd.wrap_class = 0 if last >= 13 else (1 if last == 12 else 2)
    rd.regular = 1
    for i in range(Y):
        r = (s + i) % 13
        rd.cnt[i] = k[i]
        if k[i] > mx:
            mx = k[i]
        if k[i] < mn:
            mn = k[i]
        if k[i] != k[0]:
            rd.regular = 0
        for j in range(k[i] - c[r]):
            rd.wild[rd.nwild] = r
            rd.nwild += 1
    rd.phase = mx if R.phase == PHASE_LARGEST else mn
    rd.star = rd.phase + Y
    set_key(R, rd)
    for i in range(nchain_start, n):
        if key_cmp(&out[i], rd) == 0:
            # same (kind, strength): report the lowest placement (§7 rule 2)
            if wilds_cmp(rd, &out[i]) < 0:
                out[i] = rd[0]
            return n
    return n + 1


cdef void sort_ints(int* a, int n) noexcept nogil:
    """Insertion sort, ascending: the arrays sorted here hold a handful of items."""
    cdef int i, j, x
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


cdef int wilds_cmp(const RD* x, const RD* y) noexcept nogil:
    """Compare two placements of the same wilds: their natural ranks, sorted ascending."""
    cdef int a[8]
    cdef int b[8]
    cdef int i
    for i in range(x.nwild):
        a[i] = x.wild[i]
        b[i] = y.wild[i]
    sort_ints(a, x.nwild)
    sort_ints(b, x.nwild)
    for i in range(x.nwild):
        if a[i] != b[i]:
            return -1 if a[i] < b[i] else 1
    return 0


cdef int chain_bombs(const Rules* R, const u8* c, int nat_mask, int w, int total,
                     RD* out, int n, int cap) noexcept nogil:
    """Every chain-bomb reading (§6): windows covering all naturals, links ≥ 4 cards."""
    cdef int s, Y, i, r, need, spare, maxc, maxY, smax, start = n
    cdef int base[13]
    cdef int k[13]
    cdef int idx[8]
    cdef int K, j, pos
    maxY = total // 4
    if maxY > 13:
        maxY = 13
    smax = 11
    for s in range(R.lo, smax + 1):
        for Y in range(R.min_y, maxY + 1):
            if R.wrap == WRAP_NONE and s + Y - 1 > 11:
                break
            if Y > 12:
                break
            if nat_mask & ~WMASK[s][Y]:
                continue
            need = 0
            maxc = 0
            for i in range(Y):
                r = (s + i) % 13
                base[i] = c[r] if c[r] > 4 else 4
                need += base[i] - c[r]
                if c[r] > maxc:
                    maxc = c[r]
            if need > w:
                continue
            spare = w - need
            if R.equal:
                if total % Y:
                    continue
                K = total // Y
                if K < 4 or K < maxc:
                    continue
                for i in range(Y):
                    k[i] = K
                n = add_chain_bomb(R, out, n, cap, start, s, Y, k, c, total)
                continue
            # Distribute the spare wilds (≤ 4) over the links, every multiset of links once.
            for i in range(spare):
                idx[i] = 0
            while True:
                for i in range(Y):
                    k[i] = base[i]
                for i in range(spare):
                    k[idx[i]] += 1
                n = add_chain_bomb(R, out, n, cap, start, s, Y, k, c, total)
                # next multiset (non-decreasing idx)
                pos = spare - 1
                while pos >= 0 and idx[pos] == Y - 1:
                    pos -= 1
                if pos < 0:
                    break
                idx[pos] += 1
                for j in range(pos + 1, spare):
                    idx[j] = idx[pos]
    return n


cdef int classify_counts(const Rules* R, const u8* c, RD* out, int cap) noexcept nogil:
    """All readings of a count vector, sorted in §7 rule-2 order. 0 = no reading."""
    cdef int nat = 0, w, total, minr = 99, maxr = -1, maxc = 0, nd = 0, mask = 0
    cdef int r, n = 0, width, L, s, smin, smax, kind, i, j
    cdef int sj = c[SJ], bj = c[BJ]
    cdef RD tmp
    for r in range(NRANKS):
        if c[r]:
            nat += c[r]
            nd += 1
            mask |= 1 << r
            if r < minr:
                minr = r
            maxr = r
            if c[r] > maxc:
                maxc = c[r]
    total = nat + sj + bj
    if total == 0:
        return 0
    if nat == 0:
        # all jokers: read naturally (§4)
        if total == 1:
            init_rd(&out[0], K_SINGLE, 1)
            out[0].top = SJ if sj else BJ
            out[0].first = out[0].top
        elif total == 2:
            if sj == 1:
                return 0            # SJ BJ is not a pair
            init_rd(&out[0], K_PAIR, 2)
            out[0].top = SJ if sj else BJ
            out[0].first = out[0].top
        elif total == 3 or total == 4:
            init_rd(&out[0], K_JOKER_BOMB_3 if total == 3 else K_JOKER_BOMB_4, total)
            out[0].star = 6 if total == 3 else 7
            out[0].top = BJ
            out[0].first = BJ
            out[0].regular = 1
            set_key(R, &out[0])
        else:
            return 0
        return 1
    if (sj and not R.wild_sj) or (bj and not R.wild_bj):
        return 0                    # a non-wild joker cannot join naturals
    w = sj + bj
    # one natural rank: single, pair, triple, N-bomb
    if nd == 1:
        kind = -1
        if total == 1:
            kind = K_SINGLE
        elif total == 2:
            kind = K_PAIR
        elif total == 3:
            kind = K_TRIPLE
        else:
            kind = K_BOMB
        init_rd(&out[n], kind, total)
        out[n].top = minr
        out[n].first = minr
        out[n].cnt[0] = total
        for i in range(w):
            out[n].wild[i] = minr
        out[n].nwild = w
        if kind == K_BOMB:
            out[n].star = total
            out[n].phase = total
            out[n].regular = 1
            set_key(R, &out[n])
        n += 1
    # ordinary chains (§5): never hold a 2, never wrap
    if c[12] == 0:
        for width in range(1, 4):
            if total % width or maxc > width:
                continue
            L = total // width
            if L < (5 if width == 1 else 3):
                continue
            smin = maxr - L + 1
            if smin < R.lo:
                smin = R.lo
            smax = 11 - L + 1
            if smax > minr:
                smax = minr
            kind = K_STRAIGHT if width == 1 else (K_PAIR_CHAIN if width == 2 else K_TRIPLE_CHAIN)
            for s in range(smin, smax + 1):
                n = add_window_reading(R, c, out, n, cap, kind, width, s, L, total)
    # chain bombs
    if total >= 4 * R.min_y:
        n = chain_bombs(R, c, mask, w, total, out, n, cap)
    # sort in §7 rule-2 order (insertion sort: few readings)
    for i in range(1, n):
        tmp = out[i]
        j = i - 1
        while j >= 0 and order_cmp(&tmp, &out[j]) > 0:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = tmp
    return n


# ----------------------------------------------------------------------------- Python objects

cdef class Reading:
    """One reading of a play (§7): its type, strength and what the wilds stand for.

    Readings compare only within one variant; use :func:`beats` to compare them.
    """
    # fields in _core.pxd: rd (the C reading), rules

    @property
    def kind(self):
        """Type name: single, pair, triple, straight, pair_chain, triple_chain, bomb,
        joker_bomb_3, joker_bomb_4 or chain_bomb."""
        return KINDS[self.rd.kind]

    @property
    def variant(self):
        return self.rules.id

    @property
    def cards(self):
        """Number of cards."""
        return self.rd.ncards

    @property
    def top(self):
        """Top rank position (last rank in chain order; 13 = SJ, 14 = BJ)."""
        return self.rd.top

    @property
    def top_rank(self):
        """Top rank as a character (``"9"``, ``"A"``, ``"SJ"``)."""
        return rank_name(self.rd.top)

    @property
    def length(self):
        """Ranks in the pattern: links of a chain, 1 for sets of one rank."""
        return self.rd.length

    @property
    def star(self):
        """Bomb star (0 for ordinary plays)."""
        return self.rd.star

    @property
    def phase(self):
        """X of a bomb: N for an N-bomb, the chain's X for a chain bomb; 0 otherwise."""
        return self.rd.phase

    @property
    def links(self):
        """Y of a chain bomb (1 for an N-bomb, 0 for ordinary plays and joker bombs)."""
        if self.rd.kind == K_CHAIN_BOMB or self.rd.kind == K_BOMB:
            return self.rd.length
        return 0

    @property
    def regular(self):
        """True for bombs with equal counts per rank (every bomb but an irregular chain)."""
        return bool(self.rd.regular)

    @property
    def wrap_class(self):
        """0: chain through 2 into 3 (A23…); 1: chain ending at 2 (…KA2); 2: no wrap."""
        return self.rd.wrap_class

    @property
    def is_bomb(self):
        return self.rd.kind >= K_BOMB

    @property
    def ranks(self):
        """The pattern as ``((rank, count), ...)`` in chain order (empty for joker bombs)."""
        cdef int i
        if self.rd.kind in (K_JOKER_BOMB_3, K_JOKER_BOMB_4) or self.rd.top >= 13:
            return ()
        return tuple(((self.rd.first + i) % 13, self.rd.cnt[i]) for i in range(self.rd.length))

    @property
    def wilds(self):
        """Rank positions the wild jokers stand for (lowest placement, chain order)."""
        return tuple(self.rd.wild[i] for i in range(self.rd.nwild))

    @property
    def key(self):
        """The §8 bomb key (empty for ordinary plays); larger beats smaller."""
        cdef int i, n = self.rules.r.nkey
        if self.rd.kind < K_BOMB:
            return ()
        if self.rules.r.keyfield[n - 1] == F_RANK_LIST:   # variable length, padded with -1
            while n < KEYLEN and self.rd.key[n] != -1:
                n += 1
            if self.rd.key[n - 1] == -1:
                n -= 1
        return tuple(self.rd.key[i] for i in range(n))

    @property
    def declaration(self):
        """The :class:`~shuangkou.core.declaration.Declaration` that names exactly this reading
        among the readings of its cards (kind, top, star and the wild ranks)."""
        return Declaration(KINDS[self.rd.kind], self.rd.top, self.rd.star, self.wilds)

    def beats(self, other):
        """Does this reading, played on top of ``other`` (a Reading), beat it (§8)?"""
        cdef Reading o = other
        _same_variant(self.rules, o.rules)
        return bool(rd_beats(&self.rd, &o.rd))

    def describe(self):
        """Human-readable form, e.g. ``straight 4-9 (wild as 9)``."""
        kind = KINDS[self.rd.kind]
        if self.rd.kind in (K_JOKER_BOMB_3, K_JOKER_BOMB_4):
            text = f"{kind} ({self.rd.star} stars)"
        elif self.rd.top >= 13:
            text = f"{kind} " + " ".join([rank_name(self.rd.top)] * self.rd.ncards)
        else:
            parts = "".join(rank_name(r) * cnt if self.rd.kind < K_BOMB else
                            f" {rank_name(r) * cnt}" for r, cnt in self.ranks).strip()
            text = f"{kind} {parts}"
            if self.rd.kind >= K_BOMB:
                text += f" ({self.rd.star} stars)"
        if self.rd.nwild:
            text += " (wild as " + " ".join(rank_name(r) for r in self.wilds) + ")"
        return text

    def to_dict(self):
        """Plain data (JSON-able)."""
        return {"kind": self.kind, "cards": self.cards, "top": self.top,
                "top_rank": self.top_rank, "length": self.length, "star": self.star,
                "phase": self.phase, "links": self.links, "regular": self.regular,
                "wrap_class": self.wrap_class, "is_bomb": self.is_bomb,
                "ranks": [[r, k] for r, k in self.ranks], "wilds": list(self.wilds),
                "key": list(self.key), "text": self.describe()}

    def __eq__(self, other):
        if not isinstance(other, Reading):
            return NotImplemented
        return self._ident() == (<Reading>other)._ident()

    def __hash__(self):
        return hash(self._ident())

    def _ident(self):
        return (self.rules.id, self.rd.kind, self.rd.ncards, self.rd.top, self.key,
                self.ranks)

    @property
    def packed(self):
        """The reading's C form as bytes: readings of one rule set that are the same in
        every field (wild placement included) give the same bytes — a cheap key for
        caching what is derived from a reading (the service's reply messages)."""
        return (<char*>&self.rd)[:sizeof(RD)]

    def __repr__(self):
        return f"<Reading {self.describe()}>"


cdef object make_reading(const RD* rd, RuleSet rs):
    cdef Reading x = Reading.__new__(Reading)
    x.rd = rd[0]
    x.rules = rs
    return x


cdef _same_variant(RuleSet a, RuleSet b):
    if a is not b and a.id != b.id:
        raise VariantError(f"cannot compare a {a.id} reading with a {b.id} reading", "variant")


cdef class Classification:
    """Every reading of a play (§7), in rule-2 order; ``primary`` is the first."""

    def __dealloc__(self):
        free(self.rd)

    @property
    def cards(self):
        """The card codes of the play, as given (built on first access)."""
        cdef int i
        if self._cards is None:
            self._cards = tuple([self.codes[i] for i in range(self.ncodes)])
        return self._cards

    @property
    def readings(self):
        """All readings, bombs strongest first, then triple chain … single, highest top first."""
        cdef int i
        if self._readings is None:
            self._readings = tuple(make_reading(&self.rd[i], self.rules) for i in range(self.n))
        return self._readings

    @property
    def primary(self):
        """The reading used when nothing is declared (§7 rule 2)."""
        return make_reading(&self.rd[0], self.rules)

    @property
    def kind(self):
        """The primary reading's type."""
        return KINDS[self.rd[0].kind]

    @property
    def star(self):
        """The primary reading's star (0 when it is not a bomb)."""
        return self.rd[0].star

    @property
    def variant(self):
        return self.rules.id

    def __len__(self):
        return self.n

    def __iter__(self):
        return iter(self.readings)

    def reading(self, kind=None, top=None, star=None, wilds=None):
        """The strongest reading that matches (unset parts match any), or None.

        ``kind`` may also be a :class:`~shuangkou.core.declaration.Declaration`.
        """
        cdef Decl d
        cdef int i
        if isinstance(kind, tuple):
            if top is not None or star is not None or wilds is not None:
                raise InvalidPlay("give either a Declaration or kind/top/star/wilds", "declare")
            _parse_decl(kind, None, &d)
        else:
            _parse_decl(Declaration(kind, top, star, wilds), None, &d)
        for i in range(self.n):
            if decl_match(&self.rd[i], &d):
                return make_reading(&self.rd[i], self.rules)
        return None

    def to_dict(self):
        return {"variant": self.rules.id, "cards": format_cards(self.cards),
                "primary": self.primary.to_dict(),
                "readings": [r.to_dict() for r in self.readings]}

    def __repr__(self):
        return f"<Classification {' '.join(format_cards(self.cards))}: {self.primary.describe()}" + \
            (f" (+{self.n - 1} more)>" if self.n > 1 else ">")


#: Where a declaration's parts are reported (declaration.check_parts checks their form).
_DECL_FIELDS = ("declare_top", "declare.star", "declare.wilds")


def _rank_pos(value, field, what):
    """A declared rank, of the form ``check_parts`` accepts: a rank name (``"9"``, ``"10"``,
    ``"SJ"``) read here, or a position 0–14."""
    if type(value) is not str:
        return value
    pos = rank_position(value)
    if pos is None:
        raise InvalidPlay(f"declared {what} {value!r} is not a rank (3…A, 2, SJ, BJ or a "
                          f"position 0–14)", field)
    return pos


def _top_pos(top):
    """A declared top rank: a rank character (``"9"``, ``"10"``, ``"SJ"``) or position 0–14."""
    check_parts(top, None, None, _DECL_FIELDS, InvalidPlay)
    return _rank_pos(top, "declare_top", "top")


def _declared_kind(declare):
    """Index of a declared play type; InvalidPlay naming the field otherwise."""
    kind = _KIND_INDEX.get(declare) if isinstance(declare, str) else None
    if kind is None:
        raise InvalidPlay(f"unknown play type {declare!r}; types are {', '.join(KINDS)}",
                          "declare")
    return kind


cdef int _parse_decl(object declare, object declare_top, Decl* d) except -1:
    """Fill ``d`` from a declaration: a kind name (with ``declare_top``) or a Declaration.

    Unset parts are -1 (match anything). Returns 1 when something was declared, else 0.
    A Declaration's ``kind`` may be None: then readings of any kind match.
    """
    cdef int i
    d.kind = d.top = d.star = d.nwild = -1
    if declare is None:
        return 0
    if isinstance(declare, str):
        d.kind = _declared_kind(declare)
        if declare_top is not None:
            d.top = _top_pos(declare_top)
        return 1
    if not isinstance(declare, tuple):
        raise InvalidPlay(f"a declaration is a play type or a Declaration, not "
                          f"{type(declare).__name__}", "declare")
    try:
        decl = declare if isinstance(declare, Declaration) else Declaration(*declare)
    except TypeError:
        raise InvalidPlay(f"a declaration is (kind, top, star, wilds), not {declare!r}",
                          "declare") from None
    if decl.kind is not None:
        d.kind = _declared_kind(decl.kind)
    top = decl.top if decl.top is not None else declare_top
    if decl.top is not None and declare_top is not None:
        raise InvalidPlay("the top is declared twice (in the Declaration and as declare_top)",
                          "declare_top")
    check_parts(top, decl.star, decl.wilds, _DECL_FIELDS, InvalidPlay)
    if top is not None:
        d.top = _rank_pos(top, "declare_top", "top")
    if decl.star is not None:
        d.star = decl.star
    if decl.wilds is not None:
        d.nwild = len(decl.wilds)
        for i in range(d.nwild):
            d.wild[i] = _rank_pos(decl.wilds[i], "declare.wilds", "wild rank")
        sort_ints(d.wild, d.nwild)
    return 1


cdef int decl_match(const RD* rd, const Decl* d) noexcept nogil:
    """Does reading ``rd`` match declaration ``d`` (unset parts match anything)?"""
    cdef int w[8]
    cdef int i
    if (d.kind >= 0 and rd.kind != d.kind) or (d.top >= 0 and rd.top != d.top) or \
            (d.star >= 0 and rd.star != d.star):
        return 0
    if d.nwild >= 0:
        if rd.nwild != d.nwild:
            return 0
        for i in range(rd.nwild):
            w[i] = rd.wild[i]
        sort_ints(w, rd.nwild)
        for i in range(rd.nwild):
            if w[i] != d.wild[i]:
                return 0
    return 1


cdef str _decl_text(const Decl* d):
    """A declaration in words, for error messages: ``chain_bomb with top 9, 10 stars``."""
    parts = []
    if d.top >= 0:
        parts.append(f"top {rank_name(d.top)}")
    if d.star >= 0:
        parts.append(f"{d.star} stars")
    if d.nwild == 0:
        parts.append("no wilds")
    elif d.nwild > 0:
        parts.append("wild as " + " ".join(rank_name(d.wild[i]) for i in range(d.nwild)))
    kind = KINDS[d.kind] if d.kind >= 0 else "a reading"
    return kind + (" with " + ", ".join(parts) if parts else "")


cdef Classification _classify(object cards, RuleSet rs):
    res = _classified(cards, rs)
    if type(res) is not Classification:
        raise res
    return <Classification>res


cdef object _classified(object cards, RuleSet rs):
    """The Classification of ``cards``, or the InvalidPlay to raise when they form no play
    (returned, not raised: the caller raises it once, from its own frame, so refusing a
    play builds one traceback entry rather than one per compiled function it went through).
    Readings are built on the stack (~35 KB): no shared buffer, so calls on several threads,
    with or without the GIL, never see each other's work."""
    cdef RD scratch[MAXREAD]
    cdef int codes[MAXCARDS]
    cdef u8 counts[NFACES]
    cdef int n = parse_into(cards, codes, MAXCARDS)
    cdef int nr, i
    cdef Classification res
    count_codes(rs, codes, n, counts)
    nr = classify_counts(&rs.r, counts, scratch, MAXREAD)
    if nr <= 0:
        return _invalid_play(rs, counts, n)
    res = Classification.__new__(Classification)
    res.rd = <RD*>malloc(nr * sizeof(RD))
    if res.rd == NULL:
        raise MemoryError()
    memcpy(res.rd, scratch, nr * sizeof(RD))
    res.n = nr
    res.rules = rs
    for i in range(n):
        res.codes[i] = codes[i]
    res.ncodes = n
    return res


def classify(cards, variant="baibian", declare=None):
    """Every reading of a set of cards under a variant (§7).

    ``cards``: text, tokens or codes (see :func:`parse_cards`). Returns a
    :class:`Classification` whose ``primary`` is the rule-2 reading. With ``declare`` (a
    kind name or a :class:`~shuangkou.core.declaration.Declaration`), only the readings that
    match it are returned, strongest first.
    Raises :class:`~shuangkou.core.errors.CardError` for malformed or impossible cards,
    :class:`~shuangkou.core.errors.InvalidPlay` (with a reason) when no reading exists and
    :class:`~shuangkou.core.errors.IllegalPlay` when no reading matches the declaration.
    """
    cdef Decl d
    cdef Classification res
    cdef int i, m = 0
    got = _classified(cards, get_rules(variant))
    if type(got) is not Classification:
        raise got
    res = got
    if _parse_decl(declare, None, &d):
        for i in range(res.n):
            if decl_match(&res.rd[i], &d):
                res.rd[m] = res.rd[i]
                m += 1
        if m == 0:
            raise _no_such_reading(res, &d)
        res.n = m
    return res


cdef object _no_such_reading(Classification c, const Decl* d):
    """The IllegalPlay for a declaration that names no reading of the play."""
    return IllegalPlay(f"{' '.join(format_cards(c.cards))} cannot be read as {_decl_text(d)}; "
                       f"it reads as {c.primary.describe()}", "declare")


cdef int _primary_of(object x, RuleSet rs, RD* out) except -1:
    """Standing reading of a play given as Reading, Classification or cards."""
    cdef Classification c
    if isinstance(x, Reading):
        reading_rd(x, rs, out)
    elif isinstance(x, Classification):
        c = x
        _same_variant(c.rules, rs)
        out[0] = c.rd[0]
    else:
        c = _classify(x, rs)
        out[0] = c.rd[0]
    return 0


def beats(b, a, variant="baibian"):
    """Does play ``b``, played on top of ``a``, beat it (§8, §7 rule 5)?

    ``a`` is the play standing on the table: a :class:`Reading`, or cards/a Classification
    (then its primary reading stands). ``b`` may be a Reading (that reading only) or
    cards/a Classification: it beats when **any** of its readings beats ``a``.
    """
    cdef RuleSet rs = get_rules(variant)
    cdef RD ra
    cdef Classification cb
    cdef int i
    _primary_of(a, rs, &ra)
    if isinstance(b, Reading):
        _same_variant((<Reading>b).rules, rs)
        return bool(rd_beats(&(<Reading>b).rd, &ra))
    cb = b if isinstance(b, Classification) else _classify(b, rs)
    _same_variant(cb.rules, rs)
    for i in range(cb.n):
        if rd_beats(&cb.rd[i], &ra):
            return True
    return False


def play_reading(cards, variant="baibian", to_beat=None, declare=None, declare_top=None):
    """The reading that stands on the table after playing ``cards`` (§7 rules 4–6).

    ``declare`` is a kind name (narrowed by ``declare_top``) or a
    :class:`~shuangkou.core.declaration.Declaration`. Leading (``to_beat`` None): the first
    reading in rule-2 order that matches the declaration, else the primary. Following: the
    first matching reading that beats; without a declaration the primary if it beats, else
    the first reading in rule-2 order that beats.
    Raises :class:`~shuangkou.core.errors.IllegalPlay` when nothing qualifies.
    """
    cdef RuleSet rs = get_rules(variant)
    cdef Classification c = _classify(cards, rs)
    cdef Decl d
    cdef RD ra
    cdef int i
    _parse_decl(declare, declare_top, &d)
    if to_beat is not None:
        _primary_of(to_beat, rs, &ra)
    i = _standing(c, &d, &ra if to_beat is not None else NULL)
    if i >= 0:
        return make_reading(&c.rd[i], rs)
    if _first_match(c, &d) < 0:
        raise _no_such_reading(c, &d)
    raise IllegalPlay(f"{' '.join(format_cards(c.cards))} ({c.primary.describe()}) does not beat "
                      f"{make_reading(&ra, rs).describe()}", "cards")


cdef int _first_match(Classification c, const Decl* d) noexcept:
    """Index of the first reading (rule-2 order) matching ``d``; -1 if none."""
    cdef int i
    for i in range(c.n):
        if decl_match(&c.rd[i], d):
            return i
    return -1


cdef int _standing(Classification c, const Decl* d, const RD* ra) noexcept:
    """§7 rule 6: index of the reading that stands (the first matching reading that beats
    ``ra``, or the first matching one when ``ra`` is NULL); -1 if none."""
    cdef int i
    for i in range(c.n):
        if decl_match(&c.rd[i], d) and (ra == NULL or rd_beats(&c.rd[i], ra)):
            return i
    return -1


def compare(play, current, variant="baibian", *, declare=None, current_declare=None):
    """Does ``play``, played on top of ``current``, beat it (§7 rules 4–6, §8)?

    ``current`` is the play on the table: cards (its declared reading with
    ``current_declare``, else its primary stands) or a :class:`Reading`. ``play`` is cards
    or a :class:`Classification` (``declare`` narrows its readings), or a :class:`Reading`
    (that reading only). Returns a
    :class:`~shuangkou.core.records.Comparison` whose ``play`` is the reading that would stand if
    it beats (§7 rule 6), else the first reading matching the declaration (the primary
    without one). Raises :class:`~shuangkou.core.errors.IllegalPlay` when a declared reading
    does not exist, :class:`~shuangkou.core.errors.InvalidPlay` / ``CardError`` for bad cards.
    """
    cdef RuleSet rs = get_rules(variant)
    cdef Decl dc, dp
    cdef RD ra
    cdef Classification cc, cp
    cdef int i
    if isinstance(current, Reading):
        if current_declare is not None:
            raise InvalidPlay("current is a Reading: it is already the declared reading",
                              "current_declare")
        reading_rd(current, rs, &ra)
    else:
        cc = current if isinstance(current, Classification) else _classify(current, rs)
        _same_variant(cc.rules, rs)
        _parse_decl(current_declare, None, &dc)
        i = _first_match(cc, &dc)
        if i < 0:
            exc = _no_such_reading(cc, &dc)
            exc.field = "current_declare"
            raise exc
        ra = cc.rd[i]
    if isinstance(play, Reading):
        if declare is not None:
            raise InvalidPlay("play is a Reading: it is already the declared reading", "declare")
        _same_variant((<Reading>play).rules, rs)
        return Comparison(bool(rd_beats(&(<Reading>play).rd, &ra)), make_reading(&ra, rs), play)
    cp = play if isinstance(play, Classification) else _classify(play, rs)
    _same_variant(cp.rules, rs)
    _parse_decl(declare, None, &dp)
    i = _standing(cp, &dp, &ra)
    beats = i >= 0
    if not beats:
        i = _first_match(cp, &dp)
        if i < 0:
            raise _no_such_reading(cp, &dp)
    return Comparison(beats, make_reading(&ra, rs), make_reading(&cp.rd[i], rs))


# ----------------------------------------------------------------------------- batch

# A batch with a time budget looks at the clock whenever the plays classified since the last
# look may have cost about a microsecond: a play's work grows with its cards and, steeply,
# with its wilds (a chain bomb distributes its spare wilds), so each counts cards × (1 +
# wilds)² units. Built-in plays of ≤ 10 cards look every ~100 plays; 40 cards with 8 wilds,
# every play.
cdef enum:
    BATCH_CLOCK_UNITS = 1024


def classify_batch(codes, lengths, variant="baibian", *, timeout=None):
    """Classify many plays in one call.

    ``codes``: a bytes-like buffer of card codes (uint8), the plays back to back;
    ``lengths``: the number of cards of each play (any integer sequence or buffer).
    Returns a :class:`~shuangkou.core.records.BatchResult`: ``array`` columns, one entry per
    play — ``kind`` (index into :data:`KINDS`, 255 = invalid or impossible cards), ``top``,
    ``star``, ``cards``, ``readings`` (how many readings) — and ``errors``, for each
    invalid play the exception :func:`classify` raises for it. Invalid plays do not stop
    the batch.

    ``timeout`` (seconds) bounds the time: the batch stops after the play during which it
    ran out, and the result covers the plays done so far (``plays`` fewer than given; call
    again with the rest). Whatever the plays cost, the work stops within about a
    microsecond plus one play of the budget.
    """
    cdef RuleSet rs = get_rules(variant)
    cdef const unsigned char[:] buf
    cdef Py_ssize_t nplays, i, off = 0, total = 0, done
    cdef int j, n, nr, bad, r, s
    cdef double deadline = deadline_after(timeout)
    cdef long long units = 0
    cdef u8 counts[NFACES]
    cdef u8 faces[76]
    cdef RD scratch[MAXREAD]
    cdef const Rules* R = &rs.r
    try:
        buf = memoryview(codes).cast("B") if isinstance(codes, memoryview) else codes
    except (TypeError, ValueError):
        buf = None
    if buf is None or not isinstance(codes, (bytes, bytearray, memoryview)) or buf.ndim != 1:
        raise CardError("codes must be a flat bytes-like buffer of one-byte card codes", "codes")
    try:
        lens = array("i", lengths)
    except (TypeError, OverflowError, ValueError):
        raise CardError("lengths must be non-negative integers below 2**31", "lengths") from None
    nplays = len(lens)
    cdef int[:] lv = lens
    for i in range(nplays):
        if lv[i] < 0:
            raise CardError(f"lengths[{i}] is negative", "lengths")
        total += lv[i]
    if total != buf.shape[0]:
        raise CardError(f"lengths add up to {total} cards but the buffer holds {buf.shape[0]}",
                        "lengths")
    kind = array("B", bytes(nplays))
    top = array("B", bytes(nplays))
    star = array("B", bytes(nplays))
    ncards = array("B", bytes(nplays))
    nread = array("H", bytes(2 * nplays))
    cdef unsigned char[:] kv = kind, tv = top, sv = star, cv = ncards
    cdef unsigned short[:] rv = nread
    done = nplays
    with nogil:
        for i in range(nplays):
            if deadline > 0 and units >= BATCH_CLOCK_UNITS:
                units = 0
                if monotonic() > deadline:
                    done = i
                    break
            n = lv[i]
            bad = n == 0 or n > R.hand_size
            memset(counts, 0, NFACES)
            memset(faces, 0, 76)
            for j in range(n if not bad else 0):
                s = buf[off + j]
                if s < 1 or s > CODE_BJ or (s > CODE_LAST_NATURAL and s != CODE_SJ and s != CODE_BJ):
                    bad = 1
                    break
                r = code_rank(s)
                counts[r] += 1
                faces[s] += 1
                if r < R.lo or (r >= 13 and counts[r] > R.max_joker) or \
                        (r < 13 and counts[r] > R.max_rank) or \
                        (r < 13 and code_suit(s) < 4 and faces[s] > R.max_face):
                    bad = 1
                    break
            off += n
            units += n * (1 + counts[SJ] + counts[BJ]) * (1 + counts[SJ] + counts[BJ])
            nr = 0 if bad else classify_counts(R, counts, scratch, MAXREAD)
            if nr <= 0:
                kv[i] = 255
                # the invalid play's reason, for its error: its Why (or the jokers' count
                # past NWHY), IMPOSSIBLE for cards the deck check refused
                rv[i] = W_NO_CARDS if n == 0 else IMPOSSIBLE if bad else batch_reason(
                    invalid_why(R, counts, n), n)
                continue
            kv[i] = scratch[0].kind
            tv[i] = scratch[0].top
            sv[i] = scratch[0].star
            cv[i] = scratch[0].ncards
            rv[i] = nr
    errors = _batch_errors(codes, lens, kv[:done], rv[:done], rs)
    if done < nplays:       # out of time: the plays done so far
        kind, top, star, ncards, nread = (kind[:done], top[:done], star[:done], ncards[:done],
                                          nread[:done])
    return BatchResult(kind, top, star, ncards, nread, errors)


# An invalid batch play's reason, kept in its readings count until the errors are built: a
# Why, NWHY + n for n jokers (their sentence names how many), or IMPOSSIBLE when the cards
# fail the deck check (each built from its cards: the message names the card).
cdef enum:
    IMPOSSIBLE = 0xFFFF


cdef inline unsigned short batch_reason(int why, int n) noexcept nogil:
    return why if why >= 0 else NWHY + n


cdef object _batch_errors(object codes, object lens, unsigned char[:] kv, unsigned short[:] rv,
                          RuleSet rs):
    """The batch's errors mapping: which plays are invalid (kind 255), each one's reason
    (from ``rv``, which then gets its readings count 0), and how to build its exception
    later, from a private copy of its cards."""
    cdef Py_ssize_t i, k = 0, off = 0, nbad = 0, nplays = kv.shape[0]
    cdef int[:] lv = lens
    for i in range(nplays):
        nbad += kv[i] == 255
    if nbad == 0:
        return BatchErrors(array("q"))
    indexes = array("q", bytes(8 * nbad))
    offsets = array("q", bytes(8 * nbad))
    reasons = array("H", bytes(2 * nbad))
    cdef long long[:] iv = indexes, ov = offsets
    cdef unsigned short[:] wv = reasons
    for i in range(nplays):
        if kv[i] == 255:
            iv[k] = i
            ov[k] = off
            wv[k] = rv[i]
            k += 1
            rv[i] = 0
        off += lv[i]
    # bytes are immutable: a caller's bytearray changed later cannot change the errors
    raw = codes if type(codes) is bytes else bytes(memoryview(codes).cast("B"))
    return BatchErrors(indexes, _BatchPlays(raw, indexes, offsets, reasons, lens, rs))


cdef class _BatchPlays:
    """The invalid plays of one batch, for :class:`~shuangkou.core.records.BatchErrors`:
    called with a position among them, it returns that play's exception; :meth:`grouped`
    groups them by exception."""
    cdef bytes raw
    cdef object indexes, offsets, reasons, lens
    cdef RuleSet rs

    def __cinit__(self, bytes raw, indexes, offsets, reasons, lens, RuleSet rs):
        self.raw = raw
        self.indexes = indexes
        self.offsets = offsets
        self.reasons = reasons
        self.lens = lens
        self.rs = rs

    def __call__(self, Py_ssize_t k):
        cdef unsigned short[:] wv = self.reasons
        return self._error(k, wv[k])

    cdef object _error(self, Py_ssize_t k, unsigned short reason):
        if reason == IMPOSSIBLE:
            off = self.offsets[k]
            return _batch_error(self.raw[off:off + self.lens[self.indexes[k]]], self.rs)
        return _reason_error(self.rs, reason)

    def grouped(self):
        """(group of each invalid play by position, one exception per group): plays of a
        group raise equal exceptions (type, message, field); one pass over the reasons,
        an exception built per distinct reason (per distinct message for impossible cards)."""
        cdef unsigned short[:] wv = self.reasons
        cdef Py_ssize_t k, n = wv.shape[0]
        cdef int g
        cdef int first[NWHY + MAXCARDS + 1]     # reason -> its group + 1
        memset(first, 0, sizeof(first))
        groups = array("I", bytes(4 * n))
        cdef unsigned int[:] gv = groups
        errors = []
        impossible = {}                     # message -> group
        for k in range(n):
            if wv[k] != IMPOSSIBLE:
                g = first[wv[k]] - 1
                if g < 0:
                    g = len(errors)
                    first[wv[k]] = g + 1
                    errors.append(_reason_error(self.rs, wv[k]))
            else:
                exc = self._error(k, IMPOSSIBLE)
                key = (type(exc), str(exc))
                g = impossible.setdefault(key, len(errors))
                if g == len(errors):
                    errors.append(exc)
            gv[k] = g
        return groups, errors


cdef object _reason_error(RuleSet rs, unsigned short reason):
    """The InvalidPlay of a batch reason (a Why, or NWHY + the count of all-joker cards)."""
    exc = InvalidPlay.__new__(InvalidPlay, rs.invalid_texts[reason] if reason < NWHY else
                              _jokers_text(reason - NWHY))
    exc.field = "cards"
    return exc


cdef object _batch_error(bytes play, RuleSet rs):
    """The exception :func:`classify` raises for an invalid play of a batch, without
    classifying it again: the deck check, then the reason it forms no play."""
    cdef int codes[MAXCARDS]
    cdef u8 counts[NFACES]
    cdef int n = len(play)
    try:
        if n == 0:
            return InvalidPlay("no cards", "cards")
        if n > MAXCARDS:
            return CardError(f"too many cards: {n} (at most {MAXCARDS})", "cards")
        n = parse_into(play, codes, MAXCARDS)
        count_codes(rs, codes, n, counts)
    except CardError as exc:
        return exc
    return _invalid_play(rs, counts, n)


# ----------------------------------------------------------------------------- explanations

# Why cards form no play: one sentence per reason, the variant's own words built once per
# rule set (RuleSet.invalid_texts), so that refusing a play costs no more than reading one.
cdef enum Why:
    W_NO_CARDS, W_JOKER_PAIR, W_SJ_NOT_WILD, W_BJ_NOT_WILD, W_TWO_RANKS, W_TWO_RANKS_NO_WILD,
    W_THREE, W_THREE_NO_WILD, W_FOUR, W_TWO_NO_WRAP, W_TWO_WRAP_NEEDS_A, W_TWO_IN_CHAIN,
    W_CHAIN_BOMB, W_APART, W_NO_PATTERN, NWHY


cdef tuple _invalid_texts(object v):
    """The sentences of :data:`Why` for variant ``v``, in its order."""
    sj, bj = [f"{name} is not wild in {v.id} and cannot be played together with other cards "
              f"(only alone, as SJ SJ, or in a joker bomb)" for name in ("SJ", "BJ")]
    pair = "two cards of different ranks are not a pair"
    triple = "three cards must be of one rank to make a triple"
    texts = (
        "no cards",
        "SJ and BJ are not a pair (a pair of jokers is SJ SJ or BJ BJ)",
        sj, bj,
        pair, pair + " and there is no wild",
        triple, triple + " (three distinct ranks and no wild)",
        "four cards must be of one rank to make a bomb",
        "2 cannot be in a straight, pair chain, triple chain or chain bomb",
        "2 cannot be in a straight, pair chain or triple chain, and a chain bomb runs through "
        "2 only together with A",
        "2 cannot be in a straight, pair chain or triple chain",
        f"cards of several ranks with 4 or more of one rank must form a chain bomb (at least "
        f"{v.chain_min_links} consecutive ranks of 4+ cards each"
        + (", all of the same count" if v.chain_counts == "equal" else "") + ")",
        "the ranks are too far apart to form a straight or chain",
        "the cards form no straight (5+ consecutive single ranks), pair chain (3+ consecutive "
        "pairs), triple chain (3+ consecutive triples) or bomb",
    )
    assert len(texts) == NWHY
    return texts


cdef int invalid_why(const Rules* R, const u8* c, int n) noexcept nogil:
    """The :data:`Why` of cards (count vector ``c``, ``n`` cards) that form no play; -1 for
    all jokers (their sentence names how many)."""
    cdef int r, nat = 0, nranks = 0, mx = 0, lo = -1, hi = -1
    for r in range(NRANKS):
        if c[r]:
            nat += c[r]
            nranks += 1
            if lo < 0:
                lo = r
            hi = r
            if c[r] > mx:
                mx = c[r]
    if n == 0:
        return W_NO_CARDS
    if nat == 0:
        return W_JOKER_PAIR if n == 2 else -1
    if c[SJ] and not R.wild_sj:
        return W_SJ_NOT_WILD
    if c[BJ] and not R.wild_bj:
        return W_BJ_NOT_WILD
    if n == 2:
        return W_TWO_RANKS if c[SJ] + c[BJ] else W_TWO_RANKS_NO_WILD
    if n == 3:
        return W_THREE if c[SJ] + c[BJ] else W_THREE_NO_WILD
    if n == 4:
        return W_FOUR
    if c[12] and nranks > 1:
        if R.wrap == WRAP_NONE:
            return W_TWO_NO_WRAP
        if mx < 4 or not c[11]:
            return W_TWO_WRAP_NEEDS_A
        return W_TWO_IN_CHAIN
    if mx > 3 and nranks > 1:
        return W_CHAIN_BOMB
    if hi - lo + 1 > n:
        return W_APART
    return W_NO_PATTERN


cdef str invalid_text(RuleSet rs, const u8* c, int n):
    """A reason a player would understand for cards that form no play."""
    cdef int why = invalid_why(&rs.r, c, n)
    return _jokers_text(n) if why < 0 else rs.invalid_texts[why]


cdef str _jokers_text(int n):
    return f"{n} jokers are not a play (three jokers and four jokers are the joker bombs)"


cdef object _invalid_play(RuleSet rs, const u8* c, int n):
    """The InvalidPlay for cards that form no play, made without running Python code (the
    instance ShuangkouError.__init__ would make: the message as its one argument, field
    ``cards``)."""
    exc = InvalidPlay.__new__(InvalidPlay, invalid_text(rs, c, n))
    exc.field = "cards"
    return exc


def explain_invalid(counts, RuleSet rs, int n):
    """A reason a player would understand for cards that form no play (``counts``: the
    15-entry count vector of its ``n`` cards)."""
    cdef u8 c[NFACES]
    cdef int i
    if len(counts) != NFACES:
        raise ValueError(f"a count vector has {NFACES} entries, not {len(counts)}")
    for i in range(NFACES):
        c[i] = counts[i]
    return invalid_text(rs, c, n)


# ----------------------------------------------------------------------------- C access for other modules

cdef int reading_rd(object reading, RuleSet rs, RD* out) except -1:
    """Copy a Reading's C form into ``out`` (for compiled modules such as _enumerate).

    Raises TypeError when ``reading`` is not a Reading and VariantError when it belongs to
    another variant than ``rs``.
    """
    if not isinstance(reading, Reading):
        raise TypeError(f"expected a Reading, not {type(reading).__name__}")
    _same_variant((<Reading>reading).rules, rs)
    out[0] = (<Reading>reading).rd
    return 0


cdef void window_reading(const Rules* R, const u8* c, int kind, int width, int first, int links,
                         RD* out) noexcept nogil:
    """The ordinary-chain reading ``classify_counts`` gives ``c`` on the window that starts at
    rank ``first`` (for the enumerator, which already knows the window: no search, no sort)."""
    add_window_reading(R, c, out, 0, 1, kind, width, first, links, width * links)
