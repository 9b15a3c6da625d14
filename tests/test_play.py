"""``shuangkou play`` driven through a pseudo-terminal (pexpect), as a person plays it: the
keys (help, 提示 and Enter, the legal plays and a number, cards typed, a refused pass, 托管
to the end), the settlement printed as ``shuangkou score`` prints the saved replay, and the
same keys giving the same round — the same replay, byte for byte — against a loopback
server (``--server``, every move through RoundService)."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from grpc_helpers import ServerProcess, free_port
from pexpect import fdpexpect

from shuangkou import core

TIMEOUT = 60
SUITS = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}
HAND = re.compile(r"your hand \(\d+\): ([^\r\n]+)")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A ``shuangkou serve`` process: pexpect forks this one, which must run no gRPC
    threads then (an in-process server's would be caught mid-call in the child)."""
    proc = ServerProcess("--port", "0", "--metrics-port", "0")
    try:
        proc.wait_serving()
        yield f"127.0.0.1:{proc.port}"
    finally:
        proc.stop()


class Terminal(fdpexpect.fdspawn):
    """``shuangkou play`` on a pseudo-terminal of its own. Started by subprocess (no fork
    of this process's Python state, which may hold gRPC threads), read and typed into by
    pexpect; ``logfile_read`` keeps everything the terminal showed."""

    def __init__(self, *args: str, colour: bool = False) -> None:
        env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
        # -X faulthandler: a child that stalls is made to print every thread's stack
        # (expect_list below) so a timeout shows where it waited, not only what it showed.
        argv = [sys.executable, "-X", "faulthandler", "-m", "shuangkou.service", "play",
                "--delay", "0", *args]
        if not colour:
            argv.append("--no-color")
        master, slave = os.openpty()
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        super().__init__(master, encoding="utf-8", timeout=TIMEOUT)
        self.logfile_read = io.StringIO()

    def __str__(self) -> str:
        """What the terminal showed last: pexpect's TIMEOUT message prints this."""
        shown = self.logfile_read.getvalue() if isinstance(self.logfile_read, io.StringIO) else ""
        return f"{type(self).__name__}; the terminal's last output:\n{shown[-6000:]}"

    def expect_list(self, pattern_list: Any, timeout: float = -1, searchwindowsize: int = -1,
                    async_: bool = False, **kw: Any) -> Any:
        try:
            return super().expect_list(pattern_list, timeout, searchwindowsize, async_, **kw)
        except pexpect.TIMEOUT as exc:
            raise pexpect.TIMEOUT(f"{exc}\n{self._stacks()}") from None

    def _stacks(self) -> str:
        """SIGABRT to a child that is still running: faulthandler writes its threads' stacks
        to the terminal; what it wrote."""
        if self.proc.poll() is not None:
            return f"the play process had exited with status {self.proc.returncode}"
        shown = len(self.logfile_read.getvalue())
        self.proc.send_signal(signal.SIGABRT)
        try:
            while True:
                self.read_nonblocking(65536, timeout=2)
        except (pexpect.TIMEOUT, pexpect.EOF, OSError):
            pass
        return "its threads' stacks at the timeout:\n" + self.logfile_read.getvalue()[shown:]

    def finish(self) -> int:
        """Wait for the end; the exit status."""
        self.expect(pexpect.EOF)
        self.close()
        return self.proc.wait(TIMEOUT)


def spawn(*args: str, colour: bool = False) -> Terminal:
    return Terminal(*args, colour=colour)


def tokens(shown: str) -> list[str]:
    """A hand as the terminal shows it (``10♦ J♠  SJ``) back to card tokens."""
    out = []
    for card in re.sub(r"\x1b\[[0-9;]*m", "", shown).split():
        if card in ("SJ", "BJ"):
            out.append(card)
        else:
            rank = "T" if card[:-1] == "10" else card[:-1]
            out.append(rank + SUITS[card[-1]])
    return out


def your_turn(child: Terminal) -> tuple[bool, list[str]] | None:
    """Wait for the next prompt: (leading?, the hand), or None once the round is over."""
    i = child.expect([r"── trick \d+ · your turn", "── the round is over"])
    if i == 1:
        return None
    lead = child.expect(["you lead", "to beat:"]) == 0
    child.expect(HAND)
    hand = tokens(child.match.group(1))
    child.expect("> ")
    return lead, hand


