"""Legal-play enumeration (core._enumerate) against RULES.md §4–§8 and two references.

* rule examples: what a distinct play is (§4 jokers, §7 readings listed per type), what
  beats (§5, §8 seed examples), the reading a following play stands in (§7 rule 6);
* ``legal_plays``/``count_plays`` against the brute force over every sub-multiset
  (``enum_reference.brute_force``) on random hands of up to 14 cards with 0–4 jokers, leading
  and following random targets, plus the properties every listing must have;
* the pattern-walking reference against the compiled engine on full hands;
* filters, ``limit``/``truncated``, ``best_bomb``, errors;
* the perft fixtures (tests/fixtures/perft_<variant>.txt), with a per-type breakdown on
  mismatch.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from enum_reference import (
    Readings,
    brute_force,
    by_patterns,
    class_of,
    counts_of,
    face,
    per_kind,
    random_hand,
)
from reference import VARIANTS

from shuangkou import core
from shuangkou.core import (
    KINDS,
    CardError,
    InvalidPlay,
    LegalPlays,
    Play,
    VariantError,
    best_bomb,
    classify,
    count_plays,
    legal_plays,
    parse_cards,
    play_reading,
)
from shuangkou.core.variants import get_variant

HANDS = 2000                # random small hands per variant (brute-force crosscheck)
TARGETS = 2                 # random targets followed per hand (besides leading)
FIXTURES = Path(__file__).parent / "fixtures"


# ----------------------------------------------------------------------------- helpers

def listing(plays: Any) -> dict[tuple[tuple[int, ...], str], Any]:
    """{(counts, class): reading} of a LegalPlays, checking there are no duplicates."""
    out = {}
    for p in plays:
        key = (counts_of(p.cards), class_of(p.kind))
        assert key not in out, f"listed twice: {p!r}"
        out[key] = p.reading
    return out


def order_key(p: Play) -> tuple[Any, ...]:
    """The documented order (docs/enumeration.md)."""
    r = p.reading
    tie = tuple(-n for n in counts_of(p.cards))
    if r.is_bomb:
        return (6, r.key, KINDS.index(r.kind), r.cards, r.top, tie)
    return (KINDS.index(r.kind), (), 0, r.cards, r.top, tie)


def entries_of(plays: Any, text: str, variant: str) -> dict[str, Any]:
    """Kind -> reading of the plays made of exactly these cards."""
    want = counts_of(parse_cards(text, variant))
    return {p.kind: p.reading for p in plays if counts_of(p.cards) == want}


def check_properties(hand: list[int], variant: Any, target: Any, plays: LegalPlays) -> None:
    held = Counter(hand)
    by_face: dict[int, list[int]] = {}
    for code in sorted(hand):
        by_face.setdefault(face(code), []).append(code)
    listed = list(plays)
    assert len(plays) == len(listed)
    assert plays.can_pass == (target is not None)
    assert not plays.truncated
    for p in listed:
        assert not Counter(p.cards) - held, f"{p!r} is not in the hand"
        used = Counter(face(c) for c in p.cards)
        assert list(p.cards) == [c for f in sorted(used) for c in by_face[f][:used[f]]], \
            f"{p!r}: not the lowest codes of each rank"
        assert p.reading in classify(p.cards, variant).readings, f"{p!r} does not classify"
        if target is not None:
            assert p.reading.beats(target), f"{p!r} does not beat {target!r}"
            # §7 rule 6: the reading the play stands in is one of its listed entries
            standing = play_reading(p.cards, variant, target)
            assert class_of(standing.kind) in {class_of(q.kind) for q in listed
                                               if counts_of(q.cards) == counts_of(p.cards)}
    keys = [order_key(p) for p in listed]
    assert keys == sorted(keys), "plays are not in the documented order"
    assert plays.by_kind() == count_plays(hand, variant, target)


def mismatch(hand: list[int], variant: Any, target: Any, ref: dict, got: dict) -> str:
    def show(keys: set) -> str:
        return "; ".join(f"{' '.join(core.format_cards(_codes(k[0])))} [{k[1]}]"
                         for k in sorted(keys)[:8])
    lines = [f"{getattr(variant, 'id', variant)} hand {' '.join(core.format_cards(hand))}"
             f" to_beat {target!r}",
             f"  missing: {show(set(ref) - set(got))}",
             f"  extra:   {show(set(got) - set(ref))}"]
    wrong = [k for k in ref if k in got and ref[k] != got[k]][:4]
    lines += [f"  reading: ref {ref[k]!r} got {got[k]!r}" for k in wrong]
    return "\n".join(lines)


def _codes(counts: tuple[int, ...]) -> list[int]:
    return [1 + r * 5 + 4 for r in range(15) for _ in range(counts[r])]


# ----------------------------------------------------------------------------- rule examples

def test_multiset_listed_once_per_ordinary_type() -> None:
    """§7: 3 4 5 + three wilds reads as straight 345678 and as pair chain 334455 — two
    entries for one multiset, each with its strongest reading of that type."""
    plays = legal_plays("3 4 5 SJ SJ BJ", "qianbian")
    got = entries_of(plays, "3 4 5 SJ SJ BJ", "qianbian")
    assert set(got) == {"straight", "pair_chain"}
    assert got["straight"].top_rank == "8" and got["straight"].cards == 6
    assert got["pair_chain"].top_rank == "5"


def test_bomb_readings_are_one_entry_beside_ordinary_ones() -> None:
    """4 + four wilds: the 5-bomb 44444 (the only bomb entry) and the straight 45678."""
    plays = legal_plays("4 SJ SJ BJ BJ", "qianbian")
    got = entries_of(plays, "4 SJ SJ BJ BJ", "qianbian")
    assert set(got) == {"bomb", "straight"}
    assert got["bomb"].star == 5 and got["straight"].top_rank == "8"


def test_strongest_bomb_reading_is_the_entry() -> None:
    """huopin: 3333 + four wilds is the 8-bomb (8 stars), not the chain 3333 4444 (6)."""
    got = entries_of(legal_plays("3333 SJ SJ BJ BJ", "huopin"), "3333 SJ SJ BJ BJ", "huopin")
    assert list(got) == ["bomb"] and got["bomb"].star == 8


@pytest.mark.parametrize(("variant", "hand", "cards", "kind", "describe"), [
    ("baibian", "7777 BJ", "7777 BJ", "bomb", "bomb 77777 (5 stars) (wild as 7)"),
    ("bianfeng", "7777 BJ", "7777 BJ", "bomb", "bomb 77777 (5 stars) (wild as 7)"),
    ("baibian", "45678 BJ", "45678 BJ", "straight", "straight 456789 (wild as 9)"),
    ("baibian", "77899 BJ", "77899 BJ", "pair_chain", "pair_chain 778899 (wild as 8)"),
    ("baibian", "77 8 9 BJ BJ", "77 8 9 BJ BJ", "pair_chain", "pair_chain 778899 (wild as 8 9)"),
    ("huopin", "33445 BJ", "33445 BJ", "pair_chain", "pair_chain 334455 (wild as 5)"),
    ("huopin", "5679 BJ", "5679 BJ", "straight", "straight 56789 (wild as 8)"),
    ("huopin", "5678 BJ", "5678 BJ", "straight", "straight 56789 (wild as 9)"),
    ("huopin", "444 BJ", "444 BJ", "bomb", "bomb 4444 (4 stars) (wild as 4)"),
    ("huopin", "44444444 BJ", "44444444 BJ", "bomb", "bomb 444444444 (9 stars) (wild as 4)"),
    ("huopin", "33334444555 BJ", "33334444555 BJ", "chain_bomb",
     "chain_bomb 3333 4444 5555 (7 stars) (wild as 5)"),
])
def test_seed_examples_are_listed(variant: str, hand: str, cards: str, kind: str,
                                  describe: str) -> None:
    """§7 seed examples: the whole hand is one legal play, with the seed's reading."""
    got = entries_of(legal_plays(hand, variant), cards, variant)
    assert kind in got and got[kind].describe() == describe


