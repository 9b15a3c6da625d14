"""Fair play: what a player's decisions say of information it should not have, of rounds it
threw, and of an engine that plays for it — each a signal with an interval and a p-value.

**Hand sharing and full sight.** A pair whose seats see each other's hands, or a client that
sees every hand, plays its decisions as if it knew those hands. At each decision the review
evaluates the candidates (the 提示 list and the action taken) on the view that adds the
partner's hand, and on the view of every hand (core_ext/_search.pyx ``evaluate``'s
``decoys``): once with the true hands, and again with a few **decoys** — those hands made up
from what the seat itself sees, as its own view's deals are. A seat that does not see the
hands cannot tell the true view from its decoys, so the taken action's **regret** on the true
view is, for an honest seat, one more draw from the distribution its regrets on the decoys
come from: its expected excess, the decoys' mean regret minus the true one, is zero,
whatever the seat's strength. A seat that sees the hands plays closer to the true view's
best: its excess is positive. Each decision's rank of the true view among its decoys, less
what chance gives, is its score; a round's scores sum to the partnership's (or the
player's) round score. Only decisions whose regrets differ across the views carry
evidence; the others add nothing.

**The reference action is the control inside each decision.** The regret is taken against
the rule policy's action (candidate 0, the 提示 button's first hint), not against the view's
best: the rule policy's points less the taken action's. A seat that plays the reference
carries no evidence, and one that departs from it is scored on where its departures lead —
toward the true view's best, or no nearer it than on the decoys. What every rule-like
choice shares with the true hands (they carry what the table's play put in them, and the
decoys are not conditioned on that play) cancels out of the difference
(docs/decisions/engineering.md E92).

**The table is the second control.** What the reference leaves — a departure of another
style that fits what the other seats' play says of their hands (who passed on what, what
each kept), as the true hands hold it and the decoys do not — depends on how the table
played, and every seat at the table shares it, on the same deal and the same evaluator: an
honest seat has no more of it than its opponents. So a round counts for a partnership by its
score beyond the other partnership's, and for a player by its score beyond its two
opponents' mean (:func:`beyond_table`): the rounds' scores beyond their tables, tested
against 0, as bridge's recorded-board cases compared a pair on the decisions where illegal
information helps with those where it cannot. Opponents who play the reference score 0, and
the control changes nothing. Two cheating partnerships at one table would cancel: a platform
that fears that reads the raw scores too.

**And its own scores.** The control would lend a seat its opponents' shortfall: opponents
whose own scores run below zero (random play's, on the tells) would lift the honest seats
facing them (E89). So a signal needs both: the rounds' scores beyond their tables, and their
own scores, each above 0 at the level — an intersection-union test (Berger, 1982), whose
p-value is the larger of the two and which is exact at the level without a correction. A
table's shared effects cannot raise a flag (the control), and opponents who score below zero
cannot lend one (the own scores).

Hand sharing has a second test, the **tells** (core_ext/tells.py: what the choices
themselves say of the partner's hand, for a pair that reads it by rules rather than toward
what rollouts prefer), whose round scores are summed and tested alike; full sight too, the
seat's **sight score** (its own tells, and its beats: whether no opponent after it can top
the play it beat with). Each signal is the stronger of its two tests with its p-value
doubled (:func:`either`).

**Thrown rounds.** In a coin room (the seeds' 游戏币 rooms) a seat can lose a round on purpose
to move points to an opponent. The review's losses do not show it: measured on a panel
thrower (docs/BENCHMARKS.md "Fair play"), a thrown round's loss share stands about one
standard deviation of an honest round above the table's, so no test on losses flags a seat
that throws a round in four, and tests that shuffle its decisions among its rounds flag
honest players as often (a round's losses share its deal). What a thrown round shows is
where the seat **gives up** against its own side, in either of two ways:

* it **plays over its partner's standing play**. Such a play is a seat's chance whenever its
  partner's play stands and it has a play of its own (:func:`over_partner`); a play over it
  that does not go out is a **block**;
* it **concedes a trick it could take for nothing**: an opponent's ordinary play stands, no
  partner is still to act after the seat in the trick (a pass hands the trick over), and
  the seat holds a **free beat** — an ordinary play of the same kind that spends no wild
  joker and splits no set: of each rank it plays, every card the seat holds (beating a
  single with one of a pair costs the pair, and a bomb is a bomb kept) (:func:`concedes`);
  passing then is a **concession**.

Only the rounds the player **lost** count (its final amount below 0, :attr:`GiveUps.lost`):
a round it did not lose moved none of its points to the opponents, whatever it gave up
there. Honest players give up at a steady rate of their own — rule-like ones never (neither
a block nor a concession in the panel's 12,800 reference rounds), random play about once a
round each — so among the rounds a player lost, its give-ups, given how many it made of each
kind at each **moment**, fall on its chances of that moment alike in every round; a
thrower's crowd into the rounds it throws. The moments are two: the seat's **endgame** (its
last :data:`LATE` cards) and before it. A strong player's give-ups are tactics of its
endgame (托管's search lets an opponent's leads go while it keeps its last cards together),
and a round that lingers there holds several; a thrower gives up from the deal on. The test
is exact for that: the statistic is the give-ups' **crowding**, the triples of give-ups
that fall in one lost round (Σ over those rounds of C(give-ups, 3)), its p-value the share
of deals of the same blocks among the player's chances to block and the same concessions
among its chances to concede in those rounds, each moment apart, at random (rounds' chances
kept), that crowd as much, with the lost round of most give-ups and the opponent who gained
most in it named (E94). Triples, not pairs: an honest player's give-ups come singly or in
twos where a moment calls for them (托管's search, more often with few cards left), and on
pairs (Σ give-ups²) that flagged the search in 7.3 % of 50-round matches at 5 %; a thrown
round holds them by the handful (the thrower's: 5.4 a round, three or more in 83 %), which
triples count as well (E91). Lost rounds, not every round: a strong player facing weaker
ones gives up where its side is ahead — 托管's search lets tricks go while it holds a free
beat, in rounds it ends ahead in — and over every round its give-ups crowd as a thrower's
do (E93).

**Engine assistance.** A player who plays the engine's choices takes them where the engine
departs from plain play: among the decisions where 托管's choice (rollouts.py
``TUOGUAN_CHOICE``) is not the rule policy's action (the 提示 button's first hint, what the
engine plays without rollouts), how often the player took 托管's rather than the rule
policy's. Where the two differ, 托管's choice is one only rollouts find; an honest player
takes it no more often than the plain one. A sign test gives the p-value. It has no power
on the panel: 托管 on deals of its own settles close candidates otherwise than the review's,
so even the search at 托管's settings takes 托管's choice only about half the time
(docs/BENCHMARKS.md "Fair play"). The control is plain play, not the best in points:
against the best, a player who plays the first hint agrees with 托管 by construction (托管
keeps that hint unless its rollouts overturn it), and every rule-like honest style was
flagged. Beside the test, :class:`Agreement` sums what a test of agreement beyond a
player's skill would weigh: every such departure, whatever the player took there, and its
loss share on its other decisions (docs/decisions/engineering.md E95).

Every signal is a reason to look, never proof (docs/review.md "Fair play"): a platform reads
the decisions that carried the evidence, and acts on a flag only with other facts.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Self

from ._enumerate import count_plays, legal_plays
from .cards import CODE_RANKS, JOKER_CODES, partner, same_team, seats_after
from .rollouts import Evaluation
from .round import Round
from .suggest import Suggestion, suggest

__all__ = ["Agreement", "Evidence", "GiveUps", "KINDS", "LATE", "Regrets", "RoundScore",
           "Signal", "Sums", "TableScore", "beyond_table", "concedes", "either", "endgame",
           "engine_signal",
           "evidence", "information_signal", "over_partner", "reference", "round_score",
           "still_to_act", "t_upper", "thrown_signal"]

#: The fair-play views a decision is evaluated on: the partner's hand seen too (hand
#: sharing), every hand seen (full sight).
KINDS = ("partner", "all")
#: The signals a review reports, by what they are about (``tells``: core_ext/tells.py, the
#: hand-sharing evidence of the choices themselves).
SIGNALS = {"partner": "hand_sharing", "all": "full_sight", "tells": "tells"}


@dataclass(frozen=True, slots=True)
class Regrets:
    """One candidate's regret against the reference on one view (points: the rule policy's
    action's minus the candidate's), on the true hands and on each decoy."""

    regret: float
    decoy_regrets: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Evidence:
    """One decision's evidence on one view (``kind``, :data:`KINDS`): the taken action's
    ``regret`` against the reference (points: the rule policy's action's minus the taken
    action's) on the true hands, and on each decoy (``decoy_regrets``); ``disagree``: the
    true view's best is not the seat's own best; ``follows``: the taken action is the true
    view's best; ``candidates``: every candidate's :class:`Regrets` on the view, in the
    evaluation's order (the taken action's are ``regret`` and ``decoy_regrets``; a review
    lists them in its decision's candidate order) — what the actions not taken show of the
    true hands beside the decoys, for a control inside the decision (empty in a record
    kept before they were)."""

    kind: str
    regret: float
    decoy_regrets: tuple[float, ...]
    disagree: bool
    follows: bool
    candidates: tuple[Regrets, ...] = ()

    @property
    def excess(self) -> float:
        """The decoys' mean regret minus the true view's: 0 expected of a seat that does not
        see the hands, positive for one that plays as if it did."""
        return sum(self.decoy_regrets) / len(self.decoy_regrets) - self.regret

    @property
    def variance(self) -> float:
        """The variance of :attr:`excess` under no information: the sample variance of the
        regrets across the views (true and decoys, exchangeable then) × (1 + 1/decoys)."""
        values = (self.regret, *self.decoy_regrets)
        mean = sum(values) / len(values)
        var = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
        return var * (1 + 1 / len(self.decoy_regrets))

    @property
    def carries(self) -> bool:
        """Whether it carries evidence: the regrets are not all equal."""
        return self.variance > 0

    def rank(self) -> tuple[float, float, float]:
        """The share of decoys on which the taken action's regret is larger than on the
        true view (ties count half), and that share's mean and variance had the true view
        been any one of the views (what no information makes it: each equally likely):
        (share, mean, variance). The randomisation's own null, whatever the regrets'
        distribution."""
        values = (self.regret, *self.decoy_regrets)
        k = len(self.decoy_regrets)

        def share(i: int) -> float:
            x = values[i]
            return sum(1.0 if y > x else 0.5 if y == x else 0.0
                       for j, y in enumerate(values) if j != i) / k

        each = [share(i) for i in range(len(values))]
        mean = sum(each) / len(each)
        var = sum((u - mean) ** 2 for u in each) / len(each)
        return each[0], mean, var


def reference(before: Round) -> Suggestion:
    """The reference action of the seat to act in ``before``: the rule policy's, unseeded
    (the 提示 button's first hint; an evaluation's candidate 0) — what the views' regrets
    and the tells (core_ext/tells.py) are taken against (module doc)."""
    return suggest(before)


def _regret(points: Sequence[float], k: int) -> float:
    """Candidate ``k``'s points short of the reference action's (candidate 0, the rule
    policy's) on one view: 0 for the reference, negative where a departure does better
    there (module doc)."""
    return points[0] - points[k]


def evidence(ev: Evaluation) -> tuple[Evidence, ...]:
    """The fair-play evidence of an evaluated decision (``ev.views``: the views of
    ``decoys``; ``ev.taken``: the action taken), one per kind of view; none for a forced
    decision or one evaluated without its views."""
    if ev.forced or ev.taken is None or not ev.views or not ev.deals:
        return ()
    own = [c.points if c.points is not None else float("nan") for c in ev.candidates]
    own_best = max(range(len(own)), key=lambda k: (not math.isnan(own[k]), own[k], -k))
    out = []
    for kind in KINDS:
        views = [v for v in ev.views if v.kind == kind]
        true = next((v for v in views if v.decoy == 0), None)
        decoys = [v for v in views if v.decoy > 0]
        if true is None or not decoys:
            continue
        best = max(range(len(true.points)), key=lambda k: (true.points[k], -k))
        every = tuple(Regrets(_regret(true.points, k), tuple(_regret(d.points, k) for d in decoys))
                      for k in range(len(true.points)))
        taken = every[ev.taken]
        out.append(Evidence(kind, taken.regret, taken.decoy_regrets, best != own_best,
                            best == ev.taken, every))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Signal:
    """A fair-play signal over many decisions (or rounds): ``kind`` (``hand_sharing``,
    ``full_sight``, ``thrown_rounds``, ``engine``), the ``evidence`` count that carried it
    (decisions; rounds with a chance for thrown rounds), ``estimate`` with its 95 % interval
    (``low``–``high``: points per decision beyond the table's for hand sharing and full
    sight, the give-ups' crowding for thrown rounds, the engine's share among the
    decisions that tell for engine assistance), ``z`` and the one-sided ``p``-value;
    ``note`` says more (the round and the opponent who gained, for thrown rounds)."""

    kind: str
    evidence: int
    estimate: float
    low: float
    high: float
    z: float
    p: float
    note: str = ""

    def flagged(self, alpha: float = 0.01) -> bool:
        return self.evidence > 0 and self.p < alpha

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "evidence": self.evidence, "estimate": self.estimate,
                "low": self.low, "high": self.high, "z": self.z, "p": self.p,
                "note": self.note}


def _upper(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2))


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        step = d * c
        h *= step
        if abs(step - 1.0) < 1e-14:
            break
    return h


def t_upper(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom.

    >>> round(t_upper(2.262, 9), 3), round(t_upper(0.0, 5), 3), round(t_upper(-1.833, 9), 3)
    (0.025, 0.5, 0.95)
    """
    x = df / (df + t * t)
    a, b = df / 2, 0.5
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x)) if 0 < x < 1 else 0.0
    if x <= 0:
        ibeta = 0.0
    elif x >= 1:
        ibeta = 1.0
    elif x < (a + 1) / (a + b + 2):
        ibeta = front * _betacf(a, b, x) / a
    else:
        ibeta = 1.0 - front * _betacf(b, a, 1 - x) / b
    tail = 0.5 * ibeta                       # P(|T| > |t|) / 2
    return tail if t >= 0 else 1.0 - tail


