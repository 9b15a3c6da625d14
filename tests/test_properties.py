"""Properties of reading and comparing plays that must hold for any cards (hypothesis).

* card order and suits never change the readings (§2);
* ``beats`` is irreflexive, asymmetric and transitive over readings of one comparable class
  (all bombs; or ordinary plays of one type and card count) (§5, §8);
* every bomb beats every ordinary play, and no ordinary play beats a bomb (§6, §8);
* a play beats exactly when one of its readings does, and the standing reading beats (§7).

Examples are bounded (``max_examples``) so the file stays fast; plays come from the seeded
generators in ``randomplays`` driven by hypothesis' random source.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from randomplays import PlayMaker
from reference import VARIANTS, view

from shuangkou import core
from shuangkou.core import Declaration
from shuangkou.core.cards import NO_SUIT, SJ, card_code, card_rank, rank_name

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SAMPLES = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

variants = st.sampled_from(VARIANTS)
seeds = st.integers(0, 2**32 - 1)   # one seed drives a whole sample of plays


def _readings(cards: list[int], variant: str) -> list[Any] | None:
    try:
        return list(core.classify(cards, variant).readings)
    except core.InvalidPlay:
        return None


def _resuit(cards: list[int], variant: str, rng: random.Random) -> list[int]:
    """The same ranks with other suits (or none), still within the deck's copy limits."""
    decks = core.get_variant(variant).decks
    used: dict[int, int] = defaultdict(int)
    out = []
    for code in cards:
        rank = card_rank(code)
        suit = NO_SUIT if rank >= SJ else rng.randrange(5)
        if suit != NO_SUIT and used[card_code(rank, suit)] >= decks:
            suit = NO_SUIT
        used[card_code(rank, suit)] += 1
        out.append(card_code(rank, suit))
    return out


@FAST
@given(variant=variants, rng=st.randoms(use_true_random=False))
def test_card_order_and_suits_never_change_the_result(variant: str, rng: random.Random) -> None:
    cards = PlayMaker(variant, rng).play()
    try:
        core.validate_hand(cards, variant)
    except core.CardError:
        return
    before = _readings(cards, variant)
    other = _resuit(cards, variant, rng)
    rng.shuffle(other)
    after = _readings(other, variant)
    assert (before is None) == (after is None)
    if before is not None and after is not None:
        assert [view(r) for r in before] == [view(r) for r in after]
        assert [r.key for r in before] == [r.key for r in after]


def _sample(variant: str, rng: random.Random, n: int = 160) -> list[Any]:
    """Readings of n random plays (every reading of every valid play), deck-valid only."""
    maker = PlayMaker(variant, rng)
    out = []
    for cards in maker.plays(n):
        try:
            out += core.classify(cards, variant).readings
        except (core.InvalidPlay, core.CardError):
            continue
    return out


def _classes(readings: list[Any]) -> dict[Any, list[Any]]:
    """Comparable classes: all bombs together; ordinary plays by (type, card count)."""
    classes: dict[Any, list[Any]] = defaultdict(list)
    for r in readings:
        classes["bomb" if r.is_bomb else (r.kind, r.cards)].append(r)
    return classes


@SAMPLES
@given(variant=variants, seed=seeds)
def test_beats_is_a_strict_order_within_a_class(variant: str, seed: int) -> None:
    for cls, members in _classes(_sample(variant, random.Random(seed))).items():
        members = members[:45]
        m = [[core.beats(x, y, variant) for y in members] for x in members]
        n = len(members)
        for i in range(n):
            assert not m[i][i], ("irreflexive", cls, view(members[i]))
            for j in range(n):
                if m[i][j]:
                    assert not m[j][i], ("asymmetric", view(members[i]), view(members[j]))
                    for k in range(n):
                        if m[j][k]:
                            assert m[i][k], ("transitive", view(members[i]),
                                             view(members[j]), view(members[k]))


