"""Request bodies, validated at the edge. Unknown fields are refused; sizes are bounded.

The same schemas feed /openapi.json, so the document cannot drift from the checks.
"""

from __future__ import annotations

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from engine.cards import is_card
from engine.rules import PRESETS

NAME_MAX = 40
CHAT_MAX = 500
BODY_MAX = 16 * 1024
BOTS = ("carmen", "tito", "luna")


class Card(fields.String):
    """A card code of the contract: ``7o``, ``10b``."""

    def _deserialize(self, value, attr, data, **kwargs):
        code = super()._deserialize(value, attr, data, **kwargs)
        if not is_card(code):
            raise ValidationError(f"{code!r} is not a card: use a value 1..10 and a suit o, c, e or b (7o).")
        return code


def _name(**kw):
    return fields.String(validate=validate.Length(min=1, max=NAME_MAX), **kw)


class Strict(Schema):
    class Meta:
        unknown = RAISE


class CreateTable(Strict):
    name = _name(required=True, metadata={"description": "the host's name at the table"})
    preset = fields.String(required=True, validate=validate.OneOf(list(PRESETS)))
    settings = fields.Dict(keys=fields.String(), load_default=dict)
    table_name = _name()
    watch = fields.Boolean(load_default=False, metadata={"description": "the host runs the table without a seat"})
    # operators only (admin token)
    decks = fields.List(fields.List(Card(), validate=validate.Length(equal=40)),
                        validate=validate.Length(min=1, max=50))
    first_dealer = fields.Integer(validate=validate.Range(0, 3))


class TakeSeat(Strict):
    name = _name(required=True)


class Chat(Strict):
    text = fields.String(required=True, validate=validate.Length(min=1, max=CHAT_MAX))


class Notify(Strict):
    url = fields.Url(required=True, schemes={"http", "https"}, validate=validate.Length(max=500))


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
    expected_version = fields.Integer(validate=validate.Range(min=0))


class AddBot(_Move):
    bot = fields.String(required=True, validate=validate.OneOf(BOTS))
    seat = fields.Integer(validate=validate.Range(0, 3))


class RemoveBot(_Move):
    seat = fields.Integer(validate=validate.Range(0, 3))


class ChoosePartner(_Move):
    seat = fields.Integer(required=True, validate=validate.Range(0, 3))


class ChangeSettings(_Move):
    settings = fields.Dict(keys=fields.String(), required=True)


class Play(_Move):
    card = Card(required=True)
    capture = fields.List(Card(), load_default=list, validate=validate.Length(max=40))


class TakeFifteen(_Move):
    cards = fields.List(Card(), required=True, validate=validate.Length(min=2, max=40))


class Rematch(_Move):
    accept = fields.Boolean(required=True)
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


# Schemas are built once: building one per request cost more than validating it.
_MOVE_LOADERS = {kind: schema() for kind, schema in MOVES.items()}
create_table = CreateTable()
take_seat = TakeSeat()
chat = Chat()
notify = Notify()
push_subscription = PushSubscription()
push_endpoint = PushEndpoint()


def load_move(body: dict) -> dict:
    """A move checked against the schema of its type; ValidationError names each bad field."""
    kind = body.get("type") if isinstance(body, dict) else None
    if kind not in MOVES:
        raise ValidationError({"type": [f"one of: {', '.join(MOVES)}"]})
    return _MOVE_LOADERS[kind].load(body)
