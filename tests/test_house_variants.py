"""The server's house-variant registry (core.variants.register_variants) and its setting."""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest
from grpc_helpers import TIMEOUT, ServerProcess, cards, running_server, serve_refused

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
from shuangkou.service.startup import load_house_variants
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


# ----------------------------------------------------------------------------- hostile files (issue 19)

DEEP = 100_000
HOSTILE = {
    # name: (file name, content, words the one-line refusal holds)
    "JSON nested 100,000 deep": ("deep.json", '{"id": "h", "extends": "baibian", "multiplier": '
                                 + "[" * DEEP + "]" * DEEP + "}",
                                 "nested too deeply (field 'multiplier' at line 1"),
    "TOML nested 100,000 deep": ("deep.toml", 'id = "h"\nextends = "baibian"\nmultiplier = '
                                 + "[" * DEEP + "]" * DEEP + "\n",
                                 "nested too deeply (field 'multiplier' at line 3"),
    "TOML tables 1,000 deep": ("tables.toml", "[" + ".".join(["v"] * 1000) + "]\nx = 1\n",
                               "field 'v.v.v.v"),
    "not UTF-8": ("latin.toml", b'id = "h"\nextends = "baibian"\nname = "caf\xe9"\n',
                  "is not UTF-8 text: byte 0xe9 at line 3 column 12"),
    "JSON 5,000-digit integer": ("long.json", '{"id": "h", "extends": "baibian", "decks": '
                                 + "7" * 5000 + "}",
                                 "integer too long to read (field 'decks' at line 1"),
    "TOML 5,000-digit integer": ("long.toml", 'id = "h"\nextends = "baibian"\nescape_fee = '
                                 + "7" * 5000 + "\n",
                                 "integer too long to read (field 'escape_fee' at line 3"),
    "lone surrogate in the name": ("name.json", '{"id": "h", "extends": "baibian", '
                                   '"name": "\\ud800"}', "field 'name' holds a lone surrogate"),
    "lone surrogate in the source": ("source.json", '{"variants": {"h": {"extends": '
                                     '"baibian", "source": "x\\udfffy"}}}',
                                     "field 'variants.h.source' holds a lone surrogate"),
    "lone surrogate in a key": ("key.json", '{"id": "h", "extends": "baibian", "\\ud83d": 1}',
                                "holds a lone surrogate"),
    "larger than 1 MiB": ("big.json", '{"id": "h", "extends": "baibian", "name": "'
                          + " " * (1 << 20) + '"}', "is larger than 1,048,576 bytes"),
    "not a file": (".", None, "cannot read"),
    "empty": ("empty.json", "", "is not valid JSON: Expecting value at line 1 column 1"),
    "an array": ("list.json", "[1, 2]", "must hold a table/object"),
    "too many rule sets": ("many.toml", "".join(f'[variants.v{i}]\nextends = "baibian"\n'
                                                for i in range(10_001)),
                           "10,001 house variants: a server registers at most 10,000"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_variants_file_is_a_one_line_refusal(tmp_path, case: str) -> None:
    """``shuangkou serve --variants FILE`` with a hostile file exits 2, as bad usage does,
    with one line naming the file and where in it: never a traceback (issue 19)."""
    name, content, words = HOSTILE[case]
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content, encoding="utf-8")
    status, err = serve_refused("--variants", str(path))
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err[:2000]
    assert str(path) in err and words in err, err[:2000]
    assert len(err) < 600, err[:2000]       # the input is never echoed whole


def _odd_variants(first: int, n: int) -> str:
    """``n`` house variants that are valid but unusual: long ids, names in CJK and astral
    characters, the longest tables validation allows."""
    spec: dict[str, dict[str, object]] = {}
    for i in range(first, first + n):
        spec[f"v{i:063d}"] = {
            "extends": ("baibian", "huopin", "fengkuang")[i % 3],
            "name": ("百变" * 100 if i % 2 else "🀄" * 200) if i % 10 == 0 else f"房{i}",
            "source": "𝄞 ½ \u0000 é",
            "multiplier": [[s, s] for s in range(1, 65)] if i % 50 == 0 else [[5, 2]]}
    return json.dumps({"variants": spec}, ensure_ascii=False)


def test_every_accepted_house_variant_is_listed_and_served(tmp_path) -> None:
    """3,000 house variants (ListVariants answered RESOURCE_EXHAUSTED, issue 19): every page
    fits the reply, the pages concatenate to the whole list, an old client asking for no
    page size gets a full first page and a token, and GetVariant serves each one."""
    from shuangkou.v1 import service_pb2_grpc

    paths = [tmp_path / f"house{k}.json" for k in range(3)]   # 1 MiB a file (a ConfigMap's)
    for k, path in enumerate(paths):
        path.write_text(_odd_variants(1000 * k, 1000), encoding="utf-8")
    house = [vid for p in paths for vid in json.loads(p.read_text())["variants"]]
    server = ServerProcess("--port", "0", "--metrics-port", "0", "--variants",
                           *map(str, paths))
    try:
        server.wait_serving()
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = service_pb2_grpc.ShuangkouServiceStub(channel)
            first = stub.ListVariants(service_pb2.ListVariantsRequest(), timeout=TIMEOUT)
            assert first.next_page_token and len(first.variants) > 100
            assert first.ByteSize() <= 4 * 2**20
            for size in (0, 1, 997):
                ids, token, pages = [], "", 0
                while True:
                    page = stub.ListVariants(service_pb2.ListVariantsRequest(
                        page_size=size, page_token=token), timeout=TIMEOUT)
                    ids += [v.id for v in page.variants]
                    pages += 1
                    token = page.next_page_token
                    if not token or pages > 3100:
                        break
                assert ids == [*BUILTIN, *house], size
            info = stub.GetServerInfo(service_pb2.GetServerInfoRequest(), timeout=TIMEOUT)
            assert list(info.variant_ids) == ids
            for vid in ids[::97] + ids[-3:]:
                got = stub.GetVariant(service_pb2.GetVariantRequest(rule_set=RuleSet(id=vid)),
                                      timeout=TIMEOUT)
                assert got.variant.id == vid and json.loads(got.variant.variant_json)["id"] == vid
            # a token is refused once respelled or altered (any page size may follow it)
            for bad in (first.next_page_token + "==", " " + first.next_page_token,
                        first.next_page_token[:-1] + "A"):
                with pytest.raises(grpc.RpcError) as caught:
                    stub.ListVariants(service_pb2.ListVariantsRequest(page_token=bad),
                                      timeout=TIMEOUT)
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        status = server.stop()
    assert status == 0, "".join(server.log)
