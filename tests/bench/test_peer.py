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
    measured = [{"cpu_ms": 1.0, "moves": 3000, "p99_ms": 40.0, "source": "measured in this run"},
                {"cpu_ms": 2.0, "moves": 1000, "p99_ms": 60.0, "source": "measured in this run"}]
    pooled = games._pooled(measured)
    assert pooled["cpu_ms"] == 1.25  # (3000 x 1.0 + 1000 x 2.0) / 4000, not the mean 1.5
    assert pooled["p99_ms"] == 50.0  # the rounds' p99s averaged (a p99 cannot be pooled from p99s)
    quoted = {**games.PEER, "source": "quoted"}
    assert games._pooled([quoted, quoted]) == quoted