def _t_quantile(df: float, q: float = 0.975) -> float:
    """The ``q`` quantile of Student's t (bisection on :func:`t_upper`)."""
    lo, hi = 0.0, 50.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if t_upper(mid, df) > 1 - q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True, slots=True)
class RoundScore:
    """One round's evidence of one kind, for a partnership or a player: the sum over its
    decisions that carried evidence (``decisions``) of their rank scores less their null
    means (``score``, :meth:`Evidence.rank`) and of their excess regrets (``excess``,
    points)."""

    score: float
    excess: float
    decisions: int


def round_score(kind: str, items: Sequence[Evidence]) -> RoundScore | None:
    """The :class:`RoundScore` of the evidence of ``kind`` among ``items`` (one round's
    decisions of a partnership or a player); None when none carried evidence."""
    used = [e for e in items if e.kind == kind and e.carries]
    if not used:
        return None
    ranks = [e.rank() for e in used]
    return RoundScore(sum(u - m for u, m, _ in ranks), sum(e.excess for e in used), len(used))


def beyond_table(own: RoundScore | None,
                 table: Sequence[RoundScore | None]) -> TableScore | None:
    """``own`` (a partnership's or a player's round score) and the same beyond its table's
    (module doc): ``table`` the other partnership's score, or the player's two opponents'
    (None: no decision carried evidence, 0). Beyond, its rank score less their mean and its
    excess less their mean excess per decision times its own decisions. None when ``own``
    is."""
    if own is None:
        return None
    score = sum(t.score for t in table if t is not None) / len(table)
    rate = sum(t.excess / t.decisions for t in table if t is not None) / len(table)
    return TableScore(own, RoundScore(own.score - score, own.excess - rate * own.decisions,
                                      own.decisions))


