"""The rules of Escoba as a pure, deterministic core.

Where each rule lives:

- ``cards``    the forty cards, their worth, the coin suit, the deck designs
- ``rules``    the rules model, its options and the three presets
- ``table``    the table before play: seats, bots, partner, settings, start
- ``deal``     the deal, the opening table (15 and 30), dealer and leader
- ``capture``  the capture rule: which sets a card may take (sum to 15, hybrid)
- ``play``     a turn: play or leave a card, mandatory capture, escobas, TAKE THE 15
- ``scoring``  a round's points per side and category, the setenta, the target
- ``flow``     the start of a game, round end, next round, resign, exit, away, expiry, rematch
- ``view``     what a seat, a spectator or an operator may see
- ``events``   the facts a table's log is made of; ``state`` folds them
- ``commands`` the commands, one class a move, and ``parse_command``: a shell's dict, typed once
- ``game``     ``decide``: a command against a state, into events (``decision``: the
               events decided so far, folded as they are added)
- ``errors``   refusals, each with a code of the public contract
- ``bots``     Carmen, Tito and Luna, who see only their seat's view
- ``analysis`` what each play of a game cost, judged from its seat's view alone

Nothing here reads a clock, a random generator, Redis or Flask.
"""

from .commands import Command, parse_command
from .errors import RuleError
from .events import EVENT_TYPES, event_data, event_from, event_type
from .flow import PICK_RANGE
from .game import PLAYER_MOVES, SYSTEM_COMMANDS, decide, decide_and_fold
from .rules import PRESETS, Settings, custom_settings, settings_for
from .state import State, fold, replay
from .view import TableView, for_reader, redact, table_view, view

# Bump when a change to the rules would fold an old log differently; snapshots
# made by another engine version are ignored and rebuilt.
ENGINE_VERSION = 1

__all__ = [
    "ENGINE_VERSION", "EVENT_TYPES", "PICK_RANGE", "PLAYER_MOVES", "PRESETS", "SYSTEM_COMMANDS",
    "Command", "RuleError", "Settings", "State", "TableView", "custom_settings", "decide", "decide_and_fold",
    "event_data", "event_from", "event_type", "fold", "for_reader", "parse_command", "redact", "replay", "settings_for",
    "table_view", "view",
]
