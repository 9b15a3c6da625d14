"""Fair play as the service reads it from a review — the record
(:class:`~shuangkou.core.review.Review`'s decisions: ``shuangkou review``, the round page) or
its JSON form (``Review.to_dict()``, the records of ``review-replays``): each decision's
evidence (:mod:`shuangkou.core.fairplay`), what it tells of engine assistance, a round's
scores per partnership and per seat, and the caveats every surface that shows them repeats
(docs/review.md "Fair play").

One home for what ``shuangkou review --fair-play``, the round page (service/view/page.py)
and the archive's sums (service/batch/review.py) read of a decision, so that the three
agree on which decisions carried evidence: each function takes a decision in either form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from shuangkou.core.cards import SEATS
from shuangkou.core.fairplay import (
    LATE,
    Evidence,
    GiveUps,
    Regrets,
    RoundScore,
    TableScore,
    beyond_table,
    round_score,
)
from shuangkou.core.tells import Tell, sight_score, tell_score

if TYPE_CHECKING:   # the record's type only: its JSON form is told apart as a Mapping
    from shuangkou.core.review import Decision

__all__ = ["CAVEATS", "NOT_PROOF", "ONE_ROUND", "VIEW_NAMES", "WHAT_TO_DO", "Reviewed",
           "RoundFair", "TAKEN_TEXT", "engine_tells", "evaluated", "evidence_of", "evidence_text",
           "EngineTells", "block_text", "concede_text", "concedes_of", "fair_played",
           "gained_most", "opponents_tell_of", "over_partner_of", "round_fair", "rule_index",
           "score_text", "taken_index", "tell_of", "tell_text", "tells_text"]

#: A reviewed decision: the record, or its JSON form.
Reviewed: TypeAlias = "Decision | Mapping[str, Any]"

#: The fair-play views as people read them (core_ext/fairplay.py KINDS).
VIEW_NAMES = {"partner": "partner's hand", "all": "every hand"}

NOT_PROOF = ("A signal is not proof: a fair-play flag (hand sharing, full sight, thrown "
             "rounds, engine assistance) is a reason to look, never a finding of cheating by "
             "itself: the evidence is what one engine makes of the decisions, at a finite "
             "budget, and an honest player can be lucky, or play as the engine does.")
WHAT_TO_DO = ("What to do with a flag: read the decisions that carried the evidence (shuangkou "
              "review --fair-play and shuangkou view --review --fair-play of the flagged "
              "rounds show where the choices followed a view the seat should not have had, "
              "and which opponent gained) with a person who knows the game, and act only "
              "with other facts (accounts, devices, networks, who moved coins to whom).")
ONE_ROUND = ("One round says little: its decisions share one deal, and a calibrated signal "
             "needs tens of rounds (review-replays --fair-play sums them per partnership and "
             "player, with intervals and p-values).")
#: What one round's fair play shows with it (``shuangkou review --fair-play``, the page).
CAVEATS = (NOT_PROOF, WHAT_TO_DO, ONE_ROUND)


def _field(decision: Reviewed, name: str) -> Any:
    """A field of a decision that both forms name alike (``seat``, ``forced``, ``deals``,
    ``best``, ``tuoguan``)."""
    return decision[name] if isinstance(decision, Mapping) else getattr(decision, name)


def taken_index(decision: Reviewed) -> int:
    """The index among its candidates of the action taken."""
    if not isinstance(decision, Mapping):
        return decision.taken
    return next(k for k, c in enumerate(decision["candidates"]) if c["taken"])


def rule_index(decision: Reviewed) -> int:
    """The index among its candidates of the rule policy's action (the 提示 list's first)."""
    if not isinstance(decision, Mapping):
        return next(k for k, c in enumerate(decision.candidates) if c.hint_rank == 0)
    return next(k for k, c in enumerate(decision["candidates"]) if c["hint_rank"] == 0)


def evaluated(decision: Reviewed) -> bool:
    """Whether the review rolled the decision out (not forced, and given deals)."""
    return not _field(decision, "forced") and _field(decision, "deals") > 0


def evidence_of(decision: Reviewed) -> tuple[Evidence, ...]:
    """A decision's fair-play evidence, one per view (none without fair play)."""
    if not isinstance(decision, Mapping):
        return decision.fair
    return tuple(Evidence(e["kind"], e["regret"], tuple(e["decoy_regrets"]), e["disagree"],
                          e["follows"],
                          tuple(Regrets(c["regret"], tuple(c["decoy_regrets"]))
                                for c in e.get("candidates", ())))
                 for e in decision.get("fair") or ())


