"""One-off questions and demos: ``shuangkou classify | compare | plays | score | generate |
variants``.

Each command answers from the local core, or from a running service with ``--server
HOST:PORT`` (through :mod:`shuangkou.service.client`), and prints the same either way: text for
people, or one JSON document with ``--json`` for scripts. Errors are one line on stderr,
``shuangkou COMMAND: message``; exit status 0 on success, 1 for bad input (cards, plays,
replays, variants), 2 for bad usage, an unreadable file or an unreachable server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .api import DEFAULT_VARIANT
from .shown import shown

if TYPE_CHECKING:
    from shuangkou.core._core import _KindName as KindName

__all__ = ["COMMANDS", "main"]

# name -> one-line help (also listed by `shuangkou --help`)
COMMANDS = {
    "classify": "every reading of a play",
    "compare": "does a play beat the one on the table",
    "plays": "legal plays from a hand, leading or following",
    "score": "settle a round from a replay or a summary",
    "generate": "seeded random replays (JSON lines)",
    "variants": "list the rule sets, or show one",
}
DEFAULT_LIMIT = 100       # plays listed unless --limit says otherwise (0: the server's cap)
VARIANT_FILE_SUFFIXES = (".toml", ".json")


class Failed(Exception):
    """A one-line failure: exit 1 for bad input, 2 for usage/IO/server trouble."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# ----------------------------------------------------------------------------- rule sets

def _house_variants(paths: Sequence[str]) -> dict[str, Any]:
    """House variants by id from TOML/JSON files (``core.load_variants``)."""
    from shuangkou import core

    found: dict[str, Any] = {}
    for path in paths:
        _variant_file(path)
        try:
            variants = core.load_variants(path)   # a built-in id is refused by the core
        except OSError as exc:
            raise Failed(f"cannot read variant file {path!r}: {exc.strerror or exc}", 2) \
                from None
        for v in variants:
            found[v.id] = v
    return found


def _variant_file(path: str) -> None:
    """Refuse, saying what a variant file is, a path that names none."""
    if Path(path).is_dir():
        raise Failed(f"{path!r} is a folder: a house variant file is a TOML or JSON file, "
                     "e.g. examples/variants/my_house.toml", 2)
    if not Path(path).is_file():
        raise Failed(f"variant file {path!r} does not exist", 2)


def resolve_variant(spec: str, house: dict[str, Any], remote: bool) -> Any:
    """``--variant``: a built-in id, a house id (from ``--variants``), or a house file.

    Against a server a plain id is sent as is (the server may have registered house
    variants of its own); locally it must be a built-in or a house id.
    """
    from shuangkou import core

    if spec in house:
        return house[spec]
    if Path(spec).is_dir() and spec not in core.BUILTIN:   # a folder named like an id: the id
        _variant_file(spec)
    if spec.endswith(VARIANT_FILE_SUFFIXES) or Path(spec).is_file():
        variants = list(_house_variants([spec]).values())
        if len(variants) != 1:
            raise Failed(f"{spec} defines {len(variants)} variants "
                         f"({', '.join(v.id for v in variants)}); pass it with --variants "
                         "FILE and name one with --variant ID", 2)
        return variants[0]
    if not remote:
        core.get_variant(spec)   # VariantError: unknown id
    return spec


def _declaration(text: str | None) -> tuple[KindName | None, int | None]:
    """``--declare KIND[:TOP]``, TOP a rank as written in cards (9, T, A, 2, SJ, BJ)."""
    from shuangkou import core

    if text is None:
        return None, None
    kind, _, top = text.partition(":")
    if kind not in core.KINDS:
        raise Failed(f"--declare: {kind!r} is not a play type ({', '.join(core.KINDS)})", 2)
    if not top:
        return kind, None
    from shuangkou.core.cards import rank_position

    rank = rank_position(top)
    if rank is None:
        raise Failed(f"--declare: {top!r} is not a rank (3-9, T, J, Q, K, A, 2, SJ, BJ)", 2)
    return kind, rank


# ----------------------------------------------------------------------------- the core

