"""The game's flow: round end, game end, resign, exit, away, expiry, rematch."""

import random

import pytest

import engine
from engine import RuleError, decide, fold
from engine import events as ev
from engine.capture import captures
from engine.cards import FULL_DECK

from .helpers import apply, deck_with, open_table, play, play_out_round, shuffled, start, started


def refused(state, command):
    with pytest.raises(RuleError) as err:
        decide(state, command)
    return err.value


def end_of_round(scores, preset="del15", players=2, settings=None):
    """Seat 1 holds the round's last card (9e, which takes nothing from an 8); seat 0
    captured last and holds the 7 of coins: the round gives side 0 cards, coins, the
    7 of coins and (del15) nothing else, so 3 points, or 4 with most sevens."""
    state = started(preset, players, settings, deck_with(["1o", "2c", "3e", "4b"])).copy()
    state.stock = []
    state.hands = {p: [] for p in state.players}
    state.hands[state.turn] = ["9e"]
    state.table = ["8c"]
    state.piles = [[] for _ in state.sides]
    state.piles[0] = ["7o"]
    state.last_capturer = 0
    state.scores = list(scores)
    return state


def last_play(state):
    return play(state, state.hands[state.turn][0])


# --- the end of a round and of the game ------------------------------------


def test_round_end_scores_and_waits_for_next_round():
    state = last_play(end_of_round([0, 0]))
    assert state.status == "round_over"
    assert state.scores == [3, 0]  # cards, coins, 7 of coins (del15: the setenta needs 4 suits)
    assert state.last_round[0]["round_points"] == 3 and state.last_round[0]["cards"] == 3
    assert state.turn is None and state.table == []


def test_reaching_the_target_strictly_ahead_ends_the_game():
    state = last_play(end_of_round([13, 14]))
    assert state.scores == [16, 14]
    assert state.status == "finished" and state.winners == (0,) and state.ended_by == "target"


def test_a_tie_at_the_top_plays_on_however_high():
    state = last_play(end_of_round([40, 43]))
    assert state.scores == [43, 43] and state.status == "round_over" and state.winners is None


def test_over_the_target_but_behind_does_not_win():
    state = last_play(end_of_round([10, 30]))
    assert state.status == "finished" and state.winners == (1,)


def test_below_the_target_plays_on():
    state = last_play(end_of_round([5, 8]))
    assert state.status == "round_over"


def test_teams_win_together():
    state = last_play(end_of_round([14, 3], players=4))
    assert state.status == "finished" and state.winners == (0, 2)


def test_scores_change_only_at_round_end():
    rng = random.Random(3)
    state = started("selminha", 2, None, shuffled(rng))
    while state.status == "playing":
        before = list(state.scores)
        new = decide(state, {"type": "play", "by": state.turn, "card": state.hands[state.turn][0]})
        state = fold(state, new)
        if not any(isinstance(e, ev.RoundScored) for e in new):
            assert state.scores == before


def test_next_round_by_any_seated_player_only_between_rounds():
    state = last_play(end_of_round([0, 0, 0], players=3))
    err = refused(state, {"type": "next_round", "by": 3, "deck": list(FULL_DECK)})
    assert err.code == "forbidden"
    nxt = apply(state, {"type": "next_round", "by": 2, "deck": list(FULL_DECK)})
    assert nxt.status == "playing" and nxt.round == 2 and nxt.scores == [3, 0, 0]
    err = refused(nxt, {"type": "next_round", "by": 2, "deck": list(FULL_DECK)})
    assert err.code == "not_between_rounds"


# --- resign, exit, away -------------------------------------------------------


@pytest.mark.parametrize("how", ["resign", "exit"])
def test_resign_or_exit_with_two_players(how):
    state = started("del15", 2)
    state = apply(state, {"type": how, "by": 1})
    assert state.status == "finished" and state.winners == (0,) and state.ended_by == how


@pytest.mark.parametrize("how", ["resign", "exit"])
def test_a_team_loses_together(how):
    state = started("del15", 4)
    state = apply(state, {"type": how, "by": 3})
    assert state.winners == (0, 2)
    state = apply(started("selminha", 4), {"type": how, "by": 0})
    assert state.winners == (1, 3)


