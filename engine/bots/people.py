"""How the other players are taken to choose, for reading their hidden hands from their plays.

A model turns Tito's judgement of every legal play a player had (``sim.Round.judge``:
the scores of the plays their hand allowed, and of the one they made) into the chance
that they made that play. Luna weighs a guess at a hand by the product of those chances
over the plays its seat made since the hand was dealt (``luna.hand_weight``): a hand
that explains the plays well counts for more, and under any model but ``TITO`` no hand
is ruled out, so a player who is not Tito (a person, Carmen, a greedy bot) is still read.

- ``TitoOrAny(p)``: Tito's choice with probability ``p`` (shared among tied best plays),
  any legal play, uniformly, otherwise. ``TitoOrAny(1.0)`` (``TITO``) is the old
  reading: a hand counts only if every play was one Tito would have made holding it.
- ``Softmax(temperature)``: each play with weight ``exp(score / temperature)``, scores in
  Tito's points (about a round point's worth for an escoba): a play close to his best is
  nearly as likely as his best, a clear blunder rarely made.
- ``Styles(weights, noise)``: a mixture of four generic styles, each making its own choice
  with ``1 - noise`` and any legal play otherwise: Tito's (the careful club player), the
  greedy taker's (the capture of the most cards, the most worth among equals; with nothing
  to take, the cheapest card: ``sim.Round.grab``), any legal play, and the taker's (any
  capture there is, whichever; with none, any card: the beginner who takes whenever she
  can). Luna fits the weights to each opponent from its plays this round
  (``luna.styles_read``).

``chance_of(round_before, seat, card, taken)`` is every model's chance of a play, judged on
the round as it stood before it (the seat's hand filled in).

Pure: no randomness, no state; the same scores give the same chance.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from math import exp
from typing import Protocol

# plays whose scores differ by less than this are tied (as in sim.Round.tito)
TIE = 1e-9
# the models' defaults (Softmax's temperature, the styles' weights)
TEMPERATURE = 0.3
WEIGHTS = (0.6, 0.2, 0.1, 0.1)


class Before(Protocol):
    """The round as it stood before a play, the seat's hand filled in: a ``sim.Round`` (a protocol,
    so this module needs no import of the simulator, and mypyc checks nothing at the call)."""

    def judge(self, seat: int, card: int, taken: Collection[int]) -> tuple[list[float], float | None]: ...

    def grab_keys(self, seat: int) -> list[tuple[tuple[int, float], int, tuple[int, ...]]]: ...


@dataclass(frozen=True)
class TitoOrAny:
    """Tito's choice with probability ``p``, any legal play otherwise."""

    p: float = 0.8

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError("p is a probability")

    def chance(self, scores: list[float], played: float | None) -> float:
        n = len(scores)
        if not n:
            return 0.0
        anyone = (1.0 - self.p) / n
        if played is None:  # not a play this hand allowed: Tito never, nor anyone
            return 0.0
        best = max(scores)
        if played < best - TIE:
            return anyone
        tied = sum(1 for s in scores if s >= best - TIE)
        return self.p / tied + anyone

    def chance_of(self, before: Before, seat: int, card: int, taken: Collection[int]) -> float:
        scores, played = before.judge(seat, card, taken)
        return self.chance(scores, played)


@dataclass(frozen=True)
class Softmax:
    """Each legal play with weight ``exp(score / temperature)``."""

    temperature: float = TEMPERATURE

    def __post_init__(self) -> None:
        if self.temperature <= 0:
            raise ValueError("the temperature is positive")

    def chance(self, scores: list[float], played: float | None) -> float:
        if played is None or not scores:
            return 0.0
        best = max(scores)
        t = self.temperature
        # summed in a fixed order, so that the order of the hand's plays changes no bit of it
        # (luna.Deals keeps a hand's weight by its cards)
        return exp((played - best) / t) / sum(exp((s - best) / t) for s in sorted(scores))

    def chance_of(self, before: Before, seat: int, card: int, taken: Collection[int]) -> float:
        scores, played = before.judge(seat, card, taken)
        return self.chance(scores, played)


def style_chances(before: Before, seat: int, card: int, taken: Collection[int],
                  noise: float) -> tuple[float, float, float, float]:
    """The chance of a play under each generic style, in ``sim``'s order: Tito's, the greedy
    taker's, any legal play, and the taker's (any capture there is, else any card).

    ``before``: a ``sim.Round`` as it stood before the play, the seat's hand filled in. Each
    style makes its own choice (shared among its tied best) with ``1 - noise``, any legal play
    otherwise; a play the hand did not allow has chance 0 under all four.
    """
    scores, played = before.judge(seat, card, taken)
    n = len(scores)
    if played is None or not n:
        return 0.0, 0.0, 0.0, 0.0
    keep = 1.0 - noise
    top = max(scores)
    tied = sum(1 for x in scores if x >= top - TIE)
    tito = noise / n + (keep / tied if played >= top - TIE else 0.0)
    keyed = before.grab_keys(seat)
    best = max(k for k, _, _ in keyed)
    grabs = [(c, frozenset(x)) for k, c, x in keyed if k == best]
    grab = noise / n + (keep / len(grabs) if (card, frozenset(taken)) in grabs else 0.0)
    captures = sum(1 for k, _, _ in keyed if k[0])
    if not captures:  # nothing to take: the taker leaves any card
        take = 1.0 / n
    else:
        take = noise / n + (keep / captures if taken else 0.0)
    return tito, grab, 1.0 / n, take


@dataclass(frozen=True)
class Styles:
    """Tito's choice, the greedy taker's, any legal play or any capture, with these weights
    (each noisy by ``noise``; three weights leave the taker out)."""

    weights: tuple[float, ...] = WEIGHTS
    noise: float = 0.1

    def chance_of(self, before: Before, seat: int, card: int, taken: Collection[int]) -> float:
        chances = style_chances(before, seat, card, taken, self.noise)
        return sum(w * c for w, c in zip(self.weights, chances, strict=False))


Model = TitoOrAny | Softmax | Styles

# the old reading: every play one Tito would have made, or the hand does not count
TITO = TitoOrAny(1.0)


def parse(text: str) -> Model:
    """A model from its short name: ``tito:P`` (``TitoOrAny(P)``), ``softmax:T`` or ``styles:T,G,A[,C]``."""
    kind, _, number = text.partition(":")
    if kind == "tito":
        return TitoOrAny(float(number or 1.0))
    if kind == "softmax":
        return Softmax(float(number or TEMPERATURE))
    if kind == "styles":
        weights = tuple(float(x) for x in number.split(",")) if number else WEIGHTS
        if len(weights) not in (3, 4):
            raise ValueError("styles:T,G,A[,C]: the weights of Tito's style, the greedy taker's, any play"
                             " and any capture")
        return Styles(weights)
    raise ValueError(f"unknown model {text!r}: tito:P, softmax:T or styles:T,G,A[,C]")
