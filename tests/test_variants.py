"""Built-in variants against the RULES.md tables, and custom variants from TOML/JSON (§11)."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from reference import DECK_SIZE, RULEBOOK, VARIANTS, classify_ref, reading_diff, rules_of, view

from shuangkou import core
from shuangkou.core import VariantError
from shuangkou.core.variants import load_variant, load_variants, variant_from_mapping

# RULES.md, the table at the top: id, Chinese name, seed source.
RULES_TABLE = [
    ("baibian", "百变双扣", "docs/seeds/000_f1dd99c373b18bde.txt"),
    ("fengkuang", "疯狂双扣", "docs/seeds/001_59d6c8a7f796e91e.txt"),
    ("fengkuang_crazy", "疯狂双扣", "docs/seeds/001_59d6c8a7f796e91e.txt"),
    ("bianfeng", "边锋百变双扣", "docs/seeds/002_7d650771cb65ddd5.txt"),
    ("bianfeng_lishui", "边锋百变双扣", "docs/seeds/002_7d650771cb65ddd5.txt"),
    ("qianbian", "千变双扣", "docs/seeds/003_0365516d8eb7a6c4.txt"),
    ("huopin", "火拼双扣", "docs/seeds/004_ad6aaeb065c829c9.txt"),
]
ROOM = {"fengkuang": "平常场", "fengkuang_crazy": "疯狂场", "bianfeng_lishui": "丽水"}



def test_variant_sources_are_in_the_repository() -> None:
    """Every built-in names the seed rule text it comes from, shipped in docs/seeds/."""
    root = Path(__file__).resolve().parents[1]
    for v in core.list_variants():
        assert (root / v.source).is_file(), v.source

# ----------------------------------------------------------------------------- built-ins

def test_list_variants_in_rules_order_with_chinese_names_and_sources() -> None:
    listed = core.list_variants()
    assert [v.id for v in listed] == [row[0] for row in RULES_TABLE] == list(VARIANTS)
    for v, (vid, name, source) in zip(listed, RULES_TABLE, strict=True):
        assert name in v.name, (vid, v.name)
        assert ROOM.get(vid, "") in v.name, (vid, v.name)
        assert v.source == source
        assert core.get_variant(vid) is v
        assert v.extends is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_builtin_rule_data_matches_the_rule_book(variant: str) -> None:
    """§3 decks, §4 wilds, §6 chain-bomb table, §8 bomb family, as transcribed in reference."""
    v = core.get_variant(variant)
    assert rules_of(v) == RULEBOOK[variant]
    assert v.deck_size == DECK_SIZE[variant]
    assert v.chain_wrap == {"bianfeng": "through_ace", "bianfeng_lishui": "through_ace",
                            "huopin": "natural_two"}.get(variant, "none")


def test_unknown_variant() -> None:
    with pytest.raises(VariantError, match="unknown variant 'nope'.*baibian") as info:
        core.get_variant("nope")
    assert info.value.field == "variant"
    with pytest.raises(VariantError, match="nope"):
        core.classify("7", "nope")


def test_replace_builds_a_validated_copy() -> None:
    base = core.get_variant("baibian")
    house = base.replace(id="house", chain_min_links=2)
    assert (house.chain_min_links, house.extends, base.chain_min_links) == (2, "baibian", 3)
    with pytest.raises(VariantError) as info:
        base.replace(chain_min_links=1)
    assert info.value.field == "chain_min_links"


# ----------------------------------------------------------------------------- custom files

HOUSE_TOML = """
id = "house"
name = "Wenzhou house rules"
extends = "baibian"
wild_jokers = ["SJ", "BJ"]
chain_min_links = 2
"""
HOUSE = {"id": "house", "name": "Wenzhou house rules", "extends": "baibian",
         "wild_jokers": ["SJ", "BJ"], "chain_min_links": 2}


def _check_house(v: core.Variant) -> None:
    assert (v.id, v.extends, v.wild_jokers, v.chain_min_links) == (
        "house", "baibian", ("SJ", "BJ"), 2)
    base = core.get_variant("baibian")
    assert (v.bomb_order, v.decks, v.multiplier) == (base.bomb_order, base.decks, base.multiplier)
    # The overrides change how plays read, in the core and the reference alike.
    for cards, kind in [("7 SJ", "pair"), ("3333 4444", "chain_bomb"),
                        ("3333 444 SJ", "chain_bomb")]:
        assert core.classify(cards, v).primary.kind == kind
        assert classify_ref(cards, v)[0].kind == kind
        assert reading_diff(cards, v) is None
    assert core.beats("3333 4444", "22222", v)        # 6 stars > 5
    assert not core.beats("3333 4444", "222222", v)   # 6 stars each, top 4 < 2
    assert [view(r) for r in core.classify("3333 4444", v).readings] == [
        view(r) for r in classify_ref("3333 4444", v)]


def test_custom_variant_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "house.toml"
    path.write_text(HOUSE_TOML, encoding="utf-8")
    _check_house(load_variant(path))
    _check_house(load_variant(str(path)))


def test_custom_variant_from_json(tmp_path: Path) -> None:
    path = tmp_path / "house.json"
    path.write_text(json.dumps(HOUSE), encoding="utf-8")
    _check_house(load_variant(path))


def test_several_custom_variants_extending_each_other(tmp_path: Path) -> None:
    path = tmp_path / "rooms.toml"
    path.write_text("""