@pytest.mark.parametrize(
    ("scores", "winners"), [([5, 9, 7], (1,)), ([5, 7, 7], (1, 2)), ([9, 2, 2], (1, 2))]
)
def test_without_teams_the_best_of_the_others_wins_ties_all_listed(scores, winners):
    state = started("del15", 3).copy()
    state.scores = list(scores)
    assert apply(state, {"type": "resign", "by": 0}).winners == winners


def test_four_without_teams_every_player_for_themselves():
    state = started("cardgames", 4).copy()
    assert state.sides == ((0,), (1,), (2,), (3,))
    state.scores = [1, 4, 4, 2]
    assert apply(state, {"type": "exit", "by": 3}).winners == (1, 2)


def test_resign_between_rounds_and_refusals():
    state = last_play(end_of_round([0, 0]))
    assert apply(state, {"type": "resign", "by": 0}).winners == (1,)
    assert refused(open_table("del15", 2), {"type": "resign", "by": 0}).code == "not_playing"
    assert refused(started("del15", 2), {"type": "resign", "by": 3}).code == "forbidden"
    done = apply(started("del15", 2), {"type": "resign", "by": 0})
    assert refused(done, {"type": "resign", "by": 1}).code == "not_playing"


def test_player_away_after_the_timer():
    state = started("del15", 3)
    away = state.turn
    seq = state.turn_seq
    err = refused(state, {"type": "claim_away", "by": 2})
    assert err.code == "away_not_open"
    state = apply(state, {"type": "open_away", "turn": seq})
    assert state.away_open == away
    err = refused(state, {"type": "claim_away", "by": away})
    assert err.code == "forbidden"
    assert refused(state, {"type": "open_away", "turn": seq}).code == "not_playing"
    other = next(p for p in state.players if p != away)
    done = apply(state, {"type": "claim_away", "by": other})
    assert done.status == "finished" and done.ended_by == "away" and away not in done.winners
    assert set(done.winners) == set(state.players) - {away}  # 0 points each: a tie


def test_away_with_teams_and_a_stale_timer():
    state = started("del15", 4)
    seq = state.turn_seq
    away = state.turn  # seat 1 leads (seat 0 deals)
    state = apply(state, {"type": "open_away", "turn": seq})
    done = apply(state, {"type": "claim_away", "by": 0})
    assert done.winners == (0, 2) and away == 1
    # the away player plays: the call closes, and an old timer finds nothing
    card = state.hands[away][0]
    moved = play(state, card, next(iter(captures(card, state.table, state.settings)), ()))
    assert moved.away_open is None
    assert refused(moved, {"type": "open_away", "turn": seq}).code == "not_playing"
    assert refused(moved, {"type": "claim_away", "by": 0}).code == "away_not_open"


# --- expiry -------------------------------------------------------------------


@pytest.mark.parametrize("when", ["waiting", "playing", "round_over"])
def test_expiry_ends_with_no_winner(when):
    state = {
        "waiting": open_table("del15", 2),
        "playing": started("del15", 2),
        "round_over": last_play(end_of_round([0, 0])),
    }[when]
    state = apply(state, {"type": "expire"})
    assert state.status == "expired" and state.winners == () and state.ended_by == "expired"
    for command in (
        {"type": "play", "by": 1, "card": "1o"},
        {"type": "sit", "player": "x", "name": "X"},
        {"type": "rematch", "by": 0, "accept": True},
        {"type": "expire"},
    ):
        err = refused(state, command)
        assert err.code == "table_expired" and err.status == 409


def test_a_finished_game_does_not_expire_again():
    done = apply(started("del15", 2), {"type": "resign", "by": 0})
    assert refused(done, {"type": "expire"}).code == "game_over"


# --- rematch ------------------------------------------------------------------


def finished(how="resign", players=2, preset="del15", by=1):
    state = started(preset, players)
    if how == "target":
        return last_play(end_of_round([30, 0], preset, players))
    if how == "away":
        state = apply(state, {"type": "open_away", "turn": state.turn_seq})
        return apply(
            state, {"type": "claim_away", "by": next(p for p in state.players if p != state.turn)}
        )
    return apply(state, {"type": how, "by": by})


