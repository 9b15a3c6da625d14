"""Score JSONL replays on a pool of servers: ``ScoreReplays`` streams, results in input order.

:func:`score_remote` is the client side of ``shuangkou score-replays --server``: lines go
in chunks onto ``streams`` concurrent bidirectional streams of one channel whose
``round_robin`` load balancing spreads the streams (a new one per chunk) over every address
the target resolves to (``dns:///shuangkou-headless:50051`` for a Kubernetes headless service,
``ipv4:10.0.0.1:50051,10.0.0.2:50051`` for a fixed list). Each stream answers in request
order, so the results are merged back into input order. The records have the shape of the
local scorer's (:mod:`service.batch`): ``{"ok": true, ...result}`` or
``{"ok": false, "error": {"action": n, "reason": "..."}}``.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import grpc

from .gen.shuangkou.v1 import service_pb2, service_pb2_grpc
from .rounds import result_to_dict

__all__ = ["score_remote", "channel_options"]

WINDOW = 64                  # requests in flight per stream (bounds memory on huge inputs)
CHUNK = 256                  # replays per stream before a new one is opened
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_POLL = 0.1                  # seconds between checks of the stop flag while blocked


def channel_options(max_message_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, Any]]:
    """Client channel options: round_robin over every resolved address."""
    config = {"loadBalancingConfig": [{"round_robin": {}}]}
    return [("grpc.service_config", json.dumps(config)),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes)]


def _record(reply: service_pb2.ScoreReplaysResponse) -> dict[str, Any]:
    from .batch import error_record, result_record  # the local scorer's record shapes

    if reply.WhichOneof("outcome") == "result":
        return result_record(result_to_dict(reply.result))
    problem = reply.error
    record = error_record(problem.reason or problem.message,
                          problem.action if problem.HasField("action") else None)
    if problem.code == "INTERNAL":
        record["error"]["internal"] = True
    return record


def _blank_record() -> dict[str, Any]:
    from .batch import score_line  # the local scorer's own text for an empty line

    return json.loads(score_line(""))


class _Feeder(threading.Thread):
    """Reads the input lines, deals them to the streams and notes the order of the results.

    Lines go in chunks of ``chunk`` to the slots in turn; every chunk is a new ScoreReplays
    call, so round_robin keeps spreading calls over the servers (including servers that
    became ready or were resolved after the start).
    """

    def __init__(self, lines: Iterable[str], stub: service_pb2_grpc.ShuangkouServiceStub,
                 streams: int, window: int, chunk: int, timeout: float | None) -> None:
        super().__init__(name="score-remote-feeder", daemon=True)
        self.lines = lines
        self.stub = stub
        self.window = window
        self.chunk = chunk
        self.timeout = timeout
        # Per slot: the calls opened for it, in order (at most two ahead of the reader).
        self.calls: list[queue.Queue[Any]] = [queue.Queue(2) for _ in range(streams)]
        self.order: queue.Queue[Any] = queue.Queue(streams * window)
        self.stop = threading.Event()
        self.opened: list[grpc.Call] = []

    def _put(self, q: queue.Queue[Any], item: Any) -> bool:
        while not self.stop.is_set():
            try:
                q.put(item, timeout=_POLL)
                return True
            except queue.Full:
                continue
        return False

    def _requests(self, q: queue.Queue[Any]) -> Iterator[service_pb2.ScoreReplaysRequest]:
        while True:
            try:
                item = q.get(timeout=_POLL)
            except queue.Empty:
                if self.stop.is_set():
                    return
                continue
            if item is None:
                return
            yield item

    def _open(self, slot: int) -> queue.Queue[Any] | None:
        requests: queue.Queue[Any] = queue.Queue(self.window)
        call = self.stub.ScoreReplays(self._requests(requests), timeout=self.timeout)
        self.opened.append(call)
        return requests if self._put(self.calls[slot], call) else None

    def run(self) -> None:
        slot, in_chunk, requests = 0, 0, None
        try:
            for line in self.lines:
                if not line.strip():
                    if not self._put(self.order, ("blank", None)):
                        return
                    continue
                if requests is None:
                    requests = self._open(slot)
                    if requests is None:
                        return
                item = service_pb2.ScoreReplaysRequest(replay_json=line)
                if not (self._put(requests, item) and self._put(self.order, ("slot", slot))):
                    return
                in_chunk += 1
                if in_chunk == self.chunk:      # close this call; the next chunk opens a new one
                    self._put(requests, None)
                    slot, in_chunk, requests = (slot + 1) % len(self.calls), 0, None
        except BaseException as exc:  # noqa: BLE001 - handed to the reader
            self._put(self.order, ("raise", exc))
        finally:
            if requests is not None:
                self._put(requests, None)
            self._put(self.order, None)


def score_remote(lines: Iterable[str], target: str, streams: int = 4, *,
                 window: int = WINDOW, chunk: int = CHUNK,
                 timeout: float | None = None) -> Iterator[dict[str, Any]]:
    """Score replay lines on the servers behind ``target``; yields one record per line, in order.

    ``streams``: concurrent ScoreReplays streams; ``window``: requests in flight per stream;
    ``chunk``: replays per stream before it is replaced by a new one (a new round_robin
    pick); ``timeout``: deadline of each stream in seconds. A failed stream (server gone,
    deadline) raises ``grpc.RpcError``.
    """
    if streams < 1 or window < 1 or chunk < 1:
        raise ValueError("streams, window and chunk must be at least 1")
    channel = grpc.insecure_channel(target, options=channel_options())
    feeder = _Feeder(lines, service_pb2_grpc.ShuangkouServiceStub(channel), streams, window,
                     chunk, timeout)
    current: list[Any] = [None] * streams
    answered = [0] * streams
    feeder.start()
    try:
        while (item := feeder.order.get()) is not None:
            what, value = item
            if what == "blank":
                yield _blank_record()
                continue
            if what == "raise":
                raise value
            while True:
                if current[value] is None:
                    current[value] = feeder.calls[value].get()
                    answered[value] = 0
                try:
                    reply = next(current[value])
                    break
                except StopIteration:       # that chunk is done: the slot's next call
                    current[value] = None
            if reply.index != answered[value]:
                raise RuntimeError(f"a stream answered request {reply.index}, expected "
                                   f"{answered[value]}")
            answered[value] += 1
            yield _record(reply)
    finally:
        feeder.stop.set()
        for call in list(feeder.opened):
            call.cancel()
        channel.close()