def _reading(r: Any) -> dict[str, Any]:
    from .client import reading_dict

    return reading_dict(r.kind, r.describe(), r.cards, r.top, r.top_rank, r.star, r.is_bomb)


class LocalRules:
    """The questions answered by the core in this process, as :class:`RemoteRules` would."""

    def close(self) -> None:
        pass

    def classify(self, cards: str, variant: Any, declare: tuple[KindName | None, int | None]
                 ) -> dict[str, Any]:
        from shuangkou import core

        c = core.classify(cards, variant)
        reading = c.primary
        if declare[0] is not None:
            reading = core.play_reading(cards, variant, None, *declare)
        return {"cards": core.format_cards(c.cards), "reading": _reading(reading),
                "readings": [_reading(r) for r in c.readings]}

    def compare(self, current: str, play: str, variant: Any,
                current_declare: tuple[KindName | None, int | None],
                declare: tuple[KindName | None, int | None]) -> dict[str, Any]:
        from shuangkou import core
        from shuangkou.core.errors import IllegalPlay

        standing = core.classify(current, variant).primary
        if current_declare[0] is not None:
            standing = core.play_reading(current, variant, None, *current_declare)
        primary = core.classify(play, variant).primary
        if declare[0] is not None:   # the declared reading either beats or it does not
            chosen = core.play_reading(play, variant, None, *declare)
            beats = chosen.beats(standing)
        else:
            try:
                chosen, beats = core.play_reading(play, variant, standing), True
            except IllegalPlay:   # no reading beats: the primary is reported
                chosen, beats = primary, False
        return {"beats": beats, "current": _reading(standing), "play": _reading(chosen)}

    def plays(self, hand: str, variant: Any, to_beat: str | None, *, kinds: Sequence[KindName],
              bombs_only: bool, max_cards: int | None, limit: int, counts: bool
              ) -> dict[str, Any]:
        from shuangkou import core

        from .limits import Limits

        beat = core.play_reading(to_beat, variant) if to_beat else None
        found = core.legal_plays(hand, variant, beat, kinds=list(kinds) or None,
                                     bombs_only=bombs_only, max_cards=max_cards,
                                     limit=Limits().plays_limit(limit))
        result: dict[str, Any] = {
            "plays": [{"cards": list(p.text), "reading": _reading(p.reading)} for p in found],
            "truncated": found.truncated}
        if counts:
            result["counts"] = core.count_plays(hand, variant, beat)
        return result

    def score_replay(self, document: str, variant: Any) -> dict[str, Any]:
        from shuangkou import core

        replay = json.loads(document)
        if variant is not None and isinstance(replay, dict):
            own, named = replay.get("variant"), variant if isinstance(variant, str) else variant.id
            if own is not None and own != named:   # as the server: no silent override
                raise Failed(f"the replay names variant {own!r} but the request names {named!r}")
            replay["variant"] = variant
        return core.score_replay(replay).to_dict()

    def score_summary(self, summary: dict[str, Any], variant: Any) -> dict[str, Any]:
        # The server's own summary path, so local and remote agree to the error message.
        from .api.results import result_to_dict, score_summary
        from .client import summary_message
        from .limits import Limits

        return result_to_dict(score_summary(summary_message(summary), variant, Limits()))

    def variants(self) -> list[dict[str, Any]]:
        from shuangkou import core

        from .api.convert import variant_data

        return [variant_data(v) for v in core.list_variants()]

    def variant(self, variant: Any) -> dict[str, Any]:
        from shuangkou import core

        from .api.convert import variant_data

        return variant_data(core.get_variant(variant))


# ----------------------------------------------------------------------------- text output

def _reading_line(r: dict[str, Any]) -> str:
    text: str = r["text"]
    return text


def text_classify(result: dict[str, Any]) -> str:
    lines = [f"cards     {' '.join(result['cards'])}",
             f"stands    {_reading_line(result['reading'])}"]
    for i, r in enumerate(result["readings"]):
        lines.append(f"{'readings' if i == 0 else '':<9} {_reading_line(r)}")
    return "\n".join(lines)


