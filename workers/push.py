"""Web Push turn notices: the subscriptions a player's browsers gave us, and sending to them.

A player's browser subscribes with the push service of its vendor (the page's
``push.js`` and service worker ``sw.js``) and hands us the subscription: an
endpoint URL and two keys. When it becomes that player's turn, the job
``turn_push`` encrypts a small message for each of the player's subscriptions
(RFC 8291, through pywebpush) and POSTs it to the endpoint, signed with the
server's VAPID key (RFC 8292). The browser's service worker shows it even when
no tab of the table is open. The message names the table and says whose turn
it is, never a card.

Keys (hash-tagged by table, like every table key):

- ``table:{ID}:push``: hash ``<player>:<endpoint digest>`` -> subscription JSON
  (``{"endpoint", "keys": {"p256dh", "auth"}, "at"}``).
- ``table:{ID}:notify``: besides the webhook URLs (seat -> URL), a marker
  ``push:<player>`` while that player has a subscription, so the after-change hook,
  which reads that hash back with the append anyway, knows without another read.

Subscriptions are kept per player (the seat's occupant), not per seat number, because
players move seats when the host picks a partner. A push service that answers 404
or 410 has forgotten the subscription: it is dropped (and the marker with the last one).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time

from engine import RuleError
from events.config import Config
from events.text import as_text

from . import context
from .keys import notify_key as _notify_key
from .keys import push_key
from .keys import push_marker as marker
from .outbound import RefusedURL, check_url

log = logging.getLogger("escoba.workers")

MAX_PER_PLAYER = 5  # browsers a player may have subscribed at once; the oldest goes first
PUSH_TIMEOUT = 5.0
MAX_TTL = 28 * 24 * 3600  # push services keep a message at most about four weeks
GONE = (404, 410)  # the push service no longer knows the subscription
ENDPOINT_MAX = 1000


def _field(player: str, endpoint: str) -> str:
    return f"{player}:{hashlib.sha256(endpoint.encode()).hexdigest()[:24]}"


# --- VAPID keys --------------------------------------------------------------------

def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    text = text.strip()
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def generate_private_key() -> str:
    """A new VAPID private key: the raw 32 bytes of a P-256 key, base64url (ESCOBA_VAPID_PRIVATE_KEY)."""
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    return _b64(key.private_numbers().private_value.to_bytes(32, "big"))


def public_key(private_key: str) -> str:
    """The public half of a VAPID private key, as the page's ``applicationServerKey`` wants it:
    the uncompressed point (65 bytes), base64url. ValueError for a key that is not one."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    raw = _unb64(private_key)
    if len(raw) != 32:
        raise ValueError("a VAPID private key is 32 bytes, base64url-encoded")
    key = ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1())
    return _b64(key.public_key().public_bytes(serialization.Encoding.X962,
                                              serialization.PublicFormat.UncompressedPoint))


def check_keys(p256dh: str, auth: str) -> None:
    """ValueError unless the subscription's keys are a P-256 point and a 16-byte secret."""
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        point, secret = _unb64(p256dh), _unb64(auth)
    except (ValueError, TypeError):
        raise ValueError("the keys must be base64url") from None
    if len(secret) != 16:
        raise ValueError("auth must be 16 bytes")
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except ValueError:
        raise ValueError("p256dh must be an uncompressed P-256 point") from None


# --- subscriptions -------------------------------------------------------------------

def check_endpoint(endpoint: str, config: Config) -> None:
    """RefusedURL for an endpoint we will not POST to: an address inside, or plain http
    (push services are https; a private test endpoint may be http)."""
    check_url(endpoint, allow_private=config.notify_allow_private)
    if not config.notify_allow_private and not endpoint.startswith("https://"):
        raise RefusedURL("a push endpoint is https")


# KEYS[1] the push hash, KEYS[2] the notify hash; ARGV[1] the field, ARGV[2] the subscription,
# ARGV[3] the marker, ARGV[4..] the player's oldest subscriptions to let go. One step, one slot
# (both keys carry the table's hash tag), so it runs the same on a Redis Cluster.
_KEEP = """
for i = 4, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[3], '1')
return 1
"""


def subscribe(redis, table_id: str, player: str, subscription: dict, now: float | None = None) -> None:
    """Keep ``subscription`` (endpoint and keys, already checked) for ``player``.

    The same endpoint again replaces the old entry; past MAX_PER_PLAYER, the oldest goes.
    """
    now = time.time() if now is None else now
    entry = {"endpoint": subscription["endpoint"], "keys": dict(subscription["keys"]), "at": now}
    field = _field(player, entry["endpoint"])
    mine = {f: s for f, s in subscriptions(redis, table_id, player).items() if f != field}
    stale = sorted(mine, key=lambda f: mine[f].get("at", 0))[: max(0, len(mine) + 1 - MAX_PER_PLAYER)]
    redis.eval(_KEEP, 2, push_key(table_id), _notify_key(table_id), field, json.dumps(entry),
               marker(player), *stale)


def subscriptions(redis, table_id: str, player: str) -> dict[str, dict]:
    """``player``'s subscriptions at ``table_id``: field -> subscription."""
    prefix = f"{player}:"
    out = {}
    for field, value in redis.hgetall(push_key(table_id)).items():
        field = as_text(field)
        if field.startswith(prefix):
            out[field] = json.loads(value)
    return out


# KEYS[1] the push hash, KEYS[2] the notify hash; ARGV[1] the field, ARGV[2] the player's prefix,
# ARGV[3] the marker. The last subscription of a player takes the marker with it, in one step.
_DROP = """
redis.call('HDEL', KEYS[1], ARGV[1])
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, #ARGV[2]) == ARGV[2] then return 0 end
end
redis.call('HDEL', KEYS[2], ARGV[3])
return 1
"""