def test_no_play_for_invalid_seed_example() -> None:
    """§7 (huopin): 3344 + BJ is invalid, so no 5-card play uses all of it."""
    assert not [p for p in legal_plays("3344 BJ", "huopin") if len(p.cards) == 5]


def test_jokers_alone_read_naturally() -> None:
    """§4: SJ BJ is no pair; SJ SJ / BJ BJ are pairs; any 3 / all 4 jokers are joker bombs,
    and SJ SJ BJ and SJ BJ BJ are different plays (different faces)."""
    for variant in ("baibian", "qianbian"):
        plays = legal_plays("SJ SJ BJ BJ", variant)
        texts = sorted((" ".join(p.text), p.kind) for p in plays)
        assert texts == sorted([("SJ", "single"), ("BJ", "single"), ("SJ SJ", "pair"),
                                ("BJ BJ", "pair"), ("SJ SJ BJ", "joker_bomb_3"),
                                ("SJ BJ BJ", "joker_bomb_3"),
                                ("SJ SJ BJ BJ", "joker_bomb_4")]), variant


def test_non_wild_small_joker_never_joins_naturals() -> None:
    """§4: in baibian the SJ is not wild: 7 SJ is no pair; 7 BJ is."""
    plays = legal_plays("7 SJ BJ", "baibian")
    assert sorted(" ".join(p.text) for p in plays) == ["7", "7 BJ", "BJ", "SJ"]