def text_compare(result: dict[str, Any]) -> str:
    verb = "beats" if result["beats"] else "does not beat"
    return f"{'yes' if result['beats'] else 'no'}: {result['play']['text']} {verb} " \
           f"{result['current']['text']}"


def text_plays(result: dict[str, Any]) -> str:
    rows = [(" ".join(p["cards"]), p["reading"]["text"]) for p in result["plays"]]
    width = max((len(cards) for cards, _ in rows), default=0)
    lines = [f"{cards:<{width}}  {text}" for cards, text in rows]
    n = len(rows)
    lines.append(f"{n} play{'' if n == 1 else 's'}"
                 + (" (truncated: more exist; raise --limit)" if result["truncated"] else ""))
    if "counts" in result:
        counts = {k: c for k, c in result["counts"].items() if c}
        lines.append("counts: " + (", ".join(f"{k} {c}" for k, c in counts.items()) or "none")
                     + f" (total {sum(counts.values())})")
    return "\n".join(lines)


def text_score(result: dict[str, Any]) -> str:
    order = " ".join(str(s) for s in result["finish_order"])
    head = f"{result['variant']}: {result['kind']}"
    if result.get("winning_team") is not None:
        head += f" win for team {result['winning_team']}"
    if result.get("escaper") is not None:
        head += f" (seat {result['escaper']} escaped)"
    head += f"; finish order {order or '-'}; stake {result['stake']}"
    lines = [head, "seat  team  place  base  star  mult  contrib  final"]
    for s in result["seats"]:
        place = "-" if s["place"] is None else s["place"]
        lines.append(f"{s['seat']:>4}  {s['team']:>4}  {place:>5}  {s['base']:>4}  "
                     f"{s['star']:>4}  {s['multiplier']:>4}  {s['contribution']:>7}  "
                     f"{s['final']:>5}")
    return "\n".join(lines)


def _table_value(value: Any) -> str:
    # A variant's values come from house files or a remote server: every one is escaped.
    if isinstance(value, dict):
        return ", ".join(f"{shown(str(k))} {_table_value(v)}"
                         for k, v in value.items()) or "-"
    if isinstance(value, list):
        return " ".join(_table_value(v) if not isinstance(v, list)
                        else "(" + " ".join(shown(str(x)) for x in v) + ")"
                        for v in value) or "-"
    return "-" if value is None or value == "" else shown(str(value))


def text_variant(data: dict[str, Any]) -> str:
    keys = {k: shown(str(k)) for k in data}
    width = max(len(k) for k in keys.values())
    return "\n".join(f"{keys[k]:<{width}}  {_table_value(v)}" for k, v in data.items())


def text_variants(rows: list[dict[str, Any]]) -> str:
    table = [("id", "name", "extends", "decks", "hand", "wild")]
    table += [(shown(str(v["id"])), shown(str(v["name"])), shown(str(v["extends"] or "-")),
               str(v["decks"]), str(v["hand_size"]),
               shown(" ".join(map(str, v["wild_jokers"]))) or "-") for v in rows]
    widths = [max(_width(row[i]) for row in table) for i in range(len(table[0]))]
    return "\n".join("  ".join(cell + " " * (w - _width(cell)) for cell, w in zip(row, widths,
                                                                                    strict=True))
                     .rstrip() for row in table)


def _width(text: str) -> int:
    """Terminal columns: CJK characters take two."""
    return sum(2 if ord(ch) >= 0x1100 else 1 for ch in text)


# ----------------------------------------------------------------------------- commands

def _read_text(path: str) -> str:
    """A replay or summary file (``-``: stdin), read as ``view`` and ``review`` read one:
    bytes that are not UTF-8 as U+FFFD, at most the maximum line size of an archive."""
    from .inputs import read_replay

    try:
        return read_replay(path)
    except OSError as exc:
        raise Failed(f"cannot read {path}: {exc.strerror or exc}", 2) from None
    except ValueError as exc:
        raise Failed(str(exc), 2) from None


SUMMARY_KEYS = {"variant", "finish_order", "bombs", "hands", "escape", "stake", "table_fee",
                "cards_left"}


