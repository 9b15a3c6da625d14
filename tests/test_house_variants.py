"""The server's house-variant registry (core.variants.register_variants) and its setting."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from grpc_helpers import TIMEOUT, cards, running_server

from shuangkou.core.errors import VariantError
from shuangkou.core.variants import (
    BUILTIN,
    find_variant,
    get_variant,
    house_variants,
    register_variants,
    unregister_variants,
)
from shuangkou.service.config import load_config, parse_flags
from shuangkou.service.server import load_house_variants
from shuangkou.v1 import service_pb2
from shuangkou.v1.variants_pb2 import RuleSet

HOUSE = '[variants.club_rules]\nextends = "baibian"\nescape = "none"\n'


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    unregister_variants()
    yield
    unregister_variants()


def test_registered_variants_resolve_by_id(tmp_path) -> None:
    path = tmp_path / "house.toml"
    path.write_text(HOUSE)
    (v,) = register_variants([path])
    assert v.id == "club_rules" and v.escape == "none"
    assert find_variant("club_rules") is v and get_variant("club_rules") is v
    assert find_variant("baibian") is BUILTIN["baibian"]
    assert find_variant("nope") is None
    assert house_variants() == [v]


@pytest.mark.parametrize("files, words", [
    ([{"id": "baibian", "extends": "qianbian"}], "may not take the built-in id"),
    ([{"id": "a", "extends": "baibian"}, {"id": "a", "extends": "huopin"}], "defined twice"),
])
def test_clashing_ids_register_nothing(files: list[dict[str, str]], words: str) -> None:
    with pytest.raises(VariantError, match=words):
        register_variants(files)
    assert house_variants() == []


def test_a_bad_file_leaves_no_half_registration(tmp_path) -> None:
    good, bad = tmp_path / "good.toml", tmp_path / "bad.json"
    good.write_text(HOUSE)
    bad.write_text('{"id": "x", "extends": "baibian", "joker": 1}')
    with pytest.raises(VariantError, match="bad.json"):
        load_house_variants([str(good), str(bad)])
    assert house_variants() == []


def test_variants_setting_from_toml_env_and_flags(tmp_path) -> None:
    config_file = tmp_path / "serve.toml"
    config_file.write_text('variants = ["a.toml", "b.json"]\n')
    assert load_config(parse_flags(["--config", str(config_file)]), environ={}).variants == \
        ("a.toml", "b.json")
    assert load_config(None, environ={"SHUANGKOU_VARIANTS": "x.toml, y.toml"}).variants == \
        ("x.toml", "y.toml")
    assert load_config(parse_flags(["--variants", "p.toml", "q.toml"]), environ={}).variants == \
        ("p.toml", "q.toml")


def test_rpcs_use_house_variants_by_id(tmp_path) -> None:
    path = tmp_path / "house.toml"
    path.write_text(HOUSE)
    load_house_variants([str(path)])
    with running_server() as srv:
        listed = srv.stub.ListVariants(service_pb2.ListVariantsRequest(), timeout=TIMEOUT)
        assert [v.id for v in listed.variants][-1] == "club_rules"
        got = srv.stub.GetVariant(service_pb2.GetVariantRequest(rule_set=RuleSet(id="club_rules")),
                                  timeout=TIMEOUT)
        assert got.variant.id == "club_rules"
        reply = srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
            rule_set=RuleSet(id="club_rules"), play=cards("7777 BJ")), timeout=TIMEOUT)
        assert reply.reading.star == 5
