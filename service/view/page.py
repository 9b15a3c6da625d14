"""The round page: a :class:`~shuangkou.core.story.RoundStory` as one self-contained HTML page.

Everything is in the file (the style and the step-through script inlined, no font, image or
address fetched), so the page works opened from disk and read with JavaScript off: the
script only adds stepping through the actions with the four hands shown after each. Cards
are drawn with their suit symbols and colours (jokers apart, a wild joker marked with the
rank it stood for); the layout reflows down to a phone's width.

The page renders what the story says and computes nothing of the rules: the reading that
stood, the star, the place, every settlement term come from the story and its result.
Elements carry their values in ``data-`` attributes (``data-index``, ``data-seat``,
``data-cards``, ``data-reading`` on each action, ``data-term`` on each settlement cell) for
tests and scripts that read the page.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from typing import Any

from shuangkou.core import format_cards
from shuangkou.core.cards import (
    RED_SUITS,
    SEATS,
    SUIT_SYMBOLS,
    card_rank,
    card_suit,
    is_seat,
    partner,
    rank_name,
    same_team,
    team,
)
from shuangkou.core.declaration import Declaration
from shuangkou.core.fairplay import TableScore
from shuangkou.core.review import Candidate, Decision, Review
from shuangkou.core.round_ends import round_end
from shuangkou.core.story import RoundStory, Step, Trick, story_of

from ..review.fair import (
    CAVEATS,
    TAKEN_TEXT,
    block_text,
    concede_text,
    engine_tells,
    evidence_text,
    fair_played,
    round_fair,
    tell_text,
)

__all__ = ["page_of", "render", "render_index", "card", "KIND_TEXT"]

#: The kinds of win as a Wenzhou player names them.
KIND_TEXT = {"double": "Double win (双扣)", "single": "Single win (单扣)",
             "flat": "Flat win (平扣)", "escape": "Escape (逃跑)"}
_JOKERS = {13: ("sj", "SJ", "small joker (小王)"), 14: ("bj", "BJ", "big joker (大王)")}
_WHOSE_STAR = {"winning_team": "the winning team's highest round star",
               "all": "the highest round star at the table",
               "winner": "the winner's own round star"}
_ESCAPE_RULES = {   # RULES.md §10.6, in one line each
    "none": "this rule set defines no escape settlement",
    "bianfeng": "the escaper pays 4 × M × 2, M from the highest round star so far",
    "fengkuang": "M from the best bomb any current hand could play; the escaper pays 4 × M "
                 "and each of its two opponents receives M",
    "qianbian": "S = the highest star of a bomb played or held; the escaper pays 3 × 4 × M(S) "
                "and every other player whose team played or holds a bomb of star S "
                "receives 4 × M(S)",
    "huopin": "the escaper pays the escape fee × stake plus the table fee",
}
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th"}
_MAX_WRITTEN = 20_000     # characters of a malformed document shown


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _i(text: object) -> str:
    """Text from the replay or its file (a name, a file name, a reason quoting input),
    escaped and isolated: a right-to-left override (U+202E) or an embedding in it cannot
    reorder the page's own text around it (``<bdi>``: its own direction, unicode-bidi
    isolate)."""
    return f"<bdi>{_e(text)}</bdi>"


def _plain_isolated(text: object) -> str:
    """:func:`_i` where no markup may stand (the ``<title>``): the isolate characters
    FSI … PDI, which also close any override the text leaves open."""
    return f"\u2068{text}\u2069"


def _n(value: int) -> str:
    """A number as people write it: a true minus sign."""
    return f"−{-value:,}" if value < 0 else f"{value:,}"


def _signed(value: int) -> str:
    return f"+{value:,}" if value > 0 else _n(value)


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- cards

def card(code: int, stands_for: int | None = None) -> str:
    """One card: rank and suit symbol, red or black; a card written without a suit dashed;
    jokers apart; ``stands_for``: the rank a wild joker stood for."""
    token = format_cards([code])[0]
    rank, suit = card_rank(code), card_suit(code)
    wild = ""
    if stands_for is not None:
        wild = f'<span class="as" title="wild, as {_e(rank_name(stands_for))}">' \
               f'={_e(_rank_text(stands_for))}</span>'
    if rank in _JOKERS:
        cls, text, title = _JOKERS[rank]
        return (f'<span class="c {cls}{" wild" if wild else ""}" data-card="{token}" '
                f'title="{title}">{text}{wild}</span>')
    face = _rank_text(rank)
    if suit >= len(SUIT_SYMBOLS):
        return f'<span class="c x" data-card="{token}" title="{face}, any suit">{face}</span>'
    red = " red" if suit in RED_SUITS else ""
    return (f'<span class="c{red}" data-card="{token}">{face}'
            f'<span class="s">{SUIT_SYMBOLS[suit]}</span></span>')


def _rank_text(rank: int) -> str:
    name = rank_name(rank)
    return "10" if name == "T" else name


def _cards(codes: Sequence[int], stands_for: Sequence[int | None] = ()) -> str:
    marks = list(stands_for) + [None] * (len(codes) - len(stands_for))
    return ('<span class="cards">' + "".join(card(c, w) for c, w in zip(codes, marks,
                                                                          strict=True))
            + "</span>")


def _seat(s: int) -> str:
    return f'<span class="seat t{team(s)}">seat {s}</span>'


def _seats(seats: Iterable[int]) -> str:
    names = [str(s) for s in seats]
    if len(names) == 1:
        return f"seat {names[0]}"
    return "seats " + ", ".join(names[:-1]) + " and " + names[-1]


def _tag(cls: str, text: str) -> str:
    return f'<span class="tag {cls}">{_e(text)}</span>'


def _declared(d: Declaration) -> str:
    parts = [str(d.kind)]
    if d.top is not None:
        parts.append(f"top {rank_name(d.top) if isinstance(d.top, int) else d.top}")
    if d.star is not None:
        parts.append(f"{d.star}★")
    if d.wilds is not None:
        wilds = " ".join(rank_name(w) if isinstance(w, int) else str(w) for w in d.wilds)
        parts.append(f"wilds as {wilds or 'none'}")
    return "declared " + " ".join(parts)


# ----------------------------------------------------------------------------- sections

def _verdict(story: RoundStory) -> str:
    rej, result = story.rejection, story.result
    if rej is not None:
        where = f"at action {rej.action}" if rej.action is not None else "as a whole"
        link = '<a href="#rejected">' if story.variant is not None else "<a>"
        return (f'<div class="verdict bad" id="verdict" data-action="'
                f'{"" if rej.action is None else rej.action}">{link}Rejected {where}</a>'
                f'<span class="reason">{_i(rej.reason)}</span></div>')
    assert result is not None
    head = KIND_TEXT[result.kind]
    if result.winning_team is not None:
        head += (f" for team {result.winning_team} "
                 f"({_seats((result.winning_team, result.winning_team + 2))})")
    if result.escaper is not None:
        head += f": seat {result.escaper} left the round"
    finals = " ".join(_signed(f) for f in result.final)
    return (f'<div class="verdict ok" id="verdict" data-kind="{result.kind}">{_e(head)}'
            f'<span class="reason">finals by seat: {finals}</span></div>')


def _seating(story: RoundStory) -> str:
    assert story.dealt is not None and story.leader is not None
    rows = []
    for t in range(SEATS):
        d = story.hand_at[t]
        tags = []
        if t == story.leader:
            tags.append(_tag("out", "leads first"))
        if story.revealed is not None and story.revealed in story.dealt[d]:
            tags.append(f'<span class="tag decl">holds {card(story.revealed)}</span>')
        if d != t:
            tags.append(_tag("wind", f"moved from dealt seat {d}"))
        rows.append(f'<div data-seat="{t}" data-dealt="{d}">{_seat(t)} team {team(t)} · '
                    f'dealt hand {d}<br>{"".join(tags)}</div>')
    moved = [t for t in range(SEATS) if story.hand_at[t] != t]
    if story.revealed is not None:
        why = (f"The leader, dealt seat {story.leader}, revealed "
               f"{card(story.revealed)}; the holder of the other copy is its partner")
    else:
        why = "The teams are as the replay states them" if story.document and (
            "teams" in story.document or "partner" in story.document) \
            else "No card was revealed: the teams are as dealt"
    if moved:
        why += (f". Dealt seats {moved[0]} and {moved[1]} swapped places, so the partner sits "
                f"opposite the leader (§9).")
    else:
        why += ": nobody moved (§9)."
    return (f'<section id="seating"><h2>Seating</h2><p>{why} Seats 0 and 2 play against '
            f'1 and 3; play goes 0 → 1 → 2 → 3.</p><div class="seats">{"".join(rows)}</div>'
            f"</section>")


def _hands(title: str, ident: str, hands: Sequence[Sequence[int]], note: str = "") -> str:
    rows = []
    for s in range(SEATS):
        codes = sorted(hands[s])
        count = f"{len(codes)} cards" if codes else "out"
        rows.append(f'<div class="hand" data-seat="{s}" data-cards="'
                    f'{_e(" ".join(format_cards(codes)))}">{_seat(s)}<span class="count">'
                    f"{count}</span>{_cards(codes) if codes else ''}</div>")
    return (f'<section id="{ident}"><h2>{title}</h2>{note}{"".join(rows)}</section>')


def _lead_text(story: RoundStory, trick: Trick) -> str:
    if trick.lead == "first":
        return "leads the first trick"
    if trick.lead == "wind":
        return (f"leads by 接风: seat {trick.wind_from}, who took the last trick, had gone "
                "out")
    return "took the last trick and leads"


def _step(story: RoundStory, step: Step, decision: Decision | None = None) -> str:
    cls = ["step", step.kind]
    body = [f'<span class="n">#{step.index}</span>', _seat(step.seat)]
    reading = ""
    if step.kind == "play":
        assert step.reading is not None
        reading = step.reading.describe()
        body.append(_cards(step.cards, step.stands_for))
        notes = [_e(reading)]
        if step.declared is not None:
            notes.append(_tag("decl", _declared(step.declared)))
        if step.bomb is not None:
            cls.append("bomb")
            notes.append(f'<span class="tag bomb" id="b{step.seat}-{step.bomb}">bomb '
                         f"#{step.bomb} of seat {step.seat} · {step.reading.star}★</span>")
        if step.place is not None:
            notes.append(_tag("out", f"out {_ORDINAL[step.place]}"))
        if step.record.round_over:
            notes.append(_tag("out", "the round is over"))
        body.append(f'<span class="rd">{" ".join(notes)}</span>')
    elif step.kind == "pass":
        body.append('<span class="what">passes</span>')
    else:
        body.append('<span class="what">escapes (逃跑): the round ends</span>')
    cards_text = " ".join(format_cards(step.cards))
    reviewed = ""
    if decision is not None:
        cls.append(f"v-{decision.verdict}")
        body.append(_annotation(decision))
        best = decision.candidates[decision.best]
        reviewed = (f' data-verdict="{_e(decision.verdict)}" data-loss="'
                    f'{decision.loss:.2f}" data-best="{_e(_action_text(best))}"')
    return (f'<li class="{" ".join(cls)}" id="a{step.index}" data-index="{step.index}" '
            f'data-seat="{step.seat}" data-kind="{step.kind}" data-cards="{_e(cards_text)}" '
            f'data-reading="{_e(reading)}"{reviewed}>{"".join(body)}</li>')


def _rejected_step(story: RoundStory) -> str:
    rej = story.rejection
    assert rej is not None and rej.action is not None
    written = rej.written
    seat = written.get("seat") if isinstance(written, dict) else None
    body = [f'<span class="n">#{rej.action}</span>']
    if is_seat(seat):
        body.append(_seat(seat))
    if rej.cards:
        body.append(_cards(rej.cards))
    body.append(f'<pre class="written">{_e(json.dumps(written, ensure_ascii=False))}</pre>')
    body.append(f'<span class="why">Rejected: {_i(rej.reason)}</span>')
    return (f'<li class="step rejected" id="rejected" data-index="{rej.action}" '
            f'data-reason="{_e(rej.reason)}">{"".join(body)}</li>')


def _tricks(story: RoundStory, decisions: Mapping[int, Decision]) -> str:
    items = []
    rej = story.rejection
    open_trick = bool(story.tricks) and story.tricks[-1].won_by is None
    for k, trick in enumerate(story.tricks):
        steps = "".join(_step(story, s, decisions.get(s.index)) for s in trick.steps)
        if rej is not None and rej.action is not None and open_trick and \
                k == len(story.tricks) - 1:
            steps += _rejected_step(story)
        won = ""
        if trick.won_by is not None:
            won = (f'<p class="won">{_seat(trick.won_by)} takes the trick: everyone still '
                   "holding cards passed.</p>")
        lead = _e(_lead_text(story, trick))
        items.append(
            f'<li class="trick" id="t{trick.number}" data-trick="{trick.number}" '
            f'data-leader="{trick.leader}" data-lead="{trick.lead}" data-won-by="'
            f'{"" if trick.won_by is None else trick.won_by}"><h3>Trick {trick.number} '
            f'<span class="muted">· seat {trick.leader} {lead}</span></h3>'
            f'<ol class="steps">{steps}</ol>{won}</li>')
    if rej is not None and rej.action is not None and not open_trick:
        number = len(story.tricks) + 1
        items.append(f'<li class="trick" id="t{number}" data-trick="{number}"><h3>Trick '
                     f'{number} <span class="muted">· never played</span></h3>'
                     f'<ol class="steps">{_rejected_step(story)}</ol></li>')
    if rej is not None and rej.action is None:
        items.append(f'<li class="trick"><ol class="steps"><li class="step rejected" '
                     f'id="rejected" data-index="" data-reason="{_e(rej.reason)}">'
                     f'<span class="why">The replay stops here: {_i(rej.reason)}</span></li>'
                     "</ol></li>")
    count = len(story.steps)
    return (f'<section id="tricks"><h2>Tricks</h2><p class="muted">{len(story.tricks)} tricks, '
            f"{count} actions. A wild joker shows the rank it stood for; the reading is the "
            f'one that stood (§7 rule 6).</p><ol class="tricks">{"".join(items)}</ol>'
            "</section>")


def _bombs(story: RoundStory) -> str:
    rows = []
    for step in story.bombs:
        assert step.reading is not None and step.bomb is not None
        rows.append(f'<tr data-seat="{step.seat}" data-bomb="{step.bomb}" data-star='
                    f'"{step.reading.star}"><td>{_seat(step.seat)}</td><td>#{step.bomb}</td>'
                    f'<td class="l">{_cards(step.cards, step.stands_for)}</td>'
                    f'<td class="l">{_e(step.reading.describe())}</td>'
                    f"<td>{step.reading.star}★</td><td><a href=\"#a{step.index}\">"
                    f"#{step.index}</a></td></tr>")
    table = ("<p>No bomb was played.</p>" if not rows else
             '<div class="scroll"><table><thead><tr><th>seat</th><th>bomb</th>'
             '<th class="l">cards</th><th class="l">reading</th><th>star</th><th>action</th>'
             f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
    stars = ""
    if story.result is not None:
        items = "".join(
            f'<li data-seat="{s.seat}" data-star="{s.star}">{_seat(s.seat)}: round star '
            f"{s.star} ({_source(s.seat, s.star_source)})</li>" for s in story.result.seats)
        stars = (f"<p>Each seat's round star (§10.2; bombs are numbered from 0 per seat):</p>"
                 f'<ul class="plain">{items}</ul>')
    return f'<section id="bombs"><h2>Bombs and stars</h2>{table}{stars}</section>'


def _source(seat: int, source: Any) -> str:
    """Where a round star came from, linked to the bomb it names."""
    text = _e(source.describe())
    if source.bomb is None:
        return text
    return f'<a href="#b{seat}-{source.bomb}">{text}</a>'


def _finish(story: RoundStory) -> str:
    result = story.result
    out_at = {s.seat: s for s in story.steps if s.place is not None}
    order = "".join(
        f'<li data-seat="{seat}">{_seat(seat)} out {_ORDINAL[i + 1]}, at '
        f'<a href="#a{out_at[seat].index}">action {out_at[seat].index}</a></li>'
        for i, seat in enumerate(story.finish_order) if seat in out_at)
    lines = [f'<ol class="plain">{order}</ol>' if order else "<p>Nobody went out.</p>"]
    if result is not None:
        lines.append(f'<p id="kind" data-kind="{result.kind}">{_e(_kind_text(story))}</p>')
    return f'<section id="finish"><h2>Finishing order</h2>{"".join(lines)}</section>'


def _kind_text(story: RoundStory) -> str:
    result, v = story.result, story.variant
    assert result is not None and v is not None
    head = KIND_TEXT[result.kind]
    if result.escaper is not None:
        at = next((s.index for s in story.steps if s.kind == "escape"), None)
        return f"{head}: seat {result.escaper} escaped at action {at}; nobody wins."
    winner = result.finish_order[0]
    mate = partner(winner)
    if round_end(v.round_end).kou:
        assert story.hands is not None
        losers = [s for s in range(SEATS) if not same_team(s, winner)]
        held = [len(story.hands[s]) for s in losers]
        double, single = v.kou_thresholds
        return (f"{head} for team {team(winner)}: seat {winner} went out first; its opponents "
                f"({_seats(losers)}) still hold {held[0]} + {held[1]} = {sum(held)} cards "
                f"(double from {double}, single from {single}).")
    place = result.seats[mate].place
    return (f"{head} for team {team(winner)}: seat {winner} went out first and its partner, "
            f"seat {mate}, finished {_ORDINAL.get(place or 0, '?')}.")


def _multiplier_text(story: RoundStory) -> str:
    result, v = story.result, story.variant
    assert result is not None and v is not None
    if result.escaper is not None:
        text = f"M = {result.multiplier} by the {v.escape} escape rule ({_ESCAPE_RULES[v.escape]})"
        if result.star_seat is not None:
            text += f"; the star {result.star} of seat {result.star_seat}"
        return text + "."
    if result.star_seat is None:
        return (f"M = {result.multiplier}: no round star counted (M is 1 below the table's "
                "first row).")
    cap = f", capped at {v.settlement_star_cap}" if v.settlement_star_cap is not None else ""
    return (f"M = {result.multiplier}: the star {result.star} of seat {result.star_seat}, "
            f"{_WHOSE_STAR[v.multiplier_star]}{cap}, in the table {_table(v.multiplier)}.")


def _table(rows: Sequence[tuple[int, ...]]) -> str:
    cells = []
    for i, row in enumerate(rows):
        at = ("≥" if i == len(rows) - 1 else "") + str(row[0])
        cells.append(f"{at}→×{row[1]}" if len(row) == 2 else f"{at}→(+{row[1]}, −{row[2]})")
    return ", ".join(cells) or "none"


def _paren(value: int) -> str:
    return f"({_n(value)})" if value < 0 else _n(value)


def _formula(story: RoundStory, s: Any) -> str:
    """final = (base × M + contribution + escape) × stake [− table fee]."""
    result = story.result
    assert result is not None
    inner = f"{_paren(s.base)} × {s.multiplier} + {_paren(s.contribution)}"
    if result.escaper is not None:
        inner += f" + {_paren(s.escape)}"
    text = f"({inner}) × {result.stake}"
    fee = s.final - (s.base * s.multiplier + s.contribution + s.escape) * result.stake
    if fee:
        text += f" − {_n(-fee)} table fee"
    return f"{text} = {_n(s.final)}"


def _event_text(e: Any) -> str:
    what = f"bomb #{e.bomb}" if e.bomb is not None else "round star"
    others = [s for s in range(SEATS) if s not in e.to]
    return (f"seat {e.seat}'s {what} at {e.star}★: +{e.gain:,} to {_seats(e.to)}; "
            f"−{e.pay:,} from each of {_seats(others)}")


def _settlement(story: RoundStory) -> str:
    result = story.result
    if result is None:
        return ('<section id="settlement"><h2>Settlement</h2><p>Not settled: the replay was '
                "rejected.</p></section>")
    rows = []
    for s in result.seats:
        terms = {"team": s.team, "dealt": story.hand_at[s.seat],
                 "place": "" if s.place is None else s.place, "base": s.base, "star": s.star,
                 "multiplier": s.multiplier, "contribution": s.contribution,
                 "escape": s.escape, "final": s.final}
        cells = "".join(
            f'<td data-term="{name}" class="{"final" if name == "final" else ""}'
            f'{" neg" if isinstance(value, int) and value < 0 else ""}">'
            f'{_n(value) if isinstance(value, int) else "–"}</td>' for name, value in terms.items())
        rows.append(f'<tr data-seat="{s.seat}"><td>{_seat(s.seat)}</td>{cells}</tr>')
    head = "".join(f"<th>{h}</th>" for h in ("seat", "team", "dealt", "place", "base", "star",
                                               "M", "contrib", "escape", "final"))
    formulas = "".join(f'<li data-seat="{s.seat}">seat {s.seat}: {_e(_formula(story, s))}</li>'
                       for s in result.seats)
    events = "".join(f'<li data-seat="{e.seat}">{_e(_event_text(e))}</li>'
                     for e in result.contributions)
    total = result.total
    return (
        f'<section id="settlement" data-stake="{result.stake}" data-multiplier='
        f'"{result.multiplier}" data-star="{result.star}" data-star-seat="'
        f'{"" if result.star_seat is None else result.star_seat}" data-total="{total}">'
        f"<h2>Settlement</h2><p>{_e(_multiplier_text(story))}</p>"
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}'
        f"</tbody></table></div>"
        f"<p>final = (base × M + contribution{' + escape' if result.escaper is not None else ''}) "
        f"× stake {result.stake} (RULES.md §10.5):</p><ul class=\"formulas\">{formulas}</ul>"
        f"<p>Contributions (§10.4, paid whether the team wins or loses): "
        f'{"none" if not events else ""}</p>'
        f'{f"<ul class=events>{events}</ul>" if events else ""}'
        f"<p>The finals add up to {_n(total)}.</p></section>")


def _rules(story: RoundStory) -> str:
    v = story.variant
    assert v is not None
    rows = {
        "rule set": f"{_i(v.name)} ({_i(v.id)})" + (f", extends {_i(v.extends)}"
                                                    if v.extends else ""),
        "deck": f"{v.decks} decks from {v.ranks[0]}, {v.hand_size} cards a hand, wild "
                f"jokers {' '.join(v.wild_jokers) or 'none'}",
        "round end": v.round_end.replace("_", " "),
        "base (1st–4th)": "; ".join(f"{k} {' '.join(_n(x) for x in row)}"
                                    for k, row in v.base.items()),
        "multiplier": _table(v.multiplier) + f" ({_WHOSE_STAR[v.multiplier_star]})",
        "contribution": _table(v.contribution) + (
            " for every bomb" if v.contribution_mode == "per_bomb"
            else " once per player, at its round star")
        + (", to the player and its partner" if v.contribution_recipients == "team" else ""),
        "escape": _ESCAPE_RULES[v.escape],
    }
    if v.kou:
        rows["huopin kou"] = ", ".join(f"{k} {x}" for k, x in v.kou.items())
    items = "".join(f"<dt>{_e(k)}</dt><dd>{x if k == 'rule set' else _e(x)}</dd>"
                    for k, x in rows.items())      # the rule set's names: already escaped
    return f'<section id="rules"><h2>The rule set</h2><dl class="rules">{items}</dl></section>'


def _not_an_object(raw: str | None) -> str:
    """What a replay that is no JSON object is instead, in words for a file, an archive's
    line or stdin alike: empty, cut off (the text ends inside its JSON: a file truncated
    mid-write or mid-copy), not JSON, or JSON of another shape."""
    if raw is None:
        return "The replay is not a JSON object."
    if not raw.strip():
        return "The replay is empty: there is no JSON in it."
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        # at the very end, or a string still open there: the text stops inside its JSON
        if exc.pos >= len(raw.rstrip()) or exc.msg.startswith("Unterminated string"):
            return (f"The replay is cut off: its text ends after {len(raw.rstrip()):,} "
                    "characters, inside its JSON (a file truncated mid-write or mid-copy?). "
                    "Its end as written:")
        return (f"The replay is not valid JSON: {exc.msg} at line {exc.lineno} column "
                f"{exc.colno}. As written:")
    return "The replay is JSON but not an object (a replay is one JSON object). As written:"


def _document(story: RoundStory, raw: str | None) -> str:
    """A replay rejected before its deal: the document as written (its text when it is no
    JSON object: the end of it when it was cut off)."""
    if story.document is not None:
        text = json.dumps(story.document, ensure_ascii=False, indent=1)
        if len(text) > _MAX_WRITTEN:
            text = text[:_MAX_WRITTEN] + "\n…"
        return (f'<section id="document"><h2>The replay as written</h2>'
                f'<pre class="written">{_e(text)}</pre></section>')
    said = _not_an_object(raw)
    shown_text = "" if raw is None or not raw.strip() else (
        raw if len(raw) <= _MAX_WRITTEN else
        "…" + raw[-_MAX_WRITTEN:] if said.startswith("The replay is cut off")
        else raw[:_MAX_WRITTEN] + "\n…")
    body = f"<p>{_e(said)}</p>" + (f'<pre class="written">{_e(shown_text)}</pre>'
                                   if shown_text else "")
    return f'<section id="document"><h2>The replay as written</h2>{body}</section>'


def _player(story: RoundStory) -> str:
    """The step-through: hidden until the script runs; its data and card faces."""
    steps = [{"i": s.index, "hands": [sorted(h) for h in s.hands]} for s in story.steps]
    codes = sorted({c for s in story.steps for h in s.hands for c in h})
    data = json.dumps({"steps": steps}, separators=(",", ":")).replace("<", "\\u003c")
    faces = "".join(card(c).replace('<span class="c', f'<span data-code="{c}" class="c', 1)
                    for c in codes)
    return (
        '<div id="player" hidden><div class="bar"><button type="button" class="first" '
        'title="first action (Home)">«</button><button type="button" class="prev" '
        'title="previous action (←)">◀</button><button type="button" class="next" '
        'title="next action (→)">▶</button><button type="button" class="last" '
        'title="last action (End)">»</button><span class="where"></span>'
        '<button type="button" class="toggle">hands</button></div>'
        '<div class="hands"></div></div>'
        f'<template id="card-faces">{faces}</template>'
        f'<script type="application/json" id="round-data">{data}</script>'
        f"<script>{_asset('page.js')}</script>")


# ----------------------------------------------------------------------------- the review

#: A verdict as the page names it, with the mark chess annotators use.
_VERDICT_TEXT = {"forced": "forced", "good": "good", "inaccuracy": "inaccuracy ?!",
                 "mistake": "mistake ?", "blunder": "blunder ??"}
#: The verdicts drawn on the evaluation graph (the others would only crowd it).
_MARKED = ("inaccuracy", "mistake", "blunder")


def _points(value: float) -> str:
    """Expected points, one decimal, a true minus sign (none before a zero)."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text.replace("-", "−")


