"""A fast simulator of the rest of a round, for Luna's look-ahead.

Cards are ints 0..39 in ``FULL_DECK`` order (coins first: ``7o`` is 6), so a
card's value is ``i % 10 + 1``. The rules are those of ``engine.play`` and
``engine.capture`` (sum to 15, the Italian hybrid, mandatory capture, TAKE
THE 15, escobas and the hybrid's last-card exception); the tests check the
simulator against the engine move by move. Scoring at the end uses
``engine.scoring.score_round`` itself.

The install compiles this module to C with mypyc (setup.py): about twice as fast, the
same decisions (tests/engine/bots/test_compiled.py). So it is written as plain typed
Python that mypyc takes: a variable keeps one type, and a class is built by its
``__init__`` (no ``__new__``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from math import comb
from typing import overload

from ..cards import FULL_DECK
from ..rules import Settings
from ..scoring import SETENTA_SCALE, score_round

VAL = [i % 10 + 1 for i in range(40)]
INDEX = {c: i for i, c in enumerate(FULL_DECK)}
CODE = list(FULL_DECK)
HAND = 3
DANGER = 0.6
# how a seat plays in a rollout (``Round.styles``; a seat not listed plays as Tito): the
# generic human styles Luna fits to what each opponent has shown (``engine.bots.luna.styles_read``)
TITO, GRAB, ANY, TAKE = 0, 1, 2, 3
STYLE_NAMES = ("tito", "grab", "any", "take")
# a play in a rollout: the card, and the set it takes (() to leave it)
Choice = tuple[int, tuple[int, ...]]


def subsets(table: list[int], goal: int) -> list[list[int]]:
    """Every set of table cards whose values add up to ``goal``."""
    found: list[list[int]] = []
    if goal > 0 and table:
        _walk(table, 0, goal, [], found)
    return found


def _walk(table: list[int], start: int, left: int, chosen: list[int], found: list[list[int]]) -> None:
    # a module function, not a closure: a recursive closure is a reference cycle, and one a call
    # left thousands of objects a decision for the collector to find (tests/engine/bots/test_luna.py)
    for j in range(start, len(table)):
        c = table[j]
        v = VAL[c]
        if v == left:
            found.append([*chosen, c])
        elif v < left:
            _walk(table, j + 1, left - v, [*chosen, c], found)


def sums_of(table: list[int]) -> dict[int, list[tuple[int, ...]]]:
    """Every set of table cards adding up to 14 or less, by its total."""
    subs: list[tuple[int, tuple[int, ...]]] = [(0, ())]
    for c in table:
        v = VAL[c]
        subs += [(t + v, s + (c,)) for t, s in subs if t + v <= 14]
    by_total: dict[int, list[tuple[int, ...]]] = {}
    for t, s in subs[1:]:
        by_total.setdefault(t, []).append(s)
    return by_total


_WORTH: dict[tuple[float, ...], list[float]] = {}


def worth_table(worth: dict[str, float]) -> list[float]:
    """The worth of each card by index; one list per distinct table, kept (caches key on it)."""
    values = tuple(worth[c] for c in FULL_DECK)
    return _WORTH.setdefault(values, list(values))


class Round:
    """The rest of one round: hands, table, stock, piles, and whose turn."""

    __slots__ = (
        "hands", "table", "stock", "piles", "escobas", "last", "turn", "pending",
        "nxt", "side_of", "settings", "hybrid", "mandatory", "take15", "last_sweep", "worth",
        "order", "gain", "public", "smart", "styles", "seed",
    )

    def __init__(self, settings: Settings, worth: list[float], players: list[int], side_of: dict[int, int],
                 nxt: dict[int, int]):
        self.settings = settings
        self.hybrid = settings.capture == "hybrid"
        self.mandatory = settings.mandatory_capture
        self.take15 = settings.take_the_fifteen
        self.last_sweep = settings.last_sweep_escoba
        self.worth = worth
        self.order = players
        self.side_of = side_of
        self.nxt = nxt
        self.hands: dict[int, list[int]] = {}
        self.table: list[int] = []
        self.stock: list[int] = []
        self.piles: list[list[int]] = []
        self.escobas: list[int] = []
        self.last = -1
        self.turn = -1
        self.pending = -1
        self.gain: list[float] = []
        self.public: list[int] = [0] * 11  # cards of each value on the table or in a pile
        self.smart = True
        # seat -> TITO, GRAB or ANY for the rollouts (None: everybody as Tito); ``seed`` is the
        # state of ANY's generator (a linear congruential one: an int, copied with the round)
        self.styles: dict[int, int] | None = None
        self.seed = 0

    def copy(self) -> Round:
        new = Round(self.settings, self.worth, self.order, self.side_of, self.nxt)
        new.last = self.last
        new.turn = self.turn
        new.pending = self.pending
        new.smart = self.smart
        new.styles = self.styles
        new.seed = self.seed
        new.hands = {s: list(h) for s, h in self.hands.items()}
        new.table = list(self.table)
        new.stock = list(self.stock)
        new.piles = [list(p) for p in self.piles]
        new.escobas = list(self.escobas)
        new.gain = list(self.gain)
        new.public = list(self.public)
        return new

    # --- the rules ----------------------------------------------------------
    def sets_for(self, card: int, table: list[int]) -> list[list[int]]:
        v = VAL[card]
        sets = subsets(table, 15 - v)
        if self.hybrid:
            sets += subsets(table, v)
        return sets

    def cards_left(self) -> int:
        n = 0
        for hand in self.hands.values():  # a loop mypyc compiles, not sum(map(...))'s generic calls
            n += len(hand)
        return n

    def take_fifteen(self, seat: int, taken: list[int]) -> None:
        card = self.pending
        escoba = len(taken) + 1 == len(self.table)
        self.table.remove(card)
        self._capture(seat, card, taken, escoba)

    def _capture(self, seat: int, card: int, taken: Sequence[int], escoba: bool) -> None:
        """``card`` takes ``taken`` off the table into the side's pile."""
        table = self.table
        for c in taken:
            table.remove(c)
        side = self.side_of[seat]
        self.piles[side].extend(taken)
        self.piles[side].append(card)
        self.last = seat
        w = self.worth
        self.gain[side] += w[card] + sum(w[c] for c in taken)
        if escoba:
            self.escobas[side] += 1
            self.gain[side] += 1.0
        self.pending = -1

    def play(self, seat: int, card: int, taken: Sequence[int]) -> None:
        hand = self.hands[seat]
        table = self.table
        last_card = not self.stock and self.cards_left() == 1
        hand.remove(card)
        self.public[VAL[card]] += 1
        if taken:
            escoba = len(taken) == len(table) and (self.last_sweep or not last_card)
            self._capture(seat, card, taken, escoba)
        else:
            self.pending = card if self.take15 and self.sets_for(card, table) else -1
            table.append(card)
        self.turn = self.nxt[seat]
        if self.cards_left() == 0:
            if self.stock:
                self.deal()
            else:
                self.finish()

    def deal(self) -> None:
        stock = self.stock
        at = 0
        for seat in self.order:
            self.hands[seat] = stock[at : at + HAND]
            at += HAND
        del stock[:at]

    def finish(self) -> None:
        if self.table and self.last >= 0:
            side = self.side_of[self.last]
            self.piles[side].extend(self.table)
            self.gain[side] += sum(self.worth[c] for c in self.table)
        self.table = []
        self.turn = -1

    def over(self) -> bool:
        return self.turn < 0

    # --- the fast policy ------------------------------------------------------
    def best_take(self) -> list[int] | None:
        card = self.pending
        rest = [c for c in self.table if c != card]
        sets = self.sets_for(card, rest)
        if not sets:
            return None
        w = self.worth
        return max(sets, key=lambda s: sum(w[c] for c in s) + (len(s) == len(rest)))

    def greedy(self, seat: int) -> Choice | None:
        """Capture the most valuable set, keep clear of sweepable tables; else leave the cheapest card."""
        w = self.worth
        table = self.table
        hybrid = self.hybrid
        tsum = 0
        for c in table:
            tsum += VAL[c]
        n = len(table)
        escoba_counts = self.last_sweep or self.stock or self.cards_left() > 1
        best = -1e9
        choice: Choice | None = None
        by_total = sums_of(table)
        for card in self.hands[seat]:
            v = VAL[card]
            sets = by_total.get(15 - v, [])
            if hybrid:
                sets = sets + by_total.get(v, [])
            for s in sets:
                score = 1.0 + w[card]
                left = tsum
                for c in s:
                    score += w[c]
                    left -= VAL[c]
                if len(s) == n:
                    if escoba_counts:
                        score += 1.0
                elif 5 <= left <= 14 or (hybrid and left <= 10):
                    score -= DANGER
                if score > best:
                    best, choice = score, (card, s)
            if not sets or not self.mandatory:
                after = tsum + v
                score = -w[card]
                if 5 <= after <= 14 or (hybrid and after <= 10):
                    score -= DANGER
                if sets:
                    score -= 1.0
                if score > best:
                    best, choice = score, (card, ())
        return choice

    def rollout(self, plies: int = 999, stop: Callable[[], bool] | None = None, every: int = 4) -> bool:
        """Play on with the fast policy for ``plies`` plays, or to the round's end.

        ``stop()`` is asked before every ``every`` plays (a search's budget, read
        inside the rollout, not only between rollouts); when it says so the
        rollout breaks off and returns False.
        """
        count = 0
        styles = self.styles
        while self.turn >= 0 and plies > 0:
            if stop is not None and count % every == 0 and stop():
                return False
            count += 1
            plies -= 1
            seat = self.turn
            if self.pending >= 0:
                fifteen = self.best_take()
                if fifteen:
                    self.take_fifteen(seat, fifteen)
            style = styles.get(seat, TITO) if styles else TITO
            choice: Choice | None
            if style == GRAB:
                choice = self.grab(seat)
            elif style in (ANY, TAKE):
                found = self.legal(seat)
                if style == TAKE:  # any capture there is; with none, any card
                    found = [play for play in found if play[1]] or found
                self.seed = (self.seed * 1103515245 + 12345) & 0x7FFFFFFF
                choice = found[(self.seed >> 8) % len(found)]
            else:
                choice = self.tito(seat) if self.smart else self.greedy(seat)
            assert choice is not None  # a hand on its turn is never empty: there is a play
            card, taken = choice
            self.play(seat, card, taken)
        return True

    # --- the generic styles Luna fits to her opponents ------------------------
    def _plays(self, seat: int) -> Iterator[tuple[int, tuple[int, ...], float | None]]:
        """Each legal play of ``seat`` in a fixed order: (card, the set it takes, its worth);
        ``()`` and ``None`` to leave the card."""
        table = self.table
        offsets, masks, worths = _options(table, self.worth)
        for card in self.hands[seat]:
            v = VAL[card]
            some = False
            for part in range(2 if self.hybrid else 1):
                t = 15 - v if part == 0 else v
                for k in range(offsets[t], offsets[t + 1]):
                    some = True
                    yield card, _cards_in(table, masks[k]), worths[k]
            if not some or not self.mandatory:
                yield card, (), None

    def legal(self, seat: int) -> list[tuple[int, tuple[int, ...]]]:
        """Every legal play of ``seat`` (a card and the set it takes, () to leave it), in a fixed order."""
        return [(card, s) for card, s, _ in self._plays(seat)]

    def grab_keys(self, seat: int) -> list[tuple[tuple[int, float], int, tuple[int, ...]]]:
        """Each legal play with the greedy taker's key: the most cards taken, then their worth.

        Leaving a card is keyed below every capture, the cheapest card first.
        """
        w = self.worth
        return [((len(s) + 1, sw + w[card]) if sw is not None else (0, -w[card]), card, s)
                for card, s, sw in self._plays(seat)]

    def grab(self, seat: int) -> Choice | None:
        """The greedy taker's play: the capture of the most cards (the most worth among equals).

        With nothing to take, the cheapest card is left.
        """
        best: tuple[int, float] | None = None
        choice: Choice | None = None
        for key, card, s in self.grab_keys(seat):
            if best is None or key > best:
                best, choice = key, (card, s)
        return choice

    def score(self, sides: Iterable[Iterable[int]]) -> list[int]:
        """The round's points per side by ``engine.scoring.score_round`` itself (slow; for checks)."""
        piles = [[CODE[c] for c in p] for p in self.piles]
        return [t["round_points"] for t in score_round(sides, piles, self.escobas, self.settings)]

    def points(self) -> list[int]:
        """The round's points per side, as ``score_round`` counts them, on int cards (fast).

        Luna's leaf: the tests check it against ``engine.scoring`` on completed rounds.
        """
        return round_points(self.piles, self.escobas, self.settings)

    @overload
    def tito(self, seat: int) -> Choice | None: ...
    @overload
    def tito(self, seat: int, want: tuple[int, frozenset[int]]) -> bool: ...
    @overload
    def tito(self, seat: int, want: tuple[int, frozenset[int]], judged: list[float]) -> float | None: ...

    def tito(self, seat: int, want: tuple[int, frozenset[int]] | None = None,
             judged: list[float] | None = None) -> Choice | bool | float | None:
        """Tito's judgement, made fast: what a move takes, less what the next opponent may take after it.

        With ``want`` (a card and the set it took), whether that move is among the best
        Tito sees here (ties count: he breaks them at random), instead of his choice.
        With ``judged`` as well, every legal play's score is appended to it and the
        return is ``want``'s score (None if it is not a legal play here): see ``judge``.

        Nearly all of Luna's time is spent here (a call a play in every rollout), so tables
        are bitmasks of cards (``BIT``), a table's capturable sets come with their worth from
        a cache (``_options``) and what a table left behind exposes is looked up by its mask
        (``_ranked``, and ``_expected`` over it): the same judgement as written plainly (the tests hold
        it to that), about 1.1-1.2x as fast.
        """
        w = self.worth
        table = self.table
        hand = self.hands[seat]
        hybrid = self.hybrid
        stock = len(self.stock)
        left = stock + self.cards_left()
        last_card = left == 1
        escoba_counts = self.last_sweep or not last_card
        nxt = self.nxt[seat]
        threat = self.side_of[nxt] != self.side_of[seat] and not last_card
        if threat:
            public = self.public
            mine = [0] * 11
            for c in hand:
                mine[VAL[c]] += 1
            seen = 0
            for count in public:
                seen += count
            pool = 40 - seen - len(hand)
            h = len(self.hands[nxt]) or HAND
            h = min(h, pool)
            chance = CHANCE[h][pool]
            # a value's cards out of sight: four, less those in sight and in this hand (never below 0)
            odds = [chance[4 - public[u] - mine[u]] for u in range(11)]
            ends = left <= len(self.order)
            opp_escoba = self.last_sweep or not ends
            ranked = _RANKED.setdefault((id(w), hybrid, opp_escoba), {})
        offsets, masks, worths = _options(table, w)
        tmask = 0
        for c in table:
            tmask |= BIT[c]
        want_card, want_mask = -1, -1
        if want is not None:
            want_card = want[0]
            want_mask = 0
            for c in want[1]:
                want_mask |= BIT[c]
        leave_costs = not self.mandatory
        take15 = self.take15 and not last_card
        best = -1e9
        wanted: float | None = None
        chosen, chosen_mask = -1, 0
        for card in hand:
            v = VAL[card]
            wc = w[card]
            some = False
            for part in range(2 if hybrid else 1):
                t = 15 - v if part == 0 else v
                for k in range(offsets[t], offsets[t + 1]):
                    some = True
                    sm = masks[k]
                    score = wc + worths[k]
                    amask = tmask ^ sm
                    if not amask and escoba_counts:
                        score += 1.0
                    if last_card:
                        capturer = seat
                        if amask:
                            lump = sum(w[c] for c in table if not BIT[c] & sm)
                            score += lump if self.side_of[capturer] == self.side_of[seat] else -lump
                    elif threat and amask:
                        found = ranked.get(amask)
                        if found is None:
                            found = _ranked(amask, ranked, w, hybrid, opp_escoba)
                        score -= RISK * _expected(found, odds)
                    if score > best:
                        best, chosen, chosen_mask = score, card, sm
                    if card == want_card and sm == want_mask:
                        wanted = score
                    if judged is not None:
                        judged.append(score)
            if not some or leave_costs:
                score = 0.0
                if some and take15:  # the most the 15 left behind gives the next player
                    top = -1e9
                    for part in range(2 if hybrid else 1):
                        t = 15 - v if part == 0 else v
                        for k in range(offsets[t], offsets[t + 1]):
                            x = wc + worths[k] + (1.0 if masks[k] == tmask else 0.0)
                            if x > top:
                                top = x
                    score -= top
                if last_card:
                    capturer = self.last
                    if capturer >= 0:
                        lump = sum(w[c] for c in [*table, card])
                        score += lump if self.side_of[capturer] == self.side_of[seat] else -lump
                elif threat:
                    amask = tmask | BIT[card]
                    found = ranked.get(amask)
                    if found is None:
                        found = _ranked(amask, ranked, w, hybrid, opp_escoba)
                    score -= RISK * _expected(found, odds)
                if score > best:
                    best, chosen, chosen_mask = score, card, 0
                if card == want_card and want_mask == 0:
                    wanted = score
                if judged is not None:
                    judged.append(score)
        if judged is not None:
            return wanted
        if want is not None:
            return wanted is not None and wanted >= best - 1e-9
        if chosen < 0:
            return None
        return chosen, _cards_in(table, chosen_mask)

    def judge(self, seat: int, card: int, taken: Collection[int]) -> tuple[list[float], float | None]:
        """Tito's score of every legal play of ``seat`` here, and of playing ``card`` to take ``taken``.

        The second is None when that play is not a legal one from this hand. What a model of
        a player (``engine.bots.people``) turns into the chance that they chose that play.
        """
        judged: list[float] = []
        wanted = self.tito(seat, (card, frozenset(taken)), judged)
        return judged, wanted