def read_summary(data: dict[str, Any]) -> dict[str, Any]:
    """Check the shape of a JSON round summary (types; the rules are checked by scoring)."""
    unknown = sorted(set(data) - SUMMARY_KEYS)
    if unknown:
        raise Failed(f"summary: unknown field {unknown[0]!r} (fields: "
                     f"{', '.join(sorted(SUMMARY_KEYS))})")

    def ints(name: str) -> None:
        value = data.get(name)
        if value is not None and not (isinstance(value, list) and all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in value)):
            raise Failed(f"summary: {name!r} must be a list of non-negative integers")

    ints("finish_order")
    ints("cards_left")
    if "finish_order" not in data:
        raise Failed("summary: 'finish_order' is required (seats in the order they went out)")
    for name in ("escape", "stake", "table_fee"):
        value = data.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                  or value < 0):
            raise Failed(f"summary: {name!r} must be a non-negative integer")
    bombs = data.get("bombs", [])
    if not isinstance(bombs, list):
        raise Failed("summary: 'bombs' must be a list of {\"seat\": n, \"cards\": \"...\"}")
    for i, bomb in enumerate(bombs):
        if not (isinstance(bomb, dict) and isinstance(bomb.get("seat"), int)
                and isinstance(bomb.get("cards"), str)
                and set(bomb) <= {"seat", "cards", "declare", "declare_top"}):
            raise Failed(f"summary: bombs[{i}] must be {{\"seat\": n, \"cards\": \"...\"}} "
                         "(optionally \"declare\": KIND, \"declare_top\": n)")
    hands = data.get("hands")
    if hands is not None and not (isinstance(hands, list) and all(
            isinstance(h, (str, list)) for h in hands)):
        raise Failed("summary: 'hands' must be a list of 4 card strings")
    return data


def cmd_classify(rules: Any, args: argparse.Namespace, variant: Any) -> tuple[Any, str]:
    result = rules.classify(args.cards, variant, _declaration(args.declare))
    return result, text_classify(result)


def cmd_compare(rules: Any, args: argparse.Namespace, variant: Any) -> tuple[Any, str]:
    result = rules.compare(args.current, args.play, variant,
                           _declaration(args.current_declare), _declaration(args.declare))
    return result, text_compare(result)


def cmd_plays(rules: Any, args: argparse.Namespace, variant: Any) -> tuple[Any, str]:
    from shuangkou import core

    for kind in args.kind:
        if kind not in core.KINDS:
            raise Failed(f"--kind: {kind!r} is not a play type ({', '.join(core.KINDS)})",
                         2)
    result = rules.plays(args.hand, variant, args.beat, kinds=args.kind,
                         bombs_only=args.bombs_only, max_cards=args.max_cards,
                         limit=args.limit, counts=args.counts)
    return result, text_plays(result)


def cmd_score(rules: Any, args: argparse.Namespace, variant: Any) -> tuple[Any, str]:
    text = _read_text(args.file)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = ""
        if exc.msg == "Extra data":   # several documents: JSON lines, an archive's form
            hint = ("; it holds more than one JSON document (JSON lines?): `shuangkou "
                    "score-replays` scores a file of replays, one per line")
        raise Failed(f"{args.file} is not JSON: {exc}{hint}") from None
    if not isinstance(data, dict):
        raise Failed(f"{args.file}: a replay or a summary is a JSON object")
    if "actions" in data or "finish_order" not in data:   # a replay (docs/replays.md)
        result = rules.score_replay(text, variant if args.variant else None)
    else:
        summary = read_summary(data)
        if not args.variant and isinstance(summary.get("variant"), str):
            variant = resolve_variant(summary["variant"], args.house, args.server is not None)
        summary.pop("variant", None)
        result = rules.score_summary(summary, variant)
    return result, text_score(result)