def _action_text(c: Candidate) -> str:
    return " ".join(format_cards(c.cards)) if c.kind == "play" else c.kind


def _action_html(c: Candidate) -> str:
    """A candidate as the page shows it: its cards, or what it does (pass)."""
    if c.kind != "play":
        return f'<span class="what">{_e(c.kind)}</span>'
    return _cards(c.cards)


def _annotation(d: Decision) -> str:
    """A decision's verdict and loss beside its action, and the best alternative when the
    action taken was not it."""
    verdict = d.verdict
    parts = [f'<span class="tag rv {_e(verdict)}">{_e(_VERDICT_TEXT.get(verdict, verdict))}'
             "</span>"]
    best = d.candidates[d.best]
    if verdict != "forced" and best.points is not None:   # evaluated (not out of deals)
        parts.append(f'<span class="loss" title="expected points lost against the best '
                     f'candidate, ± its standard error">loss {_points(d.loss)} ± '
                     f'{abs(d.loss_se):.1f}</span>')
        taken = d.candidates[d.taken].points
        if not best.taken and taken is not None:
            parts.append(f'<span class="alt">best {_action_html(best)} '
                         f'<span class="muted">{_points(best.points)} vs '
                         f'{_points(taken)}</span></span>')
    if d.fair or d.tell is not None or d.opponents_tell is not None or \
            d.over_partner is not None or d.concedes is not None:   # reviewed with fair play
        parts.append(_fair_annotation(d))
    return f'<span class="review">{"".join(parts)}</span>'