@dataclass(frozen=True, slots=True)
class TableScore:
    """A round's score of a partnership or a player, ``own``, and the same ``beyond`` its
    table's (:func:`beyond_table`): the two a signal over rounds tests (module doc)."""

    own: RoundScore
    beyond: RoundScore


class _Summed:
    """Sums kept as numeric slots that add up over partitions (an archive's shards merge to
    what one run gives), written to and read from a partition's JSON by name."""

    __slots__: tuple[str, ...] = ()

    def merge(self, other: Self) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def to_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data: Mapping[str, float]) -> Self:
        return cls(**{name: data.get(name, 0) for name in cls.__slots__})


@dataclass(slots=True)
class Sums(_Summed):
    """What a hand-sharing or full-sight signal needs of many rounds, as sums that add up
    over partitions (an archive's shards merge to what one run gives): of the rounds'
    scores beyond their tables, and (``own``, ``own2``) of their own rank scores."""

    rounds: int = 0
    decisions: int = 0
    score: float = 0.0
    score2: float = 0.0
    excess: float = 0.0
    excess2: float = 0.0
    excess_n: float = 0.0
    n2: float = 0.0
    own: float = 0.0
    own2: float = 0.0

    def add(self, t: TableScore | None) -> None:
        if t is None:
            return
        r = t.beyond
        self.own += t.own.score
        self.own2 += t.own.score ** 2
        self.rounds += 1
        self.decisions += r.decisions
        self.score += r.score
        self.score2 += r.score ** 2
        self.excess += r.excess
        self.excess2 += r.excess ** 2
        self.excess_n += r.excess * r.decisions
        self.n2 += r.decisions ** 2

    def signal(self, kind: str) -> Signal:
        """The signal (module doc) of the rounds added: their rank scores beyond their
        tables and their own, each tested against 0 with Student's t, one-sided — the round
        is the sample, since the true hands are the same through a round and its decisions
        are not independent — ``z`` the smaller t and the p-value its (the larger of the
        two: both must stand above 0); the estimate is the mean excess regret per decision
        beyond the table's (points) with its rounds-as-samples 95 % interval."""
        name, r, n = SIGNALS[kind], self.rounds, self.decisions
        if r < 2 or n == 0:
            return Signal(name, n, self.excess / n if n else 0.0, 0.0, 0.0, 0.0, 1.0)

        def student(total: float, squares: float) -> float:
            mean = total / r
            var = max(squares - r * mean * mean, 0.0) / (r - 1)
            return mean / math.sqrt(var / r) if var > 0 else 0.0
        t = min(student(self.score, self.score2), student(self.own, self.own2))
        m = self.excess / n
        spread = max(self.excess2 - 2 * m * self.excess_n + m * m * self.n2, 0.0)
        half = _t_quantile(r - 1) * math.sqrt(r / (r - 1) * spread) / n
        return Signal(name, n, m, m - half, m + half, t, t_upper(t, r - 1))


