"""The ratings' store (events/ratings.py) on one Redis and on a cluster: a rated game's update,
applied once whatever retries, a rebuild from the logs that gives the same numbers, the board and
the profile."""

from __future__ import annotations

import fakeredis
import orjson
import pytest

from engine import ratings as rmath
from events import compaction, ratings
from events.service import TableService

from .ratings_games import new_players, open_rated, play, rated_game


@pytest.fixture
def tables(topology):
    topology.flush()  # the boards and the rebuild's index are shared: start from an empty store
    b = topology.backends()
    yield b.tables
    topology.flush()
    b.close()


@pytest.fixture
def svc(tables):
    return TableService(tables, cache_size=0)


def _rating(tables, pid, field="del15:two") -> dict | None:
    raw = tables.hget(ratings.player_key(pid, "ratings"), field)
    return orjson.loads(raw) if raw is not None else None


def _snapshot(tables, pids) -> dict:
    """Everything the store keeps of these players (the boards too)."""
    out = {}
    for pid in pids:
        keys = ratings._keys(pid)
        out[pid] = (sorted(tables.hgetall(keys[0]).items()), sorted(tables.hgetall(keys[1]).items()),
                    tables.zrange(keys[2], 0, -1, withscores=True), sorted(tables.hgetall(keys[3]).items()))
    for preset in ("del15", "selminha", "cardgames"):
        for mode in ("two", "three", "teams", "four"):
            out[(preset, mode)] = tables.zrange(ratings.board_key(preset, mode), 0, -1, withscores=True)
    return out


def test_a_rated_game_played_to_its_end_changes_both_ratings_once_the_winners_up(tables, svc):
    a, b = new_players(2)
    tid, state = rated_game(svc, [a, b], seed=3)
    assert state.status == "finished" and state.ended_by == "target"
    done = ratings.rate_table(tables, svc, tid, state.game)
    assert done == {"games": 1, "already": False}
    winner = state.seats[state.winners[0]].account
    loser = b if winner == a else a
    assert _rating(tables, winner)["rating"] > 1500 > _rating(tables, loser)["rating"]
    assert _rating(tables, winner)["games"] == _rating(tables, loser)["games"] == 1
    assert _rating(tables, winner)["deviation"] < 500
    totals = {k.decode(): int(v) for k, v in tables.hgetall(ratings.player_key(loser, "totals")).items()}
    assert (totals["games"], totals["wins"], totals["losses"], totals["abandons"]) == (1, 0, 1, 0)
    before = _snapshot(tables, [a, b])
    # the job again (retried, doubled, re-armed by the reconciler) and the game's update itself again
    assert ratings.rate_table(tables, svc, tid, state.game)["already"]
    tables.delete(ratings.done_key(tid))
    assert ratings.rate_table(tables, svc, tid, state.game) == {"games": 1, "already": False}
    [(result, ended)] = ratings.table_games(svc, tid)
    assert ratings.apply_game(tables, tid, result, ended) == {a: "already", b: "already"}
    assert _snapshot(tables, [a, b]) == before


def test_a_retry_after_one_player_was_updated_finishes_from_the_ratings_before_the_game(tables, svc):
    a, b = new_players(2)
    tid, state = rated_game(svc, [a, b], seed=4)
    [(result, ended)] = ratings.table_games(svc, tid)
    # the whole update, for reference, on a copy of the store's state: computed from the start ratings
    expected = ratings.compute(result, {a: rmath.start("two"), b: rmath.start("two")})
    # a crash after the first player's step: apply it alone, as the job's first step would have
    placing = next(p for p in result.placings if p.player == a)
    record = ratings.game_record(tid, result, placing, ended, rmath.start("two"), expected[a])
    ratings._script(tables, ratings._APPLY_LUA, ratings._APPLY_SHA, ratings._keys(a),
                    ["del15:two", ratings.game_member(tid, result.game), "", ratings.dumps(expected[a].as_dict()),
                     ratings.dumps(record), int(placing.result == "win"), int(placing.result != "win"), 0,
                     placing.escobas, ratings.KEEP, placing.name])
    assert ratings.apply_game(tables, tid, result, ended) == {a: "already", b: "applied"}
    assert _rating(tables, a) == expected[a].as_dict()
    assert _rating(tables, b) == expected[b].as_dict()  # from b's rating before, a's stored "before"


def test_a_resignation_is_a_loss_for_that_side_and_an_abandon(tables, svc):
    a, b = new_players(2)
    tid, state = rated_game(svc, [a, b], seed=5, resign_after=6, resigner=0)
    assert state.ended_by == "resign"
    ratings.rate_table(tables, svc, tid, state.game)
    assert _rating(tables, a)["rating"] < 1500 < _rating(tables, b)["rating"]
    totals = {k.decode(): int(v) for k, v in tables.hgetall(ratings.player_key(a, "totals")).items()}
    assert (totals["losses"], totals["abandons"], totals["wins"]) == (1, 1, 0)


def test_an_expired_table_changes_nothing(tables, svc):
    a, b = new_players(2)
    tid = open_rated(svc, [a, b])
    play(svc, tid, seed=6, stop_after=5)
    state = svc.execute(tid, {"type": "expire"}, actor="system").state
    assert state.status == "expired"
    assert ratings.table_games(svc, tid) == []
    assert ratings.rate_table(tables, svc, tid, 1) == {"games": 0, "already": False}
    assert _rating(tables, a) is None and _rating(tables, b) is None
    assert ratings.ended_games(tables) == []