def _fair_annotation(d: Decision) -> str:
    """A decision's fair-play evidence, each view that carried some (the taken action's
    regret on the true hands and on the decoys), its tell of the partner's hand, and 托管's
    choice where it is not the rule policy's."""
    parts = []
    for e in d.fair:
        if e.carries:
            decoys = " ".join(f"{r:.2f}" for r in e.decoy_regrets)
            parts.append(f'<span class="ev" data-view="{_e(e.kind)}" data-regret='
                         f'"{e.regret:.2f}" data-decoys="{decoys}" data-excess='
                         f'"{e.excess:.2f}" data-follows="{str(e.follows).lower()}">'
                         f"{_e(evidence_text(e, minus='−'))}</span>")
    for t in (d.tell, d.opponents_tell):
        if t is not None:
            decoys = " ".join(f"{v:.2f}" for v in t.decoy_values)
            parts.append(f'<span class="tl" data-tell="{_e(t.kind)}" data-value='
                         f'"{t.value:.2f}" data-decoys="{decoys}" data-passed='
                         f'"{str(t.passed).lower()}">{_e(tell_text(t, minus="−"))}</span>')
    if d.over_partner is not None:
        parts.append(f'<span class="bk" data-blocked="{str(d.over_partner).lower()}">'
                     f"{_e(block_text(d.over_partner))}</span>")
    if d.concedes is not None:
        parts.append(f'<span class="cd" data-conceded="{str(d.concedes).lower()}">'
                     f"{_e(concede_text(d.concedes))}</span>")
    if (told := engine_tells(d)) is not None:
        whose = TAKEN_TEXT[told]
        parts.append(f'<span class="tg" data-taken="{told}">托管 would play '
                     f'{_action_html(d.candidates[d.tuoguan])}, not the rule policy\'s '
                     f"action; the action taken is {whose}</span>")
    if not parts:
        return ""
    return ('<span class="fair" title="fair-play evidence (docs/review.md: Fair play)">'
            f'{"".join(parts)}</span>')