def either(kind: str, parts: Mapping[str, Signal]) -> Signal:
    """One signal of ``kind`` from several tests of the same cheat, by name (hand sharing:
    the views' and the tells'): the part with the smallest p-value, its p multiplied by the
    number of parts that carried evidence (Bonferroni: an honest player is flagged at most
    at the nominal rate, whichever part would flag it), and ``note`` the part's name."""
    tested = {name: s for name, s in parts.items() if s.evidence > 0}
    if not tested:
        return Signal(kind, 0, 0.0, 0.0, 0.0, 0.0, 1.0)
    name = min(tested, key=lambda n: tested[n].p)
    return replace(tested[name], kind=kind, p=min(1.0, tested[name].p * len(tested)),
                   note=name)


def information_signal(kind: str, rounds: Sequence[Sequence[Evidence]],
                       tables: Sequence[Sequence[Sequence[Evidence]]]) -> Signal:
    """Hand sharing (``kind`` "partner") or full sight ("all") over a partnership's or a
    player's rounds (``rounds[r]``: the evidence of its decisions in round r; ``tables[r]``:
    that of the other partnership's, or of each of its two opponents'): each decision's rank
    of the true view among its decoys is scored against its own randomisation null, a
    round's scores are summed, with the same beyond its table's (:func:`beyond_table`), and
    the rounds are tested (:meth:`Sums.signal`)."""
    sums = Sums()
    for items, table in zip(rounds, tables, strict=True):
        sums.add(beyond_table(round_score(kind, items),
                              [round_score(kind, other) for other in table]))
    return sums.signal(kind)