@pytest.mark.parametrize("how", ["target", "resign"])
def test_rematch_when_every_seated_human_agrees(how):
    state = finished(how)
    assert state.rematch_allowed() and not state.rematch_ready()
    state = apply(state, {"type": "rematch", "by": 0, "accept": True})
    assert not state.rematch_ready()
    err = refused(state, {"type": "start_rematch", "deck": list(FULL_DECK), "pick": 0})
    assert err.code == "no_rematch"
    state = apply(state, {"type": "rematch", "by": 1, "accept": True})
    assert state.rematch_ready()
    state = apply(state, {"type": "start_rematch", "deck": list(FULL_DECK), "pick": 0})
    assert state.status == "playing" and state.game == 2 and state.scores == [0, 0]
    assert state.winners is None and state.round == 1


def test_bots_do_not_answer_a_rematch():
    state = open_table("del15", 1)
    state = apply(state, {"type": "add_bot", "by": 0, "bot": "luna"})
    state = start(state)
    state = apply(state, {"type": "resign", "by": 1})
    assert refused(state, {"type": "rematch", "by": 1, "accept": True}).code == "forbidden"
    state = apply(state, {"type": "rematch", "by": 0, "accept": True})
    assert state.rematch_ready()


def test_a_refusal_or_a_lapse_closes_the_rematch():
    state = apply(finished(), {"type": "rematch", "by": 0, "accept": False})
    assert not state.rematch_allowed()
    err = refused(state, {"type": "rematch", "by": 1, "accept": True})
    assert err.code == "no_rematch" and err.status == 409
    state = apply(finished(), {"type": "lapse_rematch"})
    assert refused(state, {"type": "rematch", "by": 1, "accept": True}).code == "no_rematch"
    assert refused(state, {"type": "lapse_rematch"}).code == "no_rematch"


@pytest.mark.parametrize("how", ["exit", "away"])
def test_no_rematch_after_exit_or_away(how):
    state = finished(how)
    assert not state.rematch_allowed()
    err = refused(state, {"type": "rematch", "by": 0, "accept": True})
    assert err.code == "no_rematch"


def test_no_rematch_mid_game():
    err = refused(started("del15", 2), {"type": "rematch", "by": 0, "accept": True})
    assert err.code == "no_rematch"


def test_no_rematch_after_expiry():
    state = apply(started("del15", 2), {"type": "expire"})
    assert not state.rematch_allowed()
    err = refused(state, {"type": "rematch", "by": 0, "accept": True})
    assert err.status == 409 and err.code in ("no_rematch", "table_expired")


@pytest.mark.parametrize(("teams", "partner"), [("keep", 2), ("swap", 1)])
def test_four_players_keep_or_swap_teams(teams, partner):
    state = finished("resign", 4, by=3)
    host_partner_before = state.seats[2].player
    err = refused(state, {"type": "rematch", "by": 1, "accept": True, "teams": "swap"})
    assert err.code == "host_only"
    state = apply(state, {"type": "rematch", "by": 0, "accept": True, "teams": teams})
    for seat in (1, 2, 3):
        state = apply(state, {"type": "rematch", "by": seat, "accept": True})
    old = {s.player: i for i, s in enumerate(state.seats)}
    state = apply(state, {"type": "start_rematch", "deck": list(FULL_DECK), "pick": 0})
    assert state.sides == ((0, 2), (1, 3))
    assert state.seats[0].player == "p0"
    assert state.seats[2].player == [p for p, i in old.items() if i == partner][0]
    assert (state.seats[2].player == host_partner_before) == (teams == "keep")


def test_keep_or_swap_is_for_four_in_teams():
    err = refused(finished(), {"type": "rematch", "by": 0, "accept": True, "teams": "swap"})
    assert err.code == "bad_request"


