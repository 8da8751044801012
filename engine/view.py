"""What one reader may see: a seat's player (or bot), a spectator, or an operator.

Every view and every event that leaves the server passes through here. A
player sees their own hand and nobody else's; nobody but an operator sees the
stock's order. Capture piles are public as counts (everyone watched them
being taken), and this round's plays are public history.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from operator import is_

from . import events as ev
from .cards import FULL_DECK, SEVEN_OF_COINS, design_for, is_coin, is_seven, label_map
from .events import event_data, event_type
from .play import OPTIONS_LIMIT, fifteen_sets, options
from .state import State

SPECTATOR = None


@lru_cache(maxsize=64)
def _settings_items(settings) -> tuple:
    return tuple(settings.as_dict().items())


def settings_dict(settings) -> dict:
    return dict(_settings_items(settings))


def view(state: State, reader: int | None = SPECTATOR, *, deck: str | None = None, full: bool = False) -> dict:
    """The table as ``reader`` (a seat, or None for a spectator) may see it.

    ``full`` is the operator's view: every hand, the stock in order, the piles.
    """
    return for_reader(table_view(state, deck=deck), state, reader, full=full)


@dataclass(frozen=True)
class TableView:
    """What every reader of one state sees alike: a view with nobody's hand in it, and the
    cards it names. ``for_reader`` completes it for one reader; a server with several
    readers of a version builds this part once."""

    fields: dict
    shown: frozenset
    plays: list | None = None  # the state's history its "history" was built from (see table_view's previous)
    history_cards: frozenset = frozenset()  # the cards its "history" names: a later version adds its own plays'
    state: State | None = field(default=None, compare=False, repr=False)  # the state it was built from


def table_view(state: State, *, deck: str | None = None, previous: TableView | None = None) -> TableView:
    """The view every reader of ``state`` shares. ``previous``: the one built for an earlier version of
    the same table; its history entries are taken again for the plays it shares with this one (the same
    entries: a fold copies the list, never a play), so a move builds its own play's entry, not the
    round's every one. Its fields whose parts of the state are the same as ``previous``'s are taken
    again too (the same values: views are only read), so a move builds what it changed, and a patch
    (``changed``) finds the rest unchanged at a glance."""
    s = state
    design = design_for(s.settings.deck, deck)
    history, history_cards = _history(s.history, previous)
    o = previous.state if previous is not None else None
    was = previous.fields if o is not None else None
    fields = {
        "version": s.version,
        "status": s.status,
        "name": s.name,
        "preset": s.preset,
        "settings": was["settings"] if o is not None and o.settings is s.settings else settings_dict(s.settings),
        "host": s.seat_of(s.host) if s.host else None,
        "seats": _seats(s, o, was),
        "you": None,  # the reader's: for_reader
        "hand": [],  # the reader's
        "table_cards": was["table_cards"] if o is not None and o.table == s.table else list(s.table),
        "stock_count": len(s.stock),
        "dealer": s.dealer,
        "turn": s.turn,
        "turn_seq": s.turn_seq,
        "round": s.round,
        "game": s.game,
        "scores": was["scores"] if o is not None and o.scores == s.scores and o.sides == s.sides else
        [{"seats": list(side), "points": pts} for side, pts in zip(s.sides, s.scores, strict=False)],
        "captured": was["captured"] if o is not None and o.piles == s.piles and o.escobas == s.escobas
        and o.sides == s.sides else _captured(s),
        "last_round": was["last_round"] if o is not None and o.last_round is s.last_round else
        [dict(side) for side in s.last_round] if s.last_round else None,
        "fifteen_to_take": _fifteen(s),
        "options": None,  # the reader's, on their turn
        "last_deal": bool(s.status == "playing" and s.last_deal),
        "history": history,
        "winners": list(s.winners) if s.winners is not None else None,
        "ended_by": s.ended_by,
        "away": {"seat": s.away_open} if s.away_open is not None else None,
        "rematch": _rematch(s),
        "deck": design,
    }
    shown = history_cards.union(s.table)  # what _shown_cards finds in these fields, the history not read again
    if fields["fifteen_to_take"]:
        shown = shown.union((fields["fifteen_to_take"]["card"],))
    return TableView(fields, shown, s.history, history_cards, s)


def _history(plays: list, previous: TableView | None) -> tuple[list[dict], frozenset]:
    """The history's entries and the cards they name. When ``previous`` was built from a beginning of
    these plays (a later move of the same round) its entries and cards are taken again, and only the
    new plays read; otherwise (a new round, an older version) all of them."""
    out, named, start = [], set(), 0
    if previous is not None and previous.plays:
        known = previous.plays
        if len(known) <= len(plays) and all(map(is_, known, plays)):
            out = list(previous.fields["history"])  # never changed in place: views are only read (and encoded)
            named = set(previous.history_cards)
            start = len(known)
    for kind, seat, card, captured in plays[start:]:
        out.append({"kind": kind, "seat": seat, "card": card, "captured": list(captured)})
        named.update(captured)
        if card is not None:
            named.add(card)
    return out, frozenset(named)


def for_reader(base: TableView, state: State, reader: int | None = SPECTATOR, *, full: bool = False) -> dict:
    """``base`` (``table_view`` of ``state``) completed for ``reader``: their seat, hand and options,
    and the labels of only the cards this reader is shown, so no field names a card they may not see."""
    if full:
        s = state
        result = {**base.fields, **reader_part(base, state, reader)}
        del result["labels"]  # worked out again below, last, from every card the operator is shown
        result["hands"] = {str(seat): list(h) for seat, h in s.hands.items()}
        result["stock"] = list(s.stock)
        result["piles"] = [list(p) for p in s.piles]
        names = label_map(result["deck"])
        result["labels"] = {c: names[c] for c in frozenset(_shown_cards(result))}
        return result
    return {**base.fields, **reader_part(base, state, reader)}


# The fields ``reader_part`` fills in a view, in the view's order; everything else is ``base.fields``.
READER_FIELDS = ("you", "hand", "options", "labels")
_NOT_COMPARED = frozenset((*READER_FIELDS, "history"))  # by ``changed``: the reader's, and the history apart


def reader_part(base: TableView, state: State, reader: int | None = SPECTATOR) -> dict:
    """What a (non-operator) reader's view holds beyond ``base``: their seat, their hand and, on their
    turn, their options, and the labels of the cards this reader is shown (``READER_FIELDS``).
    ``for_reader`` is ``base.fields`` with these in place; a server may encode ``base`` once and
    these per reader (api/sockets/frames.py)."""
    you, hand, opts = _own(state, reader)
    names = label_map(base.fields["deck"])
    return {"you": you, "hand": hand, "options": opts, "labels": {c: names[c] for c in base.shown.union(hand)}}


def _own(s: State, reader: int | None) -> tuple[int | None, list, list | None]:
    """A reader's seat (None: a spectator, or a seat nobody holds), their hand while a round is played,
    and their options on their turn."""
    you = reader if reader is not None and reader in range(4) and s.seats[reader] else None
    hand, opts = [], None
    if you is not None and s.status == "playing":
        hand = list(s.hands.get(you, ()))
        if you == s.turn:
            opts = options(s, you)
    return you, hand, opts


def changed(old: TableView, new: TableView) -> tuple[dict, list | None]:
    """What every reader's view of ``new`` holds that their view of ``old`` (an earlier version of the
    same table, in the same deck design) did not: the shared fields whose values differ, and the
    history entries ``new`` appends (None: the history is not an extension of ``old``'s, a new round's,
    and is among the fields, whole). A client's view of ``old`` with these fields set and these
    entries appended is its view of ``new``, but for the reader's own fields (``reader_changes``)."""
    fields, before = new.fields, old.fields
    history, added = fields["history"], None
    known = before["history"]
    if len(known) <= len(history) and all(map(is_, known, history)):
        added = history[len(known):]  # the same entries, taken again by table_view: a move's own play
    # most fields are the previous part's own objects (table_view takes them again): told apart by identity
    out = {name: value for name, value in fields.items()
           if value is not before[name] and name not in _NOT_COMPARED and value != before[name]}
    if added is None:
        out["history"] = history
    return out, added