def over_partner(before: Round, cards: Sequence[int]) -> bool | None:
    """What the decision of the seat to act in ``before`` (the round before it acts) says of
    a thrown round (module doc), ``cards`` its play (empty: a pass): None when it is no
    chance — its partner's play does not stand, or the seat has no play over it; True when
    the seat plays over it without going out (a block); else False."""
    seat = before.turn
    st = before.standing
    if seat is None or st is None or st.seat != partner(seat):
        return None
    if cards:
        return len(cards) < before.cards_left[seat]
    if not any(count_plays(before.hand(seat), before.variant, st.reading).values()):
        return None
    return False


def still_to_act(r: Round, seat: int) -> tuple[int, ...]:
    """The seats still to act in the trick after ``seat``, in turn order (a seat out of cards
    no longer acts; every seat after ``seat`` when no play stands)."""
    left = r.cards_left
    st = r.standing
    if st is None:
        return tuple(s for s in seats_after(seat) if left[s])
    order = [s for s in seats_after(st.seat) if left[s] or s == seat]
    return tuple(order[order.index(seat) + 1:])


def concedes(before: Round, cards: Sequence[int]) -> bool | None:
    """What the decision of the seat to act in ``before`` says of a thrown round as a
    concession (module doc), ``cards`` its play (empty: a pass): None when it is no chance —
    no opponent's ordinary play stands, a partner is still to act after the seat in the
    trick, or the seat holds no free beat; True when it passed (a concession); else
    False."""
    seat = before.turn
    st = before.standing
    if seat is None or st is None or same_team(st.seat, seat) or st.reading.is_bomb or \
            partner(seat) in still_to_act(before, seat):
        return None
    hand = before.hand(seat)
    held = Counter(CODE_RANKS[c] for c in hand)
    wild = {CODE_RANKS[JOKER_CODES[w]] for w in before.variant.wild_jokers}

    def free(play: Sequence[int]) -> bool:
        # every copy of each rank it spends: beating a single with one of a pair costs the
        # pair, and a seat that keeps it gives up nothing (E94)
        used = Counter(CODE_RANKS[c] for c in play)
        return all(rank not in wild and n == held[rank] for rank, n in used.items())
    if not any(p.reading.kind == st.reading.kind and not p.reading.is_bomb and free(p.cards)
               for p in legal_plays(hand, before.variant, st.reading)):
        return None
    return not cards


