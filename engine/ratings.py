"""Rating math (pure): Glicko-2 for two players, OpenSkill for three players and for teams.

Constants and choices are in docs/ratings.md. In short:

- Two players: Glicko-2 (Glickman, "Example of the Glicko-2 system", glicko.net/glicko/glicko2.pdf)
  with Lichess's choices: a new player is 1500 / deviation 500 / volatility 0.09, tau 0.75, one
  game is one rating period (so the deviation grows by the volatility once a game, step 6, as
  Lichess's ``computeGame``), and the results clamped as Lichess clamps them (rating 400..4000,
  deviation 45..500, volatility at most 0.1). Provisional while the deviation is 110 or more.
  Written here from the paper: the PyPI package ``glicko2`` (2.1.0, 2024) computes step 5's ``f``
  with the rating where the paper has the deviation, and keeps tau on the class.
- Three players, four each on their own, and two teams: OpenSkill's Plackett-Luce model
  (the ``openskill`` package): it rates any number of sides with a full ranking in one step and is
  the package's recommended model. Its defaults scaled by 60 (mu 1500, sigma 500, beta 250, tau 5),
  so a new player starts where a Glicko-2 one does; ``rating`` is mu and ``deviation`` sigma.
  Provisional while sigma is 300 or more (docs/ratings.md: at 110, as Glicko-2's, it took some
  200 games).

A rating is a ``Rating`` (frozen); ``rate(mode, before, ranks)`` takes every side's players'
ratings before the game and each side's place, and gives the ratings after. Same inputs, same
floats: the live update and a rebuild call the same function on the same stored numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# --- Glicko-2 (two players) ------------------------------------------------------------------

GLICKO_START = 1500.0
GLICKO_DEVIATION = 500.0
GLICKO_VOLATILITY = 0.09
GLICKO_TAU = 0.75
GLICKO_PROVISIONAL = 110.0  # provisional while the deviation is at least this
GLICKO_MIN_RATING, GLICKO_MAX_RATING = 400.0, 4000.0
GLICKO_MIN_DEVIATION, GLICKO_MAX_DEVIATION = 45.0, 500.0
GLICKO_MAX_VOLATILITY = 0.1
SCALE = 173.7178  # Glicko-2's scale factor (the paper's step 2)
EPSILON = 0.000001  # the paper's convergence tolerance (step 5.4)
MAX_ITERATIONS = 1000

# --- OpenSkill (three players, four, teams) --------------------------------------------------

OPENSKILL_MU = 1500.0
OPENSKILL_SIGMA = 500.0
OPENSKILL_BETA = 250.0
OPENSKILL_TAU = 5.0
OPENSKILL_PROVISIONAL = 300.0


@dataclass(frozen=True, slots=True)
class Rating:
    rating: float
    deviation: float
    volatility: float = 0.0  # Glicko-2 only
    games: int = 0

    def as_dict(self) -> dict:
        return {"rating": self.rating, "deviation": self.deviation, "volatility": self.volatility,
                "games": self.games}

    @classmethod
    def from_dict(cls, data: dict) -> Rating:
        return cls(float(data["rating"]), float(data["deviation"]), float(data.get("volatility", 0.0)),
                   int(data.get("games", 0)))


def start(mode: str) -> Rating:
    """A player's rating before their first game of ``mode``."""
    if mode == "two":
        return Rating(GLICKO_START, GLICKO_DEVIATION, GLICKO_VOLATILITY, 0)
    return Rating(OPENSKILL_MU, OPENSKILL_SIGMA, 0.0, 0)


def provisional(mode: str, rating: Rating) -> bool:
    bound = GLICKO_PROVISIONAL if mode == "two" else OPENSKILL_PROVISIONAL
    return rating.deviation >= bound


def _g(phi: float) -> float:
    return 1.0 / math.sqrt(1.0 + 3.0 * phi * phi / (math.pi * math.pi))


def _e(mu: float, mu_j: float, phi_j: float) -> float:
    return 1.0 / (1.0 + math.exp(-_g(phi_j) * (mu - mu_j)))


