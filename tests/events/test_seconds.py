"""events/seconds.py: a second is formatted once, and a new second anew."""

from __future__ import annotations

from events.seconds import PerSecond


def test_each_second_is_formatted_once_and_the_next_one_anew():
    calls = []
    fmt = PerSecond(lambda whole: calls.append(whole) or f"s{whole}")
    assert [fmt(5), fmt(5), fmt(5)] == ["s5"] * 3
    assert fmt(6) == "s6" and fmt(5) == "s5"  # a second seen again (a clock stepped back) is formatted again
    assert calls == [5, 6, 5]