def _tell(t: Mapping[str, Any] | None) -> Tell | None:
    return None if t is None else Tell(t["kind"], t["passed"], t["value"],
                                       tuple(t["decoy_values"]))


def tell_of(decision: Reviewed) -> Tell | None:
    """A decision's tell of the partner's hand (core_ext/tells.py; None: it tells nothing,
    or the review ran without fair play)."""
    if not isinstance(decision, Mapping):
        return decision.tell
    return _tell(decision.get("tell"))


def opponents_tell_of(decision: Reviewed) -> Tell | None:
    """A decision's tell of the opponents' hands (core_ext/tells.py ``opponents_tell``;
    None: it tells nothing, or the review ran without fair play)."""
    if not isinstance(decision, Mapping):
        return decision.opponents_tell
    return _tell(decision.get("opponents_tell"))


def _chance(decision: Reviewed, name: str) -> bool | None:
    """A decision's chance of the thrown-round test named ``name``, in either form."""
    given = decision.get(name) if isinstance(decision, Mapping) else getattr(decision, name)
    return None if given is None else bool(given)


def over_partner_of(decision: Reviewed) -> bool | None:
    """A decision's chance to block (core_ext/fairplay.py ``over_partner``: True, a block;
    False, a chance not taken; None: no chance, or the review ran without fair play)."""
    return _chance(decision, "over_partner")


def concedes_of(decision: Reviewed) -> bool | None:
    """A decision's chance to concede (core_ext/fairplay.py ``concedes``: True, a
    concession; False, a chance not taken; None: no chance, or the review ran without fair
    play or before it was counted)."""
    return _chance(decision, "concedes")


def fair_played(decisions: Iterable[Reviewed]) -> bool:
    """Whether a review was run with fair play: some decision carries its views (every
    evaluated decision does then)."""
    return any(d.get("fair") if isinstance(d, Mapping) else d.fair for d in decisions)


def engine_tells(decision: Reviewed) -> str | None:
    """What a decision tells of engine assistance (core_ext/fairplay.py): where 托管's
    choice is not the rule policy's action, ``"engine"`` when the action taken was 托管's,
    ``"rule"`` when it was the rule policy's, ``"neither"`` else; None where it tells
    nothing (not evaluated, or 托管's choice is the rule policy's)."""
    if not evaluated(decision):
        return None
    tuoguan, rule = _field(decision, "tuoguan"), rule_index(decision)
    if tuoguan == rule:
        return None
    taken = taken_index(decision)
    return "engine" if taken == tuoguan else "rule" if taken == rule else "neither"


#: What the action taken was where 托管's choice is not the rule policy's (engine_tells),
#: as people read it.
TAKEN_TEXT = {"engine": "托管's", "rule": "the rule policy's", "neither": "neither"}


def gained_most(final: Sequence[int], seat: int) -> int:
    """The opponent of table ``seat`` whose final amount is the largest (the first by table
    seat on a tie): who a thrown round fed."""
    opponents = ((seat + 1) % SEATS, (seat + 3) % SEATS)
    return max(opponents, key=lambda o: (final[o], -o))


class EngineTells(NamedTuple):
    """A seat's decisions that tell for engine assistance (:func:`engine_tells`): ``engine``
    where the action taken was 托管's, ``rule`` where it was the rule policy's, ``departs``
    all of them (托管's choice is not the rule policy's action, whatever was taken); and
    the points lost and at stake over its other evaluated decisions (``loss``, ``stake``:
    its skill where agreement cannot tell, what the signal weighs agreement against)."""

    engine: int
    rule: int
    departs: int = 0
    loss: float = 0.0
    stake: float = 0.0


