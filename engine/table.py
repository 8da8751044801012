"""The table before play: opening it, seats, bots, the host's partner and settings, start.

The host holds seat 0 (or, at a table opened to watch, no seat). Up to four seats; the host starts with two or more
seated, and empty seats sit that game out.
"""

from __future__ import annotations

from . import events as ev
from .deal import check_deck
from .decision import Decision
from .errors import RuleError
from .flow import begin_game
from .results import rated_seats
from .rules import settings_for

SEATS = 4
BOTS = {"carmen": "Carmen", "tito": "Tito", "luna": "Luna"}


def open_table(d: Decision, name, preset, settings, host, host_name, decks=None, first_dealer=None,
               host_seated=True, account=False) -> None:
    if d.state.status != "new":
        raise RuleError("bad_request", "This table is already open.")
    chosen = settings_for(preset, settings)
    if decks is not None:
        if not isinstance(decks, list | tuple) or not decks:
            raise RuleError("bad_request", "decks must be a list of 40-card orders.", {"decks": "invalid"})
        decks = tuple(check_deck(deck) for deck in decks)
    if first_dealer is not None and first_dealer not in range(SEATS):
        raise RuleError("bad_request", "first_dealer is a seat, 0 to 3.", {"first_dealer": "invalid"})
    d.add(ev.TableOpened(name, preset, chosen.as_dict(), host, host_name, decks, first_dealer, bool(host_seated),
                         bool(account)))


def require_waiting(s) -> None:
    if s.status == "expired":
        raise RuleError("table_expired", "This table has expired.")
    if s.status != "waiting":
        raise RuleError("game_started", "The game has already started.")


def require_host(s, player) -> None:
    if player is None or player != s.host:
        raise RuleError("host_only", "Only the host can do that.")


def sit(d: Decision, player: str, name: str, account: bool = False) -> None:
    """``account``: ``player`` is an account's player_id (a player token asked), which holds one seat
    at a table at most: its token then names one seat."""
    s = d.state
    require_waiting(s)
    if account and (s.seat_of(player) is not None or s.seat_of_account(player) is not None):
        raise RuleError("already_seated", "You already hold a seat at this table.",
                        {"seat": s.seat_of_account(player)})
    free = [i for i in range(SEATS) if s.seats[i] is None]
    if not free:
        raise RuleError("table_full", "Every seat is taken; you can watch instead.")
    d.add(ev.PlayerSeated(free[0], player, name, bool(account)))


def claim(d: Decision, seat, account: str, name: str) -> None:
    """A guest's seat (``seat``, found from its seat token) becomes ``account``'s. Claiming a seat
    the account holds already changes nothing; a seat held by another account, a bot's seat, or a
    second seat at a table where the account sits are refused."""
    s = d.state
    if seat is None or s.seats[seat] is None or s.seats[seat].kind != "human":
        raise RuleError("forbidden", "That token holds no player's seat at this table.")
    held = s.seats[seat].account
    if held == account:
        return
    if held is not None:
        raise RuleError("forbidden", "That seat belongs to another account.", {"seat": seat})
    other = s.seat_of_account(account)
    if other is not None:
        raise RuleError("already_seated", "You already hold another seat at this table.", {"seat": other})
    d.add(ev.SeatClaimed(seat, account, name))


def add_bot(d: Decision, player, bot: str, at=None) -> None:
    s = d.state
    require_host(s, player)
    require_waiting(s)
    if bot not in BOTS:
        raise RuleError("bad_request", "Choose carmen, tito or luna.", {"bot": "unknown bot"})
    free = [i for i in range(SEATS) if s.seats[i] is None]
    if at is None:
        if not free:
            raise RuleError("table_full", "Every seat is taken.")
        at = free[0]
    elif at not in range(SEATS):
        raise RuleError("bad_request", "A seat is 0 to 3.", {"seat": "invalid"})
    elif s.seats[at] is not None:
        raise RuleError("seat_taken", f"Seat {at} is taken.", {"seat": at})
    d.add(ev.BotAdded(at, bot, BOTS[bot]))


def remove_bot(d: Decision, player, at) -> None:
    s = d.state
    require_host(s, player)
    require_waiting(s)
    if at is None and any(x and x.kind == "bot" for x in s.seats):
        at = max(i for i, x in enumerate(s.seats) if x and x.kind == "bot")
    if at not in range(SEATS) or s.seats[at] is None or s.seats[at].kind != "bot":
        raise RuleError("bad_request", f"Seat {at} holds no bot.", {"seat": "no bot there"})
    d.add(ev.BotRemoved(at))


def choose_partner(d: Decision, player, partner) -> None:
    s = d.state
    require_host(s, player)
    require_waiting(s)
    if not s.settings.teams or not s.settings.choose_partner:
        raise RuleError("forbidden", "Partners are fixed at this table: they sit across.")
    if len(s.seated()) != SEATS:
        raise RuleError("not_enough_players", "Pick a partner once all four seats are taken.")
    if partner not in (1, 2, 3):
        raise RuleError("bad_request", "Your partner is seat 1, 2 or 3.", {"seat": "invalid"})
    d.add(ev.PartnerChosen(partner))


def change_settings(d: Decision, player, settings: dict) -> None:
    s = d.state
    require_host(s, player)
    require_waiting(s)
    chosen = settings_for(s.preset, settings, base=s.settings)
    d.add(ev.SettingsChanged(chosen.as_dict()))


def start(d: Decision, player, deck, pick: int) -> None:
    s = d.state
    require_host(s, player)
    require_waiting(s)
    if len(s.seated()) < 2:
        raise RuleError("not_enough_players", "At least two players must be seated to start.")
    if s.settings.rated:
        accounts = rated_seats(s)
        unrated = [i for i in s.seated() if accounts[i] is None]
        if unrated:
            raise RuleError("not_rated", "A rated game needs every seat held by a player with an account, "
                            "and no bot.", {"seats": unrated})
    begin_game(d, 1, deck, pick)
