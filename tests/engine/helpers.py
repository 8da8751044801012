"""Helpers for the engine's tests: tables opened with exact decks, and random legal play.

``open_table`` goes through ``engine.decide`` (an operator's ``open`` command with
``decks`` and ``first_dealer``); ``open_custom`` folds a ``TableOpened`` event
directly, for settings built point by point that no preset offers.
"""

from __future__ import annotations

import random
from dataclasses import replace

from engine import State, decide, decide_and_fold, fold, replay, view
from engine import events as ev
from engine.cards import FULL_DECK
from engine.rules import PRESETS, Settings


def apply(state: State, command: dict) -> State:
    """The state after ``command``; raises RuleError when it is refused."""
    return fold(state, decide(state, command))


def deck_with(table=(), *hands, rest=()) -> list[str]:
    """A 40-card order: the 4 table cards, then each hand in the order dealt,
    then ``rest``, then every other card in the deck's natural order."""
    front = [*table, *[c for h in hands for c in h], *rest]
    assert len(front) == len(set(front)), f"a card twice in {front}"
    return front + [c for c in FULL_DECK if c not in front]


def open_table(preset="del15", players=2, settings=None, decks=None, first_dealer=None) -> State:
    """A waiting table: the host (``p0``) in seat 0 and ``players - 1`` more humans."""
    command = {
        "type": "open",
        "name": "test",
        "preset": preset,
        "settings": settings or {},
        "player": "p0",
        "host_name": "Ana",
    }
    if decks is not None:
        command["decks"] = [list(d) for d in decks]
    if first_dealer is not None:
        command["first_dealer"] = first_dealer
    state = apply(State(), command)
    for i in range(1, players):
        state = apply(state, {"type": "sit", "player": f"p{i}", "name": f"P{i}"})
    return state


def open_custom(
    settings: Settings, players=2, decks=None, first_dealer=None, preset="del15"
) -> State:
    """A waiting table with any settings of the rules model (folded, not decided)."""
    opened = ev.TableOpened(
        "custom",
        preset,
        settings.as_dict(),
        "p0",
        "Ana",
        tuple(tuple(d) for d in decks) if decks else None,
        first_dealer,
    )
    state = fold(State(), [opened])
    for i in range(1, players):
        state = apply(state, {"type": "sit", "player": f"p{i}", "name": f"P{i}"})
    return state


def start(state: State, deck=None, pick=0) -> State:
    return apply(state, {"type": "start", "by": 0, "deck": list(deck or FULL_DECK), "pick": pick})


def started(preset="del15", players=2, settings=None, deck=None, first_dealer=0, **kw) -> State:
    """A game under way whose first round is dealt from ``deck``."""
    decks = [deck] if deck is not None else None
    return start(open_table(preset, players, settings, decks, first_dealer), **kw)


def started_custom(settings: Settings, players=2, deck=None, first_dealer=0) -> State:
    decks = [deck] if deck is not None else None
    return start(open_custom(settings, players, decks, first_dealer))


def play(state: State, card: str, capture=(), by=None) -> State:
    by = state.turn if by is None else by
    return apply(state, {"type": "play", "by": by, "card": card, "capture": list(capture)})


def settings_of(preset: str, **changes) -> Settings:
    return replace(PRESETS[preset], **changes)


# The fields of each side in a view's last_round (docs/api.md, "The view").
LAST_ROUND_FIELDS = frozenset(
    {"seats", "cards", "coins", "sevens", "seven_of_coins", "setenta", "escobas", "points", "round_points"}
)


# --- random legal play -------------------------------------------------------


def shuffled(rng: random.Random) -> list[str]:
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    return deck


def random_command(state: State, rng: random.Random) -> dict | None:
    """A random legal command for the game at ``state``, from the mover's own view."""
    if state.status == "round_over":
        return {"type": "next_round", "by": rng.choice(state.players), "deck": shuffled(rng)}
    if state.status != "playing":
        return None
    seat = state.turn
    seen = view(state, seat)
    fifteen = seen["fifteen_to_take"]
    if fifteen and rng.random() < 0.5:
        return {"type": "take_fifteen", "by": seat, "cards": rng.choice(fifteen["sets"])}
    option = rng.choice(seen["options"])
    choices = [list(s) for s in option["captures"]]
    if option["may_leave"]:
        choices.append([])
    return {"type": "play", "by": seat, "card": option["card"], "capture": rng.choice(choices)}


def random_game(
    settings: Settings, players: int, rng: random.Random, max_rounds=200, on_events=None
) -> tuple[State, list]:
    """Open, start and play a whole game with random legal moves.

    Returns the final state and every event, from the ``TableOpened`` on.
    ``on_events(before, command, events, after)`` is called after each command.
    """
    events = [ev.TableOpened("custom", "del15", settings.as_dict(), "p0", "Ana", None, None)]
    events += [ev.PlayerSeated(i, f"p{i}", f"P{i}") for i in range(1, players)]
    state = replay(events)
    command = {"type": "start", "by": 0, "deck": shuffled(rng), "pick": rng.randrange(1000)}
    while command is not None:
        new, after = decide_and_fold(state, command)
        # the decision's own state is the fold of its events, which the service relies on
        assert after == fold(state, new) and after is not state
        if on_events is not None:
            on_events(state, command, new, after)
        events += new
        state = after
        if state.round > max_rounds:
            raise AssertionError(f"no winner after {max_rounds} rounds: {state.scores}")
        command = random_command(state, rng)
    return state, events


def play_out_round(state: State, rng: random.Random, leave=False) -> tuple[State, list]:
    """Play the round under way to its end with random legal moves (``leave``: never
    capture when the rules allow it). Returns the state and the events."""
    events = []
    while state.status == "playing":
        command = random_command(state, rng)
        if leave:
            options = [o for o in view(state, state.turn)["options"] if o["may_leave"]]
            if options:
                card = rng.choice(options)["card"]
                command = {"type": "play", "by": state.turn, "card": card, "capture": []}
        new = decide(state, command)
        events += new
        state = fold(state, new)
    return state, events
