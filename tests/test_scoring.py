"""Round settlement from a summary (RULES.md §9 round end, §10 scoring).

Every expected amount here is computed by hand from the tables of RULES.md §10 (written
out literally below), not read back from the Variant data, so the tests check the data too.
Seat layout: seats 0 and 2 are partners, as are 1 and 3.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shuangkou import core
from shuangkou.core.errors import IllegalPlay, InvalidPlay, ShuangkouError
from shuangkou.core.scoring import round_star, score_round

FINISHING = ("baibian", "fengkuang", "fengkuang_crazy", "bianfeng", "bianfeng_lishui",
             "qianbian")

# ----------------------------------------------------------------------------- bombs by star

BOTH_WILD = {"fengkuang", "fengkuang_crazy", "qianbian", "huopin"}


def bomb(variant: str, star: int) -> str:
    """Cards of one bomb with the given star in the variant (checked by the tests)."""
    crazy = variant == "fengkuang_crazy"
    rank, copies = ("8", 12) if crazy else ("7", 8)
    wilds = ["BJ", "BJ", "SJ", "SJ"] if variant in BOTH_WILD else ["BJ", "BJ"]

    def n_bomb(r: str, n: int) -> list[str]:
        k = min(n, copies)
        return [r * k, *wilds[:n - k]]

    if star <= copies + len(wilds):
        return " ".join(n_bomb(rank, star))
    if variant.startswith("fengkuang"):
        # chain bombs with X = the largest count: 4 + 4 (+ 4) + a big bomb on top
        low, big = (["9999", "TTTT"], "J") if crazy else (["3333", "4444"], "5")
        if star - 3 > copies + len(wilds):
            low, big = (["9999", "TTTT", "JJJJ"], "Q") if crazy else (["3333", "4444", "5555"], "6")
        return " ".join([*low, *n_bomb(big, star - len(low) - 1)])
    return {11: "88888888 99999999 TTTTTTTT"}[star]    # equal-count chain: 8 + 3


def test_bomb_helper_stars() -> None:
    for v, stars in (("baibian", range(4, 11)), ("fengkuang", range(4, 17)),
                     ("fengkuang_crazy", range(4, 21)), ("bianfeng", (*range(4, 11), 11)),
                     ("qianbian", range(4, 13)), ("huopin", range(4, 13))):
        for s in stars:
            assert core.classify(bomb(v, s), v).primary.star == s, (v, s, bomb(v, s))


# ----------------------------------------------------------------------------- §10.1 base

# finish orders, the kind of win they give, and each seat's place
ORDERS = {
    "double": ([0, 2], {0: 1, 2: 2, 3: 3, 1: 4}),
    "single": ([0, 1, 2], {0: 1, 1: 2, 2: 3, 3: 4}),
    "flat": ([0, 1, 3], {0: 1, 1: 2, 3: 3, 2: 4}),
}
BASE = {  # §10.1, by place 1st..4th
    "baibian": {"double": (4, 4, -4, -4), "single": (2, -2, 2, -2), "flat": (1, 0, 0, 1)},
    "fengkuang": {"double": (4, 4, -4, -4), "single": (2, -2, 2, -2), "flat": (0, 0, 0, 0)},
    "fengkuang_crazy": {"double": (4, 4, -4, -4), "single": (2, -2, 2, -2),
                        "flat": (0, 0, 0, 0)},
    "bianfeng": {"double": (4, 4, -4, -4), "single": (2, -2, 2, -2), "flat": (1, -1, -1, 1)},
    "bianfeng_lishui": {"double": (4, 4, -4, -4), "single": (2, -2, 2, -2),
                        "flat": (1, -1, -1, 1)},
    "qianbian": {"double": (4, 4, -4, -4), "single": (2, -2, 2, -2), "flat": (1, 0, 0, 1)},
}


@pytest.mark.parametrize("variant", FINISHING)
@pytest.mark.parametrize("kind", ["double", "single", "flat"])
def test_10_1_base_by_place(variant: str, kind: str) -> None:
    order, places = ORDERS[kind]
    res = score_round(variant, order)
    assert res.kind == kind
    assert res.winning_team == 0
    assert res.multiplier == 1
    for seat in range(4):
        assert res.seats[seat].place == places[seat]
        assert res.seats[seat].base == BASE[variant][kind][places[seat] - 1]
    assert res.final == tuple(BASE[variant][kind][places[s] - 1] for s in range(4))
    assert res.finish_order == tuple(order)


def test_places_are_derived_after_the_last_finisher() -> None:
    # seat 3 then seat 1 finish: team 1 wins a double; seat 2 (next after seat 1) is 3rd
    res = score_round("baibian", [3, 1])
    assert res.kind == "double" and res.winning_team == 1
    assert [s.place for s in res.seats] == [4, 2, 3, 1]
    assert res.ranking == (3, 1, 2, 0)
    # 平扣: the first finisher's team wins although the other team finished both first
    res = score_round("bianfeng", [2, 1, 3])
    assert res.kind == "flat" and res.winning_team == 0
    # places: 2 1st, 1 2nd, 3 3rd, 0 4th; flat base 1 −1 −1 1 by place
    assert res.final == (1, -1, 1, -1)


@pytest.mark.parametrize("left,kind,k", [
    ((0, 6, 9, 6), "double", 3), ((0, 12, 1, 1), "double", 3),
    ((0, 5, 9, 6), "single", 2), ((0, 4, 9, 3), "single", 2),
    ((0, 3, 9, 3), "flat", 1), ((0, 1, 9, 1), "flat", 1),
])
def test_10_1_huopin_kind_by_losers_cards(left: tuple[int, ...], kind: str, k: int) -> None:
    res = score_round("huopin", [0], cards_left=left)
    assert res.kind == kind and res.winning_team == 0
    assert res.final == (k, -k, k, -k)
    assert [s.place for s in res.seats] == [1, 2, 3, 4]


def test_huopin_winner_team_from_hands() -> None:
    res = score_round("huopin", [1], hands=["3 4 5 6 7 8", "", "9 T J Q K A", "2"])
    assert res.kind == "double" and res.winning_team == 1
    assert res.final == (-3, 3, -3, 3)


# ----------------------------------------------------------------------------- §10.3 multiplier

MULTIPLIER = {  # star -> M, §10.3 (the last row applies to all higher stars)
    "baibian": {4: 1, 5: 2, 6: 4, 7: 8, 8: 16, 10: 16},
    "bianfeng": {4: 1, 5: 2, 6: 4, 7: 8, 8: 16, 11: 16},
    "qianbian": {4: 1, 5: 2, 6: 4, 7: 8, 8: 16, 12: 16},
    "bianfeng_lishui": {4: 1, 5: 2, 6: 4, 7: 8, 8: 16, 9: 32, 10: 64, 11: 64},
    "fengkuang": {4: 1, 5: 2, 6: 4, 7: 6, 8: 8, 9: 16, 10: 24, 11: 32, 12: 64, 13: 96,
                  14: 128, 15: 256, 16: 512},
    "fengkuang_crazy": {7: 1, 8: 4, 9: 6, 10: 8, 11: 16, 12: 32, 13: 48, 14: 64, 15: 128,
                        16: 256, 17: 384, 18: 512, 19: 768, 20: 1024},
    "huopin": {4: 1, 5: 2, 6: 4, 7: 8, 8: 16, 9: 32, 10: 32, 12: 32},
}
CONTRIBUTION = {  # star -> (+a, −b), §10.4; stars not listed pay nothing
    "baibian": {6: (6, 2), 7: (12, 4), 8: (18, 6)},
    "bianfeng": {6: (6, 2), 7: (18, 6), 8: (30, 10)},
    "bianfeng_lishui": {6: (6, 2), 7: (18, 6), 8: (30, 10)},
    "fengkuang": {5: (6, 2), 6: (9, 3), 7: (12, 4), 8: (18, 6), 9: (36, 12), 10: (72, 24),
                  11: (144, 48), 12: (192, 64), 13: (288, 96), 14: (384, 128),
                  15: (768, 256), 16: (1152, 384)},
    "qianbian": {6: (6, 2), 7: (12, 4), 8: (18, 6)},
    "huopin": {6: (6, 2), 7: (18, 6), 8: (30, 10)},
}
CONTRIBUTION["fengkuang_crazy"] = {**CONTRIBUTION["fengkuang"], 17: (1536, 512),
                                   18: (1920, 640), 19: (2304, 768), 20: (3000, 1000)}


def contribution(variant: str, star: int) -> tuple[int, int]:
    rows = [s for s in CONTRIBUTION[variant] if s <= min(star, 9 if variant == "huopin" else 99)]
    return CONTRIBUTION[variant][max(rows)] if rows else (0, 0)


def multiplier_cases() -> list[tuple[str, int, int]]:
    return [(v, s, m) for v, rows in MULTIPLIER.items() for s, m in rows.items()]


@pytest.mark.parametrize("variant,star,m", multiplier_cases())
def test_10_3_multiplier_row(variant: str, star: int, m: int) -> None:
    """The winner (seat 0) plays one bomb of the star: every seat is multiplied by M."""
    if variant == "huopin":
        res = score_round(variant, [0], [[bomb(variant, star)], [], [], []],
                          cards_left=(0, 8, 5, 8))
        base = (3, -3, 3, -3)
    else:
        res = score_round(variant, [0, 2], [[bomb(variant, star)], [], [], []])
        base = (4, -4, 4, -4)
    a, b = contribution(variant, star)
    team = variant == "qianbian"
    contrib = (a, -b, a if team else -b, -b)
    assert res.multiplier == m
    assert res.star == (min(star, 9) if variant == "huopin" else star)
    assert res.star_seat == 0
    assert res.final == tuple(base[s] * m + contrib[s] for s in range(4))


@pytest.mark.parametrize("variant,m_partner,m_loser", [
    ("baibian", 8, 1),          # the winning team's star (partner counts, losers do not)
    ("fengkuang", 6, 1),
    ("bianfeng", 8, 1),
    ("bianfeng_lishui", 8, 1),
    ("qianbian", 8, 8),         # the highest of all four players
    ("huopin", 1, 1),           # the winning player's own star only
])
def test_10_3_whose_star(variant: str, m_partner: int, m_loser: int) -> None:
    kw = {"cards_left": (0, 8, 5, 8)} if variant == "huopin" else {}
    order = [0] if variant == "huopin" else [0, 2]
    seven = bomb(variant, 7)
    assert score_round(variant, order, [[], [], [seven], []], **kw).multiplier == m_partner
    assert score_round(variant, order, [[], [seven], [], []], **kw).multiplier == m_loser


# ----------------------------------------------------------------------------- §10.4 contribution

def contribution_cases() -> list[tuple[str, int]]:
    """Every row, the star below the first row, and (where a bomb reaches it) the star above
    the last row, which the last row covers."""
    cases = []
    for v, rows in CONTRIBUTION.items():
        stars = {min(rows) - 1, *rows}
        if not v.startswith("fengkuang"):   # 16 / 20 stars are the most a hand can bomb
            stars.add(max(rows) + 1)
        cases += [(v, s) for s in sorted(stars)]
    return cases


@pytest.mark.parametrize("variant,star", contribution_cases())
def test_10_4_contribution_row_paid_by_the_loser_too(variant: str, star: int) -> None:
    """A losing seat (1) plays a bomb of the star: it is paid +a, the others −b each."""
    kw = {"cards_left": (0, 8, 5, 8)} if variant == "huopin" else {}
    order = [0] if variant == "huopin" else [0, 2]
    res = score_round(variant, order, [[], [bomb(variant, star)], [], []], **kw)
    a, b = contribution(variant, star)
    if variant == "qianbian":      # the player and the partner get +a each
        expect = (-b, a, -b, a)
    else:
        expect = (-b, a, -b, -b)
    assert tuple(s.contribution for s in res.seats) == expect
    base = [3, -3, 3, -3] if variant == "huopin" else [4, -4, 4, -4]
    assert res.final == tuple(base[s] * res.multiplier + expect[s] for s in range(4))


@pytest.mark.parametrize("variant,per_bomb", [
    ("baibian", True), ("bianfeng", True), ("fengkuang", True), ("fengkuang_crazy", True),
    ("huopin", True), ("bianfeng_lishui", False), ("qianbian", False)])
def test_10_4_event_mode(variant: str, per_bomb: bool) -> None:
    """Two 8-star-or-more bombs by one seat: paid twice per bomb, once at the round star."""
    eight = bomb(variant, 8)
    kw = {"cards_left": (0, 8, 5, 8)} if variant == "huopin" else {}
    order = [0] if variant == "huopin" else [0, 2]
    res = score_round(variant, order, [[], [eight, eight], [], []], **kw)
    a, _ = contribution(variant, 8 if variant != "bianfeng_lishui" else 9)
    events = 2 if per_bomb else 1
    assert len(res.contributions) == events
    assert res.seats[1].contribution == events * a


def test_10_4_qianbian_both_partners_qualify() -> None:
    res = score_round("qianbian", [0, 2], [["777777"], [], ["8888888"], []])
    # seat 0: 6 stars -> seats 0, 2 +6, seats 1, 3 −2; seat 2: 7 stars -> 0, 2 +12; 1, 3 −4
    assert tuple(s.contribution for s in res.seats) == (18, -6, 18, -6)
    assert res.multiplier == 8
    assert res.final == (4 * 8 + 18, -4 * 8 - 6, 4 * 8 + 18, -4 * 8 - 6)
    assert res.total == 2 * 18 - 2 * 6


def test_10_4_huopin_cap_for_settlement_only() -> None:
    # a 12-card bomb: star 12 in bomb order, 9 for multiplier and contribution
    res = score_round("huopin", [0], [["77777777 SJ SJ BJ BJ"], [], [], []],
                      cards_left=(0, 10, 1, 10))
    assert res.seats[0].star == 12
    assert res.star == 9 and res.multiplier == 32
    assert res.contributions[0].star == 9
    assert res.final == (3 * 32 + 30, -3 * 32 - 10, 3 * 32 - 10, -3 * 32 - 10)


def test_10_5_stake_multiplies_everything() -> None:
    one = score_round("bianfeng", [1, 2, 3], [["666666"], [], [], []])
    five = score_round("bianfeng", [1, 2, 3], [["666666"], [], [], []], stake=5)
    assert five.final == tuple(5 * x for x in one.final)
    assert one.kind == "single" and one.winning_team == 1
    # places: 1 1st, 2 2nd, 3 3rd, 0 4th; single base 2 −2 2 −2; M 1 (the winners have no
    # star); seat 0's 6-star bomb pays +6, −2 each
    assert one.final == (-2 + 6, 2 - 2, -2 - 2, 2 - 2)


# ----------------------------------------------------------------------------- §10.2 round star

LISHUI = {  # (N, k) -> star, RULES.md §10.2; None = no entry (the bomb's own star counts)
    4: {2: None, 3: 5, 4: 6, 5: 7, 6: 8},
    5: {2: 6, 3: 7, 4: 8, 5: 9, 6: 10},
    6: {2: 7, 3: 8, 4: 9, 5: 10, 6: 11},
    7: {2: 8, 3: 9, 4: 10, 5: 11, 6: 12},
    8: {2: 9, 3: 10, 4: 11, 5: 12, 6: 13},
    9: {2: 10, 3: 11, 4: 12, 5: 13, 6: 14},
}
QIANBIAN = {
    4: {2: None, 3: None, 4: 6, 5: 7, 6: 8},
    5: {2: 6, 3: 7, 4: 8, 5: 9},
    6: {2: 7, 3: 8, 4: 9, 5: 10},
    7: {2: 8, 3: 9, 4: 10, 5: 11},
    8: {2: 9, 3: 10, 4: 11, 5: 12},
    9: {2: 10, 3: 11, 4: 12, 5: 13},
}


def multi_bomb_cases() -> list[tuple[str, int, int, int | None]]:
    return [(v, n, k, star) for v, table in (("bianfeng_lishui", LISHUI), ("qianbian", QIANBIAN))
            for n, row in table.items() for k, star in row.items()]


@pytest.mark.parametrize("variant,n,k,expected", multi_bomb_cases())
def test_10_2_multi_bomb_cell(variant: str, n: int, k: int, expected: int | None) -> None:
    plays = [bomb(variant, n)] * k
    readings = [core.classify(p, variant).primary for p in plays]
    star, source = round_star(readings, core.get_variant(variant))
    if expected is None:
        assert (star, source.rule) == (n, "bomb")
    else:
        assert star == expected
        assert (source.rule, source.n, source.k) == ("multi_bomb", n, k)


@pytest.mark.parametrize("variant", ["baibian", "bianfeng", "fengkuang", "huopin"])
def test_10_2_no_multi_bomb_table_elsewhere(variant: str) -> None:
    res = score_round(variant, [0] if variant == "huopin" else [0, 2],
                      [["77777"] * 4, [], [], []],
                      **({"cards_left": (0, 8, 5, 8)} if variant == "huopin" else {}))
    assert res.seats[0].star == 5


def test_10_2_at_least_n_cards_and_k_or_more() -> None:
    v = core.get_variant("bianfeng_lishui")
    read = [core.classify(p, v).primary for p in ("77777", "888888")]
    assert round_star(read, v)[0] == 6                    # two bombs of at least 5 -> (5, 2)
    read = [core.classify(p, v).primary for p in ("77777", "77777", "888888", "888888")]
    star, src = round_star(read, v)
    assert (star, src.n, src.k) == (8, 5, 4)              # (5, 4) = 8 beats (6, 2) = 7
    read = [core.classify(p, v).primary for p in ("77777", "888888", "9999999")]
    star, src = round_star(read, v)
    assert (star, src.rule) == (7, "bomb")                # ties: the bomb itself is reported


def test_10_2_joker_bombs_count_with_n_their_star() -> None:
    v = core.get_variant("bianfeng_lishui")
    read = [core.classify(p, v).primary for p in ("SJ SJ BJ", "666666")]
    star, src = round_star(read, v)
    assert (star, src.rule, src.n, src.k) == (7, "multi_bomb", 6, 2)


def test_10_2_chain_bombs_do_not_count_as_n_bombs() -> None:
    v = core.get_variant("qianbian")
    plays = ["77777"] * 4 + ["33333 44444 55555"]           # chain: 5 + 3 = 8 stars
    read = [core.classify(p, v).primary for p in plays]
    assert read[-1].kind == "chain_bomb" and read[-1].star == 8
    star, _ = round_star(read, v)
    assert star == 8                   # (5, 4) = 8; counting the chain would give (5, 5) = 9


def test_10_2_qianbian_chain_bonus_worked_example() -> None:
    """RULES.md §10.2: 3333 4444 5555 + 7777777 + 8888888 -> 7 + 2 = 9."""
    res = score_round("qianbian", [1, 3], [["3333 4444 5555", "7777777", "8888888"], [], [], []])
    seat = res.seats[0]
    assert seat.star == 9
    assert seat.star_source.rule == "chain_bonus"
    assert (seat.star_source.bomb, seat.star_source.bonus) == (0, 2)
    # the multiplier reads all four players in qianbian: 9 stars -> ×16
    assert res.multiplier == 16 and res.star_seat == 0
    assert res.kind == "double" and res.winning_team == 1
    # seat 0 round star 9 -> (18, 6) to seats 0 and 2
    assert res.final == (-4 * 16 + 18, 4 * 16 - 6, -4 * 16 + 18, 4 * 16 - 6)


def test_10_2_chain_bonus_counts_other_bombs_of_any_kind() -> None:
    v = core.get_variant("qianbian")
    plays = ["3333 4444 5555", "6666 7777 8888", "SJ SJ BJ BJ"]    # 7, 7, four-joker 7
    read = [core.classify(p, v).primary for p in plays]
    star, src = round_star(read, v)
    assert (star, src.rule, src.bonus) == (9, "chain_bonus", 2)
    assert round_star(read, core.get_variant("qianbian").replace(chain_bonus=False))[0] == 7


def test_10_2_chain_bonus_only_in_qianbian() -> None:
    res = score_round("fengkuang", [0, 2], [["3333 4444 5555", "7777777"], [], [], []])
    assert res.seats[0].star == 7 and res.seats[0].star_source.rule == "bomb"


# ----------------------------------------------------------------------------- §10.6 escape

def test_10_6_baibian_refuses_escapes() -> None:
    with pytest.raises(IllegalPlay, match="no escape"):
        score_round("baibian", [], escape=1)


def test_10_6_bianfeng_escape() -> None:
    # seat 3 played a 6-bomb (per-bomb contribution stands), seat 1 escapes: pays 4 × 4 × 2
    res = score_round("bianfeng", [], [[], [], [], ["777777"]], escape=1, stake=2)
    assert res.kind == "escape" and res.escaper == 1 and res.winning_team is None
    assert res.multiplier == 4 and res.star == 6 and res.star_seat == 3
    assert tuple(s.escape for s in res.seats) == (0, -32, 0, 0)
    assert tuple(s.contribution for s in res.seats) == (-2, -2, -2, 6)
    assert res.final == (-4, (-32 - 2) * 2, -4, 12)
    assert all(s.base == 0 for s in res.seats)


def test_10_6_bianfeng_escape_without_bombs() -> None:
    res = score_round("bianfeng", [0], escape=2)
    assert res.final == (0, 0, -8, 0)
    assert res.seats[0].place == 1 and res.seats[1].place is None


def test_10_6_bianfeng_lishui_escape_uses_round_star_and_voids_contributions() -> None:
    # three 4-bombs give seat 0 a round star of 5 (M 2); round-star contributions are void
    res = score_round("bianfeng_lishui", [], [["3333", "4444", "5555"], ["SJ SJ BJ"], [], []],
                      escape=3)
    assert res.star == 6 and res.multiplier == 4          # seat 1's three-joker bomb: 6
    assert res.final == (0, 0, 0, -4 * 4 * 2)
    assert res.contributions == ()


def test_10_6_huopin_escape() -> None:
    res = score_round("huopin", [], [["77777777 BJ"], [], [], []], escape=0, stake=3,
                      table_fee=5)
    # 9-star bomb: +30, −10 each (per bomb, stands); escaper pays 128 × 3 + 5
    assert res.final == ((30 - 128) * 3 - 5, -30, -30, -30)
    assert res.seats[0].escape == -128


def test_10_6_fengkuang_escape_reads_the_current_hands() -> None:
    # seat 0 holds 777777+SJ (7 stars, M 6); seat 3 already played an 8-bomb, which does
    # not count for M but its per-bomb contribution (+18 / −6) stands
    hands = ["7777 77 SJ", "3 4", "5", "6"]
    res = score_round("fengkuang", [], [[], [], [], ["88888888"]], escape=1, hands=hands,
                      stake=2)
    assert res.multiplier == 6 and res.star == 7 and res.star_seat == 0
    assert tuple(s.escape for s in res.seats) == (6, -24, 6, 0)   # opponents get M each
    assert res.final == ((6 - 6) * 2, (-24 - 6) * 2, (6 - 6) * 2, 18 * 2)


def test_10_6_fengkuang_crazy_escape_below_the_first_row() -> None:
    res = score_round("fengkuang_crazy", [], escape=2, hands=["8888888", "9", "T", "J"])
    assert res.multiplier == 1 and res.star == 7
    assert res.final == (0, 1, -4, 1)


def test_10_6_escape_needs_the_hands() -> None:
    with pytest.raises(ShuangkouError, match="current hands"):
        score_round("fengkuang", [], escape=1)
    with pytest.raises(ShuangkouError, match="hands\\[1\\] is empty"):
        score_round("qianbian", [], escape=1, hands=["3", "", "5", "6"])


def test_10_6_qianbian_escape() -> None:
    # S = 7: seat 0 played a 7-bomb, seat 1 holds one; escaper seat 3 pays 12 × M(7) = 96,
    # every other seat of a team that played or holds a 7-star bomb receives 4 × 8
    res = score_round("qianbian", [], [["7777777"], [], [], []], escape=3,
                      hands=["3", "99999 99", "4", "5 6"])
    assert res.star == 7 and res.multiplier == 8
    assert res.final == (32, 32, 32, -96)
    assert res.contributions == ()                 # round-star contributions are void


def test_10_6_qianbian_escape_partner_receives() -> None:
    # only the escaper's own team holds the S bomb: the escaper's partner receives
    res = score_round("qianbian", [], escape=3, hands=["3", "666666", "4", "5 6"])
    assert res.star == 6 and res.final == (0, 16, 0, -48)


def test_10_6_qianbian_escape_single_bombs_only() -> None:
    # two 5-bombs give a round star of 6, but S reads single bombs: S = 5, M = 2
    res = score_round("qianbian", [], [["77777", "88888"], [], [], []], escape=2,
                      hands=["3", "4", "5", "6"])
    assert res.star == 5 and res.final == (8, 0, -24, 0)


def test_10_6_qianbian_escape_without_any_bomb() -> None:
    res = score_round("qianbian", [], escape=0, hands=["3", "4", "5", "6"])
    assert res.star == 0 and res.multiplier == 1 and res.final == (-12, 0, 0, 0)


def test_escape_after_the_round_ended_is_refused() -> None:
    with pytest.raises(ShuangkouError, match="already over"):
        score_round("bianfeng", [0, 2], escape=1)
    with pytest.raises(ShuangkouError, match="already finished"):
        score_round("bianfeng", [1], escape=1)


# ----------------------------------------------------------------------------- bad summaries

@pytest.mark.parametrize("order,match", [
    ([0], "does not end the round"),
    ([0, 1], "does not end the round"),
    ([0, 2, 1], "goes on after the round ended"),
    ([0, 0], "repeats a seat"),
    ([4], "seat 0–3"),
])
def test_bad_finish_orders(order: list[int], match: str) -> None:
    with pytest.raises(ShuangkouError, match=match):
        score_round("baibian", order)


def test_huopin_needs_cards_left() -> None:
    with pytest.raises(ShuangkouError, match="cards_left"):
        score_round("huopin", [0])
    with pytest.raises(ShuangkouError, match="finished first"):
        score_round("huopin", [0], cards_left=(2, 8, 5, 8))
    with pytest.raises(ShuangkouError, match="does not end"):
        score_round("huopin", [], cards_left=(2, 8, 5, 8))


def test_bombs_must_be_bombs() -> None:
    with pytest.raises(InvalidPlay, match=r"bombs\[1\]\[0\] is not a bomb"):
        score_round("baibian", [0, 2], [[], ["3 4 5 6 7"], [], []])
    with pytest.raises(ShuangkouError, match="4 seats"):
        score_round("baibian", [0, 2], [["7777"]])


def test_bombs_as_readings() -> None:
    reading = core.play_reading("7777 BJ", "baibian")
    by_reading = score_round("baibian", [0, 2], [[reading], [], [], []])
    by_cards = score_round("baibian", [0, 2], [["7777 BJ"], [], [], []])
    assert by_reading == by_cards
    with pytest.raises(ShuangkouError, match="baibian reading"):
        score_round("fengkuang", [0, 2], [[reading], [], [], []])


@pytest.mark.parametrize("stake", [0, -1, 1.5, True, 10**9 + 1, 2**63])
def test_bad_stake(stake: object) -> None:
    with pytest.raises(ShuangkouError, match="stake"):
        score_round("baibian", [0, 2], stake=stake)  # type: ignore[arg-type]


def test_to_dict_is_plain_json() -> None:
    import json

    res = score_round("qianbian", [0, 2], [["3333 4444 5555", "7777777"], [], [], []])
    d = json.loads(json.dumps(res.to_dict()))
    assert d["kind"] == "double" and d["final"] == list(res.final)
    assert d["seats"][0]["star_source"]["rule"] == "chain_bonus"
    assert d["contributions"][0]["to"] == [0, 2]


def test_to_dict_names_every_field() -> None:
    from dataclasses import fields

    from shuangkou.core.scoring import ContributionEvent, RoundResult, SeatResult, StarSource

    res = score_round("qianbian", [0, 2], [["3333 4444 5555", "7777777"], [], [], []])
    d = res.to_dict()
    assert {f.name for f in fields(RoundResult)} | {"final", "total"} == set(d)
    assert {f.name for f in fields(SeatResult)} == set(d["seats"][0])
    assert {f.name for f in fields(ContributionEvent)} == set(d["contributions"][0])
    # a star source lists the fields that apply to its rule (None ones are left out)
    assert set(d["seats"][0]["star_source"]) == {"rule", "bomb", "bonus", "text"}
    assert {f.name for f in fields(StarSource)} >= {"rule", "bomb", "n", "k", "bonus"}


def test_settlements_beyond_int64_are_refused_naming_the_stake() -> None:
    """A house variant's tables (each amount up to 10**6) with the largest stake reach
    10**21: refused up front, as the wire carries int64 amounts (docs/decisions/rules.md R15)."""
    huge = core.get_variant("bianfeng").replace(
        id="huge", multiplier=[[5, 2], [6, 10**6]],
        base={"double": [10**6, 10**6, -10**6, -10**6], "single": [2, -2, 2, -2],
              "flat": [1, -1, -1, 1]})
    with pytest.raises(core.ShuangkouError, match="64-bit") as info:
        core.score_round(huge, [0, 2], [["666666"], [], [], []], stake=10**9)
    assert info.value.field == "stake"
    ok = core.score_round(huge, [0, 2], [["666666"], [], [], []], stake=10**6)
    assert max(abs(x) for x in ok.final) < 2**63 and abs(ok.total) < 2**63
    # the largest escape fee, stake and table fee of the documented caps still fit
    fee = core.get_variant("huopin").replace(id="fee", escape_fee=10**6)
    res = core.score_round(fee, [], None, stake=10**9, escape=0, cards_left=[5, 5, 5, 5],
                               table_fee=10**12)
    assert res.final[0] == -(10**15 + 10**12)


# ----------------------------------------------------------------------------- compiled = reference

#: Settlement rules varied over the built-ins' summaries (the deck and bomb rules stay, so
#: the replays' bomb readings still belong to the variant).
HOUSE_SETTLEMENTS = (
    {},
    {"settlement_star_cap": 6},
    {"multi_bomb": ((4, 2), (5, 2)), "chain_bonus": True},
    {"contribution_mode": "round_star", "contribution_recipients": "team"},
    {"multiplier_star": "all", "contribution": ((5, 3, 1), (9, 30, 10))},
    {"multiplier_star": "winner", "multiplier": ((4, 3), (7, 50))},
    {"multiplier": ((1, 10**6),), "kou": {"double": 10**6, "single": 5, "flat": 1},
     "base": {"double": (10**6, 10**6, -10**6, -10**6), "single": (2, -2, 2, -2),
              "flat": (1, 0, 0, 1)}},     # beyond int64 at the largest stake
)


def _settled(fn, *args, **kwargs):
    try:
        return repr(fn(*args, **kwargs))
    except ShuangkouError as exc:
        return f"{type(exc).__name__}: {exc} [{exc.field}]"


#: Every escape rule (§10.6) over every variant's escaped rounds, whatever the variant's own.
HOUSE_ESCAPES = (
    {"escape": "none"},
    {"escape": "bianfeng"},
    {"escape": "fengkuang"},
    {"escape": "qianbian"},
    {"escape": "huopin", "escape_fee": 128},
)


@pytest.mark.parametrize("variant", sorted(core.BUILTIN))
def test_compiled_settlement_equals_the_reference(variant: str) -> None:
    """The compiled settlement (core_ext/_settle.pyx, escapes included, through
    score_round) against the slow Python twin written from RULES.md §10
    (tests/settlement_reference.py, given the round's checked summary), record for record
    (repr compares every field, an error its class, message and field), on generated rounds
    with escapes, under the built-in and house settlement rules and every escape rule.
    ``baibian`` defines no escape, so its rounds are replayed under a house copy that
    allows escapes (the copy's own rule, then every rule, settles them)."""
    import settlement_reference

    from shuangkou.core.generate import generate_replay
    from shuangkou.core.replay import summarize_replay

    base = core.get_variant(variant)
    spec: str | dict[str, str] = variant
    if base.escape == "none":
        spec = {"id": f"{variant}_escapes", "extends": variant, "escape": "bianfeng"}
        base = core.variants.variant_from_mapping(spec)
    checked = escaped = 0
    for seed in range(40):
        try:
            summary = summarize_replay({**generate_replay(variant, seed, 0.2), "variant": spec})
        except ShuangkouError:
            continue
        rules = HOUSE_SETTLEMENTS + (HOUSE_ESCAPES if summary.escaper is not None else ())
        for changes in rules:
            if variant == "huopin" and "contribution_mode" in changes:
                continue
            v = base.replace(**changes) if changes else base
            for stake in (1, 7, 10**9):
                args = summary.score_args()
                compiled = _settled(score_round, **{**args, "variant": v, "stake": stake})
                reference = _settled(
                    settlement_reference.settle, v, summary.finish_order, summary.bombs,
                    stake=stake, cards_left=summary.cards_left, escaper=summary.escaper,
                    hands=args["hands"], table_fee=summary.table_fee)
                assert compiled == reference, (seed, changes)
                checked += 1
                escaped += summary.escaper is not None
    assert checked > 500 and escaped > 100


# ----------------------------------------------------------------------------- the layer

def test_settlement_stands_alone() -> None:
    """The compiled settlement imports only what sits below it: loaded without the package
    (so without scoring.py, the Round façade or replays; the compiled state machine it reads
    a round from sits below it), it settles a round and an escape into the records of
    results.py; nothing is bound into it at import."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent('''
        import importlib.util, sys, types
        where = importlib.util.find_spec("shuangkou.core").submodule_search_locations
        package = types.ModuleType("shuangkou.core")    # the folder, without its __init__
        package.__path__ = list(where)
        sys.modules["shuangkou.core"] = package
        from shuangkou.core import _core, _settle, results
        from shuangkou.core.variants import get_variant
        v = get_variant("fengkuang")
        bombs = [[_core.play_reading("777777", v)], [], [], []]
        plain = _settle.settle(v, (0, 2), bombs, 1, None, None, None, 0,
                               results.RoundResult, {})
        escape = _settle.settle(v, (), bombs, 2, None, 1, [[21, 22], [5], [9], [13]], 0,
                                results.RoundResult, {})
        assert type(plain) is results.RoundResult and plain.kind == "double", plain
        assert escape.kind == "escape" and type(escape.seats[0]) is results.SeatResult
        assert not hasattr(_settle, "bind_records")
        loaded = sorted(m for m in sys.modules if m.startswith("shuangkou.core."))
        print(" ".join(loaded))
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "shuangkou.core._settle" in loaded
    assert not loaded & {"shuangkou.core.scoring", "shuangkou.core.round",
                         "shuangkou.core.replay"}, loaded


def test_compiled_modules_import_no_private_names() -> None:
    """A compiled module takes public names only from the modules it imports (the escape
    settlement was once a private function of scoring.py that the round imported)."""
    import re

    for path in Path(core.__file__).parent.glob("*.pyx"):
        for names in re.findall(r"^\s*from shuangkou\.core[.\w]* import \(?([^)\n]+)",
                                path.read_text(), re.M):
            imported = [n.split(" as ")[0].strip() for n in names.split(",")]
            assert not [n for n in imported if n.startswith("_")], (path.name, names)