def test_cards_are_the_lowest_codes_of_each_rank() -> None:
    plays = legal_plays("7 7C 7S 7H BJ", "baibian")
    pair = next(p for p in plays if p.text == ("7S", "7H"))
    assert pair.cards == (21, 22) and pair.kind == "pair"
    bomb = next(p for p in plays if p.kind == "bomb" and len(p.cards) == 5)
    assert bomb.text == ("7S", "7H", "7C", "7", "BJ")


def test_following_needs_same_type_and_size_and_higher_top() -> None:
    """§5: only 5-card straights with a higher top beat 34567."""
    plays = legal_plays("3 4 5 6 7 8 9", "baibian", "34567")
    assert [(" ".join(p.text), p.reading.top_rank) for p in plays] == \
        [("4 5 6 7 8", "8"), ("5 6 7 8 9", "9")]
    assert plays.can_pass and not legal_plays("3 4 5 6 7 8 9", "baibian").can_pass


def test_following_lists_the_reading_that_beats() -> None:
    """§7 rules 5–6: 4 5 6 7 8 BJ beats 345678 as 456789 (its other reading, 3…8, ties)."""
    plays = legal_plays("4 5 6 7 8 BJ", "baibian", "345678")
    assert [p.reading.describe() for p in plays] == ["straight 456789 (wild as 9)"]
    assert not legal_plays("4 5 6 7 8 BJ", "baibian", "456789")


def test_following_lists_ordinary_and_bomb_entries_of_one_multiset() -> None:
    """4 + four wilds beats 34567 both as the straight 45678 and as the bomb 44444; the
    reading that stands without a declaration (§7 rule 6) is the primary, the bomb."""
    plays = legal_plays("4 SJ SJ BJ BJ", "qianbian", "34567")
    got = entries_of(plays, "4 SJ SJ BJ BJ", "qianbian")
    assert set(got) == {"straight", "bomb"}
    assert play_reading("4 SJ SJ BJ BJ", "qianbian", "34567").kind == "bomb"


@pytest.mark.parametrize(("variant", "play", "to_beat"), [
    ("fengkuang", "3333333", "4444 5555 6666"),
    ("fengkuang_crazy", "77777 8888 99999", "7777 8888 99999"),
    ("qianbian", "6666 7777 8888", "3333 4444444 5555"),
    ("huopin", "3333 4444 5555 6666", "77777 88888 99999"),
    ("huopin", "3333 44444 555555 6666", "66666 77777 888888"),
    ("huopin", "4444 55555 66666", "6666 77777 8888"),
    ("huopin", "4444 55555 6666", "3333 4444 55555"),
    ("huopin", "JJJJJJJ", "4444 55555 6666"),
    ("huopin", "KKKK AAAA 2222", "QQQQ KKKK AAAA"),
    ("baibian", "3333 4444 5555", "JJJJJJ"),
])
def test_seed_bomb_orders(variant: str, play: str, to_beat: str) -> None:
    """§8 seed examples: the winning bomb is listed when following the losing one."""
    assert entries_of(legal_plays(play, variant, to_beat), play, variant)


