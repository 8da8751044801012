"""Who sits with whom: a wave's choice, pure (no store, no clock: the wave passes the times waited).

Unrated pools seat the longest waiting first. Rated pools pair the closest ratings first, the
gap a seeker accepts widening with the time it has waited (as Lichess's pools do:
lichess-org/lila, modules/pool): every group of ``players`` seekers next to each other in
rating order is a candidate, the candidates are taken closest first, and one is taken only if
its spread is within what each of its seekers accepts now. Four players sit as two teams of
close strength (partners across: seats 0 and 2, 1 and 3). Nobody sits with themselves (two
seeks of one account), nor with whom they played last when someone else could take that seat.

A live seek waiting past its ``bot_after`` and still unchosen is seated with the others left
waiting and bots in the empty seats (``fallback``).
"""

from __future__ import annotations

from typing import NamedTuple

BASE_GAP = 100.0  # rating points a seeker accepts at once
GAP_PER_SECOND = 25.0  # ... and this many more each second it has waited
DEFAULT_RATING = 1500.0  # a seeker without a rating in a rated pool (provisional)


class Seeker(NamedTuple):
    """One live seek as a wave sees it (a tuple: a wave makes thousands)."""

    seek_id: str
    identity: str  # an account's player id; a guest's own seek id
    rating: float | None = None
    waited: float = 0.0  # seconds
    bot_due: bool = False  # waited past its bot_after
    last: frozenset[str] = frozenset()  # whom it played last


def accepted_gap(waited: float) -> float:
    return BASE_GAP + GAP_PER_SECOND * max(0.0, waited)


def _rating(s: Seeker) -> float:
    return DEFAULT_RATING if s.rating is None else s.rating


def _fits(s: Seeker, group: list[Seeker], strict: bool) -> bool:
    for other in group:
        if s.identity == other.identity:
            return False
        if strict and (other.identity in s.last or s.identity in other.last):
            return False
    return True


def _fill(anchor: int, order: list[Seeker], used: list[bool], players: int, strict: bool,
          window: int | None = None) -> list[int] | None:
    """``anchor`` and the next seekers after it in ``order`` that fit (at most ``window`` looked at)."""
    group = [anchor]
    members = [order[anchor]]
    looked = 0
    for j in range(anchor + 1, len(order)):
        if len(group) == players:
            break
        if used[j]:
            continue
        looked += 1
        if window is not None and looked > window:
            break
        if _fits(order[j], members, strict):
            group.append(j)
            members.append(order[j])
    return group if len(group) == players else None


def teams(group: list[Seeker]) -> list[Seeker]:
    """Four seekers in seat order for two teams of close strength: the strongest and the weakest
    together against the two between (seats 0 and 2 against 1 and 3)."""
    if len(group) != 4:
        return group
    r = sorted(group, key=_rating)
    return [r[0], r[1], r[3], r[2]]


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
    order = sorted(seekers, key=_rating)
    none_used = [False] * len(order)
    candidates: list[tuple[float, list[int]]] = []
    ratings = [_rating(s) for s in order]
    gaps = [accepted_gap(s.waited) for s in order]
    if players == 2:
        candidates = _rated_pairs(order, ratings, gaps, window)
    for i in range(len(order) if players != 2 else 0):
        # someone not played last if there is one near; else whoever is (a worse candidate)
        for strict, penalty in ((True, 0.0), (False, 1e6)):
            picked = _fill(i, order, none_used, players, strict, window)
            if picked is None:
                continue
            spread = ratings[picked[-1]] - ratings[picked[0]]
            if spread <= min(gaps[j] for j in picked):
                candidates.append((spread + penalty, picked))
                break
    candidates.sort(key=lambda c: c[0])
    used = [False] * len(order)
    out: list[list[Seeker]] = []
    for _, picked in candidates:
        if limit is not None and len(out) >= limit:
            break
        if any(used[j] for j in picked):
            continue
        for j in picked:
            used[j] = True
        out.append(teams([order[j] for j in picked]))
    return out


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


def fallback(left: list[Seeker], players: int) -> list[list[Seeker]]:
    """Groups for the seekers past their ``bot_after`` among ``left`` (those no full table took):
    each with the others still left, longest waiting first, up to ``players``; the rest of the
    seats are bots'. Every group here is short of ``players`` or has a seeker past its time."""
    order = sorted(left, key=lambda s: -s.waited)
    used = [False] * len(order)
    out: list[list[Seeker]] = []
    for i, s in enumerate(order):
        if used[i] or not s.bot_due:
            continue
        group = [i]
        members = [s]
        for j in range(len(order)):
            if len(group) == players:
                break
            if used[j] or j == i:
                continue
            if _fits(order[j], members, False):
                group.append(j)
                members.append(order[j])
        for j in group:
            used[j] = True
        out.append(members)
    return out


__all__ = ["BASE_GAP", "GAP_PER_SECOND", "Seeker", "accepted_gap", "fallback", "groups", "rated_groups", "teams",
           "unrated_groups"]