def reader_changes(old: TableView, new: TableView, state: State, reader: int | None = SPECTATOR) -> dict:
    """A (non-operator) reader's own fields of ``new`` (``reader_part``'s: their seat, hand and
    options), and the labels of the cards this reader is shown in ``new`` that ``old`` did not show
    everyone: with the labels of their view of ``old`` these name every card the view of ``new`` does,
    and only cards this reader was shown."""
    you, hand, opts = _own(state, reader)
    names = label_map(new.fields["deck"])
    fresh = new.shown.difference(old.shown).union(hand)
    return {"you": you, "hand": hand, "options": opts, "labels": {c: names[c] for c in fresh}}


def _shown_cards(v: dict) -> set[str]:
    """Every card a view names (the fields that hold cards)."""
    shown = {*v["hand"], *v["table_cards"]}
    for play in v["history"]:
        shown.add(play["card"])
        shown.update(play["captured"])
    shown.discard(None)  # a history entry without a card
    if v["fifteen_to_take"]:
        shown.add(v["fifteen_to_take"]["card"])
    for cards in v.get("hands", {}).values():
        shown.update(cards)
    shown.update(v.get("stock", ()))
    for pile in v.get("piles", ()):
        shown.update(pile)
    return shown


def _seats(s: State, o: State | None, was: dict | None) -> list[dict]:
    """The seats' entries; each one whose seat, hand's size and game are as in ``o`` (``was``'s
    state) taken again from ``was``."""
    if o is None or o.status != s.status or o.players != s.players or o.sides != s.sides or o.side_of != s.side_of:
        return [_seat(s, i) for i in range(4)]
    before, playing = was["seats"], s.status == "playing"  # a hand's size is shown only while playing
    return [before[i] if s.seats[i] is o.seats[i] and (
        not playing or len(s.hands.get(i, ())) == len(o.hands.get(i, ()))) else _seat(s, i) for i in range(4)]


