"""bench/games.py's peer falls back to the quoted figures, saying why, when it cannot run here."""

from __future__ import annotations

import argparse

from bench import games, peer


def test_without_node_modules_the_peer_is_not_run_and_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(peer, "PEER_DIR", tmp_path)  # a bench/peer with nothing installed
    assert peer.run_peer(games=2, duration=1, think=0, warmup=0) is None
    assert "npm ci --prefix bench/peer" in capsys.readouterr().out


def test_games_compares_with_the_quoted_peer_when_none_ran(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(peer, "PEER_DIR", tmp_path)
    figures = games._peer(argparse.Namespace(peer="auto", games=2, duration=1, think=0, warmup=0))
    assert figures["cpu_ms"] == games.PEER["cpu_ms"] and figures["source"] == "quoted"
    assert "quoted, not run here" in capsys.readouterr().out
    assert games._peer(argparse.Namespace(peer="off"))["source"] == "quoted"


def test_rounds_pool_the_peer_by_moves_and_a_quoted_figure_stays_quoted():
    measured = [{"cpu_ms": 1.0, "moves": 3000, "p99_ms": 40.0, "p99_state_ms": 45.0, "source": "measured in this run"},
                {"cpu_ms": 2.0, "moves": 1000, "p99_ms": 60.0, "p99_state_ms": 65.0, "source": "measured in this run"}]
    pooled = games._pooled(measured)
    assert pooled["cpu_ms"] == 1.25  # (3000 x 1.0 + 1000 x 2.0) / 4000, not the mean 1.5
    assert pooled["p99_ms"] == 50.0  # no latencies: the rounds' p99s averaged (a p99 cannot be pooled from p99s)
    assert pooled["p99_state_ms"] == 55.0
    quoted = {**games.PEER, "source": "quoted"}
    assert games._pooled([quoted, quoted]) == quoted


def test_rounds_pool_the_peers_latencies_as_escobas_are_pooled():
    """With every move's latency, the peer's p99 is over all the rounds' moves, as escoba's: a round
    with a long tail weighs by its moves, not as half of the figure."""
    calm = [1.0] * 990 + [5.0] * 10
    tail = [1.0] * 970 + [30.0] * 30
    rounds = [{"cpu_ms": 1.0, "moves": 1000, "p99_ms": 5.0, "p99_state_ms": 5.0, "heard_ms": calm,
               "heard_state_ms": [t + 1 for t in calm], "source": "measured in this run"},
              {"cpu_ms": 1.0, "moves": 1000, "p99_ms": 30.0, "p99_state_ms": 31.0, "heard_ms": tail,
               "heard_state_ms": [t + 1 for t in tail], "source": "measured in this run"}]
    pooled = games._pooled(rounds)
    assert pooled["p99_ms"] == 30.0 and pooled["p99_state_ms"] == 31.0  # 40 of 2,000 over 5 ms: the 99th is 30
    assert games._pooled([{**r, "heard_ms": calm[:980] + [5.0] * 20} for r in rounds[:1]])["p99_ms"] == 5.0


def test_the_peers_p99_is_its_socket_message_with_the_state_beside_it(monkeypatch, capsys):
    """The target compares this client's raw read with the peer's socket.io message as it arrives; the
    peer's client holding the state (after its reducer, later) is said beside it."""
    from bench import peer as peer_module

    figures = {"moves": 100, "seconds": 30.0, "cpu_ms_per_move": 1.0, "p50_ms": 1.2, "p99_ms": 8.0,
               "socket_p50_ms": 1.0, "socket_p99_ms": 6.0, "heard_ms": [8.0] * 100, "heard_socket_ms": [6.0] * 100}
    monkeypatch.setattr(peer_module, "run_peer", lambda **_: figures)
    got = games._peer(argparse.Namespace(peer="auto", games=2, duration=1, think=0, warmup=0))
    assert got["p99_ms"] == 6.0 and got["p99_state_ms"] == 8.0 and got["heard_ms"] == [6.0] * 100
    assert "(its socket.io message: 1.0 / 6.0 ms)" in capsys.readouterr().out
    said = games._which_p99(games._pooled([got]), 7.0)
    assert "at its socket.io message" in said and "8.0 ms, 0.88x" in said
    assert games._which_p99({**games.PEER, "source": "quoted"}, 7.0) == ""


def test_the_p99_and_api_plus_redis_targets_are_judged_for_socket_moves_only():
    """Issue 26 sets the p99 and API + Redis targets for socket moves; with POST moves only the API's
    CPU has one (1.5x): the summary says so rather than MISSED."""
    assert games._target("socket", True, 1.2) == "(target <= 1.2x: met)"
    assert games._target("socket", False, 1.0) == "(target <= 1x: MISSED)"
    assert games._target("post", False, 1.2) == "(no target with post moves: <= 1.2x is for socket moves)"
