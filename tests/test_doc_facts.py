"""Facts the docs state that the code decides, kept from drifting (issue 36: an `EXPOSE`
without the HTTP port, a `truncated` field and a `limit` the protos never had, state sizes
from before the seed commitment).

* **Ports.** The Dockerfile's ``EXPOSE``, ``service/defaults.toml`` and every port the docs
  give a listener (``gRPC :50051``, ``HTTP on port 8080``, ``metrics on 127.0.0.1:9090``,
  ``EXPOSE …``, ``docker run -p 8080:8080``) agree.
* **Proto fields.** In a paragraph or table row of the docs that names an RPC or a message
  of ``shuangkou.v1`` in backticks, every backticked lower-case name is a field of a
  message that the RPC or message reaches, a server setting or a word the paragraph quotes
  as a value (:data:`NOT_FIELDS`); docs/api.md's table of RPCs lists request fields left of
  its arrow and response fields right of it.
* **State sizes.** The sizes docs/rounds.md gives a round's state, plain and sealed, are
  the sizes the core writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from shuangkou import core
from shuangkou.service import config
from shuangkou.v1 import rounds_pb2, service_pb2

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "decisions").glob("*.md")),
        *sorted(ROOT.glob("examples/*/README.md"))]
PORTS = {"gRPC": "port", "HTTP": "http_port", "metrics": "metrics_port"}


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _exposed() -> set[int]:
    return {int(p) for line in _text(ROOT / "Dockerfile").splitlines()
            if line.startswith("EXPOSE ") for p in line.split()[1:]}


# ----------------------------------------------------------------------------- ports

def test_the_image_exposes_the_default_ports() -> None:
    defaults = config.defaults()
    assert _exposed() == {defaults[key] for key in PORTS.values()}


@pytest.mark.parametrize("path", [*DOCS, ROOT / "Dockerfile", ROOT / "scripts" / "serve.sh"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_ports_named_in_the_docs_are_the_defaults(path: Path) -> None:
    text = _text(path)
    defaults = config.defaults()
    for m in re.finditer(r"\bEXPOSE((?:\s+\d+)+)", text):
        assert {int(p) for p in m.group(1).split()} == _exposed(), m.group(0)
    for m in re.finditer(r"\b(gRPC|HTTP|metrics)(?: on)?(?: port)? (?:[\w.]+:|:)?(\d{4,5})\b",
                         text):
        assert int(m.group(2)) == defaults[PORTS[m.group(1)]], m.group(0)
    for m in re.finditer(r"\s-p (\d+):(\d+)\b", text):
        assert int(m.group(2)) in _exposed(), m.group(0)


# ----------------------------------------------------------------------------- proto fields

SERVICES = [*service_pb2.DESCRIPTOR.services_by_name.values(),
            *rounds_pb2.DESCRIPTOR.services_by_name.values()]
METHODS = {m.name: m for s in SERVICES for m in s.methods}


def _messages() -> dict[str, Descriptor]:
    found: dict[str, Descriptor] = {}

    def add(d: Descriptor) -> None:
        if d.full_name.startswith("shuangkou.v1.") and d.name not in found:
            found[d.name] = d
            for f in d.fields:
                if f.message_type is not None:
                    add(f.message_type)
            for nested in d.nested_types:
                add(nested)

    for m in METHODS.values():
        add(m.input_type)
        add(m.output_type)
    return found


MESSAGES = _messages()


def _reach(d: Descriptor, seen: set[str] | None = None) -> set[str]:
    """Every field name of ``d`` and of the messages its fields hold (any depth), oneofs too."""
    seen = set() if seen is None else seen
    if d.full_name in seen:
        return set()
    seen.add(d.full_name)
    names = {f.name for f in d.fields} | {o.name for o in d.oneofs}
    for f in d.fields:
        if f.type == FieldDescriptor.TYPE_MESSAGE:
            names |= _reach(f.message_type, seen)
    return names


#: Backticked lower-case words that the docs use beside RPC names and that are not fields:
#: values, JSON forms, settings' spellings and the like. A field name added here hides a
#: drift; add only words that are not fields anywhere.
NOT_FIELDS = frozenset({
    "true", "false", "null",                                   # JSON values
    "baibian", "fengkuang", "fengkuang_crazy", "bianfeng", "bianfeng_lishui", "qianbian",
    "huopin",                                                  # variant ids
    "overloaded", "expired", "stream_limit",                   # metrics' reasons
    "lane_full", "over_cap", "cap_reached",
    "round_robin",                                             # a gRPC balancing policy
    "to_dict",                                                 # the Python results' method
    "declare",                             # the replay format's key, quoted as renamed
})


def _units(text: str) -> Iterator[tuple[int, str]]:
    """(first line, text) of each paragraph, list item and table row, outside code fences."""
    block: list[str] = []
    start, fenced = 1, False
    for line_no, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        new_item = re.match(r"\s*(?:[*-]|\d+\.) ", line) is not None
        if fenced or not line.strip() or line.startswith("|") or line.startswith("```") \
                or new_item:
            if block:
                yield start, " ".join(block)
                block = []
            if line.startswith("|") and not fenced:
                yield line_no, line
            if not new_item or fenced:
                continue
        if not block:
            start = line_no
        block.append(line.strip())
    if block:
        yield start, " ".join(block)


def _all_fields() -> set[str]:
    """Every field and oneof name of every message of shuangkou.v1."""
    names: set[str] = set()
    for d in MESSAGES.values():
        names |= _reach(d)
    return names


def _python_names() -> set[str]:
    """Names of the Python API the same pages quote (``score_replay``, ``to_dict``, the
    client's ``decode_status`` …)."""
    import shuangkou.client
    import shuangkou.core.replay
    import shuangkou.core.scoring

    # module-level names only: a class attribute such as LegalPlays.truncated would hide
    # the very drift this looks for
    return (set(dir(core)) | set(dir(shuangkou.core.replay)) | set(dir(shuangkou.core.scoring))
            | set(dir(shuangkou.client)))


#: The pages that describe the API to its callers. The others (design, decisions,
#: enumeration, reliability, BENCHMARKS, RULES) are about the Python API and history; the
#: examples' READMEs quote their programs' own JSON output.
API_DOCS = [p for p in DOCS if p.parent.parent.name != "examples"
            and p.parent.name != "decisions" and p.name not in {
    "design.md", "decisions.md", "enumeration.md", "reliability.md", "BENCHMARKS.md",
    "RULES.md"}]


def _unknown_fields(path: Path) -> Iterator[str]:
    """Backticked lower-case names, in a unit of ``path`` that names an RPC or a message of
    shuangkou.v1, that are a field of no message of shuangkou.v1, a setting, a value of
    :data:`NOT_FIELDS` or a name of the Python API (whose classes share the messages'
    names: `Reading`, `Variant`). A field of another message of the API passes: that much
    cannot be told from prose mechanically."""
    settings = set(config.defaults())
    anywhere = _all_fields() | settings | NOT_FIELDS | _python_names()
    for line, unit in _units(_text(path)):
        if re.match(r"\| `(?:shuangkou|grpc)_", unit):    # a metric's row: labels, values
            continue
        ticked = re.findall(r"`([^`\n]+)`", unit)
        named = [*ticked, *re.findall(r"\*\*(\w+)\*\*", unit)]
        if not any(t in METHODS or t in MESSAGES for t in named):
            continue
        for name in ticked:
            if re.fullmatch(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*", name) and name not in anywhere \
                    and not name.startswith(("shuangkou_", "grpc_")):       # metrics
                yield f"{path.name}:{line}: `{name}` is no field: {unit[:140]}"


@pytest.mark.parametrize("path", API_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_fields_named_beside_an_rpc_exist(path: Path) -> None:
    missing = list(_unknown_fields(path))
    assert not missing, "\n".join(missing)


def test_a_field_the_protos_lack_is_caught(tmp_path: Path) -> None:
    """The check sees the drift issue 36 found: `truncated` beside EnumerateLegalPlays."""
    page = tmp_path / "page.md"
    page.write_text("| `enumeration_cap` | most plays one `EnumerateLegalPlays` response "
                    "lists (`truncated` tells when more exist) |\n")
    assert [m.split(": ")[1] for m in _unknown_fields(page)] == ["`truncated` is no field"]


def test_the_api_table_names_request_and_response_fields() -> None:
    """docs/api.md's table: `RPC` | request fields → response fields | what it does."""
    rows = [line for line in _text(ROOT / "docs" / "api.md").splitlines()
            if re.match(r"\| `[\w.]+` \|.*→", line)]
    assert len(rows) >= len(METHODS) - 2, rows          # the table is found
    for row in rows:
        rpc, sent = re.match(r"\| `(?:\w+\.)?(\w+)` \| ([^|]*)\|", row).groups()   # type: ignore[union-attr]
        request, _, response = sent.partition("→")
        method = METHODS[rpc]
        for side, message in ((request, method.input_type), (response, method.output_type)):
            for name in re.findall(r"`([a-z]\w*)`", side):
                assert name in _reach(message), f"{rpc}: `{name}` is no field of {message.name}"


# ----------------------------------------------------------------------------- state sizes

def _state_sizes(variant: str) -> tuple[int, int]:
    """A dealt round's state, plain and sealed under the key id ``k1`` (what the docs quote)."""
    r = core.Round.deal_seeded(variant, bytes(32))
    keys = core.StateKeys({"k1": b"k" * 32}, "k1")
    return len(r.to_bytes()), len(r.to_bytes(keys))


def test_state_sizes_in_the_docs_are_measured() -> None:
    plain, sealed = _state_sizes("baibian")
    rounds = _text(ROOT / "docs" / "rounds.md")
    claims = {
        r"of a fixed size per hand size \((\d+) bytes for 27-card hands": plain,
        r"\((\d+) more bytes for the id `k1`\)": sealed - plain,
        r"(\d+) since the seed commitment and the round id": plain,
        r"a real one is (\d+) bytes": plain,
        r"a real one is \d+ bytes, (\d+) sealed": sealed,
    }
    for claim, measured in claims.items():
        found = re.findall(claim, " ".join(rounds.split()))
        assert found, f"docs/rounds.md no longer says {claim!r}: update this test"
        assert all(int(n) == measured for n in found), (claim, found, measured)


# ----------------------------------------------------------------------------- help

def test_the_help_names_what_score_replays_does() -> None:
    """`shuangkou --help` says score-replays also scores on servers, Dask and shards (it
    said "score replay files locally")."""
    from shuangkou.service.batch.command import _parser
    from shuangkou.service.cli import COMMANDS

    text = COMMANDS["score-replays"][2]
    flags = {a for action in _parser()._actions for a in action.option_strings}
    assert "locally" not in text and {"--server", "--dask", "--shard"} <= flags
    assert all(word in text for word in ("--server", "Dask", "shards"))
