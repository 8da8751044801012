"""The game's flow around the plays: round end, next round, the ways a game
ends (target, resign, exit, away, expiry) and the rematch."""

from __future__ import annotations

from typing import Any, cast

from . import events as ev
from .deal import deal_round
from .decision import Decision
from .errors import RuleError
from .scoring import game_winner, score_round
from .state import State

MIDGAME = ("playing", "round_over")

# The shell draws a random first dealer's ``pick`` from range(PICK_RANGE): 12 divides evenly by
# 2, 3 and 4 players, so ``pick % players`` favours no seat (range(4) % 3 gave seat 0 half the deals).
PICK_RANGE = 12


def begin_game(d: Decision, game: int, deck: object, pick: int) -> None:
    """Sides, the first dealer, and the first deal.

    Four players in a ruleset with teams make two teams, partners across;
    otherwise every player is a side. ``pick`` is the shell's random number,
    used only where the first dealer is random (cardgames): drawn evenly from
    ``range(PICK_RANGE)``, it gives every player the same chance.
    """
    s = d.state
    players = tuple(s.seated())
    sides: tuple[tuple[int, ...], ...]
    if s.settings.teams and len(players) == 4:
        sides = ((0, 2), (1, 3))
    else:
        sides = tuple((p,) for p in players)
    if s.first_dealer is not None and s.first_dealer in players and game == 1:
        dealer = s.first_dealer
    elif s.settings.first_dealer == "random":
        dealer = players[pick % len(players)]
    else:
        host_seat = s.seat_of(s.host)
        dealer = host_seat if host_seat in players else players[0]
    d.add(ev.GameStarted(game, players, sides, dealer))
    deal_round(d, 1, dealer, _deck_for(s, game, 1, deck))


def _deck_for(s: State, game: int, round_no: int, shuffled: object) -> object:
    """An operator's deck for this round when the table was opened with one, else the shuffle."""
    if game == 1 and s.decks and round_no <= len(s.decks):
        return s.decks[round_no - 1]
    return shuffled


def end_round(d: Decision) -> None:
    """Leftovers to the last capturer (never an escoba), then the score box."""
    s = d.state
    d.add(ev.RoundEnded(tuple(s.table), s.last_capturer))
    breakdown = score_round(s.sides, s.piles, s.escobas, s.settings)
    scores = tuple(total + side["round_points"] for total, side in zip(s.scores, breakdown, strict=True))
    # a Tally is the JSON object the event records (cast: a TypedDict is no dict[str, Any] to mypy)
    d.add(ev.RoundScored(s.round, cast(tuple[dict[str, Any], ...], tuple(breakdown)), scores))
    winner = game_winner(scores, s.settings.target)
    if winner is not None:
        d.add(ev.GameFinished(tuple(s.sides[winner]), "target"))


def next_round(d: Decision, seat: int | None, deck: object) -> None:
    s = d.state
    if s.status != "round_over":
        raise RuleError("not_between_rounds", "NEXT ROUND is for the end of a round.")
    require_player(s, seat)
    assert s.dealer is not None, "a round was dealt"
    deal_round(d, s.round + 1, s.next_seat(s.dealer), _deck_for(s, s.game, s.round + 1, deck))


def require_player(s: State, seat: int | None) -> None:
    if seat not in s.players:
        raise RuleError("forbidden", "Only a player in this game may do that.")


def require_midgame(s: State) -> None:
    # an expired table refuses every command before any chapter sees it (engine/game.py)
    if s.status not in MIDGAME:
        raise RuleError("not_playing", "There is no game under way at this table.")


def winners_without(s: State, loser_seat: int) -> tuple[int, ...]:
    """When a side loses: with teams the other team; otherwise the best of the others, ties all listed."""
    losing = s.side_of[loser_seat]
    others = [i for i in range(len(s.sides)) if i != losing]
    best = max(s.scores[i] for i in others)
    return tuple(seat for i in others if s.scores[i] == best for seat in s.sides[i])


def resign(d: Decision, seat: int | None, how: str) -> None:
    s = d.state
    require_midgame(s)
    require_player(s, seat)
    assert seat is not None  # a player's
    winners = winners_without(s, seat)
    d.add(ev.PlayerResigned(seat, how))
    d.add(ev.GameFinished(winners, how))


def open_away(d: Decision, turn: object) -> None:
    """The turn that began ``turn`` turns ago is still open after the away time."""
    s = d.state
    if s.status != "playing" or s.turn_seq != turn or s.away_open is not None:
        raise RuleError("not_playing", "That turn is over; there is nobody to call away.")
    assert s.turn is not None and isinstance(turn, int), "a turn under way, the one asked about"
    d.add(ev.AwayOpened(s.turn, turn))


def claim_away(d: Decision, seat: int | None) -> None:
    s = d.state
    require_midgame(s)
    require_player(s, seat)
    assert seat is not None  # a player's
    if s.away_open is None or s.away_open != s.turn:
        raise RuleError("away_not_open", "PLAYER AWAY opens 48 hours after a turn began.")
    if seat == s.away_open:
        raise RuleError("forbidden", "You cannot call yourself away.")
    away = s.away_open
    d.add(ev.AwayClaimed(seat, away))
    d.add(ev.GameFinished(winners_without(s, away), "away"))


def expire(d: Decision) -> None:
    s = d.state
    if s.status == "finished":  # (expired: refused before, engine/game.py)
        raise RuleError("game_over", "This table's game is already over.")
    d.add(ev.TableExpired())


def answer_rematch(d: Decision, seat: int | None, accept: object, teams: str | None) -> None:
    s = d.state
    if not s.rematch_allowed():
        raise RuleError("no_rematch", _no_rematch_reason(s))
    if seat is None or seat not in s.humans():
        raise RuleError("forbidden", "Only the players of this game answer a rematch.")
    if teams is not None:
        holder = s.seats[seat]  # a human's seat (above): never empty
        if holder is None or holder.player != s.host:
            raise RuleError("host_only", "Only the host chooses KEEP or SWAP teams.")
        if len(s.sides) != 2 or len(s.players) != 4:
            raise RuleError("bad_request", "KEEP or SWAP is for four players in teams.", {"teams": "no teams"})
    d.add(ev.RematchAnswered(seat, bool(accept), teams))


def _no_rematch_reason(s: State) -> str:
    if s.status != "finished":
        return "A rematch is offered when the game is over."
    if s.rematch_closed == "declined":
        return "A player declined the rematch."
    if s.rematch_closed == "lapsed":
        return "The rematch offer lapsed."
    return "No rematch after a game ended by EXIT GAME or PLAYER AWAY."


def start_rematch(d: Decision, deck: object, pick: int) -> None:
    s = d.state
    if not s.rematch_ready():
        raise RuleError("no_rematch", "Not every player has accepted the rematch.")
    d.add(ev.RematchStarted(swap=s.rematch_teams == "swap"))
    begin_game(d, s.game + 1, deck, pick)


def lapse_rematch(d: Decision) -> None:
    s = d.state
    if not s.rematch_allowed() or s.rematch_ready():
        raise RuleError("no_rematch", "There is no open rematch offer.")
    d.add(ev.RematchLapsed())