#: A seat with this many cards or fewer is in its **endgame**: the thrown-round test deals the
#: give-ups made there among the chances there, apart from the others (module doc).
LATE = 5


def endgame(cards_left: int) -> bool:
    """Whether a seat with ``cards_left`` cards is in its endgame (:data:`LATE`)."""
    return cards_left <= LATE


@dataclass(frozen=True, slots=True)
class GiveUps:
    """One player's round for the thrown-round test (module doc): its ``chances`` to block
    and the ``blocks`` among them, its chances to concede (``to_concede``) and the
    ``concessions`` among them, its ``final`` amount in the round (the test counts the
    rounds it lost, :attr:`lost`), and ``late``: the same four counts of its endgame's
    decisions (:data:`LATE`), a part of the others."""

    blocks: int
    chances: int
    concessions: int
    to_concede: int
    final: int
    late: tuple[int, int, int, int] = (0, 0, 0, 0)

    @classmethod
    def of(cls, blocks: Sequence[tuple[bool, int]], concessions: Sequence[tuple[bool, int]],
           final: int) -> GiveUps:
        """A seat's round from its chances to block and to concede, each (taken, the seat's
        cards left then: :func:`over_partner`'s and :func:`concedes`' answers with the
        moment they were asked at), and its final amount."""
        def count(chances: Sequence[tuple[bool, int]], late: bool) -> tuple[int, int]:
            mine = [taken for taken, left in chances if endgame(left) or not late]
            return sum(mine), len(mine)
        return cls(*count(blocks, False), *count(concessions, False), final,
                   (*count(blocks, True), *count(concessions, True)))

    def strata(self) -> tuple[tuple[int, int], ...]:
        """The give-ups and their chances the test deals apart (module doc): (blocks,
        chances) before the endgame and in it, then (concessions, chances to concede)
        alike."""
        b, c, k, t = self.late
        return ((self.blocks - b, self.chances - c), (b, c),
                (self.concessions - k, self.to_concede - t), (k, t))

    @property
    def lost(self) -> bool:
        """Whether the player ended the round below 0: only such a round moved its points to
        the opponents, and only such rounds count (module doc)."""
        return self.final < 0


