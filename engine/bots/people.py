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

Pure: no randomness, no state; the same scores give the same chance.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import exp

# plays whose scores differ by less than this are tied (as in sim.Round.tito)
TIE = 1e-9


@dataclass(frozen=True)
class TitoOrAny:
    """Tito's choice with probability ``p``, any legal play otherwise."""

    p: float = 0.8

    def __post_init__(self):
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


@dataclass(frozen=True)
class Softmax:
    """Each legal play with weight ``exp(score / temperature)``."""

    temperature: float = 0.3

    def __post_init__(self):
        if self.temperature <= 0:
            raise ValueError("the temperature is positive")

    def chance(self, scores: list[float], played: float | None) -> float:
        if played is None or not scores:
            return 0.0
        best = max(scores)
        t = self.temperature
        return exp((played - best) / t) / sum(exp((s - best) / t) for s in scores)


Model = TitoOrAny | Softmax

# the old reading: every play one Tito would have made, or the hand does not count
TITO = TitoOrAny(1.0)


def parse(text: str) -> Model:
    """A model from its short name: ``tito:P`` (``TitoOrAny(P)``) or ``softmax:T`` (``Softmax(T)``)."""
    kind, _, number = text.partition(":")
    if kind == "tito":
        return TitoOrAny(float(number or 1.0))
    if kind == "softmax":
        return Softmax(float(number or Softmax.temperature))
    raise ValueError(f"unknown model {text!r}: tito:P or softmax:T")
