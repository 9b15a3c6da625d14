"""Shared machinery of the fuzz harnesses (``fuzz/fuzz_*.py``).

Every harness is a function ``one_input(data: bytes) -> None`` that decodes the bytes into
structured input with :class:`Input`, calls the code under test and lets an exception escape
only when it is a finding: any exception other than a ``core.errors`` one in the core, or
a status other than the documented ones at the gRPC boundary. :func:`main` runs a harness
under atheris (coverage guided, libFuzzer flags such as ``-atheris_runs=N`` and
``-max_total_time=S``) or, when atheris is not installed, under a hypothesis-driven random
loop that honours the same two flags, so the harnesses are identical in both modes.

Findings already reported to their owners are listed in :data:`KNOWN` (each has a regression
test in ``tests/test_fuzz.py``); a harness that hits one records it and goes on, so a run
keeps searching for new ones. ``FUZZ_STRICT=1`` turns known findings back into crashes.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))   # after PYTHONPATH: an ASan build there wins

VARIANTS = ("baibian", "fengkuang", "fengkuang_crazy", "bianfeng", "bianfeng_lishui",
            "qianbian", "huopin")
KIND_NAMES = ("single", "pair", "triple", "straight", "pair_chain", "triple_chain", "bomb",
              "joker_bomb_3", "joker_bomb_4", "chain_bomb")
# Integers that sit on a boundary somewhere: card codes, C int widths, protobuf widths.
EDGE_INTS = (0, 1, -1, 2, 3, 4, 5, 13, 14, 15, 27, 64, 65, 66, 70, 75, 76, 255, 256,
             2**15, 2**16, 2**31 - 1, 2**31, -2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63,
             -2**63, 2**64, 10**30)
CARD_TOKENS = ("3S", "3", "4H", "5D", "6C", "7", "7S", "7H", "8", "9", "T", "10", "J", "Q",
               "K", "A", "AS", "2", "2C", "SJ", "BJ", "sj", "bj", "10S", "tH")
JUNK_TEXT = ("", " ", ",", "+", "77", "7777", "10JQKA", "3456789", "7SJ", "X", "1", "0",
             "７", "\x00", "🂡", "S", "H", "11", "BJBJ", "JJJJJ")


# ----------------------------------------------------------------------------- decoding bytes

class Input:
    """A deterministic decoder of fuzz bytes into values (reads 0 once exhausted)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def int(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        span = hi - lo
        if span <= 0:
            return lo
        value = 0
        for _ in range((span.bit_length() + 7) // 8):
            value = (value << 8) | self.byte()
        return lo + value % (span + 1)

    def bool(self) -> bool:
        return bool(self.byte() & 1)

    def choice(self, seq: Sequence[Any]) -> Any:
        return seq[self.int(0, len(seq) - 1)]

    def raw(self, n_max: int) -> bytes:
        n = min(self.int(0, n_max), self.left)
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def edge_int(self) -> int:
        """Mostly small integers, sometimes a boundary value, sometimes a signed draw."""
        pick = self.byte() % 8
        if pick < 4:
            return self.int(0, 80)
        if pick < 6:
            return self.choice(EDGE_INTS)
        return self.int(-2**40, 2**40)

    def text(self, n_max: int = 40) -> str:
        """Card-ish text: tokens, junk and arbitrary characters with separators."""
        parts = []
        for _ in range(self.int(0, n_max)):
            pick = self.byte() % 8
            if pick < 4:
                parts.append(self.choice(CARD_TOKENS))
            elif pick < 6:
                parts.append(self.choice(JUNK_TEXT))
            else:
                parts.append(self.raw(6).decode("utf-8", "replace"))
            parts.append(self.choice((" ", " ", ",", "+", "", "\t", "  ")))
        return "".join(parts)

    def json(self, depth: int = 3, keys: Sequence[str] = ()) -> Any:
        """A JSON-ish value: scalars at the edges, lists and objects with plausible keys."""
        pick = self.byte() % (10 if depth > 0 else 6)
        if pick == 0:
            return None
        if pick == 1:
            return self.bool()
        if pick == 2:
            return self.edge_int()
        if pick == 3:
            return self.choice((0.0, 1.5, -0.0, 1e308, float("nan"), float("inf"), 2.0))
        if pick == 4:
            return self.choice(keys) if keys and self.bool() else self.text(4)
        if pick == 5:
            return self.choice(CARD_TOKENS)
        if pick < 8:
            return [self.json(depth - 1, keys) for _ in range(self.int(0, 5))]
        return {(self.choice(keys) if keys and self.byte() % 4 else self.text(2)):
                self.json(depth - 1, keys) for _ in range(self.int(0, 5))}


# ----------------------------------------------------------------------------- findings

@dataclass(frozen=True)
class Known:
    """A finding reported to its owner: exception type, message pattern, and the source file
    of the innermost traceback frame it is raised in."""

    id: str
    exc: str
    pattern: str
    where: str
    owner: str

    def matches(self, exc: BaseException) -> bool:
        if type(exc).__name__ != self.exc or not re.search(self.pattern, str(exc)):
            return False
        tb = exc.__traceback__
        last = ""
        while tb is not None:
            last = tb.tb_frame.f_code.co_filename
            tb = tb.tb_next
        return re.search(self.where, last) is not None


#: Findings already reported (docs/reliability.md "Findings"; each has an xfail regression
#: test in tests/test_fuzz.py). Remove a row when its fix lands.
KNOWN: tuple[Known, ...] = (
    Known("F15", "TypeError", r"unhashable type: 'dict'", r"variants\.py$", "lead"),
)

STRICT = os.environ.get("FUZZ_STRICT") == "1"
_seen: dict[str, int] = {}


def core_call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """Call a core function: ``(True, result)``, or ``(False, exc)`` for a core_ext error.

    Any other exception is a finding and propagates (unless it is a known, reported one).
    """
    from shuangkou.core.errors import ShuangkouError

    try:
        return True, fn(*args, **kwargs)
    except ShuangkouError as exc:
        check_error_message(exc)
        return False, exc
    except Exception as exc:  # noqa: BLE001 - filtered against KNOWN, else re-raised
        if not STRICT:
            for known in KNOWN:
                if known.matches(exc):
                    _seen[known.id] = _seen.get(known.id, 0) + 1
                    return False, exc
        raise


def check_error_message(exc: BaseException) -> None:
    """A core error must say something: a non-empty message without a Python repr leak."""
    text = str(exc)
    if not text.strip():
        raise AssertionError(f"{type(exc).__name__} with an empty message")


def report_known() -> None:
    if _seen:
        print("known findings hit: " + json.dumps(_seen), file=sys.stderr)


# ----------------------------------------------------------------------------- card builders

def valid_codes() -> list[int]:
    """Every card code (docs/design.md): 1-65, SJ = 70, BJ = 75."""
    return [c for c in range(1, 76) if c <= 65 or c in (70, 75)]


def play_codes(inp: Input, max_cards: int = 27) -> list[int]:
    """A play or hand biased to deep classification: few, mostly consecutive ranks + jokers."""
    first = inp.int(0, 12)
    nranks = inp.int(1, 6)
    codes: list[int] = []
    for k in range(nranks):
        rank = (first + k + (inp.int(0, 2) if inp.byte() % 4 == 0 else 0)) % 13
        for _ in range(inp.int(1, 8)):   # mostly rank-only cards: suits rarely matter
            codes.append(1 + rank * 5 + (4 if inp.byte() % 4 else inp.int(0, 3)))
    for _ in range(inp.int(0, 4) if inp.byte() % 3 == 0 else 0):
        codes.append(inp.choice((70, 75)))
    return codes[:max_cards]


def cards_any(inp: Input) -> Any:
    """Anything a caller might pass as cards: text, buffers, token lists, codes, junk."""
    pick = inp.byte() % 10
    if pick == 9:
        return inp.choice((None, 5, 2**70, 1.5, {"7S": 1}, object(), True, iter("77")))
    if pick == 0:
        return inp.text()
    if pick == 1:
        return inp.raw(40)
    if pick == 2:
        return bytearray(inp.raw(40))
    if pick == 3:
        return [inp.choice(CARD_TOKENS) if inp.bool() else inp.edge_int()
                for _ in range(inp.int(0, 30))]
    if pick == 4:
        return " ".join(play_codes_text(inp))
    if pick == 5:
        return tuple(play_codes(inp))
    return play_codes(inp)


def play_codes_text(inp: Input) -> list[str]:
    from shuangkou.core import format_cards
    return format_cards(play_codes(inp))


def variant_any(inp: Input) -> Any:
    """Mostly a built-in id; sometimes an unknown id or a non-string."""
    pick = inp.byte() % 16
    if pick < 13:
        return VARIANTS[pick % len(VARIANTS)]
    return inp.choice(("", "BAIBIAN", "nope", None, 5, ["baibian"]))


# ----------------------------------------------------------------------------- running

@contextmanager
def _deadline_guard(seconds: float) -> Iterator[None]:
    """Fail a single input that runs longer than ``seconds`` (a hang is a finding)."""
    import signal

    def alarm(_sig: int, _frame: Any) -> None:
        raise TimeoutError(f"one input ran longer than {seconds:g}s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _flag(argv: Sequence[str], name: str) -> str | None:
    for arg in argv:
        if arg.startswith(f"-{name}="):
            return arg.split("=", 1)[1]
    return None


def _int_flag(argv: Sequence[str], name: str) -> int | None:
    value = _flag(argv, name)
    return None if value is None else int(value)


def main(one_input: Callable[[bytes], None], argv: Sequence[str] | None = None) -> None:
    """Run a harness: atheris when installed (``FUZZ_ENGINE=hypothesis`` forces the fallback)."""
    argv = list(sys.argv if argv is None else argv)
    per_input = float(os.environ.get("FUZZ_INPUT_TIMEOUT", "20"))

    def guarded(data: bytes) -> None:
        with _deadline_guard(per_input):
            one_input(data)

    engine = os.environ.get("FUZZ_ENGINE", "atheris")
    if engine == "atheris":
        try:
            import atheris
        except ImportError:
            engine = "hypothesis"
    if engine == "atheris":
        import atexit

        atexit.register(report_known)
        # Structured decoders want long inputs from the start (libFuzzer grows them slowly).
        for flag, value in (("len_control", "0"), ("max_len", "4096"),
                            ("artifact_prefix", str(ROOT / "build" / "fuzz") + "/")):
            if _flag(argv, flag) is None:
                argv.append(f"-{flag}={value}")
        (ROOT / "build" / "fuzz").mkdir(parents=True, exist_ok=True)
        if os.environ.get("FUZZ_INSTRUMENT") == "all":
            atheris.instrument_all()
        else:
            _instrument_project(atheris)
        atheris.Setup(argv, guarded)
        atheris.Fuzz()
        return
    _hypothesis_loop(guarded, argv)


def _instrument_project(atheris: Any) -> None:
    """Coverage-instrument the project's Python code only (core_ext, service, fuzz).

    ``atheris.instrument_all`` also walks grpc, protobuf and hypothesis, which costs more
    start-up time than a short run takes; the compiled core is not Python bytecode either
    way (its coverage would need a libFuzzer build of the extension).
    """
    import types

    def functions(obj: Any) -> Iterator[types.FunctionType]:
        if isinstance(obj, (staticmethod, classmethod)):
            obj = obj.__func__
        if isinstance(obj, property):
            yield from (f for f in (obj.fget, obj.fset) if isinstance(f, types.FunctionType))
        elif isinstance(obj, types.FunctionType):
            yield obj

    seen: set[int] = set()
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if not path.startswith(str(ROOT)) or "/.venv/" in path or "/gen/" in path:
            continue
        for obj in list(vars(module).values()):
            members = [obj]
            if isinstance(obj, type) and obj.__module__ == name:
                members += list(vars(obj).values())
            for member in members:
                for fn in functions(member):
                    if fn.__module__ == name and id(fn) not in seen:
                        seen.add(id(fn))
                        atheris.instrument_func(fn)


def _hypothesis_loop(one_input: Callable[[bytes], None], argv: Sequence[str]) -> None:
    """The fallback engine: hypothesis-generated byte strings, same harness, same flags.

    Runs in chunks of at most 2,000 examples (each chunk a new seed) until ``-atheris_runs``
    inputs ran or ``-max_total_time`` seconds passed.
    """
    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis import strategies as st

    max_time = _int_flag(argv, "max_total_time")
    runs = _int_flag(argv, "atheris_runs") or _int_flag(argv, "runs") or \
        (10**12 if max_time else 10_000)
    start = time.monotonic()
    done = 0
    chunk = 0
    base_seed = _int_flag(argv, "seed") or 0

    def out_of_time() -> bool:
        return max_time is not None and time.monotonic() - start > max_time

    while done < runs and not out_of_time():
        size = min(2_000, runs - done)

        @seed(base_seed + chunk)
        @settings(max_examples=size, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.binary(max_size=2048))
        def run(data: bytes) -> None:
            nonlocal done
            if out_of_time():
                return
            done += 1
            one_input(data)

        run()
        chunk += 1
    report_known()
    print(f"hypothesis fallback: {done} inputs in {time.monotonic() - start:.1f}s",
          file=sys.stderr)
