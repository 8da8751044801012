"""The rules model: every point where the three rulesets differ is an option.

``selminha``, ``del15`` and ``cardgames`` are named defaults of this one model
(shared/RULES.md, section 2). A table's settings are fixed when the game
starts and recorded in its log.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from .cards import DECKS
from .errors import RuleError

OPENING_THIRTY = ("two_escobas", "two_escobas_if_split", "nothing")
CAPTURE_MODES = ("spanish", "hybrid")
SEVENS_MODES = ("most", "setenta")


@dataclass(frozen=True, slots=True)
class Settings:
    target: int = 21
    # opening table: 15 goes to the dealer with an escoba; 30 per opening_thirty
    opening_fifteen: bool = True
    opening_thirty: str = "two_escobas"
    # "spanish": sum to 15; "hybrid": also a card of its own value or cards adding to it
    capture: str = "spanish"
    # the card you play must capture when it can (you may play another card)
    mandatory_capture: bool = False
    # selminha: a 15 left behind may be taken by the next player before they play
    take_the_fifteen: bool = False
    # a sweep with the round's very last card counts as an escoba
    last_sweep_escoba: bool = True
    # four players play as two teams, partners across
    teams: bool = True
    # with four seated, the host picks a partner before start
    choose_partner: bool = False
    first_dealer: str = "host"  # "host" or "random"
    # most cards scores 2 when every other side captured fewer than 10
    most_cards_double: bool = False
    # all ten coins score one point more than most coins
    all_coins_extra: bool = False
    # "most": a point for most sevens; "setenta": the setenta point instead
    sevens: str = "most"
    # all four sevens score one point more
    all_sevens_extra: bool = False
    # the deck design a view shows unless the reader picks another (labels only)
    deck: str = "french"
    # which way play turns on a drawn table; seats are always numbered in play order
    direction: str = "right"
    # the game counts for its players' ratings (docs/ratings.md): every seat an account, no bot
    rated: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


PRESETS: dict[str, Settings] = {
    "selminha": Settings(
        target=21,
        opening_thirty="two_escobas",
        take_the_fifteen=True,
        teams=True,
        choose_partner=True,
        first_dealer="host",
        most_cards_double=True,
        all_coins_extra=True,
        sevens="most",
        all_sevens_extra=True,
        deck="french",
        direction="right",
    ),
    "del15": Settings(
        target=15,
        opening_thirty="two_escobas_if_split",
        mandatory_capture=True,
        teams=True,
        first_dealer="host",
        sevens="setenta",
        deck="spanish",
        direction="right",
    ),
    "cardgames": Settings(
        target=21,
        opening_thirty="two_escobas",
        mandatory_capture=True,
        teams=False,
        first_dealer="random",
        most_cards_double=False,
        all_coins_extra=True,
        sevens="most",
        all_sevens_extra=True,
        deck="numeric",
        direction="left",
    ),
}

_BOOL = (True, False)

# What a host may set at each preset's table (shared/API.md, "Settings").
OFFERED: dict[str, dict[str, tuple]] = {
    "selminha": {
        "target": (21, 31),
        "opening_fifteen": _BOOL,
        "opening_thirty": OPENING_THIRTY,
        "deck": ("french", "french_swapped"),
        "rated": _BOOL,
    },
    "del15": {
        "target": (10, 15, 21, 30),
        "opening_fifteen": _BOOL,
        "opening_thirty": OPENING_THIRTY,
        "all_coins_extra": _BOOL,
        "all_sevens_extra": _BOOL,
        "capture": CAPTURE_MODES,
        "rated": _BOOL,
    },
    "cardgames": {
        "target": (21,),
        "opening_fifteen": _BOOL,
        "opening_thirty": OPENING_THIRTY,
        "rated": _BOOL,
    },
}

# Every option's possible values, for tables configured point by point.
CHOICES: dict[str, tuple] = {
    "target": (10, 15, 21, 30, 31),
    "opening_fifteen": _BOOL,
    "opening_thirty": OPENING_THIRTY,
    "capture": CAPTURE_MODES,
    "mandatory_capture": _BOOL,
    "take_the_fifteen": _BOOL,
    "last_sweep_escoba": _BOOL,
    "teams": _BOOL,
    "choose_partner": _BOOL,
    "first_dealer": ("host", "random"),
    "most_cards_double": _BOOL,
    "all_coins_extra": _BOOL,
    "sevens": SEVENS_MODES,
    "all_sevens_extra": _BOOL,
    "deck": tuple(DECKS),
    "direction": ("right", "left"),
    "rated": _BOOL,
}


def _same(a, b) -> bool:
    # True == 1 in Python; a setting of 1 must not pass for true
    return a == b and type(a) is type(b)


def settings_for(preset: str, overrides: dict | None = None, base: Settings | None = None) -> Settings:
    """The preset's defaults with the host's choices applied, each one checked.

    >>> settings_for("del15", {"target": 21}).target
    21
    """
    if preset not in PRESETS:
        raise RuleError(
            "bad_request",
            f"Unknown ruleset {preset!r}: choose selminha, del15 or cardgames.",
            {"preset": "unknown preset"},
        )
    overrides = overrides or {}
    if not isinstance(overrides, dict):
        raise RuleError("bad_request", "Settings must be an object.", {"settings": "not an object"})
    offered = OFFERED[preset]
    bad = {}
    for key, val in overrides.items():
        if key not in offered:
            bad[key] = f"not a setting of the {preset} table"
        elif not any(_same(val, ok) for ok in offered[key]):
            choices = ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in offered[key])
            bad[key] = f"{val!r} is not offered here; choose one of: {choices}"
    if bad:
        key = next(iter(bad))
        raise RuleError("bad_request", f"Setting {key!r}: {bad[key]}.", bad)
    chosen = replace(base or PRESETS[preset], **overrides)
    # The Italian hybrid does not count a sweep with the round's last card.
    if "capture" in overrides:
        chosen = replace(chosen, last_sweep_escoba=chosen.capture != "hybrid")
    return chosen


def custom_settings(**options) -> Settings:
    """Any combination of the model's options, each checked (for mixed tables and tests)."""
    for key, val in options.items():
        if key not in CHOICES or not any(_same(val, ok) for ok in CHOICES[key]):
            raise RuleError("bad_request", f"Setting {key!r}: {val!r} is not an option.", {key: "invalid"})
    return Settings(**options)


def settings_from_dict(data: dict) -> Settings:
    """Rebuild settings recorded in a log."""
    return Settings(**data)
