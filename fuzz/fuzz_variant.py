"""Fuzz custom variant loading: core.variants.variant_from_mapping and load_variants.

Documents extend a built-in (or each other, possibly in cycles) and override fields with
plausible, edge or absurd values; sometimes the document goes through a real TOML/JSON
file. A document either fails with VariantError or yields a Variant that the whole core
accepts: it compiles to a RuleSet, classifies, scores a round, and survives the service's
JSON form (``service.api.convert.variant_data``) unchanged.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import fields
from pathlib import Path

from common import VARIANTS, Input, core_call, main

from shuangkou import core
from shuangkou.core.scoring import score_round
from shuangkou.core.variants import BUILTIN, Variant, load_variants, variant_from_mapping
from shuangkou.service.api.convert import variant_data

FIELDS = [f.name for f in fields(Variant)]
TMP = Path(tempfile.mkdtemp(prefix="fuzz-variant-", dir="/dev/shm" if Path("/dev/shm").is_dir()
                            else None))


def field_value(inp: Input, name: str) -> object:
    """Mostly a neighbour of a built-in's value; sometimes anything JSON can carry."""
    if inp.byte() % 4 == 0:
        return inp.json(2, FIELDS)
    value = variant_data(BUILTIN[inp.choice(VARIANTS)])[name]
    if isinstance(value, bool) or value is None:
        return inp.choice((True, False, None, 0, 1))
    if isinstance(value, int):
        return value + inp.int(-3, 3) if inp.byte() % 3 else inp.edge_int()
    if isinstance(value, list) and value and inp.bool():
        rows = list(value)
        for _ in range(inp.int(0, 3)):
            rows.insert(inp.int(0, len(rows)), inp.json(1) if inp.bool() else rows[0])
        return rows[: inp.int(0, len(rows))] if inp.byte() % 5 == 0 else rows
    if isinstance(value, dict) and inp.bool():
        return {k: inp.json(1) if inp.byte() % 4 == 0 else v for k, v in value.items()}
    return value


def document(inp: Input, ids: list[str]) -> dict[str, object]:
    doc: dict[str, object] = {}
    if inp.byte() % 8:
        doc["extends"] = inp.choice(ids) if inp.bool() else inp.choice(VARIANTS)
    if inp.byte() % 4:
        doc["id"] = inp.choice(("house", "h2", "x_1", "", "bad id", "baibian"))
    for _ in range(inp.int(0, 6)):
        name = inp.choice(FIELDS) if inp.byte() % 8 else inp.text(1)
        doc[name] = field_value(inp, name) if name in FIELDS else inp.json(1)
    return doc


def exercise(v: Variant) -> None:
    """A valid variant must work everywhere a built-in does."""
    data = variant_data(v)
    again = variant_from_mapping(json.loads(json.dumps(data)))
    if variant_data(again) != data:
        raise AssertionError(f"variant {v.id!r} changes through its JSON form")
    lo = core.RANK_CHARS[v.lowest_rank]
    core_call(core.classify, f"{lo}{lo}{lo}{lo} BJ", v)
    core_call(core.classify, "SJ SJ BJ", v)
    core_call(score_round, v, [0, 2], [[], [], [], []],
              cards_left=[0, 5, 0, 5] if v.round_end == "first_out" else None)


def one_input(data: bytes) -> None:
    inp = Input(data)
    ids = ["v0", "v1", "v2"]
    if inp.byte() % 3 == 0:   # several variants extending each other, maybe in a cycle
        specs = {vid: document(inp, ids) for vid in ids[: inp.int(1, 3)]}
        source: object = {"variants": specs}
        if inp.bool():
            suffix = inp.choice((".json", ".toml", ".txt"))
            path = TMP / f"v{suffix}"
            text = json.dumps(source) if suffix != ".toml" else inp.text(30)
            path.write_text(text if inp.byte() % 4 else inp.text(20), encoding="utf-8")
            source = path
        ok, result = core_call(load_variants, source)
        variants = result if ok else []
    else:
        ok, v = core_call(variant_from_mapping, document(inp, ids))
        variants = [v] if ok else []
    for v in variants:
        if not isinstance(v, Variant):
            raise AssertionError(f"load gave {type(v).__name__}, not a Variant")
        exercise(v)


if __name__ == "__main__":
    main(one_input, sys.argv)
