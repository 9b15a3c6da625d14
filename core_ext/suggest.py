"""托管 and 提示: actions for the seat to act — the rule policy, ranked hints, and search.

Everything here looks at a round the way the player in the seat would: its own hand and
the public table (whose turn, the play standing and who made it, every seat's card count,
finishing order, the bombs played). It never looks at another seat's cards.

**The rule policy** (:func:`suggest` with no budget; compiled in core_ext/_suggest.pyx,
its slow twin is tests/suggest_reference.py). In the order it is applied — the ``reason``
sentence of a :class:`Suggestion` names the step that decided:

1. **Go out when it can**: a legal play that empties the hand is taken.
2. **Partner winning**: when the partner made the standing play, pass (unless step 1).
3. **Leading** — shed weak cards: every ordinary play is valued by the low cards it gets rid
   of (a 3 is worth 10, a K 1, an A, 2 or joker nothing), minus a penalty per group of equal
   ranks it splits; plays that would split a bomb (a rank held 4+ times) or spend a wild
   joker are set aside while others remain. Two refinements: with two plays left (the hand
   minus one play is itself a play) lead the stronger part first and keep the other to go out;
   when an opponent is down to one or two cards, lead a shape they cannot answer (no single
   against one card, neither singles nor pairs against two) or else the highest single; when
   only the partner is down to one card, lead the lowest single for them.
4. **Following an opponent** — the cheapest ordinary play that beats (fewest splits, no wild,
   no bomb broken, lowest top). A bomb only when it matters: an opponent is about to go out
   (``DANGER`` cards or fewer), the bomb leaves a hand that goes out in one more play or is
   small, or its star pays on its own (from natural cards only: wilds are worth more kept):
   it reaches the variant's contribution table (§10.4: every such bomb in the per-bomb
   mode, one above the seat's round star so far in the round-star mode), or, once the
   seat's team holds 1st place, the multiplier table above the seat's star (§10.3); then
   the cheapest bomb that beats, or the cheapest one that pays when paying is the reason.
5. Otherwise pass.

**Declarations** (§7 rules 4, 6): a play carries a ``declaration`` whenever the reading
meant is not what would stand undeclared — a type chosen among the cards' readings (the
straight of ``3 4 5 SJ SJ BJ`` rather than its pair chain), or a bomb meant as the reading
that gives the seat the higher round star (qianbian's chain bonus: a chain bomb of S stars
counts S + the seat's other bombs of exactly S stars, so a lower reading can pay more).

**Ranked 提示** (:func:`suggestions`): the policy's action first, then every other legal
play in the policy's order of preference (following: ordinary beats cheapest first, then
bombs smallest first; leading: by the shedding score, plays that spend a wild or break a
bomb last, then bombs), then the pass — the order a hint button cycles through.

**Search** (a budget in ``rollouts`` or ``ms``; the rollout engine, core_ext/_rollout.pyx,
driven by _search.pyx ``search``): the policy's action and its most different alternatives
(the preferred play of each type, the highest beat, the smallest bomb, the pass) are each
played on the same random deals of the unseen cards and rolled out to the end of the round
by the policy in all four seats — each other seat in a style drawn per deal
(core_ext/styles.py: the rule policy, bold, cautious or partner-blind: ``model="mix"``, the
default) or the rule policy itself (``model="rule"``, issue 24's search, :data:`SEARCH24`);
the engine's choice (rollouts.py ``choose``) is played: the one with the best mean
settlement for the seat's team (points: base × multiplier + contributions, plus a bonus for
placing first, three 双扣 base amounts: points alone trade wins for contributions where
bombs pay a lot) if it gains more than three standard errors over the policy's action
(``margin``; issue 24's search: one), else the policy's action stands. A candidate clearly
behind another stops being rolled out and its rollouts go to the rest (``race``, on by
default; off in :data:`SEARCH24`). :class:`SeatStyles` reads each other
seat's style from its actions so far in the round, for the search's ``read`` (opt-in: it
measured no better, docs/decisions.md 77). Deterministic for a given state, seed
and rollout budget; ``ms`` stops inside a rollout. :data:`TUOGUAN` is the budget for 托管
(docs/BENCHMARKS.md has its strength).

Deterministic: equal candidates keep the enumerator's order and the first is taken; a
``seed`` picks among equals instead (variety for 托管 tables) and seeds the search's deals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from . import _rollout, _search, _suggest, styles
from .cards import BJ, SJ, card_rank
from .declaration import Declaration
from .errors import RuleViolation, ShuangkouError
from .rollouts import ChoiceRule, Evaluated, Proposal, choose
from .variants import Variant, get_variant

__all__ = ["Budget", "DANGER", "DEFAULT_WIDTH", "MAX_ALTERNATIVES", "MAX_EXACT", "MAX_MARGIN",
           "MAX_ROLLOUTS", "MODELS", "REASON_TABLE", "Ranked", "Reason", "RolloutBudget",
           "SEARCH24", "SeatStyles", "Suggestion", "TUOGUAN", "declaration_for", "decide",
           "suggest", "suggestions"]

DANGER = _suggest.POLICY_CONSTANTS["DANGER"]   # an opponent this close to going out
#: Candidates from the ranked 提示 list a decision compares by default (the policy's action
#: included), in 托管's search and in the review (:class:`RolloutBudget` ``width``).
DEFAULT_WIDTH = 6
#: The most alternatives one call ranks; the largest rollout budget.
MAX_ALTERNATIVES = _search.MAX_WIDTH
MAX_ROLLOUTS = _search.MAX_ROLLOUTS
#: How a search's rollouts play the other seats: the rows of core_ext/styles.py's
#: MODEL_TABLE — "mix" (a mixture of styles, the default), "sound" (the mixture without its
#: partner-blind style) or "rule" (the rule policy everywhere: issue 24's search).
MODELS = styles.MODELS
#: The most cards an exact endgame may start from.
MAX_EXACT = _rollout.MAX_EXACT
#: The largest margin a Budget may ask for, in standard errors.
MAX_MARGIN = 10.0


@dataclass(frozen=True, slots=True)
class RolloutBudget:
    """What the rollout engine may spend on one decision, and how it plays: the fields 托管's
    search (:class:`Budget`) and the review (``review.ReviewBudget``) share, checked here and
    nowhere else (the drivers, core_ext/_search.pyx, and every front end rely on it:
    ShuangkouError naming the field of a value out of its bounds).

    ``rollouts`` (at least :attr:`MIN_ROLLOUTS`; 0: no count limit) and ``ms`` milliseconds
    (0: no time limit); ``model``: how its rollouts play the other seats (:data:`MODELS`);
    ``exact``: a rollout whose hands hold this many cards or fewer together is finished by
    an exact search of its deal (0: never; at most :data:`MAX_EXACT`); ``race``: the deals
    end early for a candidate clearly behind (each driver says how); ``width``: the
    candidates from the ranked 提示 list the decision compares, the rule policy's action
    first (1 to :data:`MAX_ALTERNATIVES`; :data:`DEFAULT_WIDTH`)."""

    rollouts: int = 0
    ms: float = 0.0
    model: str = "mix"
    exact: int = 0
    race: bool = True
    width: int = DEFAULT_WIDTH

    #: The fewest rollouts this budget may ask for.
    MIN_ROLLOUTS: ClassVar[int] = 0

    def __post_init__(self) -> None:
        low = self.MIN_ROLLOUTS
        if type(self.rollouts) is not int or not low <= self.rollouts <= MAX_ROLLOUTS:
            raise ShuangkouError(f"rollouts must be an integer {low}–{MAX_ROLLOUTS:,}; "
                                 f"got {self.rollouts!r}", "rollouts")
        if not isinstance(self.ms, (int, float)) or not 0 <= self.ms <= 60_000:
            raise ShuangkouError(f"ms must be 0–60,000 milliseconds; got {self.ms!r}", "ms")
        if self.model not in MODELS:
            raise ShuangkouError(f"model must be one of {', '.join(MODELS)}; got "
                                 f"{self.model!r}", "model")
        if type(self.exact) is not int or not 0 <= self.exact <= MAX_EXACT:
            raise ShuangkouError(f"exact must be an integer 0–{MAX_EXACT}; got "
                                 f"{self.exact!r}", "exact")
        if type(self.race) is not bool:
            raise ShuangkouError(f"race must be true or false; got {self.race!r}", "race")
        if type(self.width) is not int or not 1 <= self.width <= MAX_ALTERNATIVES:
            raise ShuangkouError(f"width must be an integer 1–{MAX_ALTERNATIVES}; got "
                                 f"{self.width!r}", "width")


@dataclass(frozen=True, slots=True)
class Budget(RolloutBudget):
    """What a search for 托管 or 提示 may spend on one decision (:class:`RolloutBudget`):
    ``rollouts`` and ``ms`` both 0 is the rule policy alone. ``race``: a candidate clearly
    behind another stops being rolled out, its rollouts going to the others, and the search
    ends once only the rule policy's action is left (docs/decisions.md 72); ``margin``: the
    standard errors a candidate's gain must exceed to overturn the rule policy's action
    (docs/decisions.md 73, 76); ``partner_bomb``: false leaves the smallest bomb out of the
    candidates when the partner's play stands (docs/decisions.md 79)."""

    margin: float = 3.0
    partner_bomb: bool = True

    def __post_init__(self) -> None:
        RolloutBudget.__post_init__(self)   # (a slotted dataclass: no zero-argument super)
        if type(self.partner_bomb) is not bool:
            raise ShuangkouError(f"partner_bomb must be true or false; got "
                                 f"{self.partner_bomb!r}", "partner_bomb")
        if (not isinstance(self.margin, (int, float)) or isinstance(self.margin, bool)
                or not 0 <= self.margin <= MAX_MARGIN):
            raise ShuangkouError(f"margin must be 0–{MAX_MARGIN} standard errors; got "
                                 f"{self.margin!r}", "margin")

    @property
    def searches(self) -> bool:
        return bool(self.rollouts or self.ms)


