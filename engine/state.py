"""The table's state, and how each fact of the log changes it (the fold).

``fold(state, events)`` never changes its argument: it works on one copy and
returns it, so a replay of thousands of events copies once, not per event.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from . import events as ev
from .rules import Settings, settings_from_dict


@dataclass(frozen=True, slots=True)
class Seat:
    player: str  # a stable id; seat tokens map to it, since seats can move
    name: str
    kind: str = "human"  # or "bot"
    bot: str | None = None
    # the account's player_id when the seat is an account's (seated with a player token: the same as
    # ``player``; claimed from a guest: ``player`` stays the guest's, which its seat token names)
    account: str | None = None


@dataclass(slots=True)
class State:
    version: int = 0
    status: str = "new"  # waiting, playing, round_over, finished, expired
    name: str = ""
    preset: str = ""
    settings: Settings = field(default_factory=Settings)
    host: str | None = None
    seats: list = field(default_factory=lambda: [None, None, None, None])
    decks: tuple | None = None
    first_dealer: int | None = None
    game: int = 0
    players: tuple = ()  # seats in this game, in play order
    sides: tuple = ()  # tuples of seats sharing a pile and a score
    side_of: dict = field(default_factory=dict)
    round: int = 0
    dealer: int | None = None
    turn: int | None = None
    turn_seq: int = 0  # counts turns, so a timer knows whether its turn is still open
    hands: dict = field(default_factory=dict)
    table: list = field(default_factory=list)
    stock: list = field(default_factory=list)
    piles: list = field(default_factory=list)
    escobas: list = field(default_factory=list)
    last_capturer: int | None = None
    last_deal: bool = False
    scores: list = field(default_factory=list)
    last_round: tuple | None = None
    fifteen: tuple | None = None  # (card left behind, seat that left it)
    away_open: int | None = None
    winners: tuple | None = None
    ended_by: str | None = None
    rematch: dict = field(default_factory=dict)
    rematch_teams: str = "keep"
    rematch_closed: str | None = None
    history: list = field(default_factory=list)  # this round's public plays

    def copy(self) -> State:
        """A state whose lists and dicts are its own (the fold changes those in place).

        Built field by field rather than with ``dataclasses.replace``, which runs
        ``__init__`` over every field: a move copies a state, so this is hot.
        """
        new = object.__new__(State)
        _copy_shared(self, new)
        new.seats = list(self.seats)
        new.side_of = dict(self.side_of)
        new.hands = {s: list(h) for s, h in self.hands.items()}
        new.table = list(self.table)
        new.stock = list(self.stock)
        new.piles = [list(p) for p in self.piles]
        new.escobas = list(self.escobas)
        new.scores = list(self.scores)
        new.rematch = dict(self.rematch)
        new.history = list(self.history)
        return new

    # --- questions the rules ask of a table -----------------------------
    def seat_of(self, player: str) -> int | None:
        for i, s in enumerate(self.seats):
            if s is not None and s.player == player:
                return i
        return None

    def seat_of_account(self, account: str) -> int | None:
        """The seat an account holds here (one at most: engine/table.py refuses a second)."""
        for i, s in enumerate(self.seats):
            if s is not None and s.account == account:
                return i
        return None

    def seated(self) -> list[int]:
        return [i for i, s in enumerate(self.seats) if s is not None]

    def humans(self) -> list[int]:
        return [i for i in self.players if self.seats[i] and self.seats[i].kind == "human"]

    def next_seat(self, seat: int) -> int:
        """The next player in the direction of play."""
        players = self.players
        return players[(players.index(seat) + 1) % len(players)]

    def side_seats(self, seat: int) -> tuple:
        return self.sides[self.side_of[seat]]

    def round_is_over(self) -> bool:
        return not self.stock and all(not h for h in self.hands.values())

    def rematch_allowed(self) -> bool:
        return self.status == "finished" and self.ended_by in ("target", "resign") and not self.rematch_closed

    def rematch_ready(self) -> bool:
        humans = self.humans()
        return self.rematch_allowed() and bool(humans) and all(self.rematch.get(s) for s in humans)


# the fields a copy may share with its original: values that are never changed in place
_OWN_FIELDS = ("seats", "side_of", "hands", "table", "stock", "piles", "escobas", "scores", "rematch", "history")
_SHARED_FIELDS = tuple(f.name for f in fields(State) if f.name not in _OWN_FIELDS)


def _shared_copier():
    """``copy(source, target)`` setting every shared field of ``target`` from ``source``, written out
    one field a line (as dataclasses writes ``__init__``): a getattr/setattr by name per field was
    half of a move's copy of its state."""
    body = "".join(f"    target.{name} = source.{name}\n" for name in _SHARED_FIELDS)
    scope: dict = {}
    exec(f"def copy(source, target):\n{body or '    pass'}\n", scope)  # noqa: S102 (our own field names)
    return scope["copy"]


