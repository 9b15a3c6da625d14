"""The policy's vocabulary as data (core_ext/styles.py, suggest.REASON_TABLE): the styles and
rollout models the compiled code reads as rows, the Reason enum named by one table, and the
worked example of docs/design.md — a new style and a model that draws it are two rows of
styles.py, no rebuild."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shuangkou.core import _suggest, styles
from shuangkou.core.errors import ShuangkouError
from shuangkou.core.suggest import MODELS, REASON_TABLE, Budget

STYLES_SOURCE = Path(styles.__file__)


def test_the_reason_enum_is_named_by_the_reason_table() -> None:
    """Each compiled Reason member R_<NAME> sits at the index of its row in REASON_TABLE."""
    members = [m for m in _suggest.Reason if m.name != "NREASONS"]
    assert [m.name for m in members] == ["R_" + row.name.upper() for row in REASON_TABLE]
    assert [int(m) for m in members] == list(range(len(REASON_TABLE)))
    assert int(_suggest.Reason.NREASONS) == len(REASON_TABLE)


def test_the_compiled_policy_holds_the_style_table() -> None:
    assert _suggest.style_rules() == [
        (row.over_partner, row.spend_within, row.bomb_within, row.hold_beyond)
        for row in styles.STYLE_TABLE]
    assert styles.STYLES[0] == "rule" and MODELS == styles.MODELS
    assert _suggest.POLICY_CONSTANTS["DANGER"] == styles.DANGER
    assert styles.ANY >= _suggest.POLICY_CONSTANTS["NO_DANGER"]


def test_names_no_row_has_are_refused() -> None:
    with pytest.raises(ShuangkouError) as caught:
        styles.model("nobody")
    assert caught.value.field == "model"
    with pytest.raises(ShuangkouError) as caught:
        Budget(rollouts=10, model="nobody")
    assert caught.value.field == "model"
    with pytest.raises(ShuangkouError) as caught:
        styles.style_index("nobody")
    assert caught.value.field == "style"


@pytest.mark.parametrize("table", [
    "styles=(STYLE_TABLE[1],) + STYLE_TABLE[1:]",                 # 'rule' not first
    "styles=STYLE_TABLE + (STYLE_TABLE[1],)",                     # a name twice
    "styles=STYLE_TABLE + (replace(STYLE_TABLE[1], name='x', bomb_within=-1),)",
    "models=MODEL_TABLE + (Model('odd', ('nobody',), ''),)",      # draws an unknown style
    "models=MODEL_TABLE + (MODEL_TABLE[0],)",                     # a model twice
])
def test_a_table_that_does_not_fit_is_refused_at_import(table: str) -> None:
    kw = {"styles": "STYLE_TABLE", "models": "MODEL_TABLE"}
    name, expr = table.split("=", 1)
    kw[name] = expr
    code = (f"from dataclasses import replace\n"
            f"from shuangkou.core.styles import *\n"
            f"from shuangkou.core.styles import _check_tables\n"
            f"_check_tables({kw['styles']}, {kw['models']})\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode != 0 and "ShuangkouError" in run.stderr, run.stderr


# ----------------------------------------------------------------------------- worked example

#: docs/design.md's recipe: a style that beats whenever it can and plays over its partner
#: too, and a rollout model that imagines it in one seat in three.
NEW_STYLE = '''\
    Style("reckless", over_partner=True, spend_within=ANY, bomb_within=ANY, hold_beyond=ANY,
          words="beats whatever stands, its partner's play too"),
'''
NEW_MODEL = '''\
    Model("wild", ("rule", "rule", "reckless"), "the rule policy 2 in 3, reckless 1 in 3"),
'''
STYLES_END = "\n)\n\n#: The style names, in table order"
MODELS_END = "\n)\n\n#: The model names, in table order."

SCRIPT = textwrap.dedent('''
    import importlib.abc, importlib.util, json, random, sys

    SOURCE = sys.stdin.read()

    class Table(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):
            if name == "shuangkou.core.styles":
                return importlib.util.spec_from_loader(name, self, origin="styles.py")
            return None

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            exec(compile(SOURCE, "styles.py", "exec"), module.__dict__)

    sys.meta_path.insert(0, Table())
    from shuangkou import core
    from shuangkou.core import _search, _suggest, styles
    from shuangkou.core.generate import deal
    from shuangkou.core.suggest import Budget, SeatStyles, suggestions

    counts = _search.style_counts("baibian", 300, 1)
    k = styles.STYLES.index("reckless")
    partner, calm = _search.CONTEXTS.index("partner"), _search.CONTEXTS.index("calm")
    v = core.get_variant("baibian")
    r = core.Round.deal(v, deal(v, random.Random("wild")), 0, partner=2)
    searched = []
    for _ in range(12):
        budget = Budget(rollouts=60, model="wild")
        a = suggestions(r, 3, budget=budget, seed=3)
        b = suggestions(r.copy(), 3, budget=budget, seed=3)
        rule = suggestions(r, 3, budget=Budget(rollouts=60, model="rule"), seed=3)
        searched.append([a.actions == b.actions, a.width, a.actions != rule.actions])
        s = a.actions[0]
        if s.kind == "pass":
            r.pass_turn(s.seat)
        else:
            r.play(s.seat, s.cards, s.declaration)
    print(json.dumps({
        "styles": list(styles.STYLES), "models": list(styles.MODELS),
        "compiled": _suggest.style_rules()[k],
        "counts": counts[k], "blind": counts[styles.STYLES.index("blind")],
        "partner": partner, "calm": calm,
        "prior": _search.read_weights(SeatStyles().seen, _search.log_rates(counts), "wild")[1],
        "searched": searched,
    }))
''')


def test_worked_example_a_new_style_is_one_row_of_the_table() -> None:
    source = STYLES_SOURCE.read_text(encoding="utf-8")
    assert source.count(STYLES_END) == 1 and source.count(MODELS_END) == 1
    changed = source.replace(STYLES_END, "\n" + NEW_STYLE.rstrip("\n") + STYLES_END)
    changed = changed.replace(MODELS_END, "\n" + NEW_MODEL.rstrip("\n") + MODELS_END)
    run = subprocess.run([sys.executable, "-c", SCRIPT], input=changed, capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    assert out["styles"][-1] == "reckless" and out["models"][-1] == "wild"
    # the compiled policy holds the row (no rebuild) ...
    assert out["compiled"] == [True, styles.ANY, styles.ANY, styles.ANY]
    # ... and plays it: over its partner as the partner-blind style does, and it bombs
    # where the rule policy would keep its bombs (calm: no opponent about to go out)
    mine, calm = out["counts"], out["calm"]
    assert mine[out["partner"]][1] > 0 and out["blind"][out["partner"]][1] > 0
    assert mine[calm][2] / sum(mine[calm]) > out["blind"][calm][2] / sum(out["blind"][calm])
    # the model reads its draws: 2 in 3 the rule policy, 1 in 3 the new style
    prior = out["prior"]
    assert prior[0] == pytest.approx(2 / 3) and prior[-1] == pytest.approx(1 / 3)
    assert sum(prior) == pytest.approx(1)
    # searches with it are deterministic, and it changes what they see
    assert all(same for same, _, _ in out["searched"])
    assert any(width > 1 and other for _, width, other in out["searched"])
