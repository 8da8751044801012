"""The facts a table's log is made of, named in the past tense.

Events carry everything a replay needs, chance included: ``RoundDealt`` holds
the shuffled deck in the order it was dealt, ``GameStarted`` the first dealer.
Folding them (``engine.state``) never consults a clock or a random generator.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

Seats = tuple[int, ...]
Cards = tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TableOpened:
    name: str
    preset: str
    settings: dict
    host: str
    host_name: str
    decks: tuple[Cards, ...] | None = None  # operator decks: hidden from players
    first_dealer: int | None = None
    host_seated: bool = True  # False: the host runs the table and watches (a game of bots)
    host_account: bool = False  # v2: True when ``host`` is an account's player_id (a player token opened it)


@dataclass(frozen=True, slots=True)
class PlayerSeated:
    seat: int
    player: str
    name: str
    account: bool = False  # v2: True when ``player`` is an account's player_id (a player token sat)


@dataclass(frozen=True, slots=True)
class SeatClaimed:
    """A guest's seat became an account's (``POST /me/claim``): the seat keeps its player id, which
    its seat token stands for, and now belongs to ``account`` under the account's name."""

    seat: int
    account: str
    name: str


@dataclass(frozen=True, slots=True)
class BotAdded:
    seat: int
    bot: str
    name: str


@dataclass(frozen=True, slots=True)
class BotRemoved:
    seat: int


@dataclass(frozen=True, slots=True)
class PartnerChosen:
    """The host's partner moves across to seat 2, the player there takes their seat."""

    seat: int


@dataclass(frozen=True, slots=True)
class SettingsChanged:
    settings: dict


@dataclass(frozen=True, slots=True)
class GameStarted:
    game: int
    players: Seats
    sides: tuple[Seats, ...]
    first_dealer: int


@dataclass(frozen=True, slots=True)
class RoundDealt:
    round: int
    dealer: int
    order: Seats  # who receives cards, from the player who leads
    deck: Cards  # the whole shuffled deck, front first: hidden from players


@dataclass(frozen=True, slots=True)
class OpeningTableTaken:
    seat: int
    cards: Cards
    escobas: int


@dataclass(frozen=True, slots=True)
class HandsDealt:
    hands: tuple[tuple[int, Cards], ...]
    last_deal: bool


@dataclass(frozen=True, slots=True)
class CardPlayed:
    seat: int
    card: str
    captured: Cards  # empty: the card stays on the table
    escoba: bool
    fifteen_left: bool = False  # left on the table though it could have captured


@dataclass(frozen=True, slots=True)
class FifteenTaken:
    seat: int
    card: str
    captured: Cards
    escoba: bool


@dataclass(frozen=True, slots=True)
class RoundEnded:
    leftovers: Cards
    to_seat: int | None  # the last capturer; None when nobody captured


@dataclass(frozen=True, slots=True)
class RoundScored:
    round: int
    sides: tuple[dict, ...]  # the breakdown per side (the contract's last_round)
    scores: tuple[int, ...]  # the running totals after this round


@dataclass(frozen=True, slots=True)
class PlayerResigned:
    seat: int
    how: str  # "resign" or "exit"


@dataclass(frozen=True, slots=True)
class AwayOpened:
    seat: int
    turn: int


@dataclass(frozen=True, slots=True)
class AwayClaimed:
    seat: int
    away: int


@dataclass(frozen=True, slots=True)
class GameFinished:
    winners: Seats
    reason: str  # "target", "resign", "exit", "away"


@dataclass(frozen=True, slots=True)
class TableExpired:
    pass


@dataclass(frozen=True, slots=True)
class RematchAnswered:
    seat: int
    accept: bool
    teams: str | None = None


@dataclass(frozen=True, slots=True)
class RematchLapsed:
    pass


@dataclass(frozen=True, slots=True)
class RematchStarted:
    swap: bool


EVENT_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        TableOpened, PlayerSeated, BotAdded, BotRemoved, PartnerChosen, SettingsChanged,
        GameStarted, RoundDealt, OpeningTableTaken, HandsDealt, CardPlayed, FifteenTaken,
        RoundEnded, RoundScored, PlayerResigned, AwayOpened, AwayClaimed, GameFinished,
        TableExpired, RematchAnswered, RematchLapsed, RematchStarted, SeatClaimed,
    )
}


def event_type(event) -> str:
    return type(event).__name__


def event_data(event) -> dict:
    """The event's fields as plain JSON-ready data."""
    cls = type(event)
    names = _FIELD_NAMES.get(cls)
    if names is None:  # dataclasses.fields() works them out again on every call: once a type here
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    # a plain field (most are) is taken as it is, without a call: every append encodes its events
    return {name: v if type(v) in _PLAIN else _thaw(v) for name in names for v in (getattr(event, name),)}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def event_from(type_name: str, data: dict):
    """Rebuild an event from its type name and data; KeyError for an unknown type."""
    cls = EVENT_TYPES[type_name]
    return cls(**{k: _freeze(v) for k, v in data.items()})


def _thaw(v):
    if type(v) in _PLAIN:  # most fields: a card, a seat, a name
        return v
    if isinstance(v, tuple | list):
        return [x if type(x) in _PLAIN else _thaw(x) for x in v]
    if isinstance(v, dict):
        return {k: _thaw(x) for k, x in v.items()}
    return v


_PLAIN = frozenset((str, int, bool, float, type(None)))


def _freeze(v):
    if isinstance(v, list | tuple):
        return tuple(_freeze(x) for x in v)
    return v
