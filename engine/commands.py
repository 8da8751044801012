"""The commands ``decide`` takes: one frozen dataclass a move, parsed once at the edge.

The shells build a command as a dict, as docs/api.md shows a move
(``{"type": "play", "card": "7o", "capture": ["8c"]}``) with the actor added: ``player``
(the id the API knows from the token) or ``by`` (a seat, as the workers know it).
``parse_command`` turns that dict into its class here, once; the engine's rules then read
typed fields. Chance arrives inside the command (``deck``: a shuffled deck; ``pick``: a
random number), put there by the shell (events/service.py), and is recorded in the events.
System commands (``OpenAway``, ``Expire``, ``StartRematch``, ``LapseRematch``) come from the
workers' timers.

A field a rule checks (a seat, a bot's name, settings, a deck) is typed ``object`` here: the
rule refuses a bad one with the message clients have always had, in the rules' own order (the
host is checked before the seat they name). What no rule checks is checked here: the command's
type, the fields a command cannot do without, the actor's fields (set by the shells), a
rematch's ``teams``, a ``pick`` and the lists of cards.

>>> parse_command({"type": "play", "by": 1, "card": "7o", "capture": ["8c"]})
Play(by=1, player=None, card='7o', capture=('8c',))
>>> parse_command({"type": "castle"})
Traceback (most recent call last):
...
engine.errors.RuleError: Unknown move 'castle'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from .errors import RuleError


@dataclass(frozen=True, slots=True, kw_only=True)
class Open:
    """Open a new table, its host ``player`` seated (or watching: ``host_seated`` False)."""

    type: ClassVar[str] = "open"
    name: str
    preset: object  # settings_for checks it (with the table's settings)
    player: str
    host_name: str
    settings: object = None
    decks: object = None  # an operator's decks: checked by open_table
    first_dealer: object = None
    host_seated: object = True
    account: bool = False  # the host is an account (its player_id is ``player``)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sit:
    type: ClassVar[str] = "sit"
    player: str
    name: str
    account: bool = False  # an account takes the seat (its player_id is ``player``)


@dataclass(frozen=True, slots=True, kw_only=True)
class Acting:
    """A move by a player at the table: ``by`` (their seat) or ``player`` (their id), whichever the
    shell knows; ``decide`` fills in the other from the table (seats move with partner choice)."""

    by: int | None = None
    player: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim(Acting):
    """A guest's seat (its seat token's player) becomes ``account``'s, under ``name``: POST /me/claim."""

    type: ClassVar[str] = "claim"
    account: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AddBot(Acting):
    type: ClassVar[str] = "add_bot"
    bot: object = None
    seat: object = None  # None: the first free seat


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoveBot(Acting):
    type: ClassVar[str] = "remove_bot"
    seat: object = None  # None: the last bot


@dataclass(frozen=True, slots=True, kw_only=True)
class ChoosePartner(Acting):
    type: ClassVar[str] = "choose_partner"
    seat: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeSettings(Acting):
    type: ClassVar[str] = "settings"
    settings: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Start(Acting):
    type: ClassVar[str] = "start"
    deck: object = None  # the shell's shuffle (or an operator's deck): check_deck checks it
    pick: int | None = None  # the shell's draw for a random first dealer (None: 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class Play(Acting):
    type: ClassVar[str] = "play"
    card: object = None  # play_card checks it is in the hand
    capture: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TakeFifteen(Acting):
    type: ClassVar[str] = "take_fifteen"
    cards: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NextRound(Acting):
    type: ClassVar[str] = "next_round"
    deck: object = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Resign(Acting):
    type: ClassVar[str] = "resign"


@dataclass(frozen=True, slots=True, kw_only=True)
class Exit(Acting):
    type: ClassVar[str] = "exit"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimAway(Acting):
    type: ClassVar[str] = "claim_away"


@dataclass(frozen=True, slots=True, kw_only=True)
class Rematch(Acting):
    type: ClassVar[str] = "rematch"
    accept: object = True
    teams: str | None = None  # "keep" or "swap", the host's (docs/api.md)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAway(Acting):
    type: ClassVar[str] = "open_away"
    turn: object = None  # the turn_seq the timer was set for


@dataclass(frozen=True, slots=True, kw_only=True)
class Expire(Acting):
    type: ClassVar[str] = "expire"


@dataclass(frozen=True, slots=True, kw_only=True)
class StartRematch(Acting):
    type: ClassVar[str] = "start_rematch"
    deck: object = None
    pick: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LapseRematch(Acting):
    type: ClassVar[str] = "lapse_rematch"


Command = (
    Open | Sit | Claim | AddBot | RemoveBot | ChoosePartner | ChangeSettings | Start | Play | TakeFifteen
    | NextRound | Resign | Exit | ClaimAway | Rematch | OpenAway | Expire | StartRematch | LapseRematch
)
# the commands that carry chance (a deck; a pick for a random first dealer), put in by the shell
WITH_CHANCE = (Start, NextRound, StartRematch)