def _graph(decisions: Sequence[Decision]) -> str:
    """Team 0's expected points after each action, as an inline SVG polyline; the
    inaccuracies, mistakes and blunders marked and linked to their actions."""
    # a decision before the first evaluated one has no value yet: the line starts there
    shown = [(i, float(d.eval_team0)) for i, d in enumerate(decisions)
             if d.eval_team0 is not None]
    if not shown:
        return ""
    width, height, pad = 640, 180, 14
    values = [v for _, v in shown]
    lo, hi = min(0.0, *values), max(0.0, *values)
    if hi - lo < 2:
        lo, hi = lo - 1, hi + 1
    n = max(len(decisions) - 1, 1)

    def x(i: int) -> float:
        return pad + i * (width - 2 * pad) / n

    def y(v: float) -> float:
        return pad + (hi - v) * (height - 2 * pad) / (hi - lo)

    line = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in shown)
    marks = []
    for i, v in shown:
        d = decisions[i]
        if d.verdict in _MARKED:
            tip = (f"#{d.index} seat {d.seat}: {_VERDICT_TEXT[d.verdict]}, loss "
                   f"{_points(d.loss)}")
            marks.append(f'<a href="#a{d.index}"><circle class="{_e(d.verdict)}" '
                         f'cx="{x(i):.1f}" cy="{y(v):.1f}" r="4" data-index="'
                         f'{d.index}"><title>{_e(tip)}</title></circle></a>')
    label = (f"team 0's expected points after each action, from {_points(values[0])} to "
             f"{_points(values[-1])}")
    return (f'<svg class="graph" id="eval-graph" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{_e(label)}" data-points="{len(values)}">'
            f'<line class="zero" x1="{pad}" x2="{width - pad}" y1="{y(0):.1f}" '
            f'y2="{y(0):.1f}"/><text x="{pad}" y="{pad - 3}">{_points(hi)}</text>'
            f'<text x="{pad}" y="{height - 2}">{_points(lo)}</text>'
            f'<polyline points="{line}"/>{"".join(marks)}</svg>')