_copy_shared = _shared_copier()


def fold(state: State, events) -> State:
    """The state after ``events``; ``state`` itself is left as it was."""
    new = state.copy()
    for event in events:
        evolve(new, event)
    return new


def evolve(state: State, event) -> None:
    """Apply one fact to ``state`` in place (for ``fold`` and a decision's own copy)."""
    _APPLY[type(event)](state, event)
    state.version += 1


def replay(events) -> State:
    return fold(State(), events)


# --- one function per fact ------------------------------------------------

def _table_opened(s: State, e: ev.TableOpened) -> None:
    s.status = "waiting"
    s.name, s.preset, s.host = e.name, e.preset, e.host
    s.settings = settings_from_dict(e.settings)
    s.decks, s.first_dealer = e.decks, e.first_dealer
    if e.host_seated:
        s.seats[0] = Seat(e.host, e.host_name, account=e.host if e.host_account else None)


def _player_seated(s: State, e: ev.PlayerSeated) -> None:
    s.seats[e.seat] = Seat(e.player, e.name, account=e.player if e.account else None)


def _seat_claimed(s: State, e: ev.SeatClaimed) -> None:
    seat = s.seats[e.seat]
    s.seats[e.seat] = Seat(seat.player, e.name, seat.kind, seat.bot, e.account)


def _bot_added(s: State, e: ev.BotAdded) -> None:
    s.seats[e.seat] = Seat(f"bot-{e.seat}-{e.bot}", e.name, "bot", e.bot)


def _bot_removed(s: State, e: ev.BotRemoved) -> None:
    s.seats[e.seat] = None


def _partner_chosen(s: State, e: ev.PartnerChosen) -> None:
    s.seats[2], s.seats[e.seat] = s.seats[e.seat], s.seats[2]


def _settings_changed(s: State, e: ev.SettingsChanged) -> None:
    s.settings = settings_from_dict(e.settings)


def _game_started(s: State, e: ev.GameStarted) -> None:
    s.status = "playing"
    s.game = e.game
    s.players, s.sides = tuple(e.players), tuple(tuple(x) for x in e.sides)
    s.side_of = {seat: i for i, side in enumerate(s.sides) for seat in side}
    s.scores = [0] * len(s.sides)
    s.round, s.dealer = 0, e.first_dealer
    s.winners = s.ended_by = None
    s.rematch, s.rematch_closed, s.rematch_teams = {}, None, "keep"
    s.last_round = None


def _round_dealt(s: State, e: ev.RoundDealt) -> None:
    s.status = "playing"
    s.round, s.dealer = e.round, e.dealer
    deck = list(e.deck)
    s.table = deck[:4]
    s.hands = {}
    at = 4
    for seat in e.order:
        s.hands[seat] = deck[at : at + 3]
        at += 3
    s.stock = deck[at:]
    s.piles = [[] for _ in s.sides]
    s.escobas = [0] * len(s.sides)
    s.last_capturer = None
    s.last_deal = not s.stock
    s.fifteen = s.away_open = None
    s.last_round = None
    s.history = []
    s.turn = e.order[0]
    s.turn_seq += 1


def _opening_table_taken(s: State, e: ev.OpeningTableTaken) -> None:
    side = s.side_of[e.seat]
    s.piles[side].extend(e.cards)
    s.escobas[side] += e.escobas
    s.table = []
    s.last_capturer = e.seat
    s.history.append(("opening", e.seat, None, tuple(e.cards)))


def _hands_dealt(s: State, e: ev.HandsDealt) -> None:
    dealt = 0
    for seat, cards in e.hands:
        s.hands[seat] = list(cards)
        dealt += len(cards)
    del s.stock[:dealt]
    s.last_deal = e.last_deal


