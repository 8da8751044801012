"""Settings operators set by environment (docs/api.md), read in one place."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

# the --redis-url flag of every command
REDIS_URL_HELP = ("the Redis to use, or a cluster's seed nodes, comma-separated "
                  "(default: $REDIS_URL, else redis://127.0.0.1:6379/0)")


@dataclass(frozen=True)
class Config:
    redis_url: str = "redis://127.0.0.1:6379/0"
    # RQ's plain Redis; empty: REDIS_URL itself, which must then not be a cluster (events/connection.py).
    # Several, comma-separated: queue shards, a table's jobs always on the same one (queue_urls)
    queue_url: str = ""
    admin_token: str | None = None
    away_after: float = 172800.0  # 48 hours
    expire_after: float = 604800.0  # 7 days
    bot_delay: float = 1.0
    rematch_window: float = 86400.0  # 24 hours
    public_url: str = ""  # base of invitation links; empty: taken from the request
    # WebSocket bounds (api/sockets/bounds.py), counted in each API process
    sockets_per_address: int = 256  # one client address, all tables
    sockets_per_address_table: int = 16  # one client address at one table
    sockets_per_table: int = 1024  # one table, all addresses
    # seconds between protocol pings; a peer that answers none is dropped at the next one
    socket_ping_interval: float = 25.0
    # seconds after a table closes for good (finished, rematch refused or lapsed; expired) before
    # it is compacted; at least the idempotency keys' TTL (24 h), so those are gone by then
    compact_after: float = 86400.0
    # Web Push: the VAPID private key (base64url, the raw 32 bytes); unset: no push notices
    vapid_private_key: str | None = None
    # the VAPID "sub" claim push services may write to about misuse
    vapid_subject: str = "mailto:escoba@localhost"
    # notify and push URLs may reach loopback and private addresses (tests, a private network)
    notify_allow_private: bool = False
    # "off" turns the per-address and per-token limits off; else the limits of api/http/limits.py
    rate_limits: str = "on"
    # the moves' per-seat-token limit (POST and socket moves alike): one window, in flask-limiter's words
    # ("120 per minute"); a bench that plays faster than a person raises it rather than turn the limits off
    moves_limit: str = "120 per minute"
    # how many proxies in front of the API append to X-Forwarded-For; 0: the peer's address counts
    trusted_proxies: int = 0
    # replicas that must hold a move before it is acknowledged; None (unset): 0 on one Redis, on a
    # cluster 1 if every master has a replica (events/replication.py, docs/operations.md)
    replica_acks: int | None = None
    # passkeys (api/http/passkeys.py): the WebAuthn relying party's id (a host name) and the origin the
    # browser signs; empty: ESCOBA_PUBLIC_URL's, else the request's own host
    webauthn_rp_id: str = ""
    webauthn_origin: str = ""
    # a move on a master with no replica online: "accept" (acknowledged on its AOF alone, counted
    # and alerted on) or "refuse" (503 until a replica is back); events/replication.py
    unreplicated: str = "accept"
    # the cores the host's Redis holds (docker-compose.yml's ESCOBA_REDIS_CPUS: its server_cpulist and
    # bio_cpulist); ``escoba serve`` keeps its processes off them while the host has others (api/server/serve.py)
    redis_cpus: frozenset[int] = frozenset()

    @property
    def queue_urls(self) -> tuple[str, ...]:
        """The queue shards in ``ESCOBA_QUEUE_URL``'s order (empty: REDIS_URL is the one queue).
        The order is the shards' numbering: shard N is the N-th URL (``escoba worker --shard N``)."""
        return tuple(u.strip() for u in self.queue_url.split(",") if u.strip())

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Config:
        env = os.environ if env is None else env
        return cls(
            redis_url=env.get("REDIS_URL", cls.redis_url),
            queue_url=env.get("ESCOBA_QUEUE_URL", ""),
            admin_token=env.get("ESCOBA_ADMIN_TOKEN") or None,
            away_after=float(env.get("ESCOBA_AWAY_AFTER", cls.away_after)),
            expire_after=float(env.get("ESCOBA_EXPIRE_AFTER", cls.expire_after)),
            bot_delay=float(env.get("ESCOBA_BOT_DELAY", cls.bot_delay)),
            rematch_window=float(env.get("ESCOBA_REMATCH_WINDOW", cls.rematch_window)),
            public_url=env.get("ESCOBA_PUBLIC_URL", ""),
            sockets_per_address=int(env.get("ESCOBA_SOCKETS_PER_ADDRESS", cls.sockets_per_address)),
            sockets_per_address_table=int(env.get("ESCOBA_SOCKETS_PER_ADDRESS_TABLE",
                                                  cls.sockets_per_address_table)),
            sockets_per_table=int(env.get("ESCOBA_SOCKETS_PER_TABLE", cls.sockets_per_table)),
            socket_ping_interval=float(env.get("ESCOBA_SOCKET_PING_INTERVAL", cls.socket_ping_interval)),
            compact_after=float(env.get("ESCOBA_COMPACT_AFTER", cls.compact_after)),
            vapid_private_key=env.get("ESCOBA_VAPID_PRIVATE_KEY") or None,
            vapid_subject=env.get("ESCOBA_VAPID_SUBJECT") or cls.vapid_subject,
            notify_allow_private=env.get("ESCOBA_NOTIFY_ALLOW_PRIVATE", "") == "1",
            rate_limits=env.get("ESCOBA_RATE_LIMITS", "on"),
            moves_limit=_one_window(env.get("ESCOBA_MOVES_LIMIT", "").strip() or cls.moves_limit,
                                    "ESCOBA_MOVES_LIMIT"),
            trusted_proxies=int(env.get("ESCOBA_TRUSTED_PROXIES", "0") or 0),
            replica_acks=int(env["ESCOBA_REPLICA_ACKS"]) if env.get("ESCOBA_REPLICA_ACKS", "").strip() else None,
            webauthn_rp_id=env.get("ESCOBA_WEBAUTHN_RP_ID", "").strip(),
            webauthn_origin=env.get("ESCOBA_WEBAUTHN_ORIGIN", "").strip().rstrip("/"),
            unreplicated=_choice(env.get("ESCOBA_UNREPLICATED", "").strip() or cls.unreplicated,
                                 "ESCOBA_UNREPLICATED", ("accept", "refuse")),
            redis_cpus=core_list(env.get("ESCOBA_REDIS_CPUS", ""), "ESCOBA_REDIS_CPUS"),
        )


