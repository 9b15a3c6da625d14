"""Tells: what a seat's choices say of the hands it should not see — its partner's (hand
sharing), the opponents' (full sight) — the evidence that needs no rollouts.

A partnership that shares its hands uses them where plain rules can: it leads what the
partner can beat, and over an opponent's play it passes when the partner, still to act in
the trick, can beat that play, and plays when the partner cannot. The fair-play views
(core_ext/fairplay.py) see a cheat that plays toward what rollouts on the seen hands prefer;
a player who reads the partner's hand by rules of its own need not. These tells ask of the
choice itself whether it goes with the partner's hand — where it departs from the
**reference**, the rule policy's action (fairplay.py :func:`~.fairplay.reference`), as the
views' regrets do:

* **a lead** (an ordinary play, the partner still to act in the trick) other than the
  reference's ordinary lead: whether the partner's hand can beat the play led with an
  ordinary play, less whether it can beat the reference's;
* **a follow** (an opponent's play standing, the partner still to act after this seat)
  where the seat passed and the reference plays, or played and the reference passes:
  whether the partner's hand can beat the standing play with an ordinary play.

Each is computed on the true hands and on :data:`DECOYS` **decoys** — the hands the seat
could not see dealt again from its unseen cards, by each seat's count — as the views' decoys
are. A seat that does not see its partner's hand departs from the reference alike whatever
the decoys hold: a tell's **excess**, its value on the true hands less its decoys' mean, has
mean zero — a follow's signed by the departure (:attr:`Tell.score`: a pass the reference
would not make counts the excess, a play it would not make the excess negated). A seat that
plays the reference tells nothing. Set against the reference, what every rule-like choice
shares with the true hands cancels: the decoys are not conditioned on the table's play and
the true hands are (a partner that passed before is weaker than decoys dealt from every
unseen card; docs/decisions/engineering.md E92). In a round, a seat's **tell score** is the
sum of its tells' scores; a partnership's round score is its two seats' sum, taken beyond
the other partnership's (fairplay.py ``beyond_table``).

**A beat** tells of the opponents' hands, what a client that sees every hand uses and a
partnership that shares its own does not: over an opponent's play, the seat played an
ordinary beat with an opponent still to act after it in the trick, and the reference plays
another ordinary beat — whether no such opponent can beat the play chosen with an ordinary
play, less the same of the reference's (:func:`opponents_tell`), on the true hands and on
decoys alike. A seat's **sight score** in a round (:func:`sight_score`) is its tell score
with its beats' added: the full-sight signal's second part, taken beyond its two opponents'
(fairplay.py ``beyond_table``), since a client that sees every hand sees its partner's too.

The decoys are drawn from a generator seeded by the review's seed and the decision's index
(the beat's from one of its own): a review is deterministic, and every surface that
recomputes a tell gets the same one.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._core import BOMB_KINDS, Reading
from ._enumerate import count_plays
from .cards import SEATS, partner, team
from .fairplay import RoundScore, reference, still_to_act
from .round import Round
from .variants import Variant

__all__ = ["DECOYS", "KINDS", "Tell", "opponents_tell", "sight_score", "tell", "tell_score"]

#: The decoys a tell is computed on.
DECOYS = 8
#: The kinds of decision a tell is read from: of the partner's hand (lead, follow), of the
#: opponents' (beat).
KINDS = ("lead", "follow", "beat")


@dataclass(frozen=True, slots=True)
class Tell:
    """One decision's tell (module doc): ``kind`` (:data:`KINDS`); ``passed`` whether the
    seat passed (a follow: the reference plays; else it passes); ``value`` on the true hands
    — for a lead, whether the partner can beat the play led less whether it can beat the
    reference's; for a follow, whether the partner can beat the standing play (1 or 0); for
    a beat, whether no opponent after the seat can beat the play chosen less the same of the
    reference's — and ``decoy_values``, the same on each decoy."""

    kind: str
    passed: bool
    value: float
    decoy_values: tuple[float, ...]

    @property
    def excess(self) -> float:
        """The true hands' value less the decoys' mean."""
        return self.value - sum(self.decoy_values) / len(self.decoy_values)

    @property
    def score(self) -> float:
        """What it adds to the seat's tell score: its excess, a follow's signed by the
        departure (negated where the seat played and the reference passes)."""
        return -self.excess if self.kind == "follow" and not self.passed else self.excess


def _beats(hand: Sequence[int], variant: Variant, reading: Reading) -> float:
    """1 when ``hand`` beats ``reading`` with an ordinary play (no bomb), else 0."""
    if not hand:
        return 0.0
    counts = count_plays(hand, variant, reading)
    return 1.0 if any(n for kind, n in counts.items() if kind not in BOMB_KINDS) else 0.0


