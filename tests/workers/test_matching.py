"""workers/matching.py's choice, made fast for waves of thousands (2026-12-06), against the choice as it
was written first (kept here as the reference, with its lists and helpers): the same groups, in the
same order, on pools with accounts seeking twice, whom they played last, equal ratings and long waits.
"""

from __future__ import annotations

import random

import pytest

from workers import matching
from workers.matching import (  # the helpers it kept as they were
    Seeker,
    _closest_first,
    _fill,
    _rating,
    accepted_gap,
    teams,
)

# --- the reference: workers/matching.py as of b48650a ------------------------------------------


def unrated_groups(seekers: list[Seeker], players: int, limit: int | None = None) -> list[list[Seeker]]:
    """The longest waiting first, each with the next who fit (someone not played last if there is one)."""
    order = sorted(seekers, key=lambda s: -s.waited)
    used = [False] * len(order)
    out: list[list[Seeker]] = []
    for i in range(len(order)):
        if used[i]:
            continue
        if limit is not None and len(out) >= limit:
            break
        picked = _fill(i, order, used, players, True) or _fill(i, order, used, players, False)
        if picked is None:
            continue
        for j in picked:
            used[j] = True
        out.append([order[j] for j in picked])
    return out


def rated_groups(seekers: list[Seeker], players: int, limit: int | None = None,
                 window: int = 8) -> list[list[Seeker]]:
    """Closest ratings first, each group within the gap every one of its seekers accepts now."""
    if players != 2:  # as it was for three and four
        return matching.rated_groups(seekers, players, limit, window)
    order = sorted(seekers, key=_rating)
    ratings = [_rating(s) for s in order]
    gaps = [accepted_gap(s.waited) for s in order]
    return _closest_first(_rated_pairs(order, ratings, gaps, window), order, limit)


def _rated_pairs(order: list[Seeker], ratings: list[float], gaps: list[float],
                 window: int) -> list[tuple[float, list[int]]]:
    """``rated_groups``'s candidates for two players, the same as its general loop finds, without
    its lists (a wave reads thousands): each seeker with the next one in rating order it may meet
    (someone it did not play last if one is within ``window``, else whoever is)."""
    out: list[tuple[float, list[int]]] = []
    n = len(order)
    for i in range(n):
        a = order[i]
        fallback = None
        for j in range(i + 1, min(n, i + 1 + window)):
            b = order[j]
            if b.identity == a.identity:
                continue
            if b.identity in a.last or a.identity in b.last:
                if fallback is None:
                    fallback = j
                continue
            spread = ratings[j] - ratings[i]
            if spread <= gaps[i] and spread <= gaps[j]:
                out.append((spread, [i, j]))
            fallback = None
            break
        if fallback is not None:
            spread = ratings[fallback] - ratings[i]
            if spread <= gaps[i] and spread <= gaps[fallback]:
                out.append((spread + 1e6, [i, fallback]))
    return out


def groups(seekers: list[Seeker], players: int, rated: bool, limit: int | None = None) -> list[list[Seeker]]:
    """The full tables a wave makes, each a list of seekers in seat order."""
    if rated:
        return rated_groups(seekers, players, limit)
    return [teams(g) if any(s.rating is not None for s in g) else g for g in unrated_groups(seekers, players, limit)]


# --- the comparison ------------------------------------------------------------------------------


def _pool(rng: random.Random, n: int, *, rated: bool, accounts: float, twice: float, played: float,
          ratings: int) -> list[Seeker]:
    """``n`` seekers: a share ``accounts`` of them accounts (the rest guests, their identity their
    seek), some accounts seeking twice, some having played others of the pool last, ratings drawn
    from ``ratings`` distinct values (few: many equal) or None."""
    people = [f"p{i}" for i in range(max(2, int(n * accounts)))]
    out = []
    for i in range(n):
        seek_id = f"s{i}"
        if rng.random() < accounts:
            identity = rng.choice(people[: max(2, int(len(people) * (1 - twice)))])
        else:
            identity = seek_id
        last = frozenset(rng.sample(people, 2)) if identity != seek_id and rng.random() < played else frozenset()
        rating = None if not rated and rng.random() < 0.7 else 1000 + 50 * rng.randrange(ratings)
        if rated and rng.random() < 0.1:
            rating = None  # an account not yet rated: counted as 1500
        waited = rng.choice([0.0, 1.0, 5.0, rng.uniform(0, 40)])
        out.append(Seeker(seek_id, identity, rating, waited, waited >= 30, last))
    return out


def _ids(groups):
    return [[s.seek_id for s in g] for g in groups]


@pytest.mark.parametrize("seed", range(40))
def test_the_fast_choice_is_the_reference_choice(seed):
    rng = random.Random(seed)
    n = rng.choice([0, 1, 2, 3, 5, 9, 40, 300])
    kinds = dict(accounts=rng.choice([0.0, 0.5, 1.0]), twice=rng.choice([0.0, 0.3, 0.9]),
                 played=rng.choice([0.0, 0.5, 1.0]), ratings=rng.choice([1, 3, 40]))
    for players in (2, 3, 4):
        for rated in (False, True):
            seekers = _pool(rng, n, rated=rated, **kinds)
            limit = rng.choice([None, 1, n // 5 + 1])
            fast = matching.groups(seekers, players, rated, limit)
            if rated:
                slow = rated_groups(seekers, players, limit)
            else:
                slow = [teams(g) if any(s.rating is not None for s in g) else g
                        for g in unrated_groups(seekers, players, limit)]
            assert _ids(fast) == _ids(slow), (seed, players, rated, limit, kinds)


def test_the_reference_is_not_trivially_equal():
    """The comparison above sees differences when there are some: a choice that ignored whom each
    played last would not pass it."""
    ana = Seeker("ana", "ana", None, 9.0, False, frozenset({"bea"}))
    bea = Seeker("bea", "bea", None, 8.0, False, frozenset({"ana"}))
    cris = Seeker("cris", "cris", None, 1.0, False, frozenset())
    assert _ids(unrated_groups([ana, bea, cris], 2)) == [["ana", "cris"]]
    assert _ids(matching.groups([ana, bea, cris], 2, False)) == [["ana", "cris"]]
    assert accepted_gap(0) == matching.BASE_GAP and _rating(cris) == matching.DEFAULT_RATING
