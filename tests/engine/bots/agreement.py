"""The old reading's test of a hand (before people were modelled): how many of a seat's plays this deal
Tito's judgement would make, had it held ``hand``. The tests hold Luna's reading to it
(``luna.hand_weight`` under ``people.TITO`` is above 0 exactly when every play agrees); bench's
experiments keep their own copy (bench/luna_experiments.py ``_agreed``) for ``REJECT``."""

from __future__ import annotations

from engine.bots.luna import PastChoice


def agreed(hand: list[int], checks: list[PastChoice]) -> int:
    n = 0
    for before, seat, card, taken, since in checks:
        before.hands[seat] = hand + since
        n += before.tito(seat, (card, taken))
    return n
