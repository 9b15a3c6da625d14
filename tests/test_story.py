"""A round's story (core_ext/story.py): the tricks, readings, wilds, bombs, finishing and
settlement it tells equal the replay's own (a twin of the tricks in tests/round_twin.py,
``score_replay`` for the settlement), and a rejected replay stops where, and for the
reason, ``score_replay`` says."""

from __future__ import annotations

import json

import pytest
from round_twin import twin_tricks

from shuangkou import core
from shuangkou.core.errors import ReplayError
from shuangkou.core.story import story_of, wild_ranks

SEEDS = range(8)


@pytest.mark.parametrize("seed", SEEDS)
def test_story_tells_the_tricks_and_the_settlement(variant: str, seed: int) -> None:
    replay = core.generate_replay(variant, seed)
    story = story_of(json.dumps(replay))
    assert story.rejection is None
    assert story.result == core.score_replay(replay)
    tricks, readings = twin_tricks(replay)
    assert [(t.leader, t.lead, [s.index for s in t.steps], t.won_by) for t in story.tricks] \
        == [(t.leader, t.lead, t.actions, t.won_by) for t in tricks]
    steps = story.steps
    assert [(s.seat, s.kind) for s in steps] == [
        (a["seat"], next(k for k in ("play", "pass", "escape") if k in a))
        for a in replay["actions"]]
    for s in steps:
        if s.kind == "play":
            assert s.reading is not None and s.reading.describe() == readings[s.index].describe()
            assert sum(w is not None for w in s.stands_for) == len(s.reading.wilds)
    # bombs numbered per seat as the settlement's star sources count them
    assert [[s.reading.key for s in story.bombs if s.seat == seat] for seat in range(4)] == \
        [[b.key for b in bombs] for bombs in core.summarize_replay(replay).bombs]
    for seat in story.result.seats:
        if seat.star_source.rule == "bomb":
            bomb = next(s for s in story.bombs if s.seat == seat.seat
                        and s.bomb == seat.star_source.bomb)
            assert bomb.reading is not None and bomb.reading.star == seat.star
    assert tuple(s.seat for s in steps if s.place is not None) == story.finish_order
    assert [s.place for s in steps if s.place is not None] == \
        list(range(1, len(story.finish_order) + 1))
    assert story.hands == tuple(steps[-1].hands)
    assert story.seated == tuple(tuple(core.parse_cards(replay["hands"][d]))
                                 for d in story.hand_at)


def test_escaped_round() -> None:
    replay = core.generate_replay("bianfeng", 3, 1.0)
    story = story_of(replay)
    assert story.escaper is not None and story.result is not None
    assert story.result.kind == "escape" and story.steps[-1].kind == "escape"


@pytest.mark.parametrize("corrupt", ["seat", "card", "kind", "truncate", "deal", "json"])
def test_rejected_replay_stops_at_the_first_illegal_action(corrupt: str) -> None:
    replay = core.generate_replay("qianbian", 5)
    at = 40
    if corrupt == "seat":
        replay["actions"][at]["seat"] = (replay["actions"][at]["seat"] + 1) % 4
    elif corrupt == "card":
        at = next(i for i, a in enumerate(replay["actions"]) if i >= at and "play" in a)
        replay["actions"][at]["play"] = ["BJ"] * 5
    elif corrupt == "kind":
        replay["actions"][at] = {"seat": replay["actions"][at]["seat"], "pass": True,
                                 "escape": True}
    elif corrupt == "truncate":
        replay["actions"] = replay["actions"][:at]
    elif corrupt == "deal":
        replay["hands"][0] = replay["hands"][0][:-1]
    text = "{not json" if corrupt == "json" else json.dumps(replay)
    with pytest.raises(ReplayError) as caught:
        core.score_replay(text)
    story = story_of(text)
    assert story.result is None and story.rejection is not None
    assert (story.rejection.action, story.rejection.reason) == (caught.value.action,
                                                               caught.value.detail)
    if corrupt in ("deal", "json"):
        assert story.dealt is None and not story.tricks
        return
    assert [s.index for s in story.steps] == list(range(at))
    if corrupt == "card":
        assert story.rejection.cards == (75,) * 5
    if corrupt != "truncate":
        assert story.rejection.written == replay["actions"][at]


def test_wild_ranks_give_the_wilds_to_wild_jokers_only() -> None:
    r = core.play_reading("45678 BJ", "baibian")
    assert wild_ranks(tuple(core.parse_cards("45678 BJ")), r, core.get_variant("baibian")) \
        == (None,) * 5 + (r.wilds[0],)
    bomb = core.play_reading("SJ SJ BJ BJ", "baibian")     # jokers standing as themselves
    assert wild_ranks(tuple(core.parse_cards("SJ SJ BJ BJ")), bomb,
                      core.get_variant("baibian")) == (None,) * 4


def test_story_doctest() -> None:
    import doctest

    import shuangkou.core.story as story

    result = doctest.testmod(story)
    assert result.attempted > 0 and result.failed == 0
