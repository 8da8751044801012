"""Who played a finished game and how each placed, read from a table's log (pure).

Ratings and a player's totals are projections of the tables' logs (docs/ratings.md): the worker's
live update and ``escoba ratings rebuild`` both read a game's result here, so they agree.

- ``rated_seats(state)``: per seat, the account's player id when an account holds it (and it is not
  a bot), else None. The one place that knows how the log records an account.
- ``finished_games(events)``: every game of the log that ended with ``GameFinished``, in order, with
  each side's place. A table that expired mid-game has no result: nothing changes.

Places: a game won at the target ranks the sides by their final score (ties share a place; the
target is only reached alone, so the first place is never shared). A game ended by a resignation,
an exit or PLAYER AWAY is a loss for that side: it takes the last place alone, and the others are
ranked by their scores at that moment.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import events as ev
from .state import State, evolve

MODES = ("two", "three", "teams", "four")
ABANDONED = ("resign", "exit", "away")  # the ways a side loses by leaving


def rated_seats(state: State) -> list[str | None]:
    """Per seat (0..3), the account's player id when an account holds it, else None (a guest, a bot,
    an empty seat). The log records an account with the seat (``Seat.account``: seated with a player
    token, or a guest's seat claimed)."""
    return [seat.account if seat is not None and seat.kind == "human" else None for seat in state.seats]


def mode_of(players: int, sides: int) -> str:
    """``two``, ``three``, ``teams`` (four in two teams) or ``four`` (four, each on their own)."""
    if players == 2:
        return "two"
    if players == 3:
        return "three"
    return "teams" if sides == 2 else "four"


@dataclass(frozen=True, slots=True)
class Placing:
    """One seat's part in a finished game."""

    seat: int
    player: str | None  # the account (None: a guest or a bot)
    name: str
    side: int
    place: int  # 1 = won; sides ranked by score, a side that left last
    result: str  # "win" or "loss"
    abandoned: bool  # this seat resigned, exited or was declared away
    escobas: int  # the escobas this seat made in the game


@dataclass(frozen=True, slots=True)
class GameResult:
    game: int  # the table's game number (a rematch is the next one)
    version: int  # the log version of its GameFinished
    preset: str
    mode: str
    rated: bool
    reason: str  # "target", "resign", "exit", "away"
    placings: tuple[Placing, ...]  # in seat order of the game's players

    @property
    def key(self) -> str:
        return str(self.game)

    def ranks(self) -> list[int]:
        """Per side, its place (for the rating models)."""
        by_side: dict[int, int] = {}
        for p in self.placings:
            by_side[p.side] = p.place
        return [by_side[i] for i in range(len(by_side))]


def _places(scores: list[int], loser: int | None) -> list[int]:
    """Each side's place: by score (ties share), the side that left (``loser``) last alone."""
    n = len(scores)
    out = [0] * n
    others = [i for i in range(n) if i != loser]
    for i in others:
        out[i] = 1 + sum(1 for j in others if scores[j] > scores[i])
    if loser is not None:
        out[loser] = n
    return out


# Events a result never reads and whose fold changes nothing a result reads (no seat, side, score or
# status): a shell may pass None in their place, undecoded (a rebuild reads a million logs).
NOT_READ = frozenset({"RoundDealt", "HandsDealt", "RoundEnded", "AwayOpened", "RematchAnswered",
                      "RematchLapsed"})
# Events read only for their escobas (an escoba-less play may be passed as None too); not folded.
ESCOBA_EVENTS = frozenset({"CardPlayed", "FifteenTaken", "OpeningTableTaken"})


def finished_games(events) -> list[GameResult]:
    """Every game of the log (engine events, oldest first) that finished, with its placings.

    An event of ``NOT_READ``, or an escoba-less play, may be None: it only counts for the versions.
    Only what a result reads is folded (seats, sides, scores, status; a play moves none of them).
    """
    return finished_games_at(enumerate(events, start=1))


def finished_games_at(pairs) -> list[GameResult]:
    """``finished_games`` of ``(version, event)`` pairs, oldest first: any event ``finished_games``
    may take as None may be left out altogether."""
    state = State()
    results: list[GameResult] = []
    escobas: dict[int, int] = {}
    left: int | None = None  # the seat that resigned, exited or was declared away
    for version, event in pairs:
        state.version = version - 1
        if event is None:
            continue
        kind = type(event)
        if kind is ev.CardPlayed or kind is ev.FifteenTaken or kind is ev.OpeningTableTaken:
            gained = event.escobas if kind is ev.OpeningTableTaken else int(event.escoba)
            if gained:
                escobas[event.seat] = escobas.get(event.seat, 0) + gained
            continue
        if kind is ev.GameStarted:
            escobas, left = {}, None
        elif kind is ev.PlayerResigned:
            left = event.seat
        elif kind is ev.AwayClaimed:
            left = event.away
        elif kind is ev.GameFinished:
            results.append(_result(state, event, escobas, left))
        if type(event).__name__ not in NOT_READ:
            evolve(state, event)
    return results


def _result(state: State, finished: ev.GameFinished, escobas: dict[int, int], left: int | None) -> GameResult:
    s = state
    loser_side = s.side_of[left] if left is not None and finished.reason in ABANDONED else None
    places = _places(list(s.scores), loser_side)
    accounts = rated_seats(s)
    winners = set(finished.winners)
    placings = tuple(
        Placing(seat, accounts[seat], s.seats[seat].name, s.side_of[seat], places[s.side_of[seat]],
                "win" if seat in winners else "loss", seat == left and loser_side is not None,
                escobas.get(seat, 0))
        for seat in s.players
    )
    return GameResult(s.game, s.version + 1, s.preset, mode_of(len(s.players), len(s.sides)),
                      bool(s.settings.rated), finished.reason, placings)


__all__ = ["ABANDONED", "ESCOBA_EVENTS", "MODES", "NOT_READ", "GameResult", "Placing", "finished_games",
           "finished_games_at", "mode_of",
           "rated_seats"]
