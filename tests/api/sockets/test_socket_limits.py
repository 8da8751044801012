"""The bounds on sockets per client address, per address and table, and per table."""

from __future__ import annotations

from api.sockets.bounds import SocketLimits
from events.config import Config


def test_each_bound_refuses_the_socket_past_it_and_counts_nothing_for_it():
    limits = SocketLimits(per_address=3, per_address_table=2, per_table=3)
    assert limits.acquire("1.1.1.1", "A") is None
    assert limits.acquire("1.1.1.1", "A") is None
    refusal = limits.acquire("1.1.1.1", "A")
    assert (refusal.scope, refusal.limit) == ("address_table", 2)
    assert limits.acquire("1.1.1.1", "B") is None
    refusal = limits.acquire("1.1.1.1", "C")
    assert (refusal.scope, refusal.limit) == ("address", 3)
    assert limits.held("1.1.1.1") == 3 and limits.held("1.1.1.1", "A") == 2
    # the table's own bound, whoever asks
    assert limits.acquire("2.2.2.2", "A") is None
    refusal = limits.acquire("3.3.3.3", "A")
    assert (refusal.scope, refusal.limit) == ("table", 3)
    assert "3 sockets" in refusal.message()
    assert limits.held("3.3.3.3") == 0


def test_a_closed_socket_frees_its_place_and_leaves_no_counter_behind():
    limits = SocketLimits(per_address=1, per_address_table=1, per_table=1)
    assert limits.acquire("1.1.1.1", "A") is None
    assert limits.acquire("1.1.1.1", "A") is not None
    limits.release("1.1.1.1", "A")
    assert limits.held("1.1.1.1") == 0
    assert not limits._address and not limits._address_table and not limits._table
    assert limits.acquire("1.1.1.1", "A") is None


def test_the_bounds_have_documented_defaults_and_come_from_the_environment():
    default = Config.from_env({})
    bounds = (default.sockets_per_address, default.sockets_per_address_table, default.sockets_per_table)
    assert bounds == (256, 16, 1024)
    assert default.socket_ping_interval == 25.0
    set_ = Config.from_env({"ESCOBA_SOCKETS_PER_ADDRESS": "7", "ESCOBA_SOCKETS_PER_ADDRESS_TABLE": "2",
                            "ESCOBA_SOCKETS_PER_TABLE": "9", "ESCOBA_SOCKET_PING_INTERVAL": "0.5"})
    assert (set_.sockets_per_address, set_.sockets_per_address_table, set_.sockets_per_table) == (7, 2, 9)
    assert set_.socket_ping_interval == 0.5