def cmd_variants(rules: Any, args: argparse.Namespace, variant: Any) -> tuple[Any, str]:
    from shuangkou import core

    if args.which is None:
        rows = rules.variants()
        if args.server is None:   # locally, house files given with --variants are listed too
            from .api.convert import variant_data

            rows += [variant_data(v) for v in args.house.values()]
        return rows, text_variants(rows)
    if args.which.endswith(VARIANT_FILE_SUFFIXES) or Path(args.which).is_file() or (
            Path(args.which).is_dir() and args.which not in core.BUILTIN):
        shown = [rules.variant(v) for v in _house_variants([args.which]).values()]
    else:
        shown = [rules.variant(resolve_variant(args.which, args.house, args.server is not None))]
    return (shown[0] if len(shown) == 1 else shown), "\n\n".join(map(text_variant, shown))


def cmd_generate(args: argparse.Namespace, variant: Any) -> Iterator[str]:
    """The replays' lines, once the arguments are checked (nothing is written before)."""
    from shuangkou import core

    if args.count < 0 or not 0.0 <= args.escape <= 1.0:
        raise Failed("--count must be >= 0 and --escape a probability (0-1)", 2)
    rules = core.get_variant(variant)
    if args.escape and rules.escape == "none":
        # Such replays could not be scored: say so rather than write them.
        with_escape = ", ".join(v.id for v in core.list_variants() if v.escape != "none")
        raise Failed(f"--escape: {rules.id} defines no escape settlement, so an escaped round "
                     f"could not be scored; use a variant that does ({with_escape})", 2)

    def lines() -> Iterator[str]:
        for seed in range(args.seed, args.seed + args.count):
            replay = core.generate_replay(variant, seed, args.escape)
            if not isinstance(variant, str):
                from .api.convert import variant_document

                replay["variant"] = variant_document(variant)
            yield json.dumps(replay, ensure_ascii=False, separators=(",", ":")) + "\n"
    return lines()


@contextlib.contextmanager
def _opened(path: str | None, out: IO[str]) -> Iterator[IO[str]]:
    """Where the answer goes: ``-o FILE``, or ``out`` (stdout) without it or for ``-``."""
    if path is None or path == "-":
        yield out
        return
    try:
        f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed below, after the yield
    except OSError as exc:
        raise Failed(f"cannot write {path}: {exc.strerror or exc}", 2) from None
    with f:
        yield f


# ----------------------------------------------------------------------------- parser

def _common(p: argparse.ArgumentParser, *, server: bool = True) -> None:
    """--variant/--variants everywhere; --json and --server where the answer is a result
    (``generate`` prints JSON lines and needs no server)."""
    p.add_argument("-v", "--variant", metavar="ID|FILE",
                   help=f"rule set: a built-in id (default {DEFAULT_VARIANT}), a house id from "
                        "--variants, or a house variant file (.toml/.json)")
    p.add_argument("--variants", metavar="FILE", action="append", default=[],
                   help="load house variants from a TOML/JSON file (repeatable)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the answer to FILE instead of stdout ('-': stdout)")
    if server:
        p.add_argument("--json", action="store_true", help="print one JSON document")
        p.add_argument("--server", metavar="HOST:PORT",
                       help="ask a running service instead of the local core")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shuangkou", add_help=False)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("classify", help=COMMANDS["classify"],
                       description="Every reading of a set of cards (§7) and the one that "
                                   "stands: the declared one, else the primary.")
    p.add_argument("cards", help='the play, e.g. "45678 BJ" or "7S 7H 7D 7C"')
    p.add_argument("--declare", metavar="KIND[:TOP]", help="the reading meant, e.g. straight:9")
    _common(p)

    p = sub.add_parser("compare", help=COMMANDS["compare"],
                       description="Whether PLAY beats CURRENT (§7 rule 5, §8) and the reading "
                                   "that would stand.")
    p.add_argument("current", help="the play standing on the table")
    p.add_argument("play", help="the play made on top of it")
    p.add_argument("--current-declare", metavar="KIND[:TOP]",
                   help="the reading CURRENT stands in")
    p.add_argument("--declare", metavar="KIND[:TOP]", help="the reading PLAY is declared as")
    _common(p)

    p = sub.add_parser("plays", help=COMMANDS["plays"],
                       description="The legal plays from HAND (docs/enumeration.md): leading, "
                                   "or with --beat the plays that beat it (passing is always "
                                   "allowed then).")
    p.add_argument("hand", help='the hand, e.g. "33 44 55 66 77 BJ"')
    p.add_argument("--beat", metavar="CARDS", help="the play to beat (default: lead)")
    p.add_argument("--kind", action="append", default=[], metavar="KIND",
                   help="only this play type (repeatable)")
    p.add_argument("--bombs-only", action="store_true", help="only bombs")
    p.add_argument("--max-cards", type=int, metavar="N", help="only plays of at most N cards")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                   help=f"list at most N plays (default {DEFAULT_LIMIT}; 0: the server cap)")
    p.add_argument("--counts", action="store_true", help="also count every legal play by type")
    _common(p)

    p = sub.add_parser("score", help=COMMANDS["score"],
                       description="Settle one round (§9, §10). FILE (or - for stdin) holds "
                                   "a replay (docs/replays.md), validated move by move, or a "
                                   'summary: {"finish_order": [0, 2], "bombs": [{"seat": 0, '
                                   '"cards": "7777"}], "stake": 1, ...}.')
    p.add_argument("file", metavar="FILE", help="a replay or summary JSON file, - for stdin")
    _common(p)

    p = sub.add_parser("generate", help=COMMANDS["generate"],
                       description="Deal and play out rounds with a simple bot "
                                   "(core.generate_replay): one replay per line, "
                                   "reproducible from the variant and seed.")
    p.add_argument("-n", "--count", type=int, default=1, help="replays to generate (default 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first replay (default 0)")
    p.add_argument("--escape", type=float, default=0.0, metavar="P",
                   help="probability that a round ends in an escape (default 0)")
    _common(p, server=False)

    p = sub.add_parser("variants", help=COMMANDS["variants"],
                       description="List the rule sets (built-in, and house variants from "
                                   "--variants or the server), or show every field of one: "
                                   "an id or a house variant file.")
    p.add_argument("which", nargs="?", metavar="ID|FILE", help="the variant to show")
    _common(p)
    return parser