def _seat(s: State, i: int) -> dict:
    seat = s.seats[i]
    if seat is None:
        return {"seat": i, "name": None, "kind": None, "empty": True, "team": None, "hand_count": 0}
    return {
        "seat": i,
        "name": seat.name,
        "kind": seat.kind,
        "bot": seat.bot,
        "account": seat.account is not None,  # a player with an account (docs/api.md v1.3): a profile by name
        "empty": False,
        "team": s.side_of.get(i) if len(s.sides) < len(s.players) else None,
        "in_game": i in s.players,
        "hand_count": len(s.hands.get(i, ())) if s.status == "playing" else 0,
    }


_COINS = frozenset(filter(is_coin, FULL_DECK))
_SEVENS = frozenset(filter(is_seven, FULL_DECK))


def _captured(s: State) -> list[dict]:
    # a pile holds each card at most once (every deck is the forty cards)
    return [
        {
            "seats": list(side),
            "cards": len(pile),
            "coins": len(_COINS.intersection(pile)),
            "sevens": len(_SEVENS.intersection(pile)),
            "seven_of_coins": SEVEN_OF_COINS in pile,
            "escobas": n,
        }
        for side, pile, n in zip(s.sides, s.piles, s.escobas, strict=False)
    ]


def _fifteen(s: State) -> dict | None:
    # one more than is listed, to say whether the list is cut (as options' more_captures)
    sets = fifteen_sets(s, OPTIONS_LIMIT + 1) if s.status == "playing" else []
    if not sets:
        return None
    card, by = s.fifteen
    return {"card": card, "left_by": by, "sets": [[card, *x] for x in sets[:OPTIONS_LIMIT]],
            "more_sets": len(sets) > OPTIONS_LIMIT}


def _rematch(s: State) -> dict | None:
    if s.status != "finished":
        return None
    return {
        "allowed": s.rematch_allowed(),
        "answers": {str(k): v for k, v in s.rematch.items()},
        "teams": s.rematch_teams,
        "ready": s.rematch_ready(),
        "closed": s.rematch_closed,
    }


def redact(event, reader: int | None = SPECTATOR) -> dict:
    """An event as ``{"type", "data"}`` with what ``reader`` may not see removed."""
    data = event_data(event)
    if isinstance(event, ev.TableOpened):
        data.pop("decks", None)
        data.pop("first_dealer", None)
        # player ids are the handles seat tokens stand for: readers see seats (host_seated says
        # whether the host holds seat 0)
        data.pop("host", None)
    elif isinstance(event, ev.PlayerSeated):
        data.pop("player", None)
    elif isinstance(event, ev.SeatClaimed):
        data.pop("account", None)  # an account's player_id, as a guest's, is not for readers
    elif isinstance(event, ev.RoundDealt):
        deck = data.pop("deck")
        data["table"] = deck[:4]
        if reader in event.order:
            at = 4 + 3 * event.order.index(reader)
            data["hand"] = deck[at : at + 3]
    elif isinstance(event, ev.HandsDealt):
        hands = dict(event.hands)
        data = {"last_deal": event.last_deal, "counts": {str(s): len(c) for s, c in hands.items()}}
        if reader in hands:
            data["hand"] = list(hands[reader])
    return {"type": event_type(event), "data": data}
