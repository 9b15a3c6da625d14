"""The thrown-round test (core_ext/fairplay.py): each decision's chance to block and chance
to concede checked against the definitions written out here from the module doc (whether the
seat has a play over its partner's is asked of ``legal_plays``, not of the ``count_plays``
the module uses; who is still to act, from the turn order alone), the test's p-value against
the exact one, counted over every way of dealing the blocks and the concessions among their
chances in the rounds the player lost, its false alarms on players who give up at a steady
rate, and rounds the player won left out."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import replace
from typing import Any

import pytest

from shuangkou.core import Round, generate_replay, legal_plays
from shuangkou.core.fairplay import GiveUps, concedes, over_partner, thrown_signal
from shuangkou.core.replay import parse_replay


def _chance(before: Any, cards: tuple[int, ...]) -> bool | None:
    """RULES.md §9: a seat may pass or beat the play that stands; a chance is the partner's
    play standing and a play over it in the seat's hand; a block plays over it and keeps a
    card."""
    seat = before.turn
    st = before.standing
    if seat is None or st is None or st.seat != (seat + 2) % 4:
        return None
    if not cards:
        return False if legal_plays(list(before.hand(seat)), before.variant, st.reading) \
            else None
    return len(before.hand(seat)) > len(cards)


def _to_concede(before: Any, cards: tuple[int, ...]) -> bool | None:
    """An opponent's play stands and is no bomb; the partner does not act again before the
    trick comes back to the standing seat (it sits right after the seat only when the
    standing seat is right before it, and has cards); a play of the standing kind in the
    seat's hand uses no wild joker (card codes 66–70 are the small joker, 71–75 the big) and,
    of each rank it uses, as many cards as the hand holds; a concession passes."""
    seat = before.turn
    st = before.standing
    if seat is None or st is None or (st.seat - seat) % 2 == 0 or st.reading.is_bomb:
        return None
    mate = (seat + 2) % 4
    if st.seat == (seat + 3) % 4 and before.cards_left[mate] > 0:
        return None
    hand = list(before.hand(seat))
    ranks = [(c - 1) // 5 for c in hand]
    wild = {13 if w == "SJ" else 14 for w in before.variant.wild_jokers}
    free = [p for p in legal_plays(hand, before.variant, st.reading)
            if p.reading.kind == st.reading.kind and not p.reading.is_bomb
            and all((c - 1) // 5 not in wild
                    and [(d - 1) // 5 for d in p.cards].count((c - 1) // 5)
                    == ranks.count((c - 1) // 5) for c in p.cards)]
    return (not cards) if free else None


@pytest.mark.parametrize("variant,seed", [("baibian", 11), ("huopin", 12), ("fengkuang", 13),
                                          ("bianfeng", 14), ("qianbian", 15)])
def test_each_decisions_chances_are_the_definitions(variant: str, seed: int) -> None:
    seen, conceded = set(), set()
    typed = parse_replay(generate_replay(variant, seed))
    r = typed.start()
    for action in typed.actions:
        before = r.copy()
        r.apply(action)
        if action.kind == "escape":
            continue
        got = over_partner(before, action.cards)
        assert got == _chance(before, action.cards), (variant, seed, action)
        seen.add(got)
        given = concedes(before, action.cards)
        assert given == _to_concede(before, action.cards), (variant, seed, action)
        conceded.add(given)
    assert seen == {None, False, True}
    assert {None, False} <= conceded


def lost(blocks: int, chances: int, concessions: int = 0, to_concede: int = 0) -> GiveUps:
    """A round the player lost (its final below 0), the rounds the test counts."""
    return GiveUps(blocks, chances, concessions, to_concede, -4)


def won(blocks: int, chances: int, concessions: int = 0, to_concede: int = 0) -> GiveUps:
    """A round the player did not lose (here it ended ahead)."""
    return GiveUps(blocks, chances, concessions, to_concede, 4)


def _exact(given: list[GiveUps]) -> float:
    """The share of all ways of dealing the blocks among the chances to block and the
    concessions among the chances to concede, in the rounds the player lost (final below 0),
    those of the endgame (``late``) among its chances and the others among theirs, whose
    triples of give-ups in one round (Σ C(give-ups, 3)) are at least the observed."""
    rounds = [r for r in given if r.final < 0]
    def ways(chances: list[int], given: int) -> list[list[int]]:
        slots = [k for k, n in enumerate(chances) for _ in range(n)]
        out = []
        for chosen in itertools.combinations(range(len(slots)), given):
            counts = [0] * len(rounds)
            for i in chosen:
                counts[slots[i]] += 1
            out.append(counts)
        return out
    early = [(r.blocks - r.late[0], r.chances - r.late[1], r.concessions - r.late[2],
              r.to_concede - r.late[3]) for r in rounds]
    deals = [ways([x[1] for x in part], sum(x[0] for x in part))
             for part in (early, [r.late for r in rounds])] + \
            [ways([x[3] for x in part], sum(x[2] for x in part))
             for part in (early, [r.late for r in rounds])]
    observed = sum(math.comb(r.blocks + r.concessions, 3) for r in rounds)
    hits = total = 0
    for parts in itertools.product(*deals):
        total += 1
        hits += sum(math.comb(sum(n), 3) for n in zip(*parts, strict=True)) >= observed
    return hits / total


@pytest.mark.parametrize("rounds", [
    [lost(3, 3), lost(0, 2), lost(0, 4), lost(0, 3)],
    [lost(2, 3), lost(1, 2), lost(0, 4), lost(1, 3)],
    [lost(1, 2), lost(1, 2), lost(1, 2), lost(1, 2)],
    [lost(4, 5), lost(1, 3), lost(0, 4)],
    [lost(1, 2, 3, 3), lost(0, 1, 0, 2), lost(0, 2, 0, 3), lost(0, 0, 1, 2)],
    [lost(0, 0, 2, 2), lost(0, 0, 0, 3), lost(0, 0, 1, 3)],
    [lost(3, 3), won(0, 6, 0, 6), lost(0, 2), won(5, 5), lost(1, 4), GiveUps(2, 2, 1, 1, 0)],
    # the endgame's give-ups dealt among its chances, the others among theirs
    [replace(lost(3, 4, 2, 3), late=(3, 3, 0, 0)), replace(lost(0, 3, 0, 2), late=(0, 1, 0, 1)),
     lost(0, 3, 0, 1), replace(lost(1, 3, 1, 2), late=(0, 0, 1, 1))],
    [replace(lost(0, 0, 3, 3), late=(0, 0, 3, 3)), lost(0, 0, 1, 4), lost(0, 0, 0, 3)]])
def test_the_p_value_is_the_exact_one(rounds: list[GiveUps]) -> None:
    got = thrown_signal(rounds, permutations=20000, enough=10**6, seed=3)
    assert got.p == pytest.approx(_exact(rounds), abs=0.012)
    given = [r.blocks + r.concessions for r in rounds if r.final < 0]
    assert got.estimate == 3 * sum(math.comb(g, 3) for g in given) / sum(given)
    assert got.low <= got.high
    assert got == thrown_signal(rounds, permutations=20000, enough=10**6, seed=3)


def test_steady_giving_up_is_flagged_at_most_at_the_nominal_rate() -> None:
    """Players who block and concede each chance at rates of their own (from never to most
    of the time), over 10 to 50 rounds of 0 to 6 chances of each, lost or not: at p < 0.05
    a share at most 5 %, beyond the sampling error of 400 players; a player whose give-ups
    crowd into two rounds it lost is flagged, and the note names the round of most."""
    rng = random.Random(5)
    flagged = 0
    players = 400
    for _ in range(players):
        block, concede = rng.choice((0.0, 0.02, 0.1, 0.3, 0.6)), rng.choice((0.0, 0.1, 0.4))
        rounds = []
        for _ in range(rng.choice((10, 20, 50))):
            n, m = rng.randint(1, 6), rng.randint(0, 6)
            rounds.append(GiveUps(sum(rng.random() < block for _ in range(n)), n,
                                  sum(rng.random() < concede for _ in range(m)), m,
                                  rng.choice((-8, 0, 8))))
        flagged += thrown_signal(rounds, seed=rng.randrange(10**6)).p < 0.05
    assert flagged / players <= 0.05 + 2 * (0.05 * 0.95 / players) ** 0.5
    crowded = [lost(0, 3, 0, 2)] * 8 + [lost(1, 4, 3, 3), lost(2, 3, 0, 1)]
    assert thrown_signal(crowded, ["x"] * 10).note == \
        "round 8: 1 of 4 chances blocked, 3 of 3 conceded; x gained most"
    assert thrown_signal(crowded).p < 0.01


def test_no_give_up_names_no_round_and_bad_counts_are_refused() -> None:
    assert thrown_signal([lost(0, 3, 0, 2)] * 12).p == 1.0
    assert thrown_signal([lost(0, 3)] * 12).note == ""
    assert thrown_signal([lost(1, 3)] + [lost(0, 3)] * 11).p == 1.0
    # two give-ups in one round are a moment's, not a thrown round's (E91): no round holds
    # three, no deal crowds less
    twice = thrown_signal([lost(2, 3), lost(0, 3, 1, 1)] + [lost(0, 3)] * 10)
    assert (twice.estimate, twice.p) == (0.0, 1.0)
    assert twice.note == "round 0: 2 of 3 chances blocked, 0 of 0 conceded"
    assert thrown_signal([lost(0, 0, 0, 2)] * 3).evidence == 3
    with pytest.raises(ValueError, match="blocks must be 0 to its chances"):
        thrown_signal([lost(4, 3)])
    with pytest.raises(ValueError, match="concessions 0 to its chances to concede"):
        thrown_signal([lost(0, 3, 2, 1)])
    with pytest.raises(ValueError, match="before its endgame and in it"):
        thrown_signal([replace(lost(1, 3), late=(0, 4, 0, 0))])
    with pytest.raises(ValueError, match="before its endgame and in it"):
        thrown_signal([replace(lost(1, 3), late=(2, 2, 0, 0))] + [lost(0, 2)])


def test_an_endgame_s_give_ups_are_dealt_among_its_chances() -> None:
    """Give-ups crowded into one round's endgame, where the player's other endgame chances
    are few, are what its endgame's chances make likely: not flagged; the same give-ups
    before the endgame, among many chances there, are (E94)."""
    crowded = [lost(0, 2, 4, 5)] + [lost(0, 3, 0, 6)] * 11
    late = [replace(crowded[0], late=(0, 0, 4, 5))] + \
        [replace(r, late=(0, 0, 0, k < 2)) for k, r in enumerate(crowded[1:])]
    assert thrown_signal(crowded).p < 0.01
    # all four among the endgame's 7 chances fall in its round 0 in 5 of 35 deals
    assert thrown_signal(late, permutations=20000, enough=10**6).p == pytest.approx(5 / 35,
                                                                                    abs=0.01)


def test_only_the_rounds_the_player_lost_count() -> None:
    """A round the player did not lose moved none of its points to the opponents: give-ups
    crowded into rounds it won or ended level (a strong player letting tricks go while its
    side is ahead) are not flagged, the same crowded into rounds it lost are, and the note
    names the lost round of most give-ups, whatever a won round holds."""
    ahead = [won(2, 3, 4, 4), GiveUps(0, 2, 5, 6, 0), won(1, 2, 3, 3)] + \
        [lost(0, 3, 0, 2)] * 9 + [won(0, 3, 0, 2)] * 8
    flat = thrown_signal(ahead, ["x"] * len(ahead))
    # the rounds it won were looked at: they count toward the minimum sample (E93)
    assert (flat.p, flat.estimate, flat.evidence, flat.note) == (1.0, 0.0, 20, "")
    behind = [replace(r, final=-abs(r.final) or -1) for r in ahead]
    assert thrown_signal(behind).p < 0.01
    mixed = [won(6, 6, 6, 6)] + [lost(0, 3, 0, 2)] * 9 + [lost(1, 4, 3, 3), lost(2, 3, 0, 1)]
    got = thrown_signal(mixed, [f"o{k}" for k in range(len(mixed))])
    assert got.note == "round 10: 1 of 4 chances blocked, 3 of 3 conceded; o10 gained most"
    assert got.evidence == 12


@pytest.mark.parametrize("hand,chance", [
    ("9H 9D 4C", False),        # its only beats split its pair of nines
    ("9H 9D 9C 9S 4C", False),  # or its four nines, a bomb
    ("9H 8D 4C", True),         # a lone nine beats for nothing
    ("9H TD TC 4C", True),      # the nine does; the tens would split their pair
])
def test_a_free_beat_splits_no_set(hand: str, chance: bool) -> None:
    """A concession hands over a trick the seat could take for nothing: beating a single
    with one of a pair costs the pair, so a seat holding only such beats has no chance to
    concede (E94); with a free beat, passing concedes and playing does not."""
    r = Round.deal("baibian", ["5S 3S", "3H 3C", "3D 4D", hand], 0, partial_deal=True)
    r.play(0, "5S")
    r.pass_turn(1)
    r.pass_turn(2)
    assert concedes(r.copy(), ()) is (True if chance else None)
    assert concedes(r.copy(), (r.hand(3)[0],)) is (False if chance else None)
