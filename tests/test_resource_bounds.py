"""Resource bounds: whatever the input, enumeration and replay validation stay within the
configured caps, and no request makes the server keep memory it does not need.

Memory is measured two ways: the peak resident set (VmHWM) of a fresh subprocess for the
compiled code, whose C allocations tracemalloc cannot see, and tracemalloc for the Python
heap of an in-process servicer (what a long-running server would accumulate). Bounds are
generous sanity limits, not performance assertions: they catch "unbounded", not "slow".
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from shuangkou.core.errors import ShuangkouError
from shuangkou.core.replay import score_replay
from shuangkou.service.api.shuangkou import ShuangkouServicer
from shuangkou.service.limits import Limits
from shuangkou.service.metrics import Metrics
from shuangkou.v1 import cards_pb2, service_pb2, variants_pb2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fuzz"))
from messages import Aborted, Context, answered  # noqa: E402

S = service_pb2
RS = variants_pb2.RuleSet
MiB = 1 << 20
# The worst hands found (docs/reliability.md): few ranks, every joker, both jokers wild.
WORST_HANDS = {
    "fengkuang": "77777777 88888888 9999999 SJ SJ BJ BJ",
    "qianbian": "QQQQQQQQ KKKKKKKK AAAAAAA SJ SJ BJ BJ",
    "huopin": "3333 4444 5555 6666 7777 8888 SJ SJ BJ",
    "baibian": "77777777 88888888 99999999 BJ BJ",
}
# A house variant at the edge of what validation allows: 4 decks, 4 copies of each joker,
# 40-card hands, two-link chains of any counts.
EDGE_VARIANT = {"id": "edge", "extends": "huopin", "decks": 4, "joker_copies": 4,
                "hand_size": 40, "chain_min_links": 2}
EDGE_HAND = "3333 4444 5555 6666 7777 8888 9999 TTTT SJ SJ SJ SJ BJ BJ BJ BJ"


def run_measured(code: str, timeout: float = 240) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; it prints a JSON dict; add its peak RSS (MiB)."""
    script = textwrap.dedent(code) + textwrap.dedent("""
        import json as _json
        def _hwm():
            for line in open("/proc/self/status"):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        RESULT["peak_rss_mib"] = _hwm()
        print(_json.dumps(RESULT))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- enumeration

def test_worst_case_enumeration_is_bounded_by_the_cap() -> None:
    """Every worst hand, every built-in variant: the capped listing stops at the cap, the
    uncapped count finishes, and the process stays small."""
    result = run_measured(f"""
        from shuangkou import core
        hands = {WORST_HANDS!r}
        RESULT = {{"counts": {{}}, "listed": {{}}}}
        for v in ("baibian", "fengkuang", "qianbian", "huopin", "bianfeng", "fengkuang_crazy"):
            for name, hand in hands.items():
                try:
                    total = sum(core.count_plays(hand, v).values())
                except core.CardError:
                    continue   # not a hand of this deck
                plays = core.legal_plays(hand, v, limit=10_000)
                RESULT["counts"][f"{{v}}/{{name}}"] = total
                RESULT["listed"][f"{{v}}/{{name}}"] = [len(plays), plays.truncated]
                core.best_bomb(hand, v)
    """)
    for key, (listed, truncated) in result["listed"].items():
        total = result["counts"][key]
        assert listed == min(total, 10_000), key
        assert truncated == (total > 10_000), key
    assert result["peak_rss_mib"] < 512, result


def test_edge_variant_enumeration_is_bounded() -> None:
    """The largest hand validation allows: the count finishes (hundreds of thousands of
    plays) and the capped listing holds at most the cap, in bounded memory."""
    result = run_measured(f"""
        from shuangkou import core
        from shuangkou.core.variants import variant_from_mapping
        v = variant_from_mapping({EDGE_VARIANT!r})
        total = sum(core.count_plays({EDGE_HAND!r}, v).values())
        plays = core.legal_plays({EDGE_HAND!r}, v, limit=10_000)
        RESULT = {{"total": total, "listed": len(plays), "truncated": plays.truncated}}
    """)
    assert result["total"] > 10_000
    assert result["listed"] == 10_000 and result["truncated"]
    assert result["peak_rss_mib"] < 1024, result


def test_uncapped_listing_of_the_edge_hand_fits_in_memory() -> None:
    """Even without a limit (the Python API allows it), the C listing of ~250k plays stays
    far from exhausting memory: it is the worst a caller of the library can ask for."""
    result = run_measured(f"""
        from shuangkou import core
        from shuangkou.core.variants import variant_from_mapping
        v = variant_from_mapping({EDGE_VARIANT!r})
        plays = core.legal_plays({EDGE_HAND!r}, v)
        RESULT = {{"listed": len(plays)}}
    """)
    assert result["listed"] > 100_000
    assert result["peak_rss_mib"] < 2048, result


# ----------------------------------------------------------------------------- replays

def _replay(actions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"variant": "baibian", "hands": ["7S", "8S", "9S", "TS"], "leader": 0,
            "partial_deal": True, "actions": actions}


@pytest.mark.parametrize("shape", ["after-end", "bad-seat", "junk"])
def test_huge_replays_fail_at_the_first_bad_action(shape: str) -> None:
    """A million actions cost one pass over the list at most: validation stops at the first
    action that cannot happen and names it."""
    first = {"seat": 0, "play": "7S"}
    ends = [first, {"seat": 1, "pass": True}, {"seat": 2, "pass": True},
            {"seat": 3, "pass": True}, {"seat": 0, "play": "x"}]
    tail: Any = {"after-end": {"seat": 1, "pass": True}, "bad-seat": {"seat": 9},
                 "junk": [1, 2, 3]}[shape]
    actions = ([first] if shape != "after-end" else ends[:1]) + [tail] * 1_000_000
    with pytest.raises(ShuangkouError) as info:
        score_replay(_replay(actions))
    assert getattr(info.value, "action", None) is not None and info.value.action <= 2


def test_long_valid_replays_validate_in_linear_work() -> None:
    """Every generated replay of every variant validates; each action is a bounded step."""
    from shuangkou.core.generate import generate_replay

    for variant in ("baibian", "fengkuang_crazy", "huopin"):
        for seed in range(3):
            doc = generate_replay(variant, seed=seed)
            result = score_replay(doc)
            assert result.actions == len(doc["actions"])


# ----------------------------------------------------------------------------- the server

@pytest.fixture
def servicer() -> ShuangkouServicer:
    return ShuangkouServicer(Limits(), Metrics(CollectorRegistry()))


def call(servicer: ShuangkouServicer, rpc: str, request: Any) -> Any:
    try:
        return answered(rpc, getattr(servicer, rpc)(request, Context()))
    except Aborted as exc:
        return exc


def retained_mib(work: Callable[[], None], warmup: Callable[[], None] | None = None) -> float:
    """Python heap the server keeps after ``work`` (tracemalloc, after a full collection)."""
    (warmup or work)()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return (after - before) / MiB


def test_enumeration_request_is_capped(servicer: ShuangkouServicer) -> None:
    from shuangkou.service.api.convert import _custom_variant

    _custom_variant.cache_clear()
    request = S.EnumerateLegalPlaysRequest(
        hand=cards_pb2.Cards(cards_text=EDGE_HAND), rule_set=RS(custom_json=json.dumps(EDGE_VARIANT)),
        page_size=2**31 - 1, include_counts=True, include_best_bomb=True)
    reply = call(servicer, "EnumerateLegalPlays", request)
    assert not isinstance(reply, Aborted), reply
    assert len(reply.plays) == Limits().enumeration_cap and reply.next_page_token
    assert reply.total > len(reply.plays)


def test_repeated_requests_keep_no_memory(servicer: ShuangkouServicer) -> None:
    """Big batches, enumerations, replays and failures, over and over: the heap is flat."""
    from shuangkou.core.generate import generate_replay

    replay = json.dumps(generate_replay("baibian", seed=1))
    batch = S.BatchClassifyRequest(plays_text=["7777 BJ", "345678", "SJ BJ", "x"] * 500,
                                   include_readings=True)
    requests = [
        ("BatchClassify", batch),
        ("BatchClassify", S.BatchClassifyRequest(codes=bytes([21, 22, 23, 24]) * 20_000,
                                                 lengths=[4] * 20_000)),
        ("BatchClassify", S.BatchClassifyRequest(codes=bytes(range(256)) * 100,
                                                 lengths=[1] * 25_600)),
        ("EnumerateLegalPlays", S.EnumerateLegalPlaysRequest(
            hand=cards_pb2.Cards(cards_text=WORST_HANDS["fengkuang"]), rule_set=RS(id="fengkuang"),
            include_counts=True, include_best_bomb=True)),
        ("ScoreRound", S.ScoreRoundRequest(replay_json=replay)),
        ("ScoreRound", S.ScoreRoundRequest(replay_json="{]")),
        ("ClassifyPlay", S.ClassifyPlayRequest(play=cards_pb2.Cards(cards=[21] * 10**5))),
    ]

    def work() -> None:
        for _ in range(3):
            for rpc, request in requests:
                call(servicer, rpc, request)

    assert retained_mib(work) < 4


def test_score_replays_stream_keeps_no_memory(servicer: ShuangkouServicer) -> None:
    from shuangkou.core.generate import generate_replay

    docs = [json.dumps(generate_replay("qianbian", seed=s)) for s in range(5)]
    stream = [S.ScoreReplaysRequest(replay_json=d) for d in docs] * 40 + \
        [S.ScoreReplaysRequest(replay_json="[]")] * 200

    def work() -> None:
        answers = list(servicer.ScoreReplays(iter(stream), Context()))
        assert len(answers) == len(stream)

    assert retained_mib(work) < 4


def _distinct_custom_variants(n: int, padding: int) -> Iterator[S.GetVariantRequest]:
    """Valid, distinct custom variants; ``padding`` bytes of JSON whitespace each (the text
    is still a valid document: whitespace is not a field the variant checks can bound)."""
    for i in range(n):
        doc = json.dumps({"id": f"house{i}", "extends": "baibian"})
        yield S.GetVariantRequest(rule_set=RS(custom_json=doc[:-1] + " " * padding + "}"))


def test_custom_variants_cannot_pin_unbounded_memory(servicer: ShuangkouServicer) -> None:
    """Distinct custom variants of 256 KiB each (valid JSON padded with whitespace): the
    server's variant cache must not keep ~cache size x document size (256 x 256 KiB = 64 MiB
    here, 1 GiB with 4 MiB documents). Finding R2, fixed by capping the document size."""
    from shuangkou.service.api.convert import _custom_variant

    _custom_variant.cache_clear()
    requests = list(_distinct_custom_variants(300, 256 * 1024))

    def work() -> None:
        for request in requests:
            reply = call(servicer, "GetVariant", request)
            assert not isinstance(reply, Aborted) or \
                reply.code.name in ("INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"), reply

    try:
        assert retained_mib(work, warmup=lambda: None) < 16
    finally:
        _custom_variant.cache_clear()


def test_many_custom_variants_are_not_kept_beyond_the_cache(servicer: ShuangkouServicer) -> None:
    """Small distinct custom variants: the cache is bounded in entries, so a client that
    sends thousands of variants does not grow the server."""
    from shuangkou.service.api.convert import _custom_variant

    _custom_variant.cache_clear()
    first = list(_distinct_custom_variants(400, 16))
    second = [S.GetVariantRequest(rule_set=RS(custom_json=r.rule_set.custom_json.replace(
        '"house', '"other'))) for r in first]

    def fill(requests: list[S.GetVariantRequest]) -> Callable[[], None]:
        return lambda: [call(servicer, "GetVariant", r) for r in requests] and None

    try:
        assert retained_mib(fill(second), warmup=fill(first)) < 2
    finally:
        _custom_variant.cache_clear()


def test_classify_leaks_nothing_in_c() -> None:
    """100,000 classifications, comparisons and readings, 40 million batch rows and 20,000
    enumerations: the process RSS after the first quarter stays flat (the C allocations of
    readings and listings are freed)."""
    result = run_measured("""
        from shuangkou import core
        def rss():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        plays = ["7777 BJ", "345678", "SJ SJ BJ BJ", "33 44 55", "QQQ KKK AA BJ"]
        codes = bytes(core.parse_cards("7777 BJ")) * 2000
        marks = []
        for round_ in range(4):
            for _ in range(5000):
                for p in plays:
                    c = core.classify(p, "qianbian")
                    core.beats(p, "345678", "qianbian")
                    core.play_reading(p, "qianbian")
                core.classify_batch(codes, [5] * 2000, "qianbian")
                plays_ = core.legal_plays("77778888 BJ", "baibian", limit=50)
                list(plays_)
            marks.append(rss())
        RESULT = {"rss": marks}
    """)
    first, last = result["rss"][0], result["rss"][-1]
    assert last - first < max(8.0, 0.05 * first), result


# ----------------------------------------------------------------------------- batch answers

def test_worst_batch_items_fit_the_per_item_bound() -> None:
    """The cap on plays per batch assumes each play adds at most WORST_BATCH_ITEM_BYTES to
    the reply: the largest compact error (quoted input cut to its bound, non-ASCII text,
    the longest field path) and the largest reading (a 40-card chain bomb of the edge
    variant) stay inside it."""
    from shuangkou.core.errors import CardError
    from shuangkou.core.variants import variant_from_mapping
    from shuangkou.service.api.convert import reading_to_proto
    from shuangkou.service.errors import status_proto
    from shuangkou.service.limits import WORST_BATCH_ITEM_BYTES

    columns = 8   # kind, top, card count, star, reading count: packed varints
    error = S.BatchError(index=10**7, status=status_proto(
        CardError("invalid card " + "Z★" * 1000, "plays_text[9999999]"), compact=True))
    assert 4 + error.ByteSize() + 2 + columns <= WORST_BATCH_ITEM_BYTES
    edge = variant_from_mapping(EDGE_VARIANT)
    readings = core_ext_classify(EDGE_HAND, edge)
    assert max(4 + reading_to_proto(r).ByteSize() for r in readings) + columns \
        <= WORST_BATCH_ITEM_BYTES


def core_ext_classify(text: str, variant: Any) -> list[Any]:
    from shuangkou import core

    return list(core.classify(text, variant).readings)


def test_a_batch_at_the_cap_is_answerable(servicer: ShuangkouServicer) -> None:
    """The largest batch the server allows, every play a worst-case error, fits the reply
    limit (it used to build 8-26 MB answers and fail RESOURCE_EXHAUSTED)."""
    limits = servicer.limits
    cap = limits.batch_cap
    request = S.BatchClassifyRequest(plays_text=["Z" * 400] * cap, include_readings=True)
    reply = call(servicer, "BatchClassify", request)
    assert not isinstance(reply, Aborted), reply
    assert len(reply.errors) == cap
    assert reply.ByteSize() <= limits.max_message_bytes
    too_many = call(servicer, "BatchClassify",
                    S.BatchClassifyRequest(plays_text=["7"] * (cap + 1)))
    assert isinstance(too_many, Aborted) and too_many.code.name == "INVALID_ARGUMENT"


class EndsAfter(Context):
    """A context whose call ends (deadline passed) after ``checks`` liveness checks."""

    def __init__(self, checks: int) -> None:
        self.checks = checks

    def is_active(self) -> bool:
        self.checks -= 1
        return self.checks >= 0

    def time_remaining(self) -> float | None:
        return 1.0 if self.checks >= 0 else 0.0


def batches_until_deadline(servicer: ShuangkouServicer, monkeypatch: pytest.MonkeyPatch,
                           request: Any, checks: int) -> list[Any]:
    """Run BatchClassify with a deadline that passes after ``checks`` liveness checks: it
    must end DEADLINE_EXCEEDED; returns the core's batch calls as (plays given, plays
    done)."""
    from shuangkou import core

    calls: list[Any] = []
    real = core.classify_batch

    def counted(codes: Any, lengths: Any, variant: Any, **budget: Any) -> Any:
        result = real(codes, lengths, variant, **budget)
        calls.append((len(lengths), result.plays))
        return result

    monkeypatch.setattr(core, "classify_batch", counted)
    try:
        servicer.BatchClassify(request, EndsAfter(checks))
    except Aborted as exc:
        assert exc.code.name == "DEADLINE_EXCEEDED", exc
    else:
        raise AssertionError("the batch ran past its deadline")
    return calls


def test_batch_stops_at_the_deadline(servicer: ShuangkouServicer,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """BatchClassify classifies in slices and checks the call between them: once the
    deadline passes no further slice is classified, and the status is DEADLINE_EXCEEDED."""
    from shuangkou.service.api import shuangkou as module

    plays = module.BATCH_CHUNK * 4
    request = S.BatchClassifyRequest(codes=bytes([21, 22, 23, 24]) * plays,
                                     lengths=[4] * plays)
    calls = batches_until_deadline(servicer, monkeypatch, request, 2)
    assert [given for given, _ in calls] == [module.BATCH_CHUNK] * 2


def test_batch_slices_are_cut_by_time_not_count(servicer: ShuangkouServicer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Heavy plays (40 cards, eight wilds, a huopin-based house variant; issue 19 item 2)
    are classified in slices the core cuts by its time budget: with a spent budget each
    slice does one such play, and the call ends at the deadline after the slices it
    checked, not after a chunk of 2,048."""
    from shuangkou.service.api import shuangkou as module

    monkeypatch.setattr(module, "BATCH_SLICE_SECONDS", 1e-9)
    heavy = json.dumps({"id": "heavy", "extends": "huopin", "decks": 4, "joker_copies": 4,
                        "hand_size": 40, "chain_min_links": 2})
    run = [1 + r * 5 + s for r in range(2, 10) for s in range(4)]     # 5555 ... TTTT
    play = bytes(run + [70] * 4 + [75] * 4)
    request = S.BatchClassifyRequest(rule_set=variants_pb2.RuleSet(custom_json=heavy),
                                     codes=play * 2048, lengths=[len(play)] * 2048)
    calls = batches_until_deadline(servicer, monkeypatch, request, 3)
    assert [done for _, done in calls] == [1, 1, 1]