@dataclass(frozen=True, slots=True)
class RoundFair:
    """One round's fair-play figures: per team (table seats t and t + 2) the hand-sharing
    score on the views and its ``tells`` score (core_ext/tells.py), per table seat the
    full-sight score (:class:`~shuangkou.core.fairplay.RoundScore`, None when no decision
    carried evidence), its ``sight`` score (its tells of the partner's hand and of the
    opponents', core_ext/tells.py ``sight_score``), the decisions that tell for engine
    assistance (:class:`EngineTells`) and its give-ups with their chances (the thrown-round
    test's, :class:`~shuangkou.core.fairplay.GiveUps`)."""

    hand_sharing: tuple[RoundScore | None, RoundScore | None]
    full_sight: tuple[RoundScore | None, ...]
    engine: tuple[EngineTells, ...]
    tells: tuple[RoundScore | None, RoundScore | None] = (None, None)
    give_ups: tuple[GiveUps, ...] = ()
    sight: tuple[RoundScore | None, ...] = ()

    def team_beyond(self, team: int) -> TableScore | None:
        """Team ``team``'s hand-sharing score beyond the other partnership's: what the
        signal over rounds sums (core_ext/fairplay.py ``beyond_table``)."""
        return beyond_table(self.hand_sharing[team], (self.hand_sharing[1 - team],))

    def tells_beyond(self, team: int) -> TableScore | None:
        """Team ``team``'s tells score beyond the other partnership's."""
        return beyond_table(self.tells[team], (self.tells[1 - team],))

    def seat_beyond(self, seat: int) -> TableScore | None:
        """Table seat ``seat``'s full-sight score beyond its two opponents' mean."""
        return beyond_table(self.full_sight[seat], (self.full_sight[(seat + 1) % SEATS],
                                                    self.full_sight[(seat + 3) % SEATS]))

    def sight_beyond(self, seat: int) -> TableScore | None:
        """Table seat ``seat``'s sight score beyond its two opponents' mean."""
        return beyond_table(self.sight[seat], (self.sight[(seat + 1) % SEATS],
                                               self.sight[(seat + 3) % SEATS]))


def round_fair(decisions: Iterable[Reviewed], final: Sequence[int]) -> RoundFair:
    """The :class:`RoundFair` of a review's decisions, ``final`` the round's final amounts by
    table seat (the thrown-round test counts the rounds a player lost)."""
    by_seat: list[list[Evidence]] = [[] for _ in range(SEATS)]
    engine: list[list[str]] = [[] for _ in range(SEATS)]
    # per seat, (loss, stake) over its evaluated decisions that do not tell for the engine
    elsewhere = [[0.0, 0.0] for _ in range(SEATS)]
    partner: list[list[Tell]] = [[] for _ in range(SEATS)]
    beats: list[list[Tell]] = [[] for _ in range(SEATS)]
    # per seat, its chances to block and to concede: (taken, its cards left then)
    over: list[list[tuple[bool, int]]] = [[] for _ in range(SEATS)]
    conceded: list[list[tuple[bool, int]]] = [[] for _ in range(SEATS)]
    for d in decisions:
        seat = _field(d, "seat")
        by_seat[seat].extend(evidence_of(d))
        # a record kept by a build before E94 has no cards left: all of it before the endgame
        left = d.get("cards_left", LATE + 1) if isinstance(d, Mapping) else d.cards_left
        if (o := over_partner_of(d)) is not None:
            over[seat].append((o, left))
        if (c := concedes_of(d)) is not None:
            conceded[seat].append((c, left))
        if (told := engine_tells(d)) is not None:
            engine[seat].append(told)
        elif evaluated(d):
            elsewhere[seat][0] += _field(d, "loss")
            elsewhere[seat][1] += _field(d, "stake")
        if (t := tell_of(d)) is not None:
            partner[seat].append(t)
        if (t := opponents_tell_of(d)) is not None:
            beats[seat].append(t)
    teams = (round_score("partner", by_seat[0] + by_seat[2]),
             round_score("partner", by_seat[1] + by_seat[3]))
    return RoundFair(teams, tuple(round_score("all", e) for e in by_seat),
                     tuple(EngineTells(t.count("engine"), t.count("rule"), len(t), *other)
                           for t, other in zip(engine, elsewhere, strict=True)),
                     (tell_score((partner[0], partner[2])), tell_score((partner[1], partner[3]))),
                     tuple(GiveUps.of(o, c, amount)
                           for o, c, amount in zip(over, conceded, final, strict=True)),
                     tuple(sight_score(partner[s] + beats[s]) for s in range(SEATS)))


