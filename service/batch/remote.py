"""Score JSONL replays on a pool of servers: ``ScoreReplays`` streams, results in input order.

:func:`score_remote` is the client side of ``shuangkou score-replays --server``. The input is
cut into chunks of ``chunk`` lines; each chunk is one ``ScoreReplays`` stream, and
``streams`` chunks are in flight at once (a bounded window, so memory stays flat on huge
inputs). Results come back in input order.

Targets: ``host:port,host:port`` gets one channel per server and chunks go to them in turn;
a gRPC target with a scheme (``dns:///shuangkou-headless:50051``,
``ipv4:10.0.0.1:50051,10.0.0.2:50051``) is one channel whose ``round_robin`` policy spreads
the streams over every address it resolves to.

Failover: when a stream fails (a replica killed, unreachable or past the per-stream
deadline) the records already answered are kept and the chunk's unanswered lines are sent
again, to the next server, with backoff; a server that failed is avoided for a few seconds.
Each line is answered exactly once. Only when no server answers ``attempts`` times in a row
does the run stop, with :class:`~shuangkou.service.batch.records.RemoteFailure` (one line
naming the target);
a line a server keeps refusing as a whole stream becomes an error record and the run goes on.
Blank lines and lines over the message limit never leave the client: they become the local
scorer's error records.

The records have the local scorer's shape (:mod:`shuangkou.service.batch.records`). All protobuf handling is
in :func:`build_request` and :func:`reply_record`.
"""

from __future__ import annotations

import collections
import concurrent.futures
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import grpc

from shuangkou.client import channel_options, decode_status
from shuangkou.v1 import service_pb2, service_pb2_grpc

from ..api.results import result_to_dict
from ..client import check_target, server_failure
from ..inputs import Line
from .records import RemoteFailure, error_record, line_error, result_record

__all__ = ["score_remote", "parse_targets", "build_request", "reply_record"]

CHUNK = 256                  # lines per stream
WINDOW = 2                   # chunks in flight per stream slot (bounds memory)
MAX_MESSAGE_BYTES = 4 * 1024 * 1024   # the server's default max_message_bytes
REQUEST_OVERHEAD = 64        # bytes of protobuf framing around a replay line (generous)
STREAM_TIMEOUT = 120.0       # seconds per chunk's stream: a hung server is given up on
ATTEMPTS = 6                 # failed tries in a row (no line answered) before giving up
DOWN_SECONDS = 5.0           # a server that failed is avoided this long
_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
              grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN,
              grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.ABORTED}


# ----------------------------------------------------------------------------- protobuf
# The only two functions that know the ScoreReplays messages.

def build_request(line: str) -> service_pb2.ScoreReplaysRequest:
    """The request carrying one replay line."""
    return service_pb2.ScoreReplaysRequest(replay_json=line)


def reply_record(reply: service_pb2.ScoreReplaysResponse) -> dict[str, Any]:
    """A reply as the local scorer's record."""
    if reply.WhichOneof("outcome") == "result":
        return result_record(result_to_dict(reply.result))
    failure = decode_status(reply.error)
    record = error_record(failure.detail, failure.action)
    if failure.code == grpc.StatusCode.INTERNAL:
        record["error"]["internal"] = True
    return record


# ----------------------------------------------------------------------------- targets

def parse_targets(target: str) -> list[str]:
    """``host:port[,host:port...]`` → one target per server; a target with a gRPC scheme
    (``dns:``, ``ipv4:``, ``ipv6:``, ``unix:``) stays one target. ValueError when malformed."""
    check_target(target)
    if target.startswith(("dns:", "ipv4:", "ipv6:", "unix:", "unix-abstract:")):
        return [target]
    out = []
    for item in target.split(","):
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not (sep and host and port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"bad server target {item!r} in {target!r}: expected host:port "
                             "(comma-separated for several) or a gRPC target such as "
                             "dns:///name:port")
        out.append(item)
    return out


class _Servers:
    """One channel per target, and which ones failed recently."""

    def __init__(self, targets: list[str]) -> None:
        self.targets = targets
        self.channels = [grpc.insecure_channel(t, options=channel_options()) for t in targets]
        self.stubs = [service_pb2_grpc.ShuangkouServiceStub(c) for c in self.channels]
        self.down_until = [0.0] * len(targets)
        self.lock = threading.Lock()

    def pick(self, hint: int) -> int:
        """The first server from ``hint`` on that has not failed lately (else the one that
        failed longest ago)."""
        n = len(self.stubs)
        now = time.monotonic()
        with self.lock:
            order = [(hint + k) % n for k in range(n)]
            for i in order:
                if self.down_until[i] <= now:
                    return i
            return min(order, key=lambda i: self.down_until[i])

    def failed(self, i: int) -> None:
        with self.lock:
            self.down_until[i] = time.monotonic() + DOWN_SECONDS

    def close(self) -> None:
        for c in self.channels:
            c.close()


# ----------------------------------------------------------------------------- scoring

def _oversize(line: str, limit: int) -> dict[str, Any] | None:
    size = len(line.encode("utf-8", errors="surrogatepass"))
    if size + REQUEST_OVERHEAD <= limit:
        return None
    return error_record(f"line of {size} bytes is over the server's message limit "
                        f"({limit} bytes); not sent")


def _one_line(text: str | None) -> str:
    return " ".join(str(text).split())[:300]


_ENDED = object()    # the reader's last item: the stream ended OK
_STATUS = object()   # the call has its final status (gRPC's done callback)