def _share(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _review_section(review: Review) -> str:
    """The review: what it was given, the evaluation graph and each seat's summary."""
    players = review.players
    rows = []
    for s in review.seats:
        cells = {"decisions": f"{s.decisions:,}", "forced": f"{s.forced:,}",
                 "mean_loss": "–" if s.mean_loss is None else f"{s.mean_loss:.2f}",
                 "loss_share": _share(s.loss_share),
                 "inaccuracies": str(s.inaccuracies), "mistakes": str(s.mistakes),
                 "blunders": str(s.blunders), "agree_first": _share(s.agree_first),
                 "agree_top3": _share(s.agree_top3)}
        who = f'<td class="l">{_i(s.player)}</td>' if players else ""
        rows.append(f'<tr data-seat="{s.seat}"><td>{_seat(s.seat)}</td>{who}' + "".join(
            f'<td data-term="{k}">{v}</td>' for k, v in cells.items()) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in (
        "seat", *(("player",) if players else ()), "decisions", "forced", "mean loss",
        "loss share", "inacc.", "mistakes", "blunders", "= 1st", "in top 3"))
    budget = review.budget
    spent = f"{review.rollouts:,} rollouts in {review.seconds:.1f} s"
    return (
        f'<section id="review" data-rollouts="{budget.rollouts}" data-seed="'
        f'{review.seed}" data-width="{budget.width}"><h2>Review</h2>'
        f'<p>Each play and pass is weighed from what its seat could see then: the ranked '
        f'提示 candidates (up to {budget.width}) and the action taken, each played on to '
        f"the end on the same sampled deals of the unseen cards ({budget.rollouts:,} "
        f"rollouts a decision, the other seats played by the {_e(budget.model)} model; "
        f"seed {review.seed}). <em>loss</em> = the best candidate's expected points for "
        "the team minus the action's; a verdict counts a loss only beyond twice its "
        f"standard error (docs/review.md). {_e(spent)}</p>"
        f"<h3>Team 0's expected points after each action</h3>{_graph(review.decisions)}"
        '<p class="muted">Above the line team 0 (seats 0 and 2) is expected to gain; a dot '
        "marks an inaccuracy, mistake or blunder (click it for the action).</p>"
        f'<h3>By seat</h3><div class="scroll"><table class="seats-review"><thead><tr>{head}'
        f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
        '<p class="muted">mean loss per unforced decision; loss share: the losses over what '
        "the decisions had at stake (best minus worst candidate), the figure that compares "
        "players; = 1st / in top 3: how often the "
        "action taken was the search's first choice / among its first three. An estimate "
        "from sampled deals, not proof: one round varies a great deal, and the engine has "
        "its own bias.</p></section>")


def _fair_section(review: Review) -> str:
    """The round's fair-play scores (a review with fair play): hand sharing per
    partnership, full sight and the decisions that tell for engine assistance per seat,
    and the caveats a platform must read."""
    players = review.players
    scores = round_fair(review.decisions, review.final)

    def who(seat: int) -> str:
        return _seat(seat) + (f" {_i(players[seat])}" if players else "")

    def cells(t: TableScore | None) -> str:
        if t is None:
            return '<td data-term="decisions">0</td>' + "<td>–</td>" * 4
        r, beyond = t.own, t.beyond
        return (f'<td data-term="decisions">{r.decisions}</td>'
                f'<td data-term="excess">{_signed_points(r.excess)}</td>'
                f'<td data-term="per_decision">{_signed_points(r.excess / r.decisions, 2)}'
                f'</td><td data-term="score">{_signed_points(r.score, 2)}</td>'
                f'<td data-term="beyond">{_signed_points(beyond.score, 2)}</td>')

    head = ("<th>decisions</th><th>excess</th><th>a decision</th><th>rank score</th>"
            "<th>beyond the table</th>")
    def tells(t: TableScore | None) -> str:
        if t is None:
            return '<td data-term="tells">0</td><td>–</td><td>–</td>'
        r, beyond = t.own, t.beyond
        return (f'<td data-term="tells">{r.decisions}</td>'
                f'<td data-term="tell_score">{_signed_points(r.score, 2)}</td>'
                f'<td data-term="tells_beyond">{_signed_points(beyond.score, 2)}</td>')

    teams = "".join(f'<tr data-team="{t}"><td class="l">{who(t)} &amp; {who(t + 2)}</td>'
                    f"{cells(scores.team_beyond(t))}"
                    f"{tells(scores.tells_beyond(t))}</tr>"
                    for t in (0, 1))
    seats = "".join(f'<tr data-seat="{s}"><td class="l">{who(s)}</td>'
                    f"{cells(scores.seat_beyond(s))}"
                    f"{tells(scores.sight_beyond(s))}"
                    f'<td data-term="departs">{t.departs}</td>'
                    f'<td data-term="engine">{t.engine}</td>'
                    f'<td data-term="rule">{t.rule}</td>'
                    f'<td data-term="blocks">{b.blocks}</td>'
                    f'<td data-term="chances">{b.chances}</td>'
                    f'<td data-term="concessions">{b.concessions}</td>'
                    f'<td data-term="to_concede">{b.to_concede}</td></tr>'
                    for s, (t, b) in enumerate(zip(scores.engine, scores.give_ups, strict=True)))
    caveats = "".join(f"<li>{_e(c)}</li>" for c in CAVEATS)
    return (
        '<section id="fair-play"><h2>Fair play</h2>'
        "<p>Each evaluated decision was also rolled out on the view that adds the partner's "
        "hand and on the view of every hand, each with the true hands and with decoys: hands "
        "made up from what the seat could see. <em>regret</em> = the reference "
        "action's points (the rule policy's, the first hint) minus the action's; <em>excess</em> = the decoys' mean regret "
        "minus the true hands'. A seat that does not see the hands cannot tell the true "
        "view from its decoys: its excess is 0 on average, whatever its strength; one that "
        "sees them plays closer to the true view's best. Only decisions where the regrets "
        "differ carry evidence; the rank score sums each one's rank of the true view among "
        "its decoys less what chance gives. What the decoys miss of the other seats' play "
        "moves every seat's score at a table alike: a round counts by its rank score "
        "<em>beyond the table</em>'s (the other partnership's; a seat's two opponents'). "
        "A partnership's <em>tells</em> ask of its leads and of its follows over an "
        "opponent that depart from the first hint whether the choice goes with what the "
        "partner's hand can beat, on the true hands against decoys; a seat's own, with its "
        "beats of an opponent's play asked whether no opponent after it can beat the play "
        "chosen rather than the first hint's, are full sight's. "
        "A seat's <em>blocks</em> are its plays over its "
        "partner's standing play that do not go out, of its <em>chances</em> (the "
        "partner's play standing, a play of its own to make); its <em>concessions</em> "
        "its passes over an opponent's ordinary play holding a free beat (one that spends "
        "no wild joker and splits no set: of each rank it plays, every card held) with no "
        "partner to act after it, of "
        "its chances to concede: rounds it throws crowd both, and the test over rounds "
        "counts the rounds a player lost (docs/review.md \"Fair play\").</p>"
        '<h3>Hand sharing, by partnership</h3><div class="scroll"><table class="fair-teams">'
        f'<thead><tr><th class="l">partnership</th>{head}<th>tells</th><th>tell score</th>'
        f'<th>beyond the table</th></tr></thead><tbody>{teams}</tbody>'
        "</table></div>"
        '<h3>Full sight, engine assistance and thrown rounds, by seat</h3>'
        '<div class="scroll">'
        f'<table class="fair-seats"><thead><tr><th class="l">seat</th>{head}'
        "<th>tells</th><th>tell score</th><th>beyond the table</th>"
        "<th>托管 departs</th><th>托管's</th><th>the rule's</th><th>blocks</th>"
        "<th>chances</th>"
        "<th>concessions</th><th>chances to concede</th></tr></thead>"
        "<tbody>"
        f"{seats}</tbody></table></div>"
        '<p class="muted">托管 departs: the evaluated decisions where 托管\'s choice was '
        "not the rule policy's action (the first hint); 托管's / the rule's: how often the "
        "action taken there was 托管's and how often the rule policy's.</p>"
        f'<ul class="plain caveats">{caveats}</ul></section>')


def _signed_points(value: float, digits: int = 1) -> str:
    """Points with their sign, a true minus sign."""
    text = f"{value:.{digits}f}"
    if float(text) == 0:
        return f"{0:.{digits}f}"
    return "+" + text if value > 0 else text.replace("-", "−")


# ----------------------------------------------------------------------------- the page

def render(story: RoundStory, *, source: str | None = None, text: str | None = None,
           review: Review | None = None) -> str:
    """The page of a round's story; ``source`` names where the replay came from (a file,
    a file and line); ``text``: the replay as read, shown when it is no JSON object;
    ``review``: the round's review (the record), which annotates each action and
    adds the review section (and, reviewed with fair play, the fair-play section)."""
    v = story.variant
    rej = story.rejection
    title = (f"{_plain_isolated(v.name)} ({_plain_isolated(v.id)})" if v is not None
             else "A replay")
    heading = f"{_i(v.name)} ({_i(v.id)})" if v is not None else "A replay"
    short = (f"rejected at action {rej.action}" if rej is not None and rej.action is not None
             else "rejected" if rej is not None
             else KIND_TEXT[story.result.kind] if story.result is not None else "")
    parts = [f"<h1>Round · {heading}</h1>"]
    fair = review is not None and fair_played(review.decisions)
    if source:
        parts.append(f'<p class="src">replay: {_i(source)}</p>')
    parts.append(_verdict(story))
    if story.dealt is None:
        parts.append(_document(story, text))
    else:
        stake = f" · stake {story.stake}" if story.stake != 1 else ""
        fee = f" · table fee {story.table_fee}" if story.table_fee else ""
        parts.append('<nav class="toc"><a href="#seating">seating</a><a href="#deal">hands'
                     '</a><a href="#tricks">tricks</a>'
                     + ('<a href="#review">review</a>' if review is not None else "")
                     + ('<a href="#fair-play">fair play</a>' if fair else "")
                     + '<a href="#bombs">bombs</a>'
                     '<a href="#finish">finishing</a><a href="#settlement">settlement</a>'
                     f'<a href="#rules">rules</a><span class="muted">{_e(stake + fee)}'
                     "</span></nav>")
        parts.append(_seating(story))
        assert story.seated is not None and story.hands is not None
        parts.append(_hands("Hands as dealt", "deal", story.seated,
                            '<p class="muted">By table seat, after the swap.</p>'))
        decisions = {d.index: d for d in review.decisions} if review is not None else {}
        parts.append(_tricks(story, decisions))
        if review is not None:
            parts.append(_review_section(review))
        if review is not None and fair:
            parts.append(_fair_section(review))
        end = ("Hands at the rejected action" if rej is not None and rej.action is not None
               else "Hands where the replay stops" if rej is not None
               else "Hands at the end")
        parts.append(_hands(end, "end", story.hands))
        parts.append(_bombs(story))
        parts.append(_finish(story))
        parts.append(_settlement(story))
        parts.append(_rules(story))
    from ..version import version

    parts.append(f'<p class="muted">Made by shuangkou {_e(version())} from the replay alone; '
                 "nothing on this page is fetched.</p>")
    player = _player(story) if story.steps else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}: {_e(short)}</title><style>{_asset('page.css')}</style></head>"
        f'<body><main>{"".join(parts)}</main>{player}</body></html>\n')