#: The 托管 budget: 1,200 rollouts, and never more than 100 ms, the other seats played by a
#: mixture of styles, the bomb over the partner's standing play left out (docs/decisions.md
#: 79: with the filter, twice the earlier 600 rollouts win the head to head against issue
#: 24's search and give nothing back against the panel; without it they did).
TUOGUAN = Budget(rollouts=1200, ms=100.0, partner_bomb=False)
#: Issue 24's search at its own budget (600 rollouts, the rule policy in every seat of a
#: rollout): kept as a named mode for comparison, the head to head's opponent.
SEARCH24 = Budget(rollouts=600, ms=100.0, model="rule", race=False, margin=1.0)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A legal action for the seat to act and why.

    ``kind`` is ``"play"`` or ``"pass"``; for a play, ``cards`` are codes from the hand and
    ``declaration`` names the reading to declare when the one meant is not what would stand
    undeclared (§7 rule 6), else None; ``reading`` is the reading that will stand. From a
    search, on ``deals`` sampled deals, against the rule policy's action: ``gain`` the mean
    difference in the seat's team's settlement points, ``wins`` in the share of deals it
    placed first (both None without a search).
    """

    kind: Literal["play", "pass"]
    seat: int
    cards: tuple[int, ...] = ()
    declaration: Declaration | None = None
    reading: Any = None
    reason: str = ""
    gain: float | None = None
    wins: float | None = None
    deals: int = 0

    @property
    def text(self) -> tuple[str, ...]:
        """The cards as text tokens."""
        from ._core import format_cards

        return tuple(format_cards(self.cards))


@dataclass(frozen=True, slots=True)
class Ranked:
    """Ranked actions for one seat, the one to take first; what the search spent
    (``rollouts`` played, ``deals`` sampled, ``width`` candidates compared, ``seconds``)."""

    actions: tuple[Suggestion, ...]
    rollouts: int = 0
    deals: int = 0
    width: int = 1
    seconds: float = 0.0


#: Self-play rounds the styles' rates are counted on, once per rule set
#: (:func:`_search.style_counts`: about 0.3 s; seed 0, so every process reads alike).
STYLE_ROUNDS = 2_000


_STYLE_RATES: dict[bytes, Any] = {}     # by rule-set fingerprint; 32 at most


def _style_rates(v: Variant) -> Any:
    rates = _STYLE_RATES.get(v.fingerprint)
    if rates is None:
        if len(_STYLE_RATES) >= 32:
            _STYLE_RATES.clear()
        rates = _STYLE_RATES[v.fingerprint] = _search.log_rates(
            _search.style_counts(v, STYLE_ROUNDS, 0))
    return rates


class SeatStyles:
    """What each seat's actions so far in a round say of its style: inference from the
    round's actions (docs/decisions.md 77). Every action of the round goes through
    :meth:`track`, which tallies, per seat, what it did (pass, an ordinary play, a bomb)
    in what it followed (its partner's play, an opponent's, an opponent's with an opponent
    about to go out: ``_search.CONTEXTS``) — public facts only, so reading them keeps the
    search information-fair. :meth:`weights` turns the tally into the search's ``read``:
    per seat, each style's prior in the search's model times the likelihood of the seat's
    actions under it (the styles' rates counted by self-play), with a floor of the prior."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        n_ctx, n_out = len(_search.CONTEXTS), len(_search.OUTCOMES)
        self.seen = [[[0] * n_out for _ in range(n_ctx)] for _ in range(4)]

    def track(self, round: Any, act: Callable[[], Any]) -> Any:
        """Run ``act`` (which applies the action of the seat to act in ``round``), tallying
        what it did; returns what ``act`` returns."""
        seat = round.turn
        context = _search.action_context(round)
        before = round.cards_left[seat] if seat is not None else 0
        done = act()
        if context >= 0:
            outcome = _search.action_outcome(round, seat, before)
            if outcome >= 0:
                self.seen[seat][context][outcome] += 1
        return done

    def weights(self, variant: Variant, model: str = "mix") -> tuple[tuple[float, ...], ...]:
        """Per seat, the weight of each style (_suggest.pxd ``Style`` order) for the
        search's ``read``."""
        return _search.read_weights(self.seen, _style_rates(variant), model)


@dataclass(frozen=True)
class Reason:
    """Why the policy proposes an action: one of its steps, or a kind of alternative."""

    name: str     # the C enum member is R_<NAME> (core_ext/_suggest.pxd), at this index
    words: str    # the sentence of a Suggestion ({danger}: the fewest cards an opponent
    #               holds; {kind}: the play's type; "also" words an alternative's cost)


#: Every reason, in the order of the compiled policy's ``Reason`` enum (tests/test_styles.py
#: checks each row's name against the enum member at its index).
REASON_TABLE: tuple[Reason, ...] = (
    Reason("out", "goes out with its last cards"),
    Reason("partner", "lets the partner's winning play stand"),
    Reason("last_two", "leads the stronger of its last two plays"),
    Reason("safe", "an opponent has {danger} card(s) left: leads a shape they cannot answer"),
    Reason("lead_bomb", "an opponent is about to go out: leads a bomb"),
    Reason("high_single", "an opponent is about to go out: leads its highest single"),
    Reason("feed", "the partner has 1 card left: leads a low single for them"),
    Reason("shed", "leads to shed its weakest cards"),
    Reason("only_bombs", "only bombs left: leads the smallest"),
    Reason("cheap", "beats with its cheapest play"),
    Reason("nothing", "nothing beats it without spending a wild or breaking a bomb"),
    Reason("bomb_danger", "bombs: an opponent has {danger} card(s) left"),
    Reason("bomb_out", "bombs to take the lead and go out"),
    Reason("bomb_pays", "bombs with a star that pays"),
    Reason("keep", "keeps its bombs for when they matter"),
    Reason("alt_kind", "its preferred {kind}"),
    Reason("alt_high", "beats high to win the trick"),
    Reason("alt_bomb", "its smallest bomb"),
    Reason("alt_pass", "passes"),
    Reason("alt_next", "also"),
)
_ALT_NEXT = [r.name for r in REASON_TABLE].index("alt_next")


def _cost_note(v: Variant, hand: Sequence[int], cards: Sequence[int], reading: Any,
               following: bool) -> str:
    """What an alternative costs the hand, in words (for the 提示 cycle)."""
    held = [0] * 15
    used = [0] * 15
    for c in hand:
        held[card_rank(c)] += 1
    for c in cards:
        used[card_rank(c)] += 1
    notes = []
    if reading.is_bomb:
        notes.append("a bomb")
    else:
        if any(held[r] >= 4 for r in range(15) if used[r]):
            notes.append("breaks a bomb")
        wild = {"SJ": SJ, "BJ": BJ}
        if any(used[wild[w]] for w in v.wild_jokers) and any(used[r] for r in range(SJ)):
            notes.append("spends a wild joker")
        if any(0 < used[r] < held[r] for r in range(15)):
            notes.append("splits a group")
    verb = "also beats" if following else "also leads"
    return verb + (f" ({', '.join(notes)})" if notes else "")


def declaration_for(reading: Any) -> Declaration:
    """The declaration a declared play of the engine's is made with (§7 rule 6), as 托管
    states it and the review records it: the reading's kind, top and star (a star of 0 left
    unnamed); which reading stands is the round's to say."""
    return Declaration(reading.kind, reading.top, reading.star or None)


def _suggestion(v: Variant, seat: int, hand: Sequence[int], following: bool,
                act: Proposal | Evaluated, gain: float | None = None,
                wins: float | None = None, deals: int = 0, searched: str = "") -> Suggestion:
    cards, reading, declared = act.cards, act.reading, act.declared
    if act.reason == _ALT_NEXT:
        words = _cost_note(v, hand, cards, reading, following)
    else:
        words = REASON_TABLE[act.reason].words.format(
            danger=act.danger, kind=reading.kind if reading is not None else "")
    if searched:
        words = f"{searched}: {words}"
    if not cards:
        return Suggestion("pass", seat, reason=words, gain=gain, wins=wins, deals=deals)
    declaration = declaration_for(reading) if declared else None
    return Suggestion("play", seat, tuple(cards), declaration, reading,
                      f"{words}: {reading.describe()}", gain, wins, deals)


def decide(variant: str | Variant, seat: int, hand: Sequence[int],
           sizes: Sequence[int], standing: tuple[int, Any] | None = None, *,
           seed: int | None = None, star: int = 0, winning: bool = False,
           played: Sequence[Any] = ()) -> Suggestion:
    """The rule policy on plain table facts: ``sizes`` = cards held per seat, ``standing`` =
    (seat, reading) of the play to beat or None when ``seat`` leads; ``star`` = the
    highest star the seat has played (``played``: its bombs, Readings, when known),
    ``winning`` = its team holds 1st place. See the module doc."""
    v = get_variant(variant)
    act = _suggest.choose(v, seat, hand, sizes, standing, seed=seed, star=star,
                          winning=winning, played=played)[0]
    return _suggestion(v, seat, sorted(hand), standing is not None, act)


def suggestions(round: Any, count: int = 1, *, seed: int | None = None,
                budget: Budget = Budget(), timeout: float | None = None,
                cancelled: Callable[[], bool] | None = None) -> Ranked:
    """Up to ``count`` actions for the seat to act in ``round`` (a
    :class:`shuangkou.core.Round`), the one to take first. Without a budget: the rule
    policy's action, then the 提示 cycle; with one: the search's ranking of the budget's
    ``width`` candidates (``count`` at least). ``timeout`` (seconds) bounds the whole
    call, as an RPC deadline does; ``cancelled`` (asked between the search's deals) ends the
    search early when true.

    :raises RuleViolation: the round is over (``ROUND_OVER``).
    :raises DeadlineExceeded: not even the rule policy's action fitted in ``timeout``.
    """
    if round.is_over or round.turn is None:
        raise RuleViolation("the round is over: nothing to suggest", "ROUND_OVER")
    if type(count) is not int or not 1 <= count <= MAX_ALTERNATIVES:
        raise ShuangkouError(f"count must be 1–{MAX_ALTERNATIVES}; got {count!r}", "count")
    v, seat = round.variant, round.turn
    hand = round.hand(seat)
    following = round.standing is not None
    if not budget.searches:
        proposed = _suggest.choose_in(round, seed=seed, count=count, timeout=timeout)
        actions = [_suggestion(v, seat, hand, following, act) for act in proposed]
        return Ranked(_standing(round, actions))
    ev = _search.search(round, rollouts=budget.rollouts, ms=budget.ms, seed=seed,
                        width=max(budget.width, count), timeout=timeout,
                        cancelled=cancelled, model=budget.model, exact=budget.exact,
                        race=budget.race, partner_bomb=budget.partner_bomb)
    cands = ev.candidates
    best = choose(ev, ChoiceRule("value", budget.margin))
    # the choice first, then the candidates still in the race by their gain (one dropped
    # by the race has a mean of fewer deals, and is behind)
    order = sorted(range(len(cands)), key=lambda k: (k != best, not cands[k].live,
                                                     -cands[k].gain, k))
    actions = []
    for i, k in enumerate(order[:count]):
        c = cands[k]
        if not ev.deals:
            note = ""
        elif i == 0 and best == 0:
            note = f"search ({c.deals} deals) kept the rule policy's choice"
        else:
            note = (f"search ({c.deals} deals): {c.gain_points:+.1f} points, "
                    f"{c.gain_first:+.0%} wins over the rule policy's choice")
        actions.append(_suggestion(v, seat, hand, following, c,
                                   c.gain_points if ev.deals else None,
                                   c.gain_first if ev.deals else None, c.deals, note))
    return Ranked(_standing(round, actions), ev.rollouts, ev.deals, len(cands), ev.seconds)


def _standing(round: Any, actions: list[Suggestion]) -> tuple[Suggestion, ...]:
    """The reading that will stand for declared plays is the Round's to say: each is
    played on a copy (µs)."""
    out = []
    for s in actions:
        if s.declaration is not None:
            stands = round.copy().play(s.seat, s.cards, s.declaration).reading
            if stands.key != s.reading.key or (stands.kind, stands.top) != (s.reading.kind,
                                                                           s.reading.top):
                s = replace(s, reading=stands)
        out.append(s)
    return tuple(out)


def suggest(round: Any, *, seed: int | None = None, budget: Budget = Budget(),
            timeout: float | None = None) -> Suggestion:
    """A legal action for the seat to act in ``round``: the rule policy's, or with a
    ``budget`` the search's (:data:`TUOGUAN` for 托管). See :func:`suggestions`."""
    return suggestions(round, 1, seed=seed, budget=budget, timeout=timeout).actions[0]