def evidence_text(e: Evidence, minus: str = "-") -> str:
    """One view's evidence for people: the taken action's regret against the reference on
    the true hands and on each decoy, and the excess with its sign (``minus``: the page
    writes a true minus sign)."""
    decoys = ", ".join(f"{r:.1f}".replace("-", minus) for r in e.decoy_regrets)
    excess = f"{e.excess:+.1f}".replace("-", minus)
    regret = f"{e.regret:.1f}".replace("-", minus)
    return f"{VIEW_NAMES[e.kind]}: regret {regret}, decoys {decoys} (excess {excess})"


def tell_text(t: Tell, minus: str = "-") -> str:
    """One decision's tell for people (core_ext/tells.py; ``minus``: the page writes a true
    minus sign)."""
    if t.kind == "follow":
        seen = sum(1 for v in t.decoy_values if v)
        departed = ("passed where the first hint plays" if t.passed
                    else "played where the first hint passes")
        return (f"tell, follow: the partner's hand {'beats' if t.value else 'does not beat'} "
                f"the standing play, as {seen} of {len(t.decoy_values)} decoys do; the seat "
                f"{departed}")
    mean = sum(t.decoy_values) / len(t.decoy_values)
    if t.kind == "beat":
        return (f"tell, beat: no opponent after the seat can beat the play chosen "
                f"{t.value:+.2f} more often than the first hint's, {mean:+.2f} on the decoys "
                f"(excess {t.excess:+.2f})").replace("-", minus)
    return (f"tell, lead: the partner beats the play led {t.value:+.2f} more often than the "
            f"first hint's, {mean:+.2f} on the decoys (excess {t.excess:+.2f})"
            ).replace("-", minus)


def block_text(over: bool) -> str:
    """A decision's chance to block for people (:func:`over_partner_of`)."""
    return ("blocked: played over the partner's standing play" if over else
            "could have played over the partner's standing play, and did not")


def concede_text(conceded: bool) -> str:
    """A decision's chance to concede for people (:func:`concedes_of`)."""
    return ("conceded: passed over the opponents' play, holding a free beat and no partner "
            "to act after" if conceded else
            "could have conceded (a free beat over the opponents' play, no partner to act "
            "after), and played")


def tells_text(t: TableScore | None) -> str:
    """A partnership's tells or a seat's sight score in a round, and the same beyond its
    table's, for people (:meth:`RoundFair.tells_beyond`, :meth:`RoundFair.sight_beyond`)."""
    if t is None:
        return "no tell"
    r = t.own
    return (f"{r.decisions} tell{'s' if r.decisions != 1 else ''}, score {r.score:+.2f}; "
            f"beyond the table's {t.beyond.score:+.2f}")


def score_text(t: TableScore | None) -> str:
    """A round's score of a partnership or a seat, and the same beyond its table's, for
    people (:meth:`RoundFair.team_beyond`, :meth:`RoundFair.seat_beyond`)."""
    if t is None:
        return "no decision carried evidence"
    r, beyond = t.own, t.beyond
    return (f"{r.decisions} decision{'s' if r.decisions != 1 else ''} carried evidence: excess "
            f"{r.excess:+.1f} points ({r.excess / r.decisions:+.2f} a decision), rank score "
            f"{r.score:+.2f}; beyond the table's: excess {beyond.excess:+.1f}, rank score "
            f"{beyond.score:+.2f}")