def page_of(text: str, source: str, partial_deal: bool = False,
            review: Callable[[str], Review] | None = None
            ) -> tuple[RoundStory, str]:
    """The story of a replay's text and its page (``view`` and ``score-replays
    --view-rejected`` both draw pages with it); ``review``: how to review the replay's
    text (``view --review``), asked only of a replay that was not rejected."""
    story = story_of(text, partial_deal=partial_deal)
    reviewed = review(text) if review is not None and story.rejection is None else None
    return story, render(story, source=source, text=text, review=reviewed)


def render_index(entries: Sequence[dict[str, Any]], rejected: int) -> str:
    """The index of ``score-replays --view-rejected``: each page with its file, line, action
    and reason (``entries``: dicts of those keys and ``page``, None for a line that has
    none), and what the cap left out."""
    rows = "".join(
        f'<tr data-file="{_e(x["file"])}" data-line="{x["line"]}"><td class="l">'
        f'{_i(x["file"])}</td><td>{x["line"]:,}</td><td>'
        f'{"–" if x["action"] is None else x["action"]}</td><td class="l">'
        + (_i(x["reason"]) if x["page"] is None else
           f'<a href="{_e(x["page"])}#rejected">{_i(x["reason"])}</a>')
        + "</td></tr>" for x in entries)
    left = rejected - len(entries)
    note = (f"{rejected:,} rejected lines; a page for each"
            if not left else f"{rejected:,} rejected lines; pages for the first "
            f"{len(entries):,} (--view-limit), {left:,} left out")
    table = ('<div class="scroll"><table><thead><tr><th class="l">file</th><th>line</th>'
             '<th>action</th><th class="l">reason</th></tr></thead>'
             f"<tbody>{rows}</tbody></table></div>") if entries else "<p>None.</p>"
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>Rejected replays</title><style>{_asset('page.css')}</style></head>"
            f'<body><main><h1>Rejected replays</h1><p class="src" id="count" data-rejected='
            f'"{rejected}">{note}.</p><section><h2>Pages</h2>{table}</section></main>'
            "</body></html>\n")