def test_equal_bombs_do_not_beat() -> None:
    """§8: baibian 66666666 and 3333 4444 5555 6666 tie; neither beats the other."""
    assert not entries_of(legal_plays("66666666", "baibian", "3333 4444 5555 6666"),
                          "66666666", "baibian")
    assert not entries_of(legal_plays("3333 4444 5555 6666", "baibian", "66666666"),
                          "3333 4444 5555 6666", "baibian")


def test_only_bombs_beat_a_bomb() -> None:
    plays = legal_plays("3 4 5 6 7 8 8 8 8 9 9 9 9 BJ", "baibian", "7777")
    assert plays and all(p.reading.is_bomb for p in plays)
    assert plays.by_kind()["bomb"] == len(plays)


# ----------------------------------------------------------------------------- crosschecks

def _random_cases(variant: str, rng: random.Random, n: int) -> list[list[int]]:
    return [random_hand(variant, rng, rng.randint(1, 14), jokers=rng.randint(0, 4),
                        ranks=rng.choice((None, None, 3, 4, 5, 6))) for _ in range(n)]


def test_brute_force_crosscheck(variant: str) -> None:
    """Every legal play the brute force finds, nothing else, with the same reading and the
    same counts, on HANDS random hands × (leading + TARGETS random targets)."""
    rng = random.Random(f"enumerate/{variant}")
    read = Readings(variant)
    pool: list[Any] = []          # readings of earlier plays, used as targets
    failures: list[str] = []
    for hand in _random_cases(variant, rng, HANDS):
        targets = [None] + [rng.choice(pool) for _ in range(TARGETS if pool else 0)]
        refs = brute_force(hand, variant, targets, readings=read)
        for target, ref in zip(targets, refs, strict=True):
            plays = legal_plays(hand, variant, target)
            got = listing(plays)
            if got != ref or count_plays(hand, variant, target) != per_kind(ref):
                failures.append(mismatch(hand, variant, target, ref, got))
            check_properties(hand, variant, target, plays)
        pool.extend(r for r in refs[0].values() if rng.random() < 0.2)
        del pool[:-200]
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:5])


def test_pattern_reference_on_full_hands(variant: str) -> None:
    """The pattern-walking reference (independent of both the brute force and the engine)
    agrees with the engine on full hands, including four-joker and bomb-heavy ones."""
    v = get_variant(variant)
    rng = random.Random(f"patterns/{variant}")
    read = Readings(v)
    for i in range(6):
        hand = random_hand(v, rng, v.hand_size, jokers=(None, 4, 2)[i % 3],
                           ranks=(None, 8, 6)[i % 3])
        plays = list(legal_plays(hand, v))
        keys = [order_key(p) for p in plays]
        assert keys == sorted(keys), "plays are not in the documented order"
        targets = [None] + [rng.choice(plays).reading for _ in range(2)]
        for target in targets:
            ref = by_patterns(hand, v, target, readings=read)
            got = listing(legal_plays(hand, v, target))
            assert got == ref, mismatch(hand, v, target, ref, got)


def test_pattern_reference_matches_brute_force() -> None:
    """The second reference is itself checked against the brute force on small hands."""
    rng = random.Random("patterns-vs-brute")
    for variant in VARIANTS:
        read = Readings(variant)
        for hand in _random_cases(variant, rng, 60):
            ref = brute_force(hand, variant, readings=read)[0]
            assert by_patterns(hand, variant, readings=read) == ref


@pytest.mark.parametrize("changes", [
    {"id": "house_jokers", "joker_copies": 4},                        # up to 8 wilds
    {"id": "house_equal", "chain_counts": "equal", "chain_phase": "common"},
])
def test_custom_variants(changes: dict[str, Any]) -> None:
    """House variants from qianbian/huopin (more jokers, equal-count chains): brute force."""
    base = "qianbian" if changes["id"] == "house_jokers" else "huopin"
    v = get_variant(base).replace(**changes)
    rng = random.Random(changes["id"])
    read = Readings(v)
    for _ in range(150):
        hand = random_hand(v, rng, rng.randint(1, 12), jokers=rng.randint(0, 8),
                           ranks=rng.choice((None, 2, 3, 4)))
        ref = brute_force(hand, v, readings=read)[0]
        got = listing(legal_plays(hand, v))
        assert got == ref, mismatch(hand, v, None, ref, got)