def _server_target(target: str) -> str:
    """``host:port`` or ``host:port,host:port`` (a fixed list, round-robin)."""
    if "," in target and ":" in target and not target.startswith(("ipv4:", "ipv6:", "dns:")):
        return "ipv4:" + ",".join(t.replace("localhost:", "127.0.0.1:", 1)
                                  for t in target.split(","))
    return target


def main(argv: Sequence[str], out: IO[str] | None = None) -> int:
    """Run one command (``argv[0]`` in COMMANDS); the exit status."""
    out = out or sys.stdout
    args = build_parser().parse_args(argv)    # usage errors exit 2
    command = args.command
    rules: Any = None
    try:
        from shuangkou.core.errors import ShuangkouError

        from .client import ServerError
        try:
            args.house = _house_variants(args.variants)
            remote = getattr(args, "server", None) is not None
            variant = resolve_variant(args.variant or DEFAULT_VARIANT, args.house, remote)
            if command == "generate":
                lines = cmd_generate(args, variant)
                with _opened(args.output, out) as stream:
                    stream.writelines(lines)
                return 0
            if remote:
                from .client import RemoteRules, check_target

                try:
                    target = _server_target(check_target(args.server))
                except ValueError as exc:
                    raise Failed(str(exc), 2) from None
                rules = RemoteRules(target)
            else:
                rules = LocalRules()
            handler: Callable[..., tuple[Any, str]] = globals()[f"cmd_{command}"]
            data, text = handler(rules, args, variant)
        except ServerError as exc:
            raise Failed(str(exc), 2 if exc.usage else 1) from None
        except ShuangkouError as exc:
            raise Failed(str(exc)) from None
        finally:
            if rules is not None:
                rules.close()
        # Names, sources and messages come from files and servers: the whole answer is
        # escaped (its own newlines kept; the JSON stays the same JSON).
        with _opened(args.output, out) as stream:
            stream.write(shown(json.dumps(data, ensure_ascii=False, indent=2) if args.json
                               else text, lines=True) + "\n")
    except Failed as exc:
        print(f"shuangkou {command}: {shown(str(exc))}", file=sys.stderr)
        return exc.status
    return 0