def drop(redis, table_id: str, field: str) -> None:
    """Forget one subscription (and the player's marker with the last one)."""
    player = field.split(":", 1)[0]
    redis.eval(_DROP, 2, push_key(table_id), _notify_key(table_id), field, f"{player}:",
               marker(player))


def unsubscribe(redis, table_id: str, player: str, endpoint: str) -> bool:
    """The player's browser unsubscribed: forget that endpoint. Whether it was known."""
    field = _field(player, endpoint)
    known = bool(redis.hexists(push_key(table_id), field))
    if known:
        drop(redis, table_id, field)
    return known


# --- the message and sending ------------------------------------------------------------

def message(table_id: str, state, reason: str, config: Config) -> dict:
    """What the service worker shows: the table, whose turn; never a card."""
    name = state.name or table_id
    if reason == "away":
        body = f"PLAYER AWAY is open at {name}: you may end the game."
    else:
        body = f"Your turn at {name}."
    path = f"/t/{table_id}"
    url = f"{config.public_url.rstrip('/')}{path}" if config.public_url else path
    return {"title": "Escoba: your turn" if reason == "turn" else "Escoba",
            "body": body, "table_id": table_id, "table_name": name, "reason": reason,
            "url": url, "tag": f"escoba-{table_id}"}


class DeliveryFailed(Exception):
    """A push service did not take a message (network, 429 or 5xx): RQ retries the job."""

    transient = True  # retried on its own backoff, not cut short as a bug


def _session():
    """requests, with no redirects (a push service answers 201; a 3xx would lead anywhere)
    and no proxies from the environment."""
    import requests

    class NoRedirects(requests.Session):
        def request(self, method, url, **kwargs):
            kwargs["allow_redirects"] = False
            return super().request(method, url, **kwargs)

    session = NoRedirects()
    session.trust_env = False
    return session


def send(subscription: dict, payload: dict, config: Config, ttl: int) -> str:
    """Encrypt ``payload`` for one subscription and POST it: ``sent``, ``gone`` (404/410),
    ``refused`` (an endpoint we will not reach) or ``rejected:<status>`` (another 4xx: the
    subscription or our key is wrong, a retry would not help). DeliveryFailed otherwise."""
    from pywebpush import WebPushException, webpush

    endpoint = subscription["endpoint"]
    try:
        check_endpoint(endpoint, config)  # again: the name may resolve elsewhere by now
    except RefusedURL as exc:
        log.warning("push endpoint refused: %s", exc)
        return "refused"
    try:
        with _session() as session:
            webpush({"endpoint": endpoint, "keys": subscription["keys"]},
                    data=json.dumps(payload), vapid_private_key=config.vapid_private_key,
                    vapid_claims={"sub": config.vapid_subject}, ttl=ttl, timeout=PUSH_TIMEOUT,
                    requests_session=session)
    except WebPushException as exc:
        status = exc.response.status_code if exc.response is not None else None
        if status in GONE:
            return "gone"
        if status is not None and 400 <= status < 500 and status != 429:
            log.warning("push to %s rejected with %s", endpoint[:60], status)
            return f"rejected:{status}"
        raise DeliveryFailed(f"push service answered {status}") from None
    except OSError as exc:  # requests' errors are OSErrors: unreachable, timed out
        raise DeliveryFailed(f"push service unreachable: {exc}") from None
    return "sent"


def turn_push(table_id: str, seat: int, version: int, reason: str = "turn") -> str:
    """The RQ job: a push message to every browser the seat's player subscribed.

    A retry (after DeliveryFailed) sends only to the subscriptions not reached yet: the
    ones reached are kept in the job's meta, so no browser is told twice.
    """
    from rq import get_current_job

    job = get_current_job()
    config = context.get_config()
    if not config.vapid_private_key:
        return "push is off"
    svc = context.service(config=config)
    redis = svc.redis  # the tables' client, whichever the jobs use (the subscriptions are table keys)
    try:
        state = svc.load(table_id)
    except RuleError:  # no such table (any other failure: RQ retries)
        return "stale"
    if reason == "turn" and (state.status != "playing" or state.turn != seat):
        return "stale"
    occupant = state.seats[seat]
    if occupant is None or occupant.kind != "human":
        return "stale"
    subs = subscriptions(redis, table_id, occupant.player)
    if not subs:
        return "no subscription"
    payload = message(table_id, state, reason, config)
    ttl = int(min(config.away_after, MAX_TTL))
    if job is None:
        raise RuntimeError("a turn's push runs as an RQ job: its meta keeps the browsers reached")
    done = set(job.meta.get("sent", ()))
    results, failed = [], []
    for field, sub in sorted(subs.items()):
        if field in done:
            continue
        try:
            outcome = send(sub, payload, config, ttl)
        except DeliveryFailed as exc:
            failed.append(str(exc))
            continue
        results.append(outcome)
        if outcome == "sent":
            done.add(field)
            job.meta["sent"] = sorted(done)
            job.save_meta()
        elif outcome in ("gone", "refused"):
            drop(redis, table_id, field)
    if failed:
        raise DeliveryFailed("; ".join(failed))
    return ",".join(results) or "nothing to send"


__all__ = [
    "DeliveryFailed", "check_endpoint", "check_keys", "drop", "generate_private_key", "marker",
    "message", "public_key", "push_key", "send", "subscribe", "subscriptions", "turn_push",
    "unsubscribe",
]