def thrown_signal(rounds: Sequence[GiveUps], gainers: Sequence[str] = (), *,
                  permutations: int = 2000, enough: int = 20, seed: int = 0) -> Signal:
    """Thrown rounds (module doc) over one player's rounds, ``gainers[r]`` (if given) who
    gained most in round r among its opponents. Only the rounds the player lost count
    (:attr:`GiveUps.lost`). The estimate is their give-ups' crowding per give-up
    (3 Σ C(give-ups, 3) / give-ups: for a give-up, the pairs of other give-ups in its round,
    on average; 0 unless some lost round holds three), its interval the 95 % range of the
    same with the blocks and the concessions dealt again at random among their chances in
    those rounds, each moment apart (:meth:`GiveUps.strata`); the p-value the share of such
    deals that crowd as much — sequential (Besag and Clifford, 1991): the deals stop once
    ``enough`` have reached it (a player far from a flag costs a few dozen, not
    ``permutations``), p = ``enough`` / deals made; else
    after ``permutations``, p = (those that reached it + 1) / (``permutations`` + 1).
    ``evidence`` counts the rounds with a chance, lost or not (the rounds the test looked
    at: the minimum sample a flag needs is counted in them, E93); the note names the lost
    round of most give-ups, by its index in ``rounds``. Deterministic for ``seed``."""
    for r in rounds:
        if not all(0 <= given <= chances for given, chances in r.strata()):
            raise ValueError("a round's blocks must be 0 to its chances, and its concessions "
                             "0 to its chances to concede, before its endgame and in it; got "
                             f"{r}")
    evidence = sum(1 for r in rounds if r.chances or r.to_concede)
    lost = [k for k, r in enumerate(rounds) if r.lost]
    mine = [rounds[k] for k in lost]
    given = [r.blocks + r.concessions for r in mine]
    total = sum(given)
    if total == 0:
        return Signal("thrown_rounds", evidence, 0.0, 0.0, 0.0, 0.0, 1.0)
    at = lost[max(range(len(lost)), key=lambda i: (given[i], -i))]
    r = rounds[at]
    note = (f"round {at}: {r.blocks} of {r.chances} chances blocked, {r.concessions} of "
            f"{r.to_concede} conceded"
            + (f"; {gainers[at]} gained most" if at < len(gainers) and gainers[at] else ""))
    # the estimate is 3 Σ C(g, 3) / give-ups, and give-ups is the same in every deal: the
    # deals are compared on 6 Σ C(g, 3) = Σ g(g − 1)(g − 2), in integers (no deal comes below
    # 0: p = 1 when no lost round holds three, after ``enough`` deals)
    triples = sum(g * (g - 1) * (g - 2) for g in given)
    parts = [x.strata() for x in mine]
    strata = [([i for i, x in enumerate(parts) for _ in range(x[k][1])],
               sum(x[k][0] for x in parts)) for k in range(len(parts[0]))]
    rng = random.Random(seed)
    beyond = 0
    null = []
    p = 0.0
    for n in range(1, permutations + 1):
        counts = [0] * len(mine)
        for slots, k in strata:
            for i in rng.sample(slots, k):
                counts[i] += 1
        dealt = sum(c * (c - 1) * (c - 2) for c in counts if c > 2)
        null.append(dealt / (2 * total))
        beyond += dealt >= triples
        if beyond >= enough:
            p = beyond / n
            break
    else:
        p = (beyond + 1) / (permutations + 1)
    null.sort()
    mean = sum(null) / len(null)
    sd = math.sqrt(sum((x - mean) ** 2 for x in null) / max(len(null) - 1, 1))
    observed = triples / (2 * total)
    return Signal("thrown_rounds", evidence, observed, null[int(0.025 * (len(null) - 1))],
                  null[int(0.975 * (len(null) - 1))], (observed - mean) / sd if sd else 0.0,
                  p, note)