# the setenta's scale by card index
SETENTA_OF = [SETENTA_SCALE[VAL[i]] for i in range(40)]


def _sole(counts: Sequence[int | None]) -> int:
    """The index of the one side strictly ahead, else -1 (a tie, or nothing to count)."""
    top, at, tied = -1, -1, False
    for i, c in enumerate(counts):
        if c is None:
            continue
        if c > top:
            top, at, tied = c, i, False
        elif c == top:
            tied = True
    return -1 if tied else at


def round_points(piles: Sequence[Sequence[int]], escobas: Iterable[int], settings: Settings) -> list[int]:
    """``score_round``'s round points per side, for piles of int cards (coins are 0..9)."""
    cards = [len(p) for p in piles]
    coins = []
    sevens = []
    for p in piles:
        k = s = 0
        for c in p:
            if c < 10:
                k += 1
            if c % 10 == 6:
                s += 1
        coins.append(k)
        sevens.append(s)
    points = list(escobas)
    best = _sole(cards)
    if best >= 0:
        double = settings.most_cards_double and all(c < 10 for j, c in enumerate(cards) if j != best)
        points[best] += 2 if double else 1
    best = _sole(coins)
    if best >= 0:
        points[best] += 1
    for i, p in enumerate(piles):
        if settings.all_coins_extra and coins[i] == 10:
            points[i] += 1
        if 6 in p:
            points[i] += 1
        if settings.all_sevens_extra and sevens[i] == 4:
            points[i] += 1
    if settings.sevens == "most":
        best = _sole(sevens)
        if best >= 0:
            points[best] += 1
    elif settings.sevens == "setenta":
        totals = []
        for p in piles:
            top = [0, 0, 0, 0]
            for c in p:
                v = SETENTA_OF[c]
                if v > top[c // 10]:
                    top[c // 10] = v
            totals.append(sum(top) if all(top) else None)
        best = _sole(totals)
        if best >= 0:
            points[best] += 1
    return points


RISK = 0.9
# CHANCE[h][pool][u]: a hand of h cards from pool unseen cards holds one of u
CHANCE = [
    [[(1.0 - comb(pool - u, h) / comb(pool, h)) if 0 < u <= pool and h <= pool else 0.0
      for u in range(5)] for pool in range(41)]
    for h in range(HAND + 1)
]
BIT = [1 << i for i in range(40)]
# per (worth table, hybrid, escoba counts): a table's mask -> for each card value, the most a
# card of that value can take from it, best first (flat: gain, value, gain, value, ...)
_RANKED: dict[tuple[int, bool, bool], dict[int, tuple[float, ...]]] = {}
# per (worth table, the table's cards in order) -> for each total 0..14, its sets' masks and worths
_OPTIONS: dict[tuple[int, ...], tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]] = {}
# kept small: a big cache makes every full garbage collection slow (a pause in whichever
# decision it fell on, Tito's included), and emptying a big one costs a pause too, past Luna's
# budget in one go (docs/bots.md)
RANKED_MAX = 4000


def _options(table: list[int], w: list[float]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...]]:
    """Every set of ``table`` adding up to 1..14, by total: ``(offsets, masks, worths)``.

    The sets adding up to ``t`` are ``masks[offsets[t]:offsets[t + 1]]`` with their worths beside,
    in ``sums_of``'s order (the table's order kept in the key), so Tito's ties break the same; a
    set's cards are ``_cards_in(table, mask)``. Three flat tuples of numbers, not a tuple a set:
    the cache's entries are then few containers each, which the collector stops tracking at its
    first pass (a tuple of cards, a worth and a mask a set were most of what a decision left it).
    """
    key = (id(w), *table)
    found = _OPTIONS.get(key)
    if found is not None:
        return found
    # sums_of's walk, carrying each set's worth and mask along (three lists side by side: no tuple a set)
    totals = [0]
    sums = [0.0]
    bits = [0]
    for c in table:
        v = VAL[c]
        wc = w[c]
        bc = BIT[c]
        for i in range(len(totals)):
            t = totals[i] + v
            if t <= 14:
                totals.append(t)
                sums.append(sums[i] + wc)
                bits.append(bits[i] | bc)
    counts = [0] * 16
    for t in totals:
        counts[t + 1] += 1
    counts[1] = 0  # the empty set is none
    offsets = [0] * 16
    for t in range(1, 16):
        offsets[t] = offsets[t - 1] + counts[t]
    at = list(offsets)
    n = offsets[15]
    masks = [0] * n
    worths = [0.0] * n
    for i in range(1, len(totals)):
        t = totals[i]
        masks[at[t]] = bits[i]
        worths[at[t]] = sums[i]
        at[t] += 1
    found = (tuple(offsets), tuple(masks), tuple(worths))
    if len(_OPTIONS) > RANKED_MAX:
        _OPTIONS.clear()
    _OPTIONS[key] = found
    return found