def play_a_round(child: Terminal) -> str:
    """Every kind of key, then 托管 to the end; everything the terminal showed."""
    turn = your_turn(child)
    assert turn is not None
    # A key is sent only once the next prompt is shown: the terminal echoes what is typed
    # at once, so a line sent early puts its echo before the prompt and the move after it
    # (">   you: ..."), and the "\r\n  you: " expected never comes (CI of this stop).
    child.sendline("?")
    child.expect("A: 托管 to the end")
    child.expect("> ")
    child.sendline("h")
    child.expect(r"提示: ([^\r\n]+)\(([^\r\n]+)\); Enter plays it")
    child.expect("> ")
    child.sendline("")                                  # Enter plays the hint
    child.expect(r"\r\n  you: ")
    turn = your_turn(child)
    assert turn is not None
    child.sendline("zz")
    child.expect("refused|not a card|cannot|invalid", timeout=TIMEOUT)
    child.expect("> ")
    child.sendline("l")
    child.expect(r"\s+#1  ")
    child.expect("> ")
    child.sendline("#1")
    child.expect(r"\r\n  you: ")
    while (turn := your_turn(child)) is not None:
        lead, hand = turn
        if not lead:
            child.sendline("p")
            child.expect(r"you: pass")
            continue
        child.sendline("p")                             # a leader may not pass
        child.expect(r"refused: seat \d leads the trick and may not pass")
        assert your_turn(child) is not None
        low = min(hand, key=lambda t: core.parse_cards(t)[0])
        child.sendline(low if low in ("SJ", "BJ") else low[:-1])   # a rank, no suit
        child.expect(r"\r\n  you: ")
        turn = your_turn(child)
        break
    if turn is not None:
        child.sendline("A")
        child.expect("── the round is over")
    child.expect(r"You \(seat \d\): [+-]\d+")
    child.expect("replay written to")
    return str(child.logfile_read.getvalue())


def settlement(text: str) -> list[str]:
    lines = [x.rstrip() for x in text.replace("\r", "").splitlines()]
    start = lines.index(next(x for x in lines if x.startswith("── the round is over"))) + 1
    return lines[start:start + 6]


def test_a_round_at_the_terminal(tmp_path: Path, server: str) -> None:
    local, remote = tmp_path / "local.json", tmp_path / "remote.json"
    child = spawn("--seed", "5", "--variant", "fengkuang", "--save", str(local))
    child.expect("shuangkou play · ")
    child.expect("You sit at seat (\\d)")
    shown = play_a_round(child)
    assert child.finish() == 0
    replay = json.loads(local.read_text())
    scored = subprocess.run([sys.executable, "-m", "shuangkou.service", "score", str(local)],
                            capture_output=True, text=True, timeout=60)
    assert scored.returncode == 0, scored.stderr
    assert settlement(shown) == scored.stdout.strip().splitlines()
    assert core.generate_replay("fengkuang", 5)["hands"] == replay["hands"]   # the seed's deal
    # the same keys against the server: the same round
    child = spawn("--seed", "5", "--variant", "fengkuang", "--save", str(remote),
                  "--server", server)
    play_a_round(child)
    assert child.finish() == 0
    assert remote.read_bytes() == local.read_bytes()


@pytest.mark.parametrize("variant", list(core.BUILTIN))
def test_every_variant_to_the_end(tmp_path: Path, variant: str) -> None:
    saved = tmp_path / "round.json"
    child = spawn("--seed", "2", "--variant", variant, colour=True)
    assert your_turn(child) is not None
    child.sendline("A")
    child.expect("── the round is over")
    child.expect(r"Save the replay\? file name, or Enter for no: ")
    child.sendline(str(saved))
    assert child.finish() == 0
    assert "\x1b[" in child.logfile_read.getvalue()
    result = core.score_replay(saved.read_text())
    assert result.variant == variant


def test_colours_mark_red_suits(tmp_path: Path) -> None:
    child = spawn("--seed", "1", colour=True)
    child.expect("your hand")
    child.expect("> ")
    assert re.search(r"\x1b\[31;1m(10|[2-9JQKA])[♥♦]", child.logfile_read.getvalue())
    child.sendline("q")
    child.expect("You left the round.")
    assert child.finish() == 0


def test_leaving_writes_the_replay_so_far(tmp_path: Path) -> None:
    saved = tmp_path / "left.json"
    child = spawn("--seed", "4", "--save", str(saved))
    assert your_turn(child) is not None
    child.sendline("a")                     # 托管 makes this one move
    child.expect(r"\r\n  you: ")
    assert your_turn(child) is not None
    child.sendline("s")
    child.expect("replay written to")
    child.expect("> ")
    child.sendline("q")
    assert child.finish() == 0
    view = subprocess.run([sys.executable, "-m", "shuangkou.service", "view", str(saved), "-o",
                           str(tmp_path / "left.html")], capture_output=True, text=True,
                          timeout=60)
    assert "rejected as a whole: the replay ends before the round is over" in view.stderr


def test_unreachable_server_is_one_line() -> None:
    port = free_port()
    done = subprocess.run([sys.executable, "-m", "shuangkou.service", "play", "--seed", "1",
                           "--server", f"127.0.0.1:{port}"], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "UNAVAILABLE" in done.stderr
    bad = subprocess.run([sys.executable, "-m", "shuangkou.service", "play", "--variant",
                          "nope"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "unknown variant" in bad.stderr
