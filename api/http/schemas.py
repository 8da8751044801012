"""Request bodies, validated at the edge. Unknown fields are refused; sizes are bounded.

The same schemas feed /openapi.json, so the document cannot drift from the checks.
"""

from __future__ import annotations

import re

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from engine.cards import FULL_DECK, is_card
from engine.rules import PRESETS

NAME_MAX = 40
CHAT_MAX = 500
BODY_MAX = 16 * 1024
BOTS = ("carmen", "tito", "luna")


class Card(fields.String):
    """A card code of the contract: ``7o``, ``10b``."""

    def __init__(self, **kwargs):
        # the forty codes, in /openapi.json too
        kwargs["metadata"] = {"enum": list(FULL_DECK), **kwargs.get("metadata", {})}
        super().__init__(**kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        code = super()._deserialize(value, attr, data, **kwargs)
        if not is_card(code):
            raise ValidationError(f"{code!r} is not a card: use a value 1..10 and a suit o, c, e or b (7o).")
        return code


class Integer(fields.Integer):
    """A JSON integer, never coerced: "0", 4.5, 1.0 and true are refused (marshmallow takes them)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.make_error("invalid")
        return super()._deserialize(value, attr, data, **kwargs)


class Boolean(fields.Boolean):
    """A JSON true or false, never coerced: "yes", 1 and "true" are refused."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


# A name others see: no control characters (NUL...) and no direction overrides or marks (which make
# the text after them read backwards) anywhere, and at least one character that shows: not only
# spaces, zero-width characters or fillers. One pattern: the validator's and /openapi.json's.
_NAME_NEVER = r"\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_NAME_BLANK = (r"\x20\xa0\xad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u1680\u2000-\u200d\u2028\u2029"
               r"\u202f\u205f-\u2065\u206a-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8")
NAME_PATTERN = rf"^[^{_NAME_NEVER}]*[^{_NAME_NEVER}{_NAME_BLANK}][^{_NAME_NEVER}]*$"
NAME_ERROR = "Use at least one visible character, and no control or text-direction characters."


class _Whole(validate.Regexp):
    """A pattern the whole value matches: Python's ``$`` also matches before a final newline."""

    def __call__(self, value):
        if self.regex.fullmatch(value) is None:
            raise ValidationError(self._format_error(value))
        return value


def _name(**kw):
    return fields.String(validate=[validate.Length(min=1, max=NAME_MAX), _Whole(NAME_PATTERN, error=NAME_ERROR)],
                         **kw)


class Strict(Schema):
    class Meta:
        unknown = RAISE


class CreateTable(Strict):
    name = _name(required=True, metadata={"description": "the host's name at the table"})
    preset = fields.String(required=True, validate=validate.OneOf(list(PRESETS)))
    settings = fields.Dict(keys=fields.String(), load_default=dict)
    table_name = _name()
    watch = Boolean(load_default=False, metadata={"description": "the host runs the table without a seat"})
    rated = Boolean(metadata={"description": "the same as settings.rated: the game counts for ratings "
                                             "(every seat an account, no bot; docs/ratings.md)"})
    # operators only (admin token)
    decks = fields.List(fields.List(Card(), validate=validate.Length(equal=40),
                                    metadata={"uniqueItems": True, "description": "the forty cards in order"}),
                        validate=validate.Length(min=1, max=50))
    first_dealer = Integer(validate=validate.Range(0, 3))


class CreateSeek(Strict):
    """``POST /seeks`` (docs/api.md, "Quick pairing")."""

    name = _name(metadata={"description": "a guest's name at the table (a player token: the account's)"})
    preset = fields.String(required=True, validate=validate.OneOf(list(PRESETS)))
    players = Integer(required=True, validate=validate.Range(2, 4))
    rated = Boolean(load_default=False)
    settings = fields.Dict(keys=fields.String(), load_default=dict)
    bot_after = Integer(load_default=30, allow_none=True, validate=validate.Range(0, 3600),
                        metadata={"description": "seconds before bots fill the table; null: never"})
    correspondence = Boolean(load_default=False)


class AcceptSeek(Strict):
    name = _name(metadata={"description": "a guest's name at the table"})


class TakeSeat(Strict):
    name = _name(required=True)


class Chat(Strict):
    text = fields.String(required=True, validate=validate.Length(min=1, max=CHAT_MAX))


# An http(s) URL whose host is a name or an IPv4 address (RFC 3986 reg-name characters) and whose
# port, if any, is 0..65535. Whether the host is public is for workers/outbound.py to judge.
_PORT = r"(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
URL_PATTERN = rf"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9._~%!$&'()*+,;=-]+(:{_PORT})?([/?#][^\s]*)?$"


_URL = re.compile(URL_PATTERN)


def _http_url(value: str) -> None:
    # fullmatch: the pattern's $ must not let a trailing newline through (re.match's $ does)
    if not _URL.fullmatch(value):
        raise ValidationError("Not an http(s) URL with a host name or address (and a port 0..65535).")


class Notify(Strict):
    url = fields.String(required=True, validate=[validate.Length(max=500), _http_url],
                        metadata={"description": "http(s) URL of a public host", "pattern": URL_PATTERN})


class PushKeys(Strict):
    p256dh = fields.String(required=True, validate=validate.Length(min=1, max=200))
    auth = fields.String(required=True, validate=validate.Length(min=1, max=100))


class PushSubscription(Strict):
    """What a browser's ``PushSubscription.toJSON()`` gives: the push service's URL and our keys."""

    endpoint = fields.Url(required=True, schemes={"http", "https"}, require_tld=False,
                          validate=validate.Length(max=1000))
    keys = fields.Nested(PushKeys, required=True)
    expirationTime = fields.Integer(allow_none=True, load_default=None)  # noqa: N815 (the browser's name)