@SAMPLES
@given(variant=variants, seed=seeds)
def test_every_bomb_beats_every_ordinary_play(variant: str, seed: int) -> None:
    readings = _sample(variant, random.Random(seed), 120)
    bombs = [r for r in readings if r.is_bomb][:30]
    plain = [r for r in readings if not r.is_bomb][:30]
    for b in bombs:
        for o in plain:
            assert core.beats(b, o, variant), (view(b), view(o))
            assert not core.beats(o, b, variant), (view(o), view(b))


@SAMPLES
@given(variant=variants, seed=seeds)
def test_ordinary_plays_of_other_shapes_never_beat(variant: str, seed: int) -> None:
    plain = [r for r in _sample(variant, random.Random(seed), 120) if not r.is_bomb][:40]
    for x in plain:
        for y in plain:
            if (x.kind, x.cards) != (y.kind, y.cards):
                assert not core.beats(x, y, variant), (view(x), view(y))
            else:
                assert core.beats(x, y, variant) == (x.top > y.top), (view(x), view(y))


@FAST
@given(variant=variants, rng=st.randoms(use_true_random=False))
def test_play_beats_iff_a_reading_beats_and_standing_reading_beats(
        variant: str, rng: random.Random) -> None:
    maker = PlayMaker(variant, rng)
    b, a = maker.play(), maker.play()
    rb, ra = _safe(b, variant), _safe(a, variant)
    if not rb or not ra:
        return
    standing_a = ra[0]
    any_beats = any(core.beats(r, standing_a, variant) for r in rb)
    assert core.beats(b, standing_a, variant) == any_beats
    assert core.beats(b, a, variant) == any_beats     # cards: a's primary stands
    try:
        standing = core.play_reading(b, variant, to_beat=standing_a)
    except core.IllegalPlay:
        assert not any_beats
    else:
        assert any_beats and core.beats(standing, standing_a, variant)
        first = next(r for r in rb if core.beats(r, standing_a, variant))
        assert view(standing) == view(first)


def _safe(cards: list[int], variant: str) -> list[Any] | None:
    try:
        return list(core.classify(cards, variant).readings)
    except (core.InvalidPlay, core.CardError):
        return None


@FAST
@given(variant=variants, rng=st.randoms(use_true_random=False))
def test_readings_are_well_formed(variant: str, rng: random.Random) -> None:
    cards = PlayMaker(variant, rng).play()
    readings = _safe(cards, variant)
    if not readings:
        return
    c = core.classify(cards, variant)
    assert view(c.primary) == view(readings[0])
    seen = set()
    for r in readings:
        assert r.cards == len(cards)
        assert r.is_bomb == (r.kind in core.BOMB_KINDS)
        assert (r.star > 0) == r.is_bomb and bool(r.key) == r.is_bomb
        assert sum(n for _, n in r.ranks) + (0 if r.ranks else len(cards)) == len(cards)
        assert len(r.wilds) <= 4
        strength = r.key if r.is_bomb else (r.cards, r.top)
        assert (r.kind, strength) not in seen, "one reading per (kind, strength)"
        seen.add((r.kind, strength))


def _same(x: Any, y: Any) -> bool:
    return bool(view(x) == view(y))