def test_stream_stops_when_the_client_is_gone(servicer: ShuangkouServicer) -> None:
    """ScoreReplays reads no further request once the call has ended."""
    from shuangkou.core.generate import generate_replay

    doc = json.dumps(generate_replay("baibian", seed=3))
    read: list[int] = []

    def requests() -> Iterator[Any]:
        for i in range(100):
            read.append(i)
            yield S.ScoreReplaysRequest(replay_json=doc)

    answers = list(servicer.ScoreReplays(requests(), EndsAfter(5)))
    assert len(answers) < 5 and len(read) <= 6


def test_concurrent_maximal_batches_stay_inside_the_pod_limit() -> None:
    """Four maximal batches at once (every play an error, readings asked for) against a
    `shuangkou serve` process: its peak RSS stays far inside the 512 MiB pod limit."""
    import threading

    import grpc
    from grpc_helpers import ServerProcess

    from shuangkou.service.config import Config

    cap = Limits(max_batch=Config().max_batch,
                 max_message_bytes=Config().max_message_bytes).batch_cap
    process = ServerProcess("--port", "0", "--metrics-port", "0", "--workers", "1",
                            "--threads", "8")
    try:
        process.wait_serving()
        idle = _rss_mib(process.proc.pid, "VmHWM")
        request = S.BatchClassifyRequest(plays_text=["Z" * 400] * cap, include_readings=True)
        options = [("grpc.max_send_message_length", 16 << 20),
                   ("grpc.max_receive_message_length", 16 << 20)]
        failures: list[str] = []

        def one() -> None:
            from shuangkou.v1 import service_pb2_grpc

            with grpc.insecure_channel(f"127.0.0.1:{process.port}", options=options) as ch:
                stub = service_pb2_grpc.ShuangkouServiceStub(ch)
                for _ in range(3):
                    reply = stub.BatchClassify(request, timeout=60)
                    if len(reply.errors) != cap:
                        failures.append("short reply")

        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        peak = _rss_mib(process.proc.pid, "VmHWM")
        after = _rss_mib(process.proc.pid, "VmRSS")
        print(f"server RSS: {idle:.0f} MiB serving idle, peak {peak:.0f} MiB under 4 x 3 "
              f"concurrent maximal batches ({cap} plays each), {after:.0f} MiB after")
        assert peak < 256   # half the documented 512 MiB pod limit
    finally:
        process.stop(15)


def _rss_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field}")
