"""bench/games.py's floor: the same games moved by the stack alone, measured in the same run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_floor_sends_each_seat_its_own_view_as_escoba_encodes_it():
    """The floor's stored views are escoba's own bytes for that seat (api/sockets/frames.py), so a frame
    costs the stack what escoba's costs; each seat sees its own hand and not the other's."""
    import engine
    from api.sockets.frames import ViewFrames
    from bench._common import game_script, seat_views, started

    script = game_script("g:floor", 40)
    views = seat_views("floor7", script, 2)
    state = started(script.decks)
    for seat, move, _version in script.moves[:2]:
        state = engine.fold(state, engine.decide(state, {**move, "by": seat}))
    for seat in (0, 1):
        assert views[seat] == ViewFrames().view_json("floor7", state, seat, seat == 0, None)
    hands = [state.hands[seat] for seat in (0, 1)]
    assert hands[0] and hands[1]
    for seat in (0, 1):
        shown = re.search(rb'"hand":\[([^\]]*)\]', views[seat]).group(1).decode()
        assert shown == ",".join(f'"{card}"' for card in hands[seat])


def test_the_floor_counts_one_version_a_move():
    from bench._common import game_script
    from bench.games import one_version_a_move

    script = game_script("g:floor", 80)
    assert any(b[2] - a[2] == 2 for a, b in zip(script.moves, script.moves[1:], strict=False))  # a deal's two
    counted = one_version_a_move(script)
    assert [m[:2] for m in counted.moves] == [m[:2] for m in script.moves]
    assert [m[2] for m in counted.moves] == list(range(script.start_version + 1, script.start_version + 81))
    assert counted.start_version == script.start_version


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="the bench starts redis-servers")
def test_a_run_with_the_floor_plays_the_games_on_both_and_says_what_the_stack_leaves():
    done = _short_run("--floor")
    measured = dict(re.findall(r"^(floor )?measured: (\d+) moves in [\d.]+s \(\d+ moves/s\); errors 0$",
                               done.stdout, re.M))
    assert int(measured[""]) > 10 and int(measured["floor "]) > 10, done.stdout
    floor = re.search(r"the stack's floor .* API CPU ([\d.]+) ms a move = ([\d.]+)x the peer's .* Escoba's own work "
                      r"above it .* API (-?[\d.]+) ms a move", done.stdout)
    assert floor and float(floor.group(1)) > 0, done.stdout
    assert done.stdout.count("never heard by the opponent: 0") == 2


def test_the_floor_is_for_socket_moves():
    done = subprocess.run([sys.executable, "bench/games.py", "--floor", "--transport", "post", "--peer", "off"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--floor measures socket moves" in done.stderr


def test_with_patches_the_floor_sends_each_seat_its_patch_of_the_move_as_escoba_encodes_it():
    """With ``--frames patch`` (the default) the floor's stored frames are each seat's patch of the same
    move, escoba's own bytes: the size escoba's sockets are sent."""
    import engine
    from api.sockets.frames import ViewFrames
    from bench._common import game_script, seat_views, started

    script = game_script("g:floor", 40)
    patches = seat_views("floor7", script, 18, patches=True)
    states = [started(script.decks)]
    for seat, move, _version in script.moves[:18]:
        states.append(engine.fold(states[-1], engine.decide(states[-1], {**move, "by": seat})))
    for seat in (0, 1):
        sent = json.loads(patches[seat])
        assert sent["type"] == "patch" and (sent["from"], sent["version"]) == (states[-2].version, states[-1].version)
        assert sent["set"]["hand"] == states[-1].hands[seat]  # its own hand, not the other's
        whole = ViewFrames().view_json("floor7", states[-1], seat, seat == 0, None)
        assert len(patches[seat]) < len(whole) / 2


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="the bench starts redis-servers")
def test_a_run_of_both_ways_plays_the_games_patched_and_stock_and_says_what_the_patches_save():
    done = _short_run("--patches", "both")
    measured = dict(re.findall(r"^(escoba stock )?measured: (\d+) moves in [\d.]+s \(\d+ moves/s\); errors 0$",
                               done.stdout, re.M))
    assert int(measured[""]) > 10 and int(measured["escoba stock "]) > 10, done.stdout
    assert done.stdout.count("never heard by the opponent: 0") == 2
    said = re.search(r"^patches \(events/patches.py\): API CPU a move patched ([\d.]+) ms, stock \(ESCOBA_STOCK=1\) "
                     r"([\d.]+) ms = [\d.]+x", done.stdout, re.M)
    assert said and float(said.group(1)) > 0 and float(said.group(2)) > 0, done.stdout


def _short_run(*options: str) -> subprocess.CompletedProcess:
    """bench/games.py over 3 games for a second and a half, no peer; its exit checked."""
    done = subprocess.run([sys.executable, "bench/games.py", *options, "--games", "3", "--duration", "1.5",
                           "--warmup", "0.5", "--think", "0.02", "--peer", "off"],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return done