def glicko2(player: Rating, opponents: list[tuple[Rating, float]], *, tau: float = GLICKO_TAU,
            clamp: bool = True) -> Rating:
    """One rating period of Glicko-2 for ``player`` against ``opponents`` [(their rating, the
    score: 1 win, 0.5 draw, 0 loss)]. ``clamp``: Lichess's bounds (off for the paper's example)."""
    mu = (player.rating - GLICKO_START) / SCALE
    phi = player.deviation / SCALE
    sigma = player.volatility
    if not opponents:  # step 6 alone: the deviation grows
        phi_star = math.sqrt(phi * phi + sigma * sigma)
        return _finish(player.rating, phi_star * SCALE, sigma, player.games, clamp)
    # step 3: the estimated variance; step 4: the improvement
    v_inv = 0.0
    delta_sum = 0.0
    for opponent, score in opponents:
        mu_j = (opponent.rating - GLICKO_START) / SCALE
        phi_j = opponent.deviation / SCALE
        e = _e(mu, mu_j, phi_j)
        g = _g(phi_j)
        v_inv += g * g * e * (1.0 - e)
        delta_sum += g * (score - e)
    v = 1.0 / v_inv
    delta = v * delta_sum
    # step 5: the new volatility (Illinois algorithm, as the paper's 2013 revision)
    a = math.log(sigma * sigma)

    def f(x: float) -> float:
        ex = math.exp(x)
        return ex * (delta * delta - phi * phi - v - ex) / (2.0 * (phi * phi + v + ex) ** 2) - (x - a) / (tau * tau)

    big_a = a
    if delta * delta > phi * phi + v:
        big_b = math.log(delta * delta - phi * phi - v)
    else:
        k = 1
        while f(a - k * tau) < 0:
            k += 1
        big_b = a - k * tau
    f_a, f_b = f(big_a), f(big_b)
    iterations = 0
    while abs(big_b - big_a) > EPSILON and iterations < MAX_ITERATIONS:
        iterations += 1
        big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a)
        f_c = f(big_c)
        if f_c * f_b <= 0:
            big_a, f_a = big_b, f_b
        else:
            f_a /= 2.0
        big_b, f_b = big_c, f_c
    new_sigma = math.exp(big_a / 2.0)
    # step 6 and 7: the new deviation and rating
    phi_star = math.sqrt(phi * phi + new_sigma * new_sigma)
    new_phi = 1.0 / math.sqrt(1.0 / (phi_star * phi_star) + 1.0 / v)
    new_mu = mu + new_phi * new_phi * delta_sum
    return _finish(new_mu * SCALE + GLICKO_START, new_phi * SCALE, new_sigma, player.games + len(opponents), clamp)


def _finish(rating: float, deviation: float, volatility: float, games: int, clamp: bool) -> Rating:
    if clamp:
        rating = min(max(rating, GLICKO_MIN_RATING), GLICKO_MAX_RATING)
        deviation = min(max(deviation, GLICKO_MIN_DEVIATION), GLICKO_MAX_DEVIATION)
        volatility = min(volatility, GLICKO_MAX_VOLATILITY)
    return Rating(rating, deviation, volatility, games)


_MODEL = None


def _openskill():
    global _MODEL
    if _MODEL is None:  # imported on first use: the engine's start check needs none of it
        from openskill.models import PlackettLuce

        _MODEL = PlackettLuce(mu=OPENSKILL_MU, sigma=OPENSKILL_SIGMA, beta=OPENSKILL_BETA, tau=OPENSKILL_TAU)
    return _MODEL


def rate(mode: str, before: list[list[Rating]], ranks: list[int]) -> list[list[Rating]]:
    """Every side's players' ratings after a game: ``before`` per side (one player, or a team),
    ``ranks`` each side's place (1 = won; ties share)."""
    if len(before) != len(ranks) or len(before) < 2:
        raise ValueError("one place per side, two sides or more")
    if mode == "two":
        (a,), (b,) = before
        score_a = 1.0 if ranks[0] < ranks[1] else 0.0 if ranks[0] > ranks[1] else 0.5
        # both from the ratings before the game: one game is one rating period for each
        return [[glicko2(a, [(b, score_a)])], [glicko2(b, [(a, 1.0 - score_a)])]]
    model = _openskill()
    teams = [[model.rating(mu=r.rating, sigma=r.deviation) for r in side] for side in before]
    after = model.rate(teams, ranks=list(ranks))
    return [[Rating(float(new.mu), float(new.sigma), 0.0, old.games + 1)
             for new, old in zip(side_after, side, strict=True)]
            for side_after, side in zip(after, before, strict=True)]


__all__ = ["Rating", "glicko2", "provisional", "rate", "start"]