def _decoys(r: Round, seat: int, rng: random.Random) -> list[dict[int, tuple[int, ...]]]:
    """:data:`DECOYS` deals of the hands ``seat`` cannot see: its unseen cards dealt again
    by each seat's count."""
    others = [s for s in range(SEATS) if s != seat]
    pool = [c for s in others for c in r.hand(s)]
    out = []
    for _ in range(DECOYS):
        rng.shuffle(pool)
        hands, at = {}, 0
        for s in others:
            n = r.cards_left[s]
            hands[s] = tuple(pool[at:at + n])
            at += n
        out.append(hands)
    return out


def _departs(before: Round, cards: Sequence[int], reading: Reading | None) -> Reading | None:
    """The reference's ordinary play where the seat to act in ``before`` chose another
    ordinary play (``cards``, ``reading``), else None."""
    if reading is None or reading.is_bomb:
        return None
    ref = reference(before)
    plain: Reading | None = ref.reading        # Suggestion.reading: typed Any
    if plain is None or plain.is_bomb or sorted(ref.cards) == sorted(cards):
        return None
    return plain


def tell(before: Round, cards: Sequence[int], reading: Reading | None, *, seed: int,
         index: int) -> Tell | None:
    """The tell of the decision of the seat to act in ``before`` (the round before it acts):
    ``cards`` played (empty: a pass) and the ``reading`` that stood (None for a pass);
    ``seed`` and ``index`` (the review's seed, the action's index in the replay) seed the
    decoys. None when the decision tells nothing: not a lead nor a follow of the module
    doc, or no departure from the reference there."""
    seat = before.turn
    if seat is None:
        return None
    mate = partner(seat)
    if mate not in still_to_act(before, seat):
        return None
    v = before.variant
    st = before.standing
    rng = random.Random(f"tells:{seed}:{index}")
    if st is None:
        plain = _departs(before, cards, reading)
        if plain is None or reading is None:
            return None
        led = reading

        def lead(hand: Sequence[int]) -> float:
            return _beats(hand, v, led) - _beats(hand, v, plain)
        return Tell("lead", False, lead(before.hand(mate)),
                    tuple(lead(h[mate]) for h in _decoys(before, seat, rng)))
    if team(st.seat) == team(seat) or (reading is None) == (reference(before).kind == "pass"):
        return None
    return Tell("follow", reading is None, _beats(before.hand(mate), v, st.reading),
                tuple(_beats(h[mate], v, st.reading) for h in _decoys(before, seat, rng)))


def opponents_tell(before: Round, cards: Sequence[int], reading: Reading | None, *,
                   seed: int, index: int) -> Tell | None:
    """The beat tell (module doc) of the decision of the seat to act in ``before``:
    ``cards`` played and their ``reading`` (None: a pass); ``seed`` and ``index`` seed the
    decoys. None when it is no beat of the module doc: a pass, a bomb, a lead, a play over
    the partner's, no opponent after the seat in the trick, or the reference's beat (or no
    ordinary beat of the reference's)."""
    seat = before.turn
    st = before.standing
    if seat is None or st is None or team(st.seat) == team(seat):
        return None
    opponents = [s for s in still_to_act(before, seat) if team(s) != team(seat)]
    plain = _departs(before, cards, reading) if opponents else None
    if plain is None or reading is None:
        return None
    v = before.variant
    rng = random.Random(f"beat:{seed}:{index}")
    chosen = reading

    def beat(hands: Mapping[int, Sequence[int]]) -> float:
        def safe(r: Reading) -> float:
            return 0.0 if any(_beats(hands[s], v, r) for s in opponents) else 1.0
        return safe(chosen) - safe(plain)
    return Tell("beat", False, beat({s: before.hand(s) for s in opponents}),
                tuple(beat(h) for h in _decoys(before, seat, rng)))


def tell_score(seats: Sequence[Sequence[Tell]]) -> RoundScore | None:
    """The round score of a seat's tells, or of a partnership's (``seats``: each seat's
    tells): the sum of their scores (:attr:`Tell.score`), as a
    :class:`~shuangkou.core.fairplay.RoundScore` (``score`` and ``excess`` both that sum,
    ``decisions`` the tells); None without a tell."""
    told = [t for tells in seats for t in tells]
    score = sum(t.score for t in told)
    return RoundScore(score, score, len(told)) if told else None


def sight_score(tells: Sequence[Tell]) -> RoundScore | None:
    """A seat's sight score in a round (module doc): the tell score of all its tells, of the
    partner's hand and of the opponents'."""
    return tell_score((tells,))