def stock_libraries(env: Mapping[str, str] | None = None) -> bool:
    """``ESCOBA_STOCK=1``: the third-party libraries as they ship, none of the speed patches
    (events/patches.py); unset, empty or 0: patched."""
    env = os.environ if env is None else env
    return _choice(env.get("ESCOBA_STOCK", "").strip() or "0", "ESCOBA_STOCK", ("0", "1")) == "1"


CORE_MAX = 4095  # the highest core number a core list may name (Linux's own default limit is far below)


def core_list(value: str, name: str) -> frozenset[int]:
    """A core list as taskset and Redis's ``server_cpulist`` write it ("1", "0,2", "2-3"); empty: none."""
    cores: set[int] = set()
    for part in value.replace(" ", "").split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        if not (first.isdigit() and (last.isdigit() if dash else True)):
            raise ValueError(f'{name} must be a core list as "1", "0,2" or "2-3" (not {value!r})')
        low, high = int(first), int(last or first)
        if low > high or high > CORE_MAX:
            raise ValueError(f"{name}: {part!r} is not a range of cores from 0 to {CORE_MAX}")
        cores.update(range(low, high + 1))
    return frozenset(cores)


def _choice(value: str, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)} (not {value!r})")
    return value


def _one_window(value: str, name: str) -> str:
    """A rate limit of one window ("120 per minute", "10/second"): the moves' count is one key counted in the
    append's step (api/http/limits.py ``MoveLimit``), so a list of windows is refused, as is a limit of 0."""
    from limits import parse_many

    try:
        items = parse_many(value)
    except ValueError:
        items = []
    if len(items) != 1 or items[0].amount < 1:
        raise ValueError(f"{name} must be one rate limit of at least 1, as \"120 per minute\" or \"10/second\" "
                         f"(not {value!r})")
    return value
