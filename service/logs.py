"""The server's log lines: text or JSON (setting ``log_format``), and the access log — one
line per call (setting ``access_log``), bounded under load.

Both formats are the standard library's ``logging`` with a formatter of ours
(docs/decisions/engineering.md E32): no other process-wide logging machinery, and the
records of every library (grpcio, uvicorn) come out the same way.

* :class:`TextFormatter`: ``time level pid logger: message``, the message and a traceback
  passed through :func:`~shuangkou.service.shown.shown`, so that text from a client (an HTTP
  path, an error message quoting a request) cannot write control characters into the
  terminal that shows the log, nor fake a line of its own;
* :class:`JsonFormatter`: one JSON object per line — ``time`` (UTC, ISO 8601), ``level``,
  ``logger``, ``message``, ``pid``, then the record's own fields (``extra=``) and
  ``exception``; JSON escapes the C0 controls and :func:`shown` the rest, so the line stays
  valid JSON and harmless on a terminal;
* :class:`AccessLog`: one INFO record of logger ``shuangkou.access`` per call, with its fields
  (method, protocol, code, duration, peer, bytes), from two token buckets of ``rate`` lines a
  second each — one for calls that ended OK, one for the rest — so that a flood of either
  never hides the other and the log never grows faster than twice ``rate`` lines a second.
  What a bucket refuses is counted (``shuangkou_access_lines_dropped_total{outcome}``) and
  summarised in one WARNING line at most once a second: no queue, nothing held;
* :class:`LineBound`: the other lines a client can cause (the HTTP edge's warnings about
  requests it cannot read, a failed call's traceback, asyncio's complaints about a peer
  gone), bounded the same way on the loggers that write them (:func:`bound_lines`): per
  logger and kind of line, a bucket of ``rate`` lines a second; what it refuses is counted
  (``shuangkou_log_lines_dropped_total{logger}``) and summarised once a second.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import orjson

from .config import LOG_FORMATS
from .shown import shown

__all__ = ["LOG_FORMATS", "TEXT_FORMAT", "TextFormatter", "JsonFormatter", "formatter",
           "AccessLog", "ACCESS_LOGGER", "LineBound", "bound_lines"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s"
ACCESS_LOGGER = "shuangkou.access"

#: What every LogRecord carries: the rest of its attributes are the fields given by ``extra=``
#: (uvicorn's ``color_message``, the message with terminal colours, is no field of ours).
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message", "asctime", "taskName", "color_message"}


class TextFormatter(logging.Formatter):
    """The plain format, every control character of the message and traceback escaped."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        record.message = shown(record.getMessage())
        record.asctime = self.formatTime(record, self.datefmt)
        line = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:       # a traceback keeps its lines; a message may not break one
            line += "\n" + shown(record.exc_text, lines=True)
        if record.stack_info:
            line += "\n" + shown(self.formatStack(record.stack_info), lines=True)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname, "logger": record.name, "message": record.getMessage(),
            "pid": record.process}
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in doc:
                doc[key] = value
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        # orjson escapes the C0 controls (JSON requires it); shown() writes DEL, the C1
        # controls and the bidirectional ones as \u escapes, which JSON reads back unchanged.
        return shown(orjson.dumps(doc, default=str).decode())


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of setting ``log_format`` (one of :data:`LOG_FORMATS`)."""
    return JsonFormatter() if log_format == "json" else TextFormatter()


class _Bucket:
    """``rate`` tokens a second, at most ``rate`` held (a burst of one second's worth)."""

    __slots__ = ("rate", "tokens", "at")

    def __init__(self, rate: float, now: float) -> None:
        self.rate, self.tokens, self.at = rate, rate, now

    def take(self, now: float) -> bool:
        self.tokens = min(self.rate, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class AccessLog:
    """The access lines of one process: :meth:`call` per call, at most ``rate`` lines a
    second for calls that ended OK and as many for the others; ``dropped(outcome)`` (the
    metric's labelled child, ``ok`` or ``error``) counts each line left out."""

    #: Seconds between two summaries of the lines left out.
    SUMMARY_INTERVAL = 1.0

    def __init__(self, rate: int, dropped: Callable[[str], Any] | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger | None = None) -> None:
        self.rate = rate
        self._clock = clock
        now = clock()
        self._buckets = {False: _Bucket(rate, now), True: _Bucket(rate, now)}
        self._dropped = {failed: dropped("error" if failed else "ok") if dropped else None
                         for failed in (False, True)}
        self._lock = threading.Lock()
        self._left_out = 0
        self._first = now          # when the first line since the last summary was left out
        self.log = logger or logging.getLogger(ACCESS_LOGGER)

    def call(self, method: str, protocol: str, code: str, seconds: float, peer: str,
             received: int, sent: int, *, failed: bool | None = None, trace_id: str = "",
             **fields: Any) -> None:
        """One call's line (or its place in the count of those left out): ``method`` the
        RPC (``/service/Method``) or HTTP path, ``code`` its gRPC status code name (HTTP
        answers the server gave without a call: empty, with ``status`` among ``fields``),
        ``received`` and ``sent`` the bytes of its messages or HTTP bodies, ``trace_id``
        its trace when tracing is on."""
        if failed is None:
            failed = code != "OK"
        now = self._clock()
        with self._lock:
            kept = self._buckets[failed].take(now)
            if not kept:
                if not self._left_out:
                    self._first = now
                self._left_out += 1
                counter = self._dropped[failed]
                if counter is not None:
                    counter.inc()
            # a summary a second after the first line it counts, by whichever call comes
            # then: at most one a second, however many lines are left out
            summary = self._summary(now) if self._left_out \
                and now - self._first >= self.SUMMARY_INTERVAL else None
        if summary is not None:
            self._say_left_out(*summary)
        if kept:
            if trace_id:
                fields["trace_id"] = trace_id
            duration_ms = round(seconds * 1e3, 3)
            self.log.info("%s %s %s %s %.3f ms, peer %s, %d B in, %d B out", fields.get(
                "http_method", "RPC"), method, protocol, code or fields.get("status", "-"),
                duration_ms, peer or "-", received, sent, extra={
                    "access": True, "method": method, "protocol": protocol, "code": code,
                    "duration_ms": duration_ms, "peer": peer, "bytes_in": received,
                    "bytes_out": sent, **fields})

    def flush(self) -> None:
        """Summarise the lines left out since the last summary (at shutdown)."""
        with self._lock:
            summary = self._summary(self._clock())
        if summary is not None:
            self._say_left_out(*summary)

    def _summary(self, now: float) -> tuple[int, float] | None:
        """(lines left out, over how many seconds from the first) since the last summary,
        the count restarted; None when none was. Under the lock."""
        if not self._left_out:
            return None
        summary = (self._left_out, now - self._first)
        self._left_out = 0
        return summary

    def _say_left_out(self, count: int, seconds: float) -> None:
        self.log.warning("… %d access lines dropped over %.1f s (over access_log = %d "
                         "lines a second for calls that ended OK, and as many for the rest)",
                         count, seconds, self.rate,
                         extra={"access_dropped": count, "seconds": round(seconds, 3)})


class LineBound(logging.Filter):
    """A logger's lines, at most ``rate`` a second of each kind (a record's message template:
    a flood of one kind never hides another), a second's worth at once. A line past the
    bound is left out and counted (``dropped(logger)``: the metric's labelled child); at
    most once a second per logger, one WARNING line says how many were left out."""

    #: Seconds between two summaries of one logger's lines left out.
    SUMMARY_INTERVAL = 1.0
    #: Kinds of line given a bucket of their own (message templates are the code's, so a
    #: handful); past it, a logger's other kinds share one.
    MAX_KINDS = 256

    def __init__(self, rate: int, dropped: Callable[[str], Any] | None = None, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.rate = rate
        self.dropped = dropped
        self._clock = clock
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._left_out: dict[str, tuple[int, float]] = {}   # logger: (lines, since when)
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if hasattr(record, "lines_dropped"):            # a summary of ours
            return True
        now = self._clock()
        kind = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        key = (record.name, kind)
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                if len(self._buckets) >= self.MAX_KINDS:
                    key = (record.name, "")
                bucket = self._buckets.setdefault(key, _Bucket(self.rate, now))
            kept = bucket.take(now)
            if not kept:
                lines, since = self._left_out.get(record.name, (0, now))
                self._left_out[record.name] = (lines + 1, since)
            summary = self._left_out.get(record.name)
            if summary is not None and now - summary[1] >= self.SUMMARY_INTERVAL:
                del self._left_out[record.name]
            else:
                summary = None
        if not kept and self.dropped is not None:
            self.dropped(record.name).inc()
        if summary is not None:
            logging.getLogger(record.name).warning(
                "… %d lines of this logger dropped over %.1f s (over %d lines a second of "
                "each kind)", summary[0], now - summary[1], self.rate,
                extra={"lines_dropped": summary[0], "seconds": round(now - summary[1], 3)})
        return kept


def bound_lines(loggers: Iterable[str], rate: int,
                dropped: Callable[[str], Any] | None = None) -> LineBound:
    """One :class:`LineBound` of ``rate`` lines a second on each of ``loggers`` (one per
    process: a bound put there before is replaced, so that the latest server's metrics count
    what is left out)."""
    bound = LineBound(rate, dropped)
    for name in loggers:
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, LineBound)]:
            logger.removeFilter(old)
        logger.addFilter(bound)
    return bound
