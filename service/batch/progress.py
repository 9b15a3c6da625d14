"""THE progress bar of the batch scorer: lines done (and partitions, for archive runs), with
rate and ETA, redrawn on stderr at most every :data:`PROGRESS_INTERVAL` seconds, and only
when the caller says stderr is a terminal."""

from __future__ import annotations

import time
from typing import IO

__all__ = ["Progress", "PROGRESS_INTERVAL"]

PROGRESS_INTERVAL = 0.2      # seconds between redraws
WIDTH = 30                   # characters of the bar


class Progress:
    """Counts what is done; draws ``[####....] 3/6 partitions 120/250 lines 48.0% 1,234/s
    ETA 0:00:02`` (no partitions for a plain run; no bar while the total is unknown)."""

    def __init__(self, stream: IO[str], total_lines: int | None, draw: bool,
                 total_parts: int | None = None) -> None:
        self.stream, self.draw = stream, draw
        self.total_lines, self.total_parts = total_lines, total_parts
        self.lines = self.parts = 0
        self.start = time.perf_counter()
        self.last = 0.0

    def add(self, lines: int, parts: int = 0) -> None:
        self.lines += lines
        self.parts += parts
        if not self.draw:
            return
        now = time.perf_counter()
        if now - self.last >= PROGRESS_INTERVAL or (
                self.total_parts is not None and self.parts == self.total_parts):
            self.last = now
            self._bar(now)

    def _bar(self, now: float) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.lines / elapsed
        if self.total_lines is None:
            text = f"\r{self.lines} lines  {rate:,.0f}/s  {clock(elapsed)} "
        else:
            frac = min(self.lines / self.total_lines, 1.0) if self.total_lines else 1.0
            eta = (self.total_lines - self.lines) / rate if rate else 0.0
            parts = ("" if self.total_parts is None
                     else f"{self.parts}/{self.total_parts} partitions ")
            text = (f"\r[{'#' * int(frac * WIDTH):.<{WIDTH}s}] {parts}{self.lines}/"
                    f"{self.total_lines} lines {frac:6.1%}  {rate:,.0f}/s  ETA {clock(eta)} ")
        self.stream.write(text)
        self.stream.flush()

    def finish(self) -> float:
        """Draw the final state (ending the bar's line); the seconds since the start."""
        now = time.perf_counter()
        if self.draw:
            self._bar(now)
            self.stream.write("\n")
            self.stream.flush()
        return now - self.start


def clock(seconds: float) -> str:
    """``h:mm:ss``."""
    s = int(seconds + 0.5)
    return f"{s // 3600:d}:{s // 60 % 60:02d}:{s % 60:02d}"
