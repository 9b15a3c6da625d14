"""One source for the rules compiled code numbers: the round-end table (core_ext/round_ends.py)
and the value lists of variants.py, checked against the compiled modules; and the worked
example of docs/design.md, a new round-end rule added as one row of the table."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from shuangkou import core
from shuangkou.core import _core, _round, _settle, round_ends, variants
from shuangkou.core.errors import VariantError

SEATS = 4
ROUND_ENDS_SOURCE = Path(__file__).resolve().parent.parent / "core_ext" / "round_ends.py"


def _orders() -> list[tuple[int, ...]]:
    """Every finishing order: 0 to 4 distinct seats."""
    return [order for n in range(SEATS + 1) for order in itertools.permutations(range(SEATS), n)]


def test_compiled_ended_at_agrees_with_the_table_for_every_rule_and_finishing_order() -> None:
    for row in round_ends.ROUND_END_TABLE:
        for order in _orders():
            assert _round.round_over_at(order, row.name) == row.ended_at(order), (row.name, order)


def test_the_table_names_the_rules_variants_accept() -> None:
    assert variants.ROUND_ENDS == tuple(row.name for row in round_ends.ROUND_END_TABLE)
    assert {v.round_end for v in variants.BUILTIN.values()} == set(variants.ROUND_ENDS)
    assert round_ends.round_end("first_out").kou and not round_ends.round_end("finishing_order").kou


def test_an_unknown_round_end_is_an_error_everywhere_never_kou_scoring() -> None:
    with pytest.raises(VariantError, match="unknown round end 'three_out'"):
        round_ends.round_end("three_out")
    with pytest.raises(VariantError, match="round_end"):
        core.get_variant("baibian").replace(id="odd", round_end="three_out")
    with pytest.raises(VariantError, match="unknown round end"):
        _round.round_over_at((0, 2), "three_out")
    # A variant whose field was changed behind its checks: settlement refuses it.
    odd = core.get_variant("baibian").replace(id="odd")
    object.__setattr__(odd, "round_end", "three_out")
    with pytest.raises(VariantError, match="unknown round end"):
        _settle.Tables(odd)


@pytest.mark.parametrize(("module", "prefix", "values", "table"), [
    (_core, "F_", variants.BOMB_KEY_FIELDS, "_FIELD_IDS"),
    (_core, "PHASE_", variants.CHAIN_PHASES, "_PHASES"),
    (_core, "WRAP_", variants.CHAIN_WRAPS, "_WRAPS"),
    (_settle, "STAR_", variants.STAR_SOURCES, "MULTIPLIER_STARS"),
    (_settle, "MODE_", variants.CONTRIBUTION_MODES, "CONTRIBUTION_MODES"),
    (_settle, "TO_", variants.CONTRIBUTION_RECIPIENTS, "CONTRIBUTION_RECIPIENTS"),
    (_settle, "ESCAPE_", variants.ESCAPE_RULES, "ESCAPES"),
    (_settle, "WIN_", variants.KINDS_OF_WIN, None),
])
def test_compiled_numbers_of_rule_values_equal_the_variants_lists(
        module: ModuleType, prefix: str, values: tuple[str, ...], table: str | None) -> None:
    """Each compiled branch PREFIX_VALUE is numbered as variants.py lists the value, and the
    compiled module has no branch the list lacks."""
    expected = dict(variants.numbered(values))
    compiled = {name[len(prefix):].lower(): getattr(module, name) for name in dir(module)
                if name.startswith(prefix) and type(getattr(module, name)) is int}
    assert compiled == expected
    if table is not None:
        assert dict(getattr(module, table)) == expected


def test_bomb_orders_compare_only_known_key_fields() -> None:
    for order in variants.BOMB_ORDERS.values():
        assert set(order["key"]) <= set(variants.BOMB_KEY_FIELDS)
        assert set(order["tiers"]) == set(_core.BOMB_KINDS)


# ----------------------------------------------------------------------------- worked example

#: The one row docs/design.md's recipe adds: "the round ends when three players are out".
NEW_ROW = '''\
    RoundEnd("three_out", team=False, outs=3, kou=False, over=4,
             ends_with="three players out",
             finished="seat {seat} was the third out"),
'''
#: The end of the table in round_ends.py, where the row goes.
TABLE_END = "\n)\n\n#: The values ``Variant.round_end`` may take."

#: Run with the table's source plus NEW_ROW served as shuangkou.core.round_ends, nothing
#: else changed (no rebuild: the row fits ended_at's `team`/`outs`).
SCRIPT = textwrap.dedent('''
    import importlib.abc, importlib.util, json, sys

    SOURCE = sys.stdin.read()

    class Table(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name == "shuangkou.core.round_ends":
                return importlib.util.spec_from_loader(name, self, origin="round_ends.py")
            return None

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            exec(compile(SOURCE, "round_ends.py", "exec"), module.__dict__)

    sys.meta_path.insert(0, Table())
    from shuangkou import core

    out = {}
    hands = ["3S", "8S 8H", "5S", "6S 7S"]
    for name in ("finishing_order", "three_out"):
        v = core.get_variant("baibian").replace(id="three", round_end=name)
        r = core.Round.deal(v, hands, 0, partial_deal=True)
        r.play(0, "3S")
        r.pass_turn(1)
        over_at_two = r.play(2, "5S").round_over
        out[name] = {"over_at_two": over_at_two}
        if over_at_two:
            continue
        r.play(3, "6S")
        r.pass_turn(1)
        rec = r.play(3, "7S")
        again = core.Round.from_bytes(r.to_bytes(), v)
        try:
            r.play(1, "8S 8H")
            refused = ""
        except core.RuleViolation as exc:
            refused = str(exc)
        try:
            core.score_round(v, [0, 2])
            summary = ""
        except core.ShuangkouError as exc:
            summary = str(exc)
        result = r.result()
        out[name].update(
            over=rec.round_over, kind=result.kind, final=list(result.final),
            finish=list(result.finish_order), state_over=again.is_over,
            state_result=again.result() == result, refused=refused, summary=summary,
            scored=core.score_round(v, [0, 2, 3]).final == result.final)
    print(json.dumps(out))
''')


def test_worked_example_a_new_round_end_rule_is_one_row_of_the_table() -> None:
    source = ROUND_ENDS_SOURCE.read_text(encoding="utf-8")
    assert source.count(TABLE_END) == 1
    changed = source.replace(TABLE_END, "\n" + NEW_ROW.rstrip("\n") + TABLE_END)
    run = subprocess.run([sys.executable, "-c", SCRIPT], input=changed, capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    # The built-in rule ends the round once seats 0 and 2 (one team) are out ...
    assert out["finishing_order"] == {"over_at_two": True}
    # ... the new one at the third finish, scored by places (0, 2, 3, then seat 1 fourth).
    three = out["three_out"]
    assert three["over_at_two"] is False and three["over"] is True
    assert three["finish"] == [0, 2, 3] and three["kind"] == "double"
    assert three["final"] == [4, -4, 4, -4] and three["scored"] is True
    assert three["state_over"] is True and three["state_result"] is True
    assert "seat 3 was the third out" in three["refused"]
    assert "three ends with three players out" in three["summary"]
