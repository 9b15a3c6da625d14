"""Text from outside made safe to print on a terminal: the one escaping function.

A house variant's name or source, a file name, a remote server's answer or error message
can hold terminal control sequences (``ESC ] 0 ; … BEL`` retitles the window, ``ESC [ 2 J``
clears the screen, OSC 8 plants a link, a lone CR or a C1 ``CSI`` rewrites the line) or
bidirectional controls that reorder what follows them (U+202E). :func:`shown` writes every
such character as a visible escape (``\\x1b``, ``\\u009b``, ``\\u202e``), so the text reads as
it is and does nothing. Every command that prints such text passes it through here (``shuangkou
variants``, ``play``, the other one-off commands); the HTML page isolates names instead
(service/view/page.py).
"""

from __future__ import annotations

import re

__all__ = ["shown"]

# C0 controls and DEL, the C1 controls (U+0080–U+009F: 8-bit CSI, OSC …), the line and
# paragraph separators, and the bidirectional embeddings, overrides, isolates and marks.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e"
                     "\u2066-\u2069]")
_UNSAFE_KEEPING_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e"
                                   "\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    # From DEL up as \\u, which JSON reads back as the same character: a JSON answer
    # passed through here stays the same JSON (json.dumps has escaped the C0 controls).
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x7F else f"\\u{code:04x}"


def shown(text: str, *, lines: bool = False) -> str:
    """``text`` with every control character written as an escape; ``lines``: keep newlines
    and tabs (a whole multi-line answer whose own layout uses them; a name is escaped
    without, so that it cannot fake a line)."""
    return (_UNSAFE_KEEPING_LINES if lines else _UNSAFE).sub(_escape, text)
