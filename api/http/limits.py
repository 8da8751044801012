"""Rate limits (flask-limiter), counted in the tables' Redis so every API process shares them.

Defaults (``ESCOBA_RATE_LIMITS=off`` turns them all off, for benchmarks and tests that flood):

| what | counted per | limit |
|---|---|---|
| ``POST /tables`` (open a table) | client address | 10 a minute, 60 an hour |
| ``POST /tables/{id}/seats`` (take a seat) | client address | 30 a minute |
| ``POST /tables/{id}/moves`` and socket moves | seat token (at its table) | 120 a minute (``ESCOBA_MOVES_LIMIT``) |
| ``POST /tables/{id}/chat`` | seat token | 20 a minute |
| ``POST /players`` (make an account) | client address | 5 a minute, 30 an hour |
| failed sign-ins (``POST /sessions``, ``POST /sessions/passkey``) | the name tried | 5 a minute, 20 an hour |
| failed sign-ins | client address | 20 a minute, 100 an hour |

A request over a limit is refused and changes nothing: 429 ``rate_limited`` in the contract's
shape, with ``Retry-After`` (seconds). Tokens are counted by a hash, never stored as such. Each
counter is one Redis key (fixed windows, flask-limiter's default), so the counters spread over a
Redis Cluster like any other key. The moves' counter is the table's own key, counted in the
append's step (``MoveLimit``): a move over the limit is decided, then refused by that step before
it writes anything; the other limits refuse a request before it is read.

The client address is the TCP peer's, unless ``ESCOBA_TRUSTED_PROXIES=N`` says N proxies in
front of the API each append to ``X-Forwarded-For``: then the address N hops from the right of
that header counts (werkzeug's ProxyFix). Without it a client cannot pick its own address by
sending the header; behind a proxy and without it, every client shares the proxy's limits.
"""

from __future__ import annotations

import time

from flask import request
from flask_limiter import Limiter
from flask_limiter.errors import RateLimitExceeded
from limits import parse_many
from werkzeug.middleware.proxy_fix import ProxyFix

from api.auth import bearer_of, token_hash
from api.http.errors import RateLimited, refused_response
from events.config import Config
from events.store import EventStore, RateCount, table_key

CREATE_TABLE = "10 per minute;60 per hour"
TAKE_SEAT = "30 per minute"
# one window (one Redis round trip a move); a human plays a few moves a minute, bots use no HTTP. The
# default: an operator sets another with ESCOBA_MOVES_LIMIT (events/config.py checks it at start)
MOVES = Config.moves_limit
CHAT = "20 per minute"
SEEK = "30 per minute"
CREATE_PLAYER = "5 per minute;30 per hour"
# failed sign-ins only: a player who types the password right is never slowed by the limit
SIGN_IN_NAME = "5 per minute;20 per hour"
SIGN_IN_ADDRESS = "20 per minute;100 per hour"


def client_address() -> str:
    return request.remote_addr or "unknown"


def seat_token() -> str:
    """A hash of the bearer token (a request without one is counted by its address)."""
    return token_key(bearer_of(request.headers.get("Authorization", "")), client_address())


def token_key(token: str | None, address: str | None) -> str:
    """What a per-token limit counts: a hash of the token, or the address without one."""
    if not token:
        return "addr:" + (address or "unknown")
    return "token:" + token_hash(token)[:32]


# endpoint -> (limit, counted per), counted by flask-limiter around the view
LIMITS = {
    "tables.create_table": (CREATE_TABLE, client_address),
    "tables.take_seat": (TAKE_SEAT, client_address),
    "tables.post_chat": (CHAT, seat_token),
    "seeks.create_seek": (SEEK, client_address),
    "seeks.accept_seek": (TAKE_SEAT, client_address),
    "players.create_player": (CREATE_PLAYER, client_address),
}


class PerToken:
    """A limit our own code counts through flask-limiter's own strategy and store, one Redis key a window
    (the moves of a request without a token, per client address: ``MoveLimit``)."""

    def __init__(self, limiter: Limiter, limit: str, scope: str):
        self.limiter = limiter
        self.items = parse_many(limit)
        self.scope = scope

    def hit(self, key: str) -> None:
        """Counts one request of ``key``; RateLimited when it is one too many (it still counts)."""
        strategy = self.limiter.limiter
        for item in self.items:
            if not strategy.hit(item, "escoba", self.scope, key):
                reset = strategy.get_window_stats(item, "escoba", self.scope, key).reset_time
                raise RateLimited(str(item), max(1, int(reset - time.time())))


class FailureLimit:
    """Failed attempts counted per key through flask-limiter's strategy and store (failed sign-ins,
    per name and per client address): ``check`` before trying refuses a key already over its limit,
    ``failed`` counts one failure. Only failures count, so a right password is never slowed."""

    def __init__(self, limiter: Limiter, limit: str, scope: str):
        self.limiter = limiter
        self.items = parse_many(limit)
        self.scope = scope

    def check(self, key: str) -> None:
        strategy = self.limiter.limiter
        for item in self.items:
            if not strategy.test(item, "escoba", self.scope, key):
                reset = strategy.get_window_stats(item, "escoba", self.scope, key).reset_time
                raise RateLimited(str(item), max(1, int(reset - time.time())))

    def failed(self, key: str) -> None:
        strategy = self.limiter.limiter
        for item in self.items:
            strategy.hit(item, "escoba", self.scope, key)