class PushEndpoint(Strict):
    endpoint = fields.String(required=True, validate=validate.Length(min=1, max=1000))


class _Move(Strict):
    type = fields.String(required=True)
    # bounded as ``after`` is: a JSON number every client reads exactly
    expected_version = Integer(validate=validate.Range(min=0, max=2**53 - 1))


class AddBot(_Move):
    bot = fields.String(required=True, validate=validate.OneOf(BOTS))
    seat = Integer(validate=validate.Range(0, 3))


class RemoveBot(_Move):
    seat = Integer(validate=validate.Range(0, 3))


class ChoosePartner(_Move):
    seat = Integer(required=True, validate=validate.Range(0, 3))


class ChangeSettings(_Move):
    settings = fields.Dict(keys=fields.String(), required=True)


class Play(_Move):
    card = Card(required=True)
    capture = fields.List(Card(), load_default=list, validate=validate.Length(max=40))


class TakeFifteen(_Move):
    cards = fields.List(Card(), required=True, validate=validate.Length(min=2, max=40))


class Rematch(_Move):
    accept = Boolean(required=True)
    teams = fields.String(validate=validate.OneOf(["keep", "swap"]))


class Bare(_Move):
    """start, next_round, resign, exit, claim_away: no fields but the type."""


def _bare(kind: str) -> type[Schema]:
    # one class per move, so each has its own name in /openapi.json
    return type(f"{kind.title().replace('_', '')}Move", (Bare,), {})


MOVES: dict[str, type[Schema]] = {
    "add_bot": AddBot,
    "remove_bot": RemoveBot,
    "choose_partner": ChoosePartner,
    "settings": ChangeSettings,
    "start": _bare("start"),
    "play": Play,
    "take_fifteen": TakeFifteen,
    "next_round": _bare("next_round"),
    "resign": _bare("resign"),
    "exit": _bare("exit"),
    "claim_away": _bare("claim_away"),
    "rematch": Rematch,
}


class SocketMove(Strict):
    """A move sent over a table's socket (docs/api.md v1.2): the move itself is checked as a POST's."""

    type = fields.String(required=True, validate=validate.Equal("move"))
    id = fields.String(required=True, validate=validate.Length(min=1, max=100),
                       metadata={"description": "the move's idempotency key, shared with a POST's Idempotency-Key"})
    move = fields.Dict(required=True)
    expected_version = Integer(validate=validate.Range(min=0, max=2**53 - 1))


# --- accounts (docs/api.md v1.3) ---------------------------------------------------------


def _account_name(value: str) -> None:
    from events.players import name_problem

    problem = name_problem(value)
    if problem is not None:
        raise ValidationError(f"A name {problem}.")


def _account_name_field(**kw):
    from events.players import NAME_PATTERN

    return fields.String(validate=_account_name, metadata={
        "description": "3 to 20 letters, digits (of any script), _ or -; unique whatever its case",
        "minLength": 3, "maxLength": 20, "pattern": NAME_PATTERN}, **kw)


class NewPlayer(Strict):
    name = _account_name_field(required=True)
    password = fields.String(validate=validate.Length(min=10, max=200),
                             metadata={"description": "10 to 200 characters; leave it out when a passkey follows"})


class SignIn(Strict):
    # any string: a name or password that could never be right is just as wrong (401), and says nothing
    name = fields.String(required=True, validate=validate.Length(min=1, max=200))
    password = fields.String(required=True, validate=validate.Length(min=1, max=200))


TOKENS_MAX = 100


class SeatTokens(Strict):
    tokens = fields.List(fields.String(validate=validate.Length(min=1, max=200)), required=True,
                         validate=validate.Length(min=1, max=TOKENS_MAX),
                         metadata={"description": "seat tokens a browser kept, 1 to 100"})


# Schemas are built once: building one per request cost more than validating it.
_MOVE_LOADERS = {kind: schema() for kind, schema in MOVES.items()}
create_table = CreateTable()
take_seat = TakeSeat()
create_seek = CreateSeek()
accept_seek = AcceptSeek()
chat = Chat()
notify = Notify()
push_subscription = PushSubscription()
push_endpoint = PushEndpoint()
socket_move = SocketMove()
new_player = NewPlayer()
sign_in = SignIn()
seat_tokens = SeatTokens()


def load_move(body: dict) -> dict:
    """A move checked against the schema of its type; ValidationError names each bad field."""
    kind = body.get("type") if isinstance(body, dict) else None
    if kind not in MOVES:
        raise ValidationError({"type": [f"one of: {', '.join(MOVES)}"]})
    if kind == "play":
        play = _plain_play(body)
        if play is not None:
            return play
    return _MOVE_LOADERS[kind].load(body)


_PLAY_KEYS = frozenset(("type", "card", "capture", "expected_version"))
_CAPTURE_MAX = 40  # Play.capture's Length(max=40)
_VERSION_MAX = 2**53 - 1


def _plain_play(body: dict) -> dict | None:
    """A ``play`` the schema would take, as the schema gives it back, checked by hand (almost every
    move is one; the schema's load was about a twentieth of a socket move's CPU); None for anything
    else, which the schema then checks and names what is wrong (tests/api/http/test_schemas.py holds
    the two ways to the same answers)."""
    if not body.keys() <= _PLAY_KEYS or not is_card(body.get("card")):
        return None
    capture = body.get("capture", [])
    if type(capture) is not list or len(capture) > _CAPTURE_MAX or not all(map(is_card, capture)):
        return None
    out = {"type": "play", "card": body["card"], "capture": list(capture)}
    if "expected_version" in body:
        version = body["expected_version"]
        if type(version) is not int or not 0 <= version <= _VERSION_MAX:
            return None
        out["expected_version"] = version
    return out