@dataclass(slots=True)
class Agreement(_Summed):
    """A player's engine counts over its rounds, as sums that add up over partitions like
    :class:`Sums`: the rounds, the decisions where 托管's choice is not the rule policy's
    action (``departs``) and those where it took 托管's (``engine``) or the rule policy's
    (``rule``), the rounds with one of those two (``told``: what the sign test counts), the
    points it lost and had at stake over its other evaluated decisions (``loss``,
    ``stake``: its skill where agreement cannot tell), and the second moments of the
    per-round counts (``engine2``, ``departs2``, ``cross``) for the agreement's standard
    error over rounds."""

    rounds: int = 0
    told: int = 0
    engine: int = 0
    rule: int = 0
    departs: int = 0
    loss: float = 0.0
    stake: float = 0.0
    engine2: float = 0.0
    departs2: float = 0.0
    cross: float = 0.0

    def add(self, engine: int, rule: int, departs: int, loss: float, stake: float) -> None:
        """One round of the player's (a round without a departure adds to its skill)."""
        self.rounds += 1
        self.told += engine + rule > 0
        self.engine += engine
        self.rule += rule
        self.departs += departs
        self.loss += loss
        self.stake += stake
        self.engine2 += engine * engine
        self.departs2 += departs * departs
        self.cross += engine * departs

    @property
    def agreement(self) -> float:
        """托管's choice taken, as a share of the decisions where it is not the rule
        policy's action."""
        return self.engine / self.departs if self.departs else 0.0

    @property
    def elsewhere(self) -> float:
        """The loss share over its other evaluated decisions: its skill where agreement
        cannot tell."""
        return self.loss / self.stake if self.stake else 0.0

    @property
    def se(self) -> float:
        """The agreement's standard error: a ratio over rounds (the rounds, not the
        decisions, are the sample: a round's decisions share a deal and a table), and never
        below the binomial's (a few rounds must not look more certain than their
        decisions)."""
        n, a = self.rounds, self.agreement
        if not self.departs:
            return 0.0
        # a share of 0 or 1 is counted as if half a decision had gone the other way
        binomial = math.sqrt(max(a * (1 - a), 0.25 / self.departs) / self.departs)
        if n < 2:
            return binomial
        spread = max(self.engine2 - 2 * a * self.cross + a * a * self.departs2, 0.0)
        return max(math.sqrt(n / (n - 1) * spread) / self.departs, binomial)


def engine_signal(engine: int, rule: int) -> Signal:
    """Engine assistance (module doc) from the decisions where 托管's choice is not the rule
    policy's action: ``engine`` of them the player took 托管's, ``rule`` the rule policy's.
    The estimate is 托管's share of those, its p-value a one-sided sign test (a share of at
    most 1/2 expected of an honest player)."""
    n = engine + rule
    if not n:
        return Signal("engine", 0, 0.0, 0.0, 0.0, 0.0, 1.0)
    share = engine / n
    half = 1.96 * math.sqrt(share * (1 - share) / n)
    z = (engine - n / 2) / math.sqrt(n / 4)
    # the exact binomial tail P(X >= engine), X ~ Bin(n, 1/2)
    p = sum(math.comb(n, k) for k in range(engine, n + 1)) / 2 ** n
    return Signal("engine", n, share, max(0.0, share - half), min(1.0, share + half), z, p)
