"""Seats held by accounts (docs/api.md v1.3): the log says which seats are an account's, so ratings
and a player's list of games can be worked out from the logs alone."""

import pytest

from engine import RuleError, decide, replay
from engine import events as ev
from engine.state import State

from .helpers import apply, start


def refused(state, command):
    with pytest.raises(RuleError) as err:
        decide(state, command)
    return err.value


def _opened(account: bool) -> State:
    return apply(State(), {"type": "open", "name": "t", "preset": "del15", "settings": {}, "player": "pA",
                           "host_name": "ana", "account": account})


def test_a_table_opened_with_an_account_records_it_in_its_log():
    state = _opened(True)
    events = decide(State(), {"type": "open", "name": "t", "preset": "del15", "settings": {}, "player": "pA",
                              "host_name": "ana", "account": True})
    assert events[0].host_account is True
    assert state.seats[0].account == "pA" and state.seats[0].player == "pA"
    guest = _opened(False)
    assert guest.seats[0].account is None


def test_an_account_sits_once_and_its_seat_says_so():
    state = _opened(False)
    state = apply(state, {"type": "sit", "player": "pB", "name": "bea", "account": True})
    assert state.seats[1].account == "pB" and state.seat_of_account("pB") == 1
    err = refused(state, {"type": "sit", "player": "pB", "name": "bea", "account": True})
    assert err.code == "already_seated" and err.status == 409
    state = apply(state, {"type": "sit", "player": "g2", "name": "guest"})
    assert state.seats[2].account is None


def test_a_guest_seat_claimed_keeps_its_player_and_becomes_the_accounts():
    state = start(apply(_opened(False), {"type": "sit", "player": "g1", "name": "x"}))
    events = decide(state, {"type": "claim", "player": "g1", "account": "pC", "name": "carla"})
    assert events == [ev.SeatClaimed(1, "pC", "carla")]
    claimed = apply(state, {"type": "claim", "player": "g1", "account": "pC", "name": "carla"})
    assert claimed.seats[1].player == "g1"  # its seat token still names it
    assert claimed.seats[1].account == "pC" and claimed.seats[1].name == "carla"
    assert claimed.seat_of("g1") == 1 and claimed.seat_of_account("pC") == 1
    # again: nothing; by another account: refused; a second seat at one table: refused
    assert decide(claimed, {"type": "claim", "player": "g1", "account": "pC", "name": "carla"}) == []
    assert refused(claimed, {"type": "claim", "player": "g1", "account": "pD", "name": "d"}).code == "forbidden"
    assert refused(claimed, {"type": "claim", "player": "pA", "account": "pC", "name": "c"}).code == "already_seated"
    # a token seated nowhere here
    assert refused(state, {"type": "claim", "player": "nobody", "account": "pC", "name": "c"}).code == "forbidden"


def test_claims_replay_from_the_log():
    state = apply(_opened(False), {"type": "sit", "player": "g1", "name": "x"})
    events = [ev.TableOpened("t", "del15", state.settings.as_dict(), "pA", "ana", host_account=True),
              ev.PlayerSeated(1, "g1", "x"), ev.SeatClaimed(1, "pC", "carla")]
    replayed = replay(events)
    assert [(s.player, s.account) for s in replayed.seats[:2]] == [("pA", "pA"), ("g1", "pC")]