class SignInLimit:
    """Failed sign-ins, per name tried (case-folded: "Ana" and "ANA" are one name) and per address."""

    def __init__(self, limiter: Limiter):
        self.per_name = FailureLimit(limiter, SIGN_IN_NAME, "signin-name")
        self.per_address = FailureLimit(limiter, SIGN_IN_ADDRESS, "signin-address")

    def check(self, name: str | None, address: str) -> None:
        self.per_address.check(address)
        if name is not None:
            self.per_name.check(_name_key(name))

    def failed(self, name: str | None, address: str) -> None:
        self.per_address.failed(address)
        if name is not None:
            self.per_name.failed(_name_key(name))


def _name_key(name: str) -> str:
    from events.players import folded

    # a hash: the counter's key holds no name as typed (nor a very long one)
    return token_hash(folded(name))[:32]


def sign_ins(limiter: Limiter | None) -> SignInLimit | None:
    return None if limiter is None else SignInLimit(limiter)


def limit_key(table_id: str, name: str) -> str:
    """A rate counter of the table's (``name``: what it counts, and whose): in the table's slot, so
    the append's step may count it."""
    return table_key(table_id, "limit:" + name)


# KEYS: [1] a rate counter. ARGV: [1] its window (seconds), [2] its limit. Counts one request (the window
# starts with the first), as the append's step counts its ``RateCount``; returns the seconds until the
# window ends when that was over the limit, else 0.
_COUNT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], tonumber(ARGV[1])) end
if count > tonumber(ARGV[2]) then return math.max(1, redis.call('TTL', KEYS[1])) end
return 0
"""


class Count:
    """A request's fixed-window counter, counted once (``counted``): in the first append's step when
    the request reaches one (``step``: the store's ``Append.count``), else by itself (``alone``)."""

    __slots__ = ("counted", "rate")

    def __init__(self, key: str, limit: int, window: int):
        self.rate = RateCount(key, limit, window)
        self.counted = False

    @property
    def key(self) -> str:
        return self.rate.key

    def step(self) -> RateCount | None:
        """The count for an append's step: the first's only. Marked counted as it is handed out: the
        step counts before anything else, so a step sent has counted (its reply lost or not)."""
        if self.counted:
            return None
        self.counted = True
        return self.rate

    def alone(self, store: EventStore) -> int:
        """Count a request that reached no append's step (once): the seconds until its window ends
        when that was over the limit, else 0."""
        if self.counted:
            return 0
        self.counted = True
        return int(store.run_script(_COUNT, [self.rate.key], [self.rate.window, self.rate.limit]))


class MoveLimit:
    """The moves' per-token limit (``ESCOBA_MOVES_LIMIT``: one window), counted in the table's own slot.

    Every move counts, once: in the append's own step when it reaches one (``Append.count``: no
    round trip and no write of its own, where a counter of its own was a second durable write a
    move), else by itself after it was refused (``Count.alone``). A request without a token
    is counted per client address by flask-limiter, as the other limits are, before anything else."""

    def __init__(self, limiter: Limiter, limit: str = MOVES):
        (self.item,) = parse_many(limit)
        self.per_address = PerToken(limiter, limit, "moves")

    def counter(self, table_id: str, token: str | None) -> Count | None:
        """The counter of a request with ``token`` at the table (None without a token)."""
        if not token:
            return None
        return Count(limit_key(table_id, "moves:" + token_hash(token)[:32]), self.item.amount,
                     self.item.get_expiry())

    def refused(self, retry_after: int) -> RateLimited:
        return RateLimited(str(self.item), retry_after)


def moves(limiter: Limiter | None, limit: str = MOVES) -> MoveLimit | None:
    """The moves' limit (``limit``: the config's ``moves_limit``), or None when the limits are off."""
    return None if limiter is None else MoveLimit(limiter, limit)


def _storage(redis) -> tuple[str, dict]:
    """Where the counters live: the tables' own Redis (its connection pool), or its cluster."""
    from redis.cluster import RedisCluster

    if isinstance(redis, RedisCluster):
        nodes = ",".join(f"{node.host}:{node.port}" for node in redis.get_nodes())
        return f"redis+cluster://{nodes}", {}
    return "redis://", {"connection_pool": redis.connection_pool}


def install(app, redis, config: Config) -> Limiter | None:
    """The limits on ``app``'s table routes (registered before), or None when they are off."""
    if config.trusted_proxies > 0:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=config.trusted_proxies, x_proto=0, x_host=0,
                                x_port=0, x_prefix=0)
    if config.rate_limits.strip().lower() == "off":
        return None
    uri, options = _storage(redis)
    limiter = Limiter(client_address, app=app, storage_uri=uri, storage_options=options,
                      strategy="fixed-window", headers_enabled=False, key_prefix="escoba",
                      swallow_errors=False)
    for endpoint, (limit, key) in LIMITS.items():
        app.view_functions[endpoint] = limiter.limit(limit, key_func=key)(app.view_functions[endpoint])

    @app.errorhandler(RateLimitExceeded)
    def limit_reached(e: RateLimitExceeded):
        current = limiter.current_limit
        wait = max(1, int(current.reset_at - time.time())) if current is not None else 1
        return refused_response(RateLimited(str(e.description), wait))

    return limiter
