"""Refusals. Every refused command carries a code of the public contract."""

from __future__ import annotations

from typing import Any

# The HTTP status each code travels with (docs/api.md, "Errors").
STATUS = {
    "bad_request": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "host_only": 403,
    "not_found": 404,
    "not_your_turn": 409,
    "table_full": 409,
    "game_started": 409,
    "version_conflict": 409,
    "no_rematch": 409,
    "not_playing": 409,
    "not_between_rounds": 409,
    "not_enough_players": 409,
    "seat_taken": 409,
    "away_not_open": 409,
    "table_expired": 409,
    "game_over": 409,
    "table_closed": 409,  # compacted: read-only for good (events/compaction.py)
    "game_in_progress": 409,  # a player's review of a game still being played
    "table_exists": 409,  # a paired table's chosen id, taken (events/service.py create)
    "seek_paired": 409,  # a seek already at its table: too late to cancel (docs/api.md, "Quick pairing")
    "seek_closed": 409,  # accepting a seek that no longer waits
    "not_correspondence": 409,  # accepting a live seek: those are paired by the server
    "not_rated": 409,  # a rated table with a bot or a guest seated (docs/ratings.md)
    "already_seated": 409,  # an account holds one seat at a table (docs/api.md v1.3)
    "name_taken": 409,  # an account's name, whatever its case (docs/api.md v1.3)
    "illegal_capture": 422,
    "must_capture": 422,
    "card_not_in_hand": 422,
    "no_fifteen_to_take": 422,
}


class RuleError(Exception):
    """A command the rules (or the table's state) refuse."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    @property
    def status(self) -> int:
        return STATUS.get(self.code, 400)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}
