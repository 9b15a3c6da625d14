"""Enumeration honours a time budget: a request past its deadline stops working (issue 6, R1).

The edge house variant (4 decks, 4 copies of each joker, 40-card hands, two-link chains)
makes a hand with over 250,000 legal plays that takes seconds to enumerate; with a budget
the engine stops within it and returns nothing partial. Bounds here are generous sanity
bounds, not performance targets.
"""

import json
import time

import grpc
import pytest
from grpc_helpers import running_server

from shuangkou import core
from shuangkou.core.errors import DeadlineExceeded, InvalidPlay
from shuangkou.core.variants import variant_from_mapping
from shuangkou.v1 import cards_pb2, service_pb2, variants_pb2

EDGE_VARIANT = {"id": "edge", "extends": "huopin", "decks": 4, "joker_copies": 4,
                "hand_size": 40, "chain_min_links": 2}
EDGE_HAND = "3333 4444 5555 6666 7777 8888 9999 TTTT SJ SJ SJ SJ BJ BJ BJ BJ"


@pytest.mark.parametrize("work", [
    lambda v: core.legal_plays(EDGE_HAND, v, timeout=0.05),
    lambda v: core.count_plays(EDGE_HAND, v, timeout=0.05),
    lambda v: core.best_bomb(EDGE_HAND, v, timeout=0.05),
], ids=["legal_plays", "count_plays", "best_bomb"])
def test_enumeration_stops_at_its_budget(work) -> None:
    v = variant_from_mapping(EDGE_VARIANT)
    # CPU time of this thread (the engine runs in it), not wall time: what it measures does
    # not grow with the host's load; the whole enumeration takes seconds of CPU
    t0 = time.thread_time()
    with pytest.raises(DeadlineExceeded):
        work(v)
    assert time.thread_time() - t0 < 1.0


def test_a_budget_that_suffices_changes_nothing() -> None:
    hand = "33 44 55 66 77 88 99 TT JJ BJ BJ"
    assert list(core.legal_plays(hand, "baibian", timeout=60)) == list(
        core.legal_plays(hand, "baibian"))
    assert core.count_plays(hand, "baibian", timeout=60) == core.count_plays(
        hand, "baibian")


@pytest.mark.parametrize("timeout", ["soon", float("nan"), [1]])
def test_a_malformed_budget_is_a_clear_error(timeout: object) -> None:
    with pytest.raises(InvalidPlay, match="timeout"):
        core.legal_plays("7777 BJ", "baibian", timeout=timeout)


def test_server_stops_enumerating_at_the_deadline() -> None:
    """The client's deadline reaches the engine: DEADLINE_EXCEEDED, and the handler thread is
    free again at once for the next request (one thread, so a stuck one would block it)."""
    request = service_pb2.EnumerateLegalPlaysRequest(
        hand=cards_pb2.Cards(cards_text=EDGE_HAND), rule_set=variants_pb2.RuleSet(custom_json=json.dumps(EDGE_VARIANT)),
        include_counts=True, include_best_bomb=True)
    small = service_pb2.EnumerateLegalPlaysRequest(
        rule_set=variants_pb2.RuleSet(id="baibian"), hand=cards_pb2.Cards(cards_text="7777 BJ"))
    with running_server(threads=1) as srv:
        with pytest.raises(grpc.RpcError) as info:
            srv.stub.EnumerateLegalPlays(request, timeout=0.1)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        # CPU time of this process (the server is in it): a handler thread still enumerating
        # the big hand would spend seconds of CPU before the small request is answered; the
        # wall time of that answer depends on the host's load, the CPU spent does not
        t0 = time.process_time()
        assert len(srv.stub.EnumerateLegalPlays(small, timeout=30).plays) == 9
        assert time.process_time() - t0 < 1.5


@pytest.mark.parametrize("work", [
    lambda r: core._search.search(r, ms=1000),
    lambda r: core._search.evaluate(r, ms=1000),
], ids=["search", "evaluate"])
def test_a_search_lets_the_other_threads_run(work) -> None:
    """The rollouts run without the GIL (core_ext/_rollout.pyx): the other threads of the
    process (a server's event loop, its probes, gRPC's pollers) run while a search works,
    whatever the interpreter's switch interval — here five seconds, so a search that held
    the GIL would keep it for its whole second (it once handed it over only every two
    intervals: one wake-up was seen then, hundreds now). The claim is that this thread
    runs many times during one search, not how fast."""
    import sys
    import threading

    r = core.Round.deal_seeded("baibian", b"probes while busy")
    interval = sys.getswitchinterval()
    sys.setswitchinterval(5.0)
    try:
        t = threading.Thread(target=work, args=(r,))
        t.start()
        wakes = 0
        while t.is_alive():
            time.sleep(0.005)
            wakes += 1
        t.join()
    finally:
        sys.setswitchinterval(interval)
    assert wakes >= 10, wakes