def test_a_whole_game_then_a_rematch():
    rng = random.Random(11)
    state = started("cardgames", 3, None, shuffled(rng))
    while state.status != "finished":
        if state.status == "round_over":
            state = apply(state, {"type": "next_round", "by": 0, "deck": shuffled(rng)})
        state, _ = play_out_round(state, rng)
    assert state.ended_by == "target"
    best = max(state.scores)
    assert best >= 21 and state.scores.count(best) == 1
    assert state.winners == (state.scores.index(best),)
    for seat in state.players:
        state = apply(state, {"type": "rematch", "by": seat, "accept": True})
    state = apply(state, {"type": "start_rematch", "deck": shuffled(rng), "pick": 1})
    assert state.game == 2 and state.dealer == state.players[1]


@pytest.mark.parametrize(("target", "status"), [(10, "finished"), (15, "round_over")])
def test_the_hosts_target_decides_when_the_game_ends(target, status):
    state = last_play(end_of_round([7, 0], settings={"target": target}))
    assert state.scores == [10, 0] and state.status == status


# --- a random first dealer -------------------------------------------------------


@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_random_first_dealer_is_even_over_the_picks_the_shell_draws(players):
    """cardgames: every pick in range(PICK_RANGE) once gives each player the same number of first
    deals (with range(4) and three players, seat 0 had half of them)."""
    from collections import Counter

    from engine import PICK_RANGE

    dealers = Counter(start(open_table("cardgames", players), pick=p).dealer for p in range(PICK_RANGE))
    assert sorted(dealers) == list(range(players))
    assert set(dealers.values()) == {PICK_RANGE // players}


def test_a_rematchs_random_first_dealer_is_even_too():
    from collections import Counter

    from engine import PICK_RANGE

    state = start(open_table("cardgames", 3), pick=0)
    state = apply(state, {"type": "resign", "by": 1})
    while state.status != "finished":  # the others resign too, until one is left
        state = apply(state, {"type": "resign", "by": next(p for p in state.players if p in state.seated()
                                                              and p != 0)})
    for seat in (0, 1, 2):
        state = apply(state, {"type": "rematch", "by": seat, "accept": True})
    assert state.rematch_ready()
    dealers = Counter(apply(state, {"type": "start_rematch", "deck": list(FULL_DECK), "pick": p}).dealer
                      for p in range(PICK_RANGE))
    assert dealers == {0: 4, 1: 4, 2: 4}


# --- who deals first ----------------------------------------------------------


def _host_watches_then_sits(preset: str, pick: int):
    """The host opens to watch, seats a bot (seat 0), then sits down: the host holds seat 1."""
    state = apply(engine.State(), {"type": "open", "name": "t", "preset": preset, "settings": {}, "player": "h",
                            "host_name": "Hana", "host_seated": False})
    state = apply(state, {"type": "add_bot", "player": "h", "bot": "tito"})
    state = apply(state, {"type": "sit", "player": "h", "name": "Hana"})
    assert state.seat_of("h") == 1
    return state


@pytest.mark.parametrize("preset", ["selminha", "del15"])
@pytest.mark.parametrize("pick", [0, 1, 2, 3])
def test_the_host_deals_first_wherever_the_host_sits(preset, pick):
    waiting = _host_watches_then_sits(preset, pick)
    events = decide(waiting, {"type": "start", "player": "h", "deck": list(FULL_DECK), "pick": pick})
    assert next(e for e in events if isinstance(e, ev.GameStarted)).first_dealer == 1
    state = fold(waiting, events)
    assert state.dealer == 1 and state.turn == 0  # the host deals; the next seat leads


@pytest.mark.parametrize("preset", ["selminha", "del15"])
def test_a_host_who_only_watches_lets_the_first_player_deal(preset):
    state = apply(engine.State(), {"type": "open", "name": "t", "preset": preset, "settings": {}, "player": "h",
                            "host_name": "Hana", "host_seated": False})
    for bot in ("tito", "carmen", "luna"):
        state = apply(state, {"type": "add_bot", "player": "h", "bot": bot})
    state = apply(state, {"type": "remove_bot", "player": "h", "seat": 0})
    assert state.seated() == [1, 2]
    state = apply(state, {"type": "start", "player": "h", "deck": list(FULL_DECK), "pick": 3})
    assert state.dealer == 1 and state.turn == 2