@SAMPLES
@given(variant=variants, seed=seeds)
def test_every_reading_is_selectable_by_its_declaration(variant: str, seed: int) -> None:
    """§7 rule 4: kind, top, star and the wild placement name each reading exactly once."""
    maker = PlayMaker(variant, random.Random(seed))
    for _ in range(80):
        cards = maker.play()
        readings = _safe(cards, variant)
        if not readings:
            continue
        c = core.classify(cards, variant)
        for r in readings:
            full = Declaration(r.kind, r.top, r.star, tuple(reversed(r.wilds)))   # any order
            matches = core.classify(cards, variant, declare=full).readings
            assert len(matches) == 1 and _same(matches[0], r)
            assert _same(core.play_reading(cards, variant, declare=full), r)
            assert _same(c.reading(full), r)
            assert r.declaration == (r.kind, r.top, r.star, r.wilds)
            assert _same(core.play_reading(cards, variant, declare=r.declaration), r)
            assert _same(c.reading(r.kind, r.top, r.star, r.wilds), r)
            by_name = Declaration(r.kind, r.top_rank, r.star,
                                  tuple(rank_name(w) for w in r.wilds))
            assert _same(c.reading(by_name), r)
            # without the placement: the first reading with that kind, top and star
            kts = [x for x in readings if (x.kind, x.top, x.star) == (r.kind, r.top, r.star)]
            assert _same(core.play_reading(cards, variant, declare=full[:3]), kts[0])


@FAST
@given(variant=variants, rng=st.randoms(use_true_random=False))
def test_compare_is_play_reading_on_the_standing_reading(variant: str,
                                                         rng: random.Random) -> None:
    """compare = §7 rule 6: the reading that stands if it beats, else the primary."""
    maker = PlayMaker(variant, rng)
    b, a = maker.play(), maker.play()
    rb, ra = _safe(b, variant), _safe(a, variant)
    if not rb or not ra:
        return
    result = core.compare(b, a, variant)
    assert _same(result.current, ra[0])
    assert result.beats == core.beats(b, a, variant)
    if result.beats:
        assert _same(result.play, core.play_reading(b, variant, to_beat=ra[0]))
    else:
        assert _same(result.play, rb[0])
    # a declared current reading stands; a declared play reading is judged as declared
    last = ra[-1]
    declared = Declaration(last.kind, last.top, last.star, last.wilds)
    result = core.compare(b, a, variant, current_declare=declared)
    assert _same(result.current, last)
    for r in rb:
        mine = Declaration(r.kind, r.top, r.star, r.wilds)
        got = core.compare(b, last, variant, declare=mine)
        assert _same(got.play, r) and got.beats == r.beats(last)


def _random_batch(variant: str, seed: int) -> tuple[list[list[int]], Any]:
    """100 generated plays and two odd ones (no cards, random bytes), and their batch."""
    rng = random.Random(seed)
    maker = PlayMaker(variant, rng)
    plays = [maker.play() for _ in range(100)]
    plays += [[], [rng.randrange(0, 256) for _ in range(rng.randrange(1, 6))]]  # odd bytes
    return plays, core.classify_batch(bytes(c for p in plays for c in p),
                                      [len(p) for p in plays], variant)


@SAMPLES
@given(variant=variants, seed=seeds)
def test_batch_errors_grouped_are_the_errors(variant: str, seed: int) -> None:
    """BatchErrors.grouped: each invalid play's group holds an exception equal to its own."""
    errors = _random_batch(variant, seed)[1].errors
    groups, exceptions = errors.grouped()
    assert len(groups) == len(errors.indexes) == len(errors)
    assert list(errors.indexes) == list(errors)
    for index, g in zip(errors.indexes, groups, strict=True):
        got, own = exceptions[g], errors[index]
        assert got is not own and (type(got), str(got), got.field) == (
            type(own), str(own), own.field)
    assert len({(type(e), str(e)) for e in exceptions}) == len(exceptions)


@SAMPLES
@given(variant=variants, seed=seeds)
def test_batch_errors_are_what_classify_raises(variant: str, seed: int) -> None:
    plays, result = _random_batch(variant, seed)
    assert result.plays == len(plays)
    assert result.valid == sum(1 for k in result.kind if k != 255)
    for i, play in enumerate(plays):
        try:
            core.classify(bytes(play), variant)
        except core.ShuangkouError as exc:
            got = result.errors[i]
            assert (type(got), str(got), got.field) == (type(exc), str(exc), exc.field)
            assert result.kind[i] == 255 and result.readings[i] == 0
        else:
            assert i not in result.errors and result.kind[i] != 255