def _replies(call: Any) -> Iterator[service_pb2.ScoreReplaysResponse]:
    """The replies of a ScoreReplays ``call``, in order; raises the call (a grpc.RpcError)
    as soon as it has failed.

    gRPC's own iterator waits, with no time limit, for the message it asked for. A stream
    started while its server shuts down (the connection's GOAWAY cancelling every call) can
    get its final status, UNAVAILABLE, while the batches already started (the request being
    sent, the reply's metadata and message) never complete: the iterator then waits forever,
    the stream's deadline no longer applies (the call has ended), and so did the whole run
    (tests/test_service_remote.py, the replica vanishing mid-run). So the replies are read
    on a thread of their own and the failure is taken from the call's status: a reader left
    waiting is released when the channel is closed (which cancels the call in gRPC's core,
    completing those batches) at the end of the run.
    """
    items: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def read() -> None:
        try:
            for reply in call:
                items.put(reply)
            items.put(_ENDED)
        except grpc.RpcError:
            pass                 # the status comes through the done callback
        except Exception as exc:  # noqa: BLE001 - raised where the replies are read
            items.put(exc)

    threading.Thread(target=read, name="score-remote-reader", daemon=True).start()
    call.add_done_callback(lambda _call: items.put(_STATUS))
    while (item := items.get()) is not _ENDED:
        if item is _STATUS:
            if call.code() is not grpc.StatusCode.OK:
                raise call       # replies still buffered are dropped: their lines go again
            continue             # OK: the reader delivers the rest, then _ENDED
        if isinstance(item, Exception):
            raise item
        yield item


def _score_chunk(servers: _Servers, lines: list[Line], first: int, timeout: float | None,
                 attempts: int, limit: int) -> list[dict[str, Any]]:
    """The records of one chunk, retrying its unanswered lines on the other servers."""
    records: list[dict[str, Any] | None] = [None] * len(lines)
    send: list[int] = []
    texts: list[str] = [""] * len(lines)
    for k, line in enumerate(lines):
        if (rec := line_error(line)) is not None:    # the local scorer's record: empty, long
            records[k] = rec
            continue
        assert isinstance(line, str)                 # line_error took every LongLine
        if (rec := _oversize(line, limit)) is not None:
            records[k] = rec
        else:
            texts[k] = line
            send.append(k)
    done, failures, hint = 0, 0, first
    while done < len(send):
        i = servers.pick(hint)
        batch = send[done:]
        call = servers.stubs[i].ScoreReplays(iter([build_request(texts[k]) for k in batch]),
                                             timeout=timeout)
        before = done
        try:
            for reply in _replies(call):
                if reply.index != done - before:
                    raise RuntimeError(f"{servers.targets[i]} answered request {reply.index}, "
                                       f"expected {done - before}")
                records[batch[reply.index]] = reply_record(reply)
                done += 1
            if done < len(send):
                raise RemoteFailure(f"{servers.targets[i]} ended a stream after "
                                    f"{done - before} of {len(batch)} replies")
            break
        except (grpc.RpcError, RemoteFailure) as exc:
            call.cancel()
            code = exc.code() if isinstance(exc, grpc.RpcError) else grpc.StatusCode.UNKNOWN
            details = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)
            failures = 1 if done > before else failures + 1
            servers.failed(i)
            hint = i + 1
            if failures < attempts:
                time.sleep(min(0.05 * 2 ** failures, 2.0))
                continue
            if code in _RETRYABLE:
                where = ",".join(servers.targets)
                raise RemoteFailure(server_failure(where, f"no server answers: {code.name}",
                                                   _one_line(details))) from exc
            # The servers keep refusing the stream at this line: record it, go on.
            records[send[done]] = error_record(
                f"the server refused this line: {code.name}: {_one_line(details)}")
            done, failures = done + 1, 0
    return records  # type: ignore[return-value]


def score_remote(lines: Iterable[Line], target: str, streams: int = 4, *,
                 window: int = WINDOW, chunk: int = CHUNK,
                 timeout: float | None = STREAM_TIMEOUT, attempts: int = ATTEMPTS,
                 max_message_bytes: int = MAX_MESSAGE_BYTES) -> Iterator[dict[str, Any]]:
    """Score replay lines on the servers behind ``target``; yields one record per line, in
    order.

    ``streams``: chunks scored at once; ``window``: chunks queued per stream; ``chunk``:
    lines per stream; ``timeout``: deadline of each stream in seconds; ``attempts``: failed
    tries in a row before giving up (RemoteFailure); ``max_message_bytes``: the servers'
    message limit (longer lines become error records without being sent).
    """
    if streams < 1 or window < 1 or chunk < 1 or attempts < 1:
        raise ValueError("streams, window, chunk and attempts must be at least 1")
    servers = _Servers(parse_targets(target))
    pool = concurrent.futures.ThreadPoolExecutor(streams, thread_name_prefix="score-remote")
    pending: collections.deque[concurrent.futures.Future[list[dict[str, Any]]]] = \
        collections.deque()
    try:
        buf: list[Line] = []
        n = 0

        def submit() -> None:
            nonlocal n
            pending.append(pool.submit(_score_chunk, servers, buf[:], n, timeout, attempts,
                                       max_message_bytes))
            n += 1
            buf.clear()

        for line in lines:
            buf.append(line)
            if len(buf) == chunk:
                submit()
                while len(pending) >= streams * window:
                    yield from pending.popleft().result()
        if buf:
            submit()
        while pending:
            yield from pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        servers.close()