# ----------------------------------------------------------------------------- filters, caps

def test_filters_and_limit(variant: str) -> None:
    rng = random.Random(f"filters/{variant}")
    v = get_variant(variant)
    for i in range(40):
        hand = random_hand(v, rng, v.hand_size, jokers=rng.randint(0, 4),
                           ranks=rng.choice((None, 6, 8)))
        full = list(legal_plays(hand, v))
        target = None if i % 2 == 0 else rng.choice(full).reading
        if target is not None:
            full = list(legal_plays(hand, v, target))
        kinds = set(rng.sample(KINDS, rng.randint(1, 4)))
        assert list(legal_plays(hand, v, target, kinds=kinds)) == \
            [p for p in full if p.kind in kinds]
        assert list(legal_plays(hand, v, target, bombs_only=True)) == \
            [p for p in full if p.reading.is_bomb]
        m = rng.randint(0, 14)
        assert list(legal_plays(hand, v, target, max_cards=m)) == \
            [p for p in full if len(p.cards) <= m]
        for limit in {0, 1, 7, len(full) // 2, len(full) - 1, len(full), len(full) + 3}:
            if limit < 0:
                continue
            capped = legal_plays(hand, v, target, limit=limit)
            assert list(capped) == full[:limit]
            assert capped.truncated == (len(full) > limit)
        capped = legal_plays(hand, v, target, kinds=kinds, limit=3)
        assert list(capped) == [p for p in full if p.kind in kinds][:3]


def test_sequence_behaviour() -> None:
    plays = legal_plays("3 3 4 5 6 7 BJ", "baibian")
    listed = list(plays)
    assert len(plays) == len(listed) == plays.count()
    assert plays[0] == listed[0] and plays[-1] == listed[-1] and plays[1:3] == listed[1:3]
    with pytest.raises(IndexError):
        plays[len(plays)]
    assert plays.count("pair") == sum(p.kind == "pair" for p in listed)
    assert sum(plays.by_kind().values()) == len(plays)
    assert listed[0] in plays
    cards, reading = listed[0]          # a Play is a (cards, reading) named tuple
    assert cards == listed[0].cards and reading is listed[0].reading
    assert str(listed[0]) == " ".join(listed[0].text)
    assert "baibian" in repr(plays) and plays.variant == "baibian"
    assert plays.hand == tuple(sorted(parse_cards("3 3 4 5 6 7 BJ")))


def test_to_beat_forms() -> None:
    """to_beat as text, codes, a Classification or a declared Reading."""
    hand = "3 4 5 SJ SJ BJ 9 9 9"
    by_text = list(legal_plays(hand, "qianbian", "3 3 4 4 5 5"))
    assert list(legal_plays(hand, "qianbian", parse_cards("334455"))) == by_text
    assert list(legal_plays(hand, "qianbian", classify("334455", "qianbian"))) == by_text
    declared = play_reading("4 5 6 SJ SJ BJ", "qianbian", declare="pair_chain")
    assert list(legal_plays(hand, "qianbian", declared)) == \
        list(legal_plays(hand, "qianbian", "445566"))
    played = next(p for p in legal_plays("4 5 6 SJ SJ BJ", "qianbian")
                  if len(p.cards) == 6 and p.kind == "pair_chain")
    assert list(legal_plays(hand, "qianbian", played)) == \
        list(legal_plays(hand, "qianbian", "445566"))


def test_best_bomb(variant: str) -> None:
    """best_bomb is the strongest bomb by the §8 key (the first listed among equals)."""
    rng = random.Random(f"best/{variant}")
    v = get_variant(variant)
    for _ in range(60):
        hand = random_hand(v, rng, v.hand_size, jokers=rng.randint(0, 4),
                           ranks=rng.choice((None, 5, 8)))
        bombs = list(legal_plays(hand, v, bombs_only=True))
        best = best_bomb(hand, v)
        if not bombs:
            assert best is None
            continue
        top = max(p.reading.key for p in bombs)
        assert best == next(p.reading for p in bombs if p.reading.key == top)
    assert best_bomb("3 4 5", "baibian") is None
    assert best_bomb("SJ SJ BJ BJ 2222", "baibian").kind == "joker_bomb_4"


def test_extreme_hands_stay_bounded() -> None:
    """Many copies and all wilds: the counts agree with the pattern reference."""
    cases = [("fengkuang_crazy", "777777777777 888888888888 SJ SJ BJ BJ"),
             ("fengkuang_crazy", "77777777 88888888 99999999 SJ SJ BJ BJ"),
             ("huopin", "33333333 44444444 55555555 SJ BJ BJ"),
             ("qianbian", "33 44 55 66 77 88 99 TT JJ QQ KK A SJ SJ BJ BJ")]
    for variant, hand in cases:
        codes = parse_cards(hand, variant)
        assert count_plays(codes, variant) == per_kind(by_patterns(codes, variant)), variant
        capped = legal_plays(codes, variant, limit=10)
        assert len(capped) == 10 and capped.truncated


def test_errors() -> None:
    with pytest.raises(CardError) as err:
        legal_plays("7 7 7 7 7 7 7 7 7", "baibian")
    assert err.value.field == "hand"
    with pytest.raises(CardError):
        legal_plays("3 4 5", "fengkuang_crazy")           # no 3s in the crazy deck
    with pytest.raises(InvalidPlay) as err:
        legal_plays("3 4 5", "baibian", "3 4")
    assert err.value.field == "to_beat"
    with pytest.raises(InvalidPlay) as err:
        legal_plays("3 4 5", "baibian", kinds={"flush"})
    assert err.value.field == "kinds"
    with pytest.raises(VariantError):
        legal_plays("3 4 5", "baibian", classify("3", "huopin").primary)
    with pytest.raises(VariantError):
        count_plays("3 4 5", "nope")
    for bad in ({"limit": -1}, {"limit": "3"}, {"max_cards": -2}, {"max_cards": 1.5}):
        with pytest.raises(core.ShuangkouError) as err:
            legal_plays("3 4 5", "baibian", **bad)
        assert err.value.field == next(iter(bad))
    for bad_kinds in (5, [["pair"]]):
        with pytest.raises(InvalidPlay):
            legal_plays("3 4 5", "baibian", kinds=bad_kinds)
    assert len(legal_plays("3 4 5", "baibian", limit=2**80, max_cards=2**80)) == 3
    assert not legal_plays("", "baibian")


# ----------------------------------------------------------------------------- perft

def read_fixture(path: Path) -> list[dict[str, Any]]:
    """Blocks of ``key value`` lines separated by blank lines (tests/fixtures/README.md)."""
    cases: list[dict[str, Any]] = []
    block: dict[str, Any] = {}
    for raw in path.read_text().splitlines() + [""]:
        line = raw.strip()
        if line.startswith("#"):
            continue
        if not line:
            if block:
                cases.append(block)
                block = {}
            continue
        key, _, value = line.partition(" ")
        block[key] = value.strip()
    return cases


PERFT_FILES = sorted(FIXTURES.glob("perft_*.txt"))


def test_perft_files_cover_every_variant() -> None:
    assert {p.stem.removeprefix("perft_") for p in PERFT_FILES} == set(VARIANTS)


@pytest.mark.parametrize("path", PERFT_FILES, ids=lambda p: p.stem)
def test_perft(path: Path) -> None:
    variant = path.stem.removeprefix("perft_")
    failures = []
    for case in read_fixture(path):
        to_beat = None if case["to_beat"] == "-" else case["to_beat"]
        want = {k: int(case.get(k, 0)) for k in KINDS}
        got = count_plays(case["hand"], variant, to_beat)
        if got != want or sum(got.values()) != int(case["total"]):
            rows = [f"    {k:13} expected {want[k]:6} got {got[k]:6}"
                    + ("   <--" if want[k] != got[k] else "") for k in KINDS]
            failures.append(f"{variant} case {case['id']}: hand {case['hand']} "
                            f"to_beat {case['to_beat']}\n" + "\n".join(rows))
    assert not failures, "\n".join(failures)