[variants.short_chains]
extends = "baibian"
chain_min_links = 2

[variants.house]
extends = "short_chains"
wild_jokers = ["SJ", "BJ"]
""", encoding="utf-8")
    first, house = load_variants(path)
    assert (first.id, first.chain_min_links, first.wild_jokers) == ("short_chains", 2, ("BJ",))
    assert house.id == "house" and house.chain_min_links == 2
    assert house.wild_jokers == ("SJ", "BJ")
    assert load_variant(path) == house


@pytest.mark.parametrize("spec, field, says", [
    ({"id": "x", "extends": "baibian", "colour": "red"}, "colour", "unknown field 'colour'"),
    ({"id": "x", "extends": "baibian", "decks": 7}, "decks", "1–4; got 7"),
    ({"id": "x", "extends": "baibian", "chain_phase": "median"}, "chain_phase", "'median'"),
    ({"id": "x", "extends": "baibian", "wild_jokers": ["XJ"]}, "wild_jokers", "'XJ'"),
    ({"id": "x", "extends": "baibian", "bomb_order": "chess"}, "bomb_order", "'chess'"),
    ({"id": "x", "extends": "baibian", "chain_min_links": 1}, "chain_min_links", "got 1"),
    ({"id": "x", "extends": "baibian", "multiplier": 5}, "multiplier", "shape"),
    ({"id": "x", "extends": "baibian", "hand_size": 30}, "hand_size", "exceeds"),
    ({"id": "bad id", "extends": "baibian"}, "id", "identifier"),
    ({"id": "x"}, "extends", "extends"),
    ({"id": "x", "extends": "nope"}, "extends", "unknown variant 'nope'"),
    ({"variants": {"a": {"extends": "b"}, "b": {"extends": "a"}}}, "extends", "cyclic"),
])
def test_custom_variant_errors_name_the_field(spec: dict[str, object], field: str,
                                              says: str) -> None:
    with pytest.raises(VariantError) as info:
        load_variant(spec)
    assert info.value.field == field
    assert says in str(info.value), str(info.value)


@pytest.mark.parametrize("suffix, text", [
    (".toml", HOUSE_TOML + "\ncolour = 'red'\n"),
    (".json", json.dumps({**HOUSE, "colour": "red"})),
])
def test_file_errors_name_the_field(tmp_path: Path, suffix: str, text: str) -> None:
    path = tmp_path / f"house{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VariantError, match="colour") as info:
        load_variant(path)
    assert info.value.field == "colour"


@pytest.mark.parametrize("suffix, text", [(".toml", "id = = 1"), (".json", "{id: 1")])
def test_malformed_file(tmp_path: Path, suffix: str, text: str) -> None:
    path = tmp_path / f"broken{suffix}"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VariantError, match=re.escape(str(path))):
        load_variant(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(VariantError, match="cannot read"):
        load_variant(tmp_path / "absent.toml")


def test_mapping_round_trip() -> None:
    for v in core.list_variants():
        data = v.to_dict()
        data["extends"] = v.id
        data["id"] = f"{v.id}_copy"
        copy = variant_from_mapping(data)
        assert copy.replace(id=v.id, extends=None) == v


# ----------------------------------------------------------------------------- identity

def test_variants_are_hashable_and_equal_by_value() -> None:
    for v in core.list_variants():
        copy = variant_from_mapping({**v.to_dict(), "id": "house", "extends": v.id})
        same = copy.replace(id=v.id, extends=None)
        assert same == v and hash(same) == hash(v) and same is not v
        assert {v: 1}[same] == 1
    assert len(set(core.list_variants())) == len(core.BUILTIN)


def test_a_replaced_copy_compiles_its_own_rules() -> None:
    base = core.get_variant("baibian")
    short = base.replace(id="short", chain_min_links=2)
    assert core.rules_for(short) is not core.rules_for(base)
    assert core.classify("3333 4444", short).primary.kind == "chain_bomb"
    with pytest.raises(core.InvalidPlay):
        core.classify("3333 4444", base)
    # nothing is written into the frozen variant: its fields are all it holds
    assert set(vars(short)) == {f.name for f in fields(short)}


def test_equal_variants_share_compiled_rules() -> None:
    data = {"id": "house", "extends": "huopin", "chain_min_links": 3}
    first, again = variant_from_mapping(data), variant_from_mapping(data)
    assert first is not again
    assert core.rules_for(first) is core.rules_for(again)


def test_the_rule_cache_is_bounded() -> None:
    from shuangkou.core import _core

    base = core.get_variant("qianbian")
    made = [base.replace(id=f"q{i}") for i in range(_core.RULES_CACHE_SIZE + 5)]
    first = core.rules_for(made[0])
    for v in made[1:]:
        core.rules_for(v)
    assert core.rules_for(made[-1]) is core.rules_for(made[-1])
    assert core.rules_for(made[0]) is not first      # evicted and compiled again
    assert core.rules_for(made[0]).variant == made[0]


def _largest_house(i: int) -> core.Variant:
    """A custom rule set as large as validation allows: every table at 64 rows, long texts
    (fresh objects, as a parsed request's are)."""
    return variant_from_mapping(json.loads(json.dumps({
        "id": f"big{i:061d}", "extends": "fengkuang", "escape_fee": i,
        "name": "变" * 200, "source": "🀄" * 200,
        "multiplier": [[s, s] for s in range(1, 65)],
        "contribution": [[s, s, s] for s in range(1, 65)], "multi_bomb": [[4, 3], [5, 2]]})))


@pytest.mark.parametrize("kind", ["small", "largest"])
def test_the_rule_cache_estimates_what_an_entry_costs(kind: str) -> None:
    """``rules_bytes`` is no less than what tracemalloc measures of an entry (the variant,
    its compiled rules, its settlement tables) and within twice of it."""
    import gc
    import tracemalloc

    from shuangkou.core import _core, _settle
    make = (_largest_house if kind == "largest" else
            lambda i: variant_from_mapping({"id": f"s{i}", "extends": "baibian",
                                            "escape_fee": i}))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = []
        for i in range(40):
            v = make(i)
            kept.append((v, core.rules_for(v), _settle.tables(v)))
        gc.collect()
        each = (tracemalloc.get_traced_memory()[0] - before) / 40
    finally:
        tracemalloc.stop()
    estimate = _core.rules_bytes(kept[0][0])
    assert each <= estimate <= 2 * each, (each, estimate)


def test_the_rule_cache_is_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from shuangkou.core import _core
    budget = 40 * _core.rules_bytes(_largest_house(0))
    monkeypatch.setattr(_core, "RULES_CACHE_BYTES", budget)
    made = [_largest_house(1000 + i) for i in range(100)]
    for v in made:
        assert core.rules_for(v).variant == v
        assert _core.rules_cache_bytes() <= budget
    assert _core.rules_cache_bytes() > budget - _core.rules_bytes(made[0])
    assert core.rules_for(made[-1]) is core.rules_for(made[-1])
    first = core.rules_for(made[0])
    assert core.rules_for(made[0]) is first and core.rules_for(made[1]) is not None


@pytest.mark.parametrize("data", [
    {"id": "baibian", "extends": "baibian", "chain_min_links": 2},
    {"id": "huopin", "extends": "baibian"},
    {"extends": "fengkuang", "decks": 3},           # no id: it would keep the parent's
])
def test_a_custom_variant_may_not_take_a_builtin_id(data: dict[str, object]) -> None:
    taken = data.get("id", data["extends"])
    with pytest.raises(VariantError, match=f"built-in id {taken!r}") as err:
        variant_from_mapping(data)
    assert err.value.field == "id"


def test_a_malformed_field_is_reported_before_the_id() -> None:
    with pytest.raises(VariantError) as err:
        variant_from_mapping({"extends": "baibian", "chain_min_links": 1})
    assert err.value.field == "chain_min_links"


def test_the_rule_cache_under_threads() -> None:
    """Threads swapping between custom variants each read their own variant's rules."""
    from concurrent.futures import ThreadPoolExecutor

    base = core.get_variant("baibian")
    short = [base.replace(id=f"short{i}", chain_min_links=2) for i in range(4)]
    plain = [base.replace(id=f"plain{i}") for i in range(4)]

    def work(i: int) -> bool:
        ok = True
        for _ in range(300):
            ok &= core.classify("3333 4444", short[i % 4]).primary.kind == "chain_bomb"
            try:
                core.classify("3333 4444", plain[i % 4])
                ok = False
            except core.InvalidPlay:
                pass
        return ok

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(work, range(8)))