def _take(s: State, seat: int, card: str, captured, escoba: bool) -> None:
    side = s.side_of[seat]
    table = s.table
    for c in captured:
        table.remove(c)
    s.piles[side].extend(captured)
    s.piles[side].append(card)
    s.last_capturer = seat
    if escoba:
        s.escobas[side] += 1


def _card_played(s: State, e: ev.CardPlayed) -> None:
    s.hands[e.seat].remove(e.card)
    if e.captured:
        _take(s, e.seat, e.card, e.captured, e.escoba)
    else:
        s.table.append(e.card)
    s.fifteen = (e.card, e.seat) if e.fifteen_left else None
    s.history.append(("play", e.seat, e.card, tuple(e.captured)))
    s.turn = s.next_seat(e.seat)
    s.turn_seq += 1
    s.away_open = None


def _fifteen_taken(s: State, e: ev.FifteenTaken) -> None:
    s.table.remove(e.card)
    _take(s, e.seat, e.card, e.captured, e.escoba)
    s.fifteen = None
    s.history.append(("fifteen", e.seat, e.card, tuple(e.captured)))


def _round_ended(s: State, e: ev.RoundEnded) -> None:
    if e.to_seat is not None:
        s.piles[s.side_of[e.to_seat]].extend(e.leftovers)
    s.table = []
    s.turn = None
    s.fifteen = s.away_open = None


def _round_scored(s: State, e: ev.RoundScored) -> None:
    s.last_round = tuple(e.sides)
    s.scores = list(e.scores)
    s.status = "round_over"


def _player_resigned(s: State, e: ev.PlayerResigned) -> None:
    s.ended_by = e.how


def _away_opened(s: State, e: ev.AwayOpened) -> None:
    s.away_open = e.seat


def _away_claimed(s: State, e: ev.AwayClaimed) -> None:
    s.ended_by = "away"


def _game_finished(s: State, e: ev.GameFinished) -> None:
    s.status = "finished"
    s.winners = tuple(e.winners)
    s.ended_by = e.reason
    s.turn = None
    s.fifteen = s.away_open = None


def _table_expired(s: State, e: ev.TableExpired) -> None:
    s.status = "expired"
    s.winners = ()
    s.ended_by = "expired"
    s.turn = None
    s.away_open = None


def _rematch_answered(s: State, e: ev.RematchAnswered) -> None:
    s.rematch[e.seat] = e.accept
    if e.teams:
        s.rematch_teams = e.teams
    if not e.accept:
        s.rematch_closed = "declined"


def _rematch_lapsed(s: State, e: ev.RematchLapsed) -> None:
    s.rematch_closed = "lapsed"


def _rematch_started(s: State, e: ev.RematchStarted) -> None:
    if e.swap:
        # the host keeps seat 0 and takes a new partner: seats 1 and 2 trade places
        s.seats[1], s.seats[2] = s.seats[2], s.seats[1]


_APPLY = {
    ev.TableOpened: _table_opened,
    ev.PlayerSeated: _player_seated,
    ev.BotAdded: _bot_added,
    ev.BotRemoved: _bot_removed,
    ev.PartnerChosen: _partner_chosen,
    ev.SettingsChanged: _settings_changed,
    ev.GameStarted: _game_started,
    ev.RoundDealt: _round_dealt,
    ev.OpeningTableTaken: _opening_table_taken,
    ev.HandsDealt: _hands_dealt,
    ev.CardPlayed: _card_played,
    ev.FifteenTaken: _fifteen_taken,
    ev.RoundEnded: _round_ended,
    ev.RoundScored: _round_scored,
    ev.PlayerResigned: _player_resigned,
    ev.AwayOpened: _away_opened,
    ev.AwayClaimed: _away_claimed,
    ev.GameFinished: _game_finished,
    ev.TableExpired: _table_expired,
    ev.RematchAnswered: _rematch_answered,
    ev.RematchLapsed: _rematch_lapsed,
    ev.RematchStarted: _rematch_started,
    ev.SeatClaimed: _seat_claimed,
}
assert set(_APPLY) == set(ev.EVENT_TYPES.values()), "every event type needs a fold"