COMMANDS: dict[str, type[Command]] = {cls.type: cls for cls in (
    Open, Sit, Claim, AddBot, RemoveBot, ChoosePartner, ChangeSettings, Start, Play, TakeFifteen, NextRound,
    Resign, Exit, ClaimAway, Rematch, OpenAway, Expire, StartRematch, LapseRematch,
)}
PLAYER_MOVES = (
    "add_bot", "remove_bot", "choose_partner", "settings", "start", "play", "take_fifteen",
    "next_round", "resign", "exit", "claim_away", "rematch",
)
SYSTEM_COMMANDS = ("open_away", "expire", "start_rematch", "lapse_rematch")


def parse_command(data: Mapping[str, object]) -> Command:
    """The command ``data`` names, typed; RuleError (``bad_request``) for a malformed one.

    Fields a command does not have are left out (the API's schemas refuse them before: a command
    here may carry the shell's own, ``expected_version`` say).
    """
    kind = data.get("type")
    cls = COMMANDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise RuleError("bad_request", f"Unknown move {kind!r}.", {"type": "unknown move"})
    if cls is Open:
        return Open(name=_text(data, "name"), preset=_required(data, "preset"), player=_text(data, "player"),
                    host_name=_text(data, "host_name"), settings=data.get("settings"), decks=data.get("decks"),
                    first_dealer=data.get("first_dealer"), host_seated=data.get("host_seated", True),
                    account=data.get("account") is True)
    if cls is Sit:
        return Sit(player=_text(data, "player"), name=_text(data, "name"), account=data.get("account") is True)
    by, player = data.get("by"), data.get("player")
    if by is not None and (type(by) is not int):
        raise RuleError("bad_request", "by is a seat, 0 to 3.", {"by": "invalid"})
    if player is not None and not isinstance(player, str):
        raise RuleError("bad_request", "player is a player's id.", {"player": "invalid"})
    if cls is Claim:
        return Claim(by=by, player=player, account=_text(data, "account"), name=_text(data, "name"))
    if cls is Play:
        return Play(by=by, player=player, card=data.get("card"), capture=_cards(data, "capture"))
    if cls is TakeFifteen:
        return TakeFifteen(by=by, player=player, cards=_cards(data, "cards"))
    if cls is Start:
        return Start(by=by, player=player, deck=data.get("deck"), pick=_pick(data))
    if cls is StartRematch:
        return StartRematch(by=by, player=player, deck=data.get("deck"), pick=_pick(data))
    if cls is NextRound:
        return NextRound(by=by, player=player, deck=data.get("deck"))
    if cls is AddBot:
        return AddBot(by=by, player=player, bot=data.get("bot"), seat=data.get("seat"))
    if cls is RemoveBot:
        return RemoveBot(by=by, player=player, seat=data.get("seat"))
    if cls is ChoosePartner:
        return ChoosePartner(by=by, player=player, seat=data.get("seat"))
    if cls is ChangeSettings:
        return ChangeSettings(by=by, player=player, settings=data.get("settings") or {})
    if cls is Rematch:
        teams = data.get("teams")
        if teams is not None and not isinstance(teams, str):
            raise RuleError("bad_request", "teams is keep or swap.", {"teams": "invalid"})
        return Rematch(by=by, player=player, accept=data.get("accept", True), teams=teams)
    if cls is OpenAway:
        return OpenAway(by=by, player=player, turn=data.get("turn"))
    if cls is Resign:
        return Resign(by=by, player=player)
    if cls is Exit:
        return Exit(by=by, player=player)
    if cls is ClaimAway:
        return ClaimAway(by=by, player=player)
    if cls is Expire:
        return Expire(by=by, player=player)
    assert cls is LapseRematch, cls  # (every type of COMMANDS is parsed above)
    return LapseRematch(by=by, player=player)


def _required(data: Mapping[str, object], name: str) -> object:
    if name not in data:
        raise RuleError("bad_request", f"A {data.get('type')} command needs {name}.", {name: "missing"})
    return data[name]


def _text(data: Mapping[str, object], name: str) -> str:
    value = _required(data, name)
    if not isinstance(value, str):
        raise RuleError("bad_request", f"{name} must be text.", {name: "not text"})
    return value


def _cards(data: Mapping[str, object], name: str) -> tuple[str, ...]:
    """A list of cards, as the rules read it (absent or empty: none); each must be a card's code."""
    given = data.get(name) or ()
    cards = tuple(given) if isinstance(given, list | tuple | str) else None
    if cards is None or not all(isinstance(c, str) for c in cards):
        raise RuleError("bad_request", f"{name} lists cards.", {name: "not a list of cards"})
    return cards


def _pick(data: Mapping[str, object]) -> int | None:
    pick = data.get("pick")
    if pick is not None and type(pick) is not int:
        raise RuleError("bad_request", "pick is a whole number.", {"pick": "invalid"})
    return pick


__all__ = [
    "COMMANDS", "PLAYER_MOVES", "SYSTEM_COMMANDS", "WITH_CHANCE", "AddBot", "ChangeSettings", "ChoosePartner", "Claim",
    "ClaimAway", "Command", "Exit", "Expire", "LapseRematch", "NextRound", "Open", "OpenAway", "Play",
    "Rematch", "RemoveBot", "Resign", "Sit", "Start", "StartRematch", "TakeFifteen", "parse_command",
]