def test_an_unrated_table_counts_for_nothing(tables, svc):
    a, b = new_players(2)
    tid = open_rated(svc, [a, b], rated=False)
    state = play(svc, tid, seed=7)
    assert state.status == "finished"
    ratings.rate_table(tables, svc, tid, state.game)
    assert _rating(tables, a) is None


def test_three_players_and_teams_are_rated_by_openskill(tables, svc):
    three = new_players(3)
    tid, state = rated_game(svc, three, seed=8)
    ratings.rate_table(tables, svc, tid, state.game)
    first = state.seats[state.winners[0]].account
    assert _rating(tables, first, "del15:three")["rating"] > 1500
    four = new_players(4)
    tid, state = rated_game(svc, four, seed=9)
    ratings.rate_table(tables, svc, tid, state.game)
    winners = {state.seats[s].account for s in state.winners}
    assert len(winners) == 2
    assert all(_rating(tables, p, "del15:teams")["rating"] > 1500 for p in winners)
    assert all(_rating(tables, p, "del15:teams")["rating"] < 1500 for p in set(four) - winners)


def test_a_rebuild_from_the_logs_gives_the_same_numbers(tables, svc, topology, capsys):
    a, b, c = new_players(3)
    pairs = [(a, b), (b, c), (a, c), (c, a), (a, b), (b, a)]
    compacted = []
    for i, pair in enumerate(pairs):
        kw = {"resign_after": 5, "resigner": 1} if i == 2 else {}
        tid, state = rated_game(svc, list(pair), seed=20 + i, **kw)
        ratings.rate_table(tables, svc, tid, state.game)
        if i % 2:  # half the logs read from archives, as most are by the time of a rebuild
            compacted.append(compaction.compact(tables, tid, state.version))
    three_tid, state = rated_game(svc, [a, b, c], seed=40)
    ratings.rate_table(tables, svc, three_tid, state.game)
    live = _snapshot(tables, [a, b, c])
    assert _rating(tables, a)["games"] == 5 and all(compacted)
    # rebuilt from the finished rated tables' logs into a fresh store: the same bytes
    fresh = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    done = ratings.rebuild(tables, svc, into=fresh)
    assert done == {"games": 7, "players": 3, "tables": 7}
    assert _snapshot(fresh, [a, b, c]) == live
    # and over the store itself, after its players' keys are lost: escoba ratings rebuild
    from api.cli import main

    for pid in (a, b, c):
        tables.delete(*ratings._keys(pid))
    assert main(["ratings", "rebuild", "--redis-url", topology.tables_url]) == 0
    assert "rebuilt: 7 rated games of 7 tables, 3 players" in capsys.readouterr().out
    assert _snapshot(tables, [a, b, c]) == live


def test_the_leaderboard_holds_only_non_provisional_ratings(tables, svc):
    a, b = new_players(2)
    tid, state = rated_game(svc, [a, b], seed=11)
    ratings.rate_table(tables, svc, tid, state.game)
    assert ratings.leaderboard(tables, "del15", "two") == []  # one game: both provisional
    # a settled player (deviation under 110) goes on the board, at the rating stored
    settled = rmath.Rating(1720.5, 80.0, 0.06, 40)
    tables.hset(ratings.player_key(a, "ratings"), mapping={"del15:two": ratings.dumps(settled.as_dict()),
                                                           "name": "Settled"})
    ratings.place_on_boards(tables, "del15", "two", [a, b])
    assert ratings.leaderboard(tables, "del15", "two") == [{"rank": 1, "name": "Settled", "rating": 1720,
                                                            "games": 40}]
    assert ratings.profile(tables, a)["ratings"][0]["provisional"] is False
    assert ratings.profile(tables, b)["ratings"][0]["provisional"] is True


def test_a_profile_holds_no_card(tables, svc):
    from engine.cards import FULL_DECK

    a, b = new_players(2)
    tid, state = rated_game(svc, [a, b], seed=12)
    ratings.rate_table(tables, svc, tid, state.game)
    profile = ratings.profile(tables, a)
    assert profile["totals"]["games"] == 1
    [recent] = profile["recent"]
    assert recent["table_id"] == tid and recent["preset"] == "del15" and recent["review"] == f"/t/{tid}/review"
    assert recent["result"] in ("win", "loss") and isinstance(recent["rating_change"], float)
    assert profile["accuracy"] is None  # no analysis asked

    def strings(x):
        if isinstance(x, dict):
            for k, v in x.items():
                yield k
                yield from strings(v)
        elif isinstance(x, list):
            for v in x:
                yield from strings(v)
        elif isinstance(x, str):
            yield x

    assert not set(strings(profile)) & set(FULL_DECK)
    assert not any(key in orjson.dumps(profile).decode() for key in ("hand", "cards", "deck", "captured"))


def test_a_logs_results_read_quickly_are_the_engines(tables, svc):
    """``games_of_entries`` leaves most records unparsed: the same results as a full decode and fold."""
    from engine.results import finished_games
    from events.decoding import decode

    for players, seed in ((2, 50), (3, 51), (4, 52)):
        tid, state = rated_game(svc, new_players(players), seed=seed)
        entries = svc.entries(tid)
        full = finished_games([decode(raw, v)[1] for v, raw in entries])
        assert [r for r, _ in ratings.games_of_entries(entries)] == full
        assert [r for r, _ in ratings.games_of_entries([(v, raw.decode()) for v, raw in entries])] == full
