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

from itertools import compress, islice, repeat
from operator import add, and_, eq, itemgetter, le, mul, sub
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


# Seeker's parts read as a tuple's items (C calls, where a wave reads thousands)
_IDENTITY, _RATING, _WAITED, _LAST = itemgetter(1), itemgetter(2), itemgetter(3), itemgetter(5)


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
    order = sorted(seekers, key=_WAITED, reverse=True)  # stable: equal waits keep their order
    return _unrated_fast(order, players, limit)


def _unrated_fast(order: list[Seeker], players: int, limit: int | None) -> list[list[Seeker]]:
    """``unrated_groups``'s choice with the seekers' parts in lists (a wave makes thousands): each
    seeker left, longest waiting first, with the next ones left who fit (no one twice, nobody with
    whom a member played last), else with the next ones left who are not a member again."""
    n = len(order)
    if n < players:
        return []
    used = bytearray(n)
    identity, last = list(map(_IDENTITY, order)), list(map(_LAST, order))  # the columns, in C
    any_last = any(last)
    need = players - 1

    def pick(i: int, strict: bool) -> list[int] | None:
        group, members = [i], [identity[i]]
        for j in range(i + 1, n):
            if used[j]:
                continue
            b = identity[j]
            if b in members:
                continue
            if strict and any_last and (any(m in last[j] for m in members) or any(b in last[k] for k in group)):
                continue
            group.append(j)
            members.append(b)
            if len(group) > need:
                return group
        return None

    out: list[list[Seeker]] = []
    for i in range(n):
        if used[i]:
            continue
        if limit is not None and len(out) >= limit:
            break
        picked = pick(i, True) or (pick(i, False) if any_last else None)
        if picked is None:
            continue
        for j in picked:
            used[j] = 1
        out.append([order[j] for j in picked])
    return out


def rated_groups(seekers: list[Seeker], players: int, limit: int | None = None,
                 window: int = 8) -> list[list[Seeker]]:
    """Closest ratings first, each group within the gap every one of its seekers accepts now."""
    if players == 2:
        return _rated_pairs(seekers, window, limit)
    order = sorted(seekers, key=_rating)
    ratings = [_rating(s) for s in order]
    gaps = [accepted_gap(s.waited) for s in order]
    none_used = [False] * len(order)
    candidates: list[tuple[float, list[int]]] = []
    for i in range(len(order)):
        # someone not played last if there is one near; else whoever is (a worse candidate)
        for strict, penalty in ((True, 0.0), (False, 1e6)):
            picked = _fill(i, order, none_used, players, strict, window)
            if picked is None:
                continue
            spread = ratings[picked[-1]] - ratings[picked[0]]
            if spread <= min(gaps[j] for j in picked):
                candidates.append((spread + penalty, picked))
                break
    return _closest_first(candidates, order, limit)


def _closest_first(candidates: list[tuple[float, list[int]]], order: list[Seeker],
                   limit: int | None) -> list[list[Seeker]]:
    """The candidate groups (spread, positions in ``order``), the closest first, none sharing a seeker."""
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


def _rated_pairs(seekers: list[Seeker], window: int, limit: int | None) -> list[list[Seeker]]:
    """``rated_groups`` for two players: the same choice as its general loop, as one sweep over the
    rating order (a wave reads thousands). Each seeker's candidate is the next one in rating order
    it may meet (someone it did not play last if one is within ``window``, else whoever is, at a
    penalty): for nearly all it is simply the next one, so only the seekers next to their own
    account or to whom they played last are looked at one by one. The candidates within both
    seekers' gaps are taken closest first (equal spreads in rating order), each if neither seeker
    is taken yet."""
    n = len(seekers)
    if n < 2:
        return []
    # in rating order (stable: equal ratings keep their order), then each part a column, all in C
    rating = list(map(_RATING, seekers))
    if None not in rating:
        order = sorted(seekers, key=_RATING)
        ratings = list(map(_RATING, order))
    else:
        by_input = [DEFAULT_RATING if r is None else r for r in rating]
        ranks = sorted(range(n), key=by_input.__getitem__)
        order, ratings = list(map(seekers.__getitem__, ranks)), list(map(by_input.__getitem__, ranks))
    identity, last = list(map(_IDENTITY, order)), list(map(_LAST, order))
    # the same sums as accepted_gap's, a column at a time in C
    gaps = list(map(add, map(mul, map(max, map(_WAITED, order), repeat(0.0)), repeat(GAP_PER_SECOND)),
                    repeat(BASE_GAP)))
    score = list(map(sub, islice(ratings, 1, None), ratings))  # seeker i with i + 1
    fits = list(map(and_, map(le, score, gaps), map(le, score, islice(gaps, 1, None))))
    partner = list(range(1, n))
    # the seekers whose next one is not simply theirs: next to their own account's other seek, or
    # to whom they played last (looked at only beside those who played someone: compress, in C)
    special = [] if len(set(identity)) == n else list(
        compress(range(n - 1), map(eq, identity, islice(identity, 1, None))))
    played = list(compress(range(n), last))
    if played:
        near = set(special)
        for k in played:
            for i in (k - 1, k):
                if 0 <= i < n - 1 and i not in near and (identity[i + 1] in last[i] or identity[i] in last[i + 1]):
                    near.add(i)
        special = sorted(near)
    for i in special:
        a, seen, rating, gap = identity[i], last[i], ratings[i], gaps[i]
        fallback = None
        fits[i] = False
        for j in range(i + 1, min(n, i + 1 + window)):
            b = identity[j]
            if b == a:
                continue
            if b in seen or a in last[j]:
                if fallback is None:
                    fallback = j
                continue
            spread = ratings[j] - rating
            partner[i], score[i], fits[i] = j, spread, spread <= gap and spread <= gaps[j]
            fallback = None
            break
        if fallback is not None:
            spread = ratings[fallback] - rating
            partner[i], score[i], fits[i] = fallback, spread + 1e6, spread <= gap and spread <= gaps[fallback]
    candidates = list(compress(range(n - 1), fits))
    candidates.sort(key=score.__getitem__)  # float keys, stable: equal spreads in rating order
    used = bytearray(n)
    out: list[list[Seeker]] = []
    for i in candidates:
        j = partner[i]
        if used[i] or used[j]:
            continue
        if limit is not None and len(out) >= limit:
            break
        used[i] = used[j] = 1
        out.append([order[i], order[j]])
    return out


def groups(seekers: list[Seeker], players: int, rated: bool, limit: int | None = None) -> list[list[Seeker]]:
    """The full tables a wave makes, each a list of seekers in seat order."""
    if rated:
        return rated_groups(seekers, players, limit)
    found = unrated_groups(seekers, players, limit)
    if players != 4 or all(s.rating is None for s in seekers):
        return found  # teams() leaves these as they are
    return [teams(g) if any(s.rating is not None for s in g) else g for g in found]


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