def _expected(found: tuple[float, ...], odds: list[float]) -> float:
    """What the next player is expected to take from a table (``_ranked``'s gains, the most first),
    each value held with its chance in ``odds``: the best capture the hand holds counts."""
    expected, miss = 0.0, 1.0
    for k in range(0, len(found), 2):
        p = odds[int(found[k + 1])]
        if p:
            expected += found[k] * p * miss
            miss *= 1 - p
    return expected


def _cards_in(table: list[int], mask: int) -> tuple[int, ...]:
    """The table's cards in ``mask``, in the table's order."""
    return tuple([c for c in table if BIT[c] & mask])


def _ranked(mask: int, cache: dict[int, tuple[float, ...]], w: list[float], hybrid: bool,
            escoba: bool) -> tuple[float, ...]:
    """For each card value, the most a card of that value can take from the table ``mask``, best first.

    One flat tuple, each value's gain then the value: ``(g1, v1, g2, v2, ...)``, the values as floats.
    """
    found = cache.get(mask)
    if found is not None:
        return found
    # the most worth a set of each total 1..14 takes, by a knapsack over the table's cards in
    # index order: the max of every set's worth summed in that order, to the last bit (adding
    # a worth to the best so far is adding it to each and keeping the best: rounding is monotone)
    most = [-1.0] * 15  # -1: no set adds up to that total
    most[0] = 0.0
    total = 0
    whole = 0.0
    for c in range(40):
        if not mask >> c & 1:
            continue
        v = VAL[c]
        wc = w[c]
        total += v
        whole += wc
        for t in range(14, v - 1, -1):
            below = most[t - v]
            if below >= 0.0 and below + wc > most[t]:
                most[t] = below + wc
    best = [0.0] * 15
    for t in range(1, 15):
        if most[t] > 0.0:
            best[t] = most[t]
    if escoba and total <= 14 and whole + 1.0 > best[total]:
        best[total] = whole + 1.0  # the whole table: a sweep
    # the values by their gain, the most first (the higher value first among equal gains): an
    # insertion into two short lists, as sorting (gain, value) pairs in reverse would order them
    gains: list[float] = []
    values: list[int] = []
    for v in range(1, 11):
        g = best[15 - v]
        if hybrid:
            g = max(g, best[v])
        if g > 0:
            g += 0.12
            at = len(gains)
            while at > 0 and (gains[at - 1] < g or (gains[at - 1] == g and values[at - 1] < v)):
                at -= 1
            gains.insert(at, g)
            values.insert(at, v)
    # one flat tuple of numbers, not a tuple of pairs: a rollout makes thousands of these, and each
    # container is walked by the next collection (a pair each made two thirds of what a decision
    # left for it); the collector stops tracking a tuple of numbers at its first pass
    flat: list[float] = []
    for i in range(len(gains)):
        flat.append(gains[i])
        flat.append(float(values[i]))
    ranked = tuple(flat)
    if len(cache) > RANKED_MAX:
        cache.clear()
    cache[mask] = ranked
    return ranked

