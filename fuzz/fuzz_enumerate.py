"""Fuzz the enumeration engine: core.legal_plays, count_plays and best_bomb.

Hands are drawn from the variant's deck (few ranks and jokers more often than not, the
expensive shapes), sometimes anything at all; filters, limits and the play to beat are
arbitrary. Besides "a result or a core_ext error", every listed play must come from the
hand, read as its listed reading, beat the play to beat, respect the filters and limit, and
``count_plays`` must agree with an unlimited listing; ``best_bomb`` is the strongest bomb.
"""

from __future__ import annotations

import sys
from collections import Counter

from common import KIND_NAMES, Input, cards_any, core_call, main, play_codes, variant_any

from shuangkou import core

if not hasattr(core, "legal_plays"):
    print("FUZZ-SKIP: shuangkou.core has no legal_plays yet", file=sys.stderr)
    sys.exit(0)


def hand_any(inp: Input) -> object:
    """A hand (once-only iterators excluded: the checks read the hand again)."""
    hand = play_codes(inp, inp.int(1, 27)) if inp.byte() % 6 else cards_any(inp)
    return list(hand) if hasattr(hand, "__next__") else hand


def filters(inp: Input) -> dict[str, object]:
    out: dict[str, object] = {}
    if inp.byte() % 3 == 0:
        out["kinds"] = [inp.choice(KIND_NAMES) if inp.byte() % 8 else inp.text(1)
                        for _ in range(inp.int(0, 3))]
    if inp.byte() % 4 == 0:
        out["bombs_only"] = inp.bool()
    if inp.byte() % 3 == 0:
        out["max_cards"] = inp.int(0, 30) if inp.byte() % 4 else inp.edge_int()
    if inp.byte() % 3 == 0:
        out["limit"] = inp.int(0, 50) if inp.byte() % 4 else inp.edge_int()
    return out


def check(plays: object, hand: list[int], variant: object, to_beat: object,
          opts: dict[str, object]) -> None:
    have = Counter(hand)
    kinds = opts.get("kinds")
    limit = opts.get("limit")
    max_cards = opts.get("max_cards")
    n = len(plays)   # type: ignore[arg-type]
    if isinstance(limit, int) and n > limit:
        raise AssertionError(f"{n} plays listed past limit {limit}")
    standing = plays.to_beat   # type: ignore[attr-defined]
    if (standing is None) != (to_beat is None):
        raise AssertionError(f"to_beat {to_beat!r} but the listing stands against {standing}")
    for play in list(plays)[:200]:   # type: ignore[call-overload]
        cards, reading = play
        if Counter(cards) - have:
            raise AssertionError(f"play {play!r} takes cards the hand {hand} lacks")
        if reading.cards != len(cards):
            raise AssertionError(f"play {play!r} lists {reading.cards} cards")
        readings = core.classify(list(cards), variant).readings
        if not any(r.kind == reading.kind and r.key == reading.key and r.top == reading.top
                   for r in readings):
            raise AssertionError(f"{play!r} is listed with a reading classify does not give")
        if standing is not None and not reading.beats(standing):
            raise AssertionError(f"{play!r} does not beat {standing.describe()}")
        if isinstance(kinds, list) and kinds and reading.kind not in kinds:
            raise AssertionError(f"{play!r} is not of the kinds {kinds}")
        if opts.get("bombs_only") and not reading.is_bomb:
            raise AssertionError(f"{play!r} is not a bomb")
        if isinstance(max_cards, int) and max_cards and len(cards) > max_cards:
            raise AssertionError(f"{play!r} has more than {max_cards} cards")


def one_input(data: bytes) -> None:
    inp = Input(data)
    variant = variant_any(inp)
    hand = hand_any(inp)
    to_beat = None
    if inp.bool():
        to_beat = play_codes(inp, inp.int(1, 12)) if inp.byte() % 4 else hand_any(inp)
    opts = filters(inp)
    ok, plays = core_call(core.legal_plays, hand, variant, to_beat, **opts)
    if not ok:
        return
    check(plays, list(plays.hand), variant, to_beat, opts)
    try:   # a sequence: IndexError past the end, like a list
        core_call(plays.__getitem__, inp.edge_int() * (1 if inp.bool() else -1))
    except IndexError:
        pass
    if opts:
        return
    ok_count, counts = core_call(core.count_plays, hand, variant, to_beat)
    if not ok_count or sum(counts.values()) != len(plays):
        raise AssertionError(f"count_plays {counts} vs {len(plays)} listed plays")
    if to_beat is None:
        best = core.best_bomb(hand, variant)
        bombs = [r for _, r in plays if r.is_bomb]
        if (best is None) != (not bombs):
            raise AssertionError(f"best_bomb {best} but {len(bombs)} bombs listed")
        if best is not None and any(b.key > best.key for b in bombs):
            raise AssertionError(f"best_bomb {best.describe()} is not the strongest")


if __name__ == "__main__":
    main(one_input, sys.argv)
