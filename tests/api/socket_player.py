"""A player who moves over the table's socket only (docs/api.md v1.2), for the tests."""

from __future__ import annotations

import contextlib
import itertools
import json
import time

import websocket

_ids = itertools.count(1)


class SocketPlayer:
    """One socket of a table: it keeps the latest view it was sent and answers with each move's ack
    or error. ``patches``: it asks for changes as patches (``frames=patch``, docs/api.md) and applies
    them to the view it holds, as the page does."""

    def __init__(self, base: str, table_id: str, token: str | None = None, timeout: float = 10.0,
                 patches: bool = False):
        query = [f"token={token}"] if token else []
        if patches:
            query.append("frames=patch")
        self.url = f"ws://{base}/tables/{table_id}/ws" + (f"?{'&'.join(query)}" if query else "")
        self.patches = patches
        self.patched = 0  # patches applied
        self.timeout = timeout
        self.ws = websocket.create_connection(self.url, timeout=timeout)
        self.view = None
        self.frames: list[dict] = []  # every frame read, in order
        self.closed_with: int | None = None  # the status of the server's close frame
        self.wait_for_version(1)

    def read(self, timeout: float | None = None) -> dict:
        self.ws.settimeout(timeout or self.timeout)
        while True:
            opcode, data = self.ws.recv_data(control_frame=True)
            if opcode == websocket.ABNF.OPCODE_CLOSE:
                self.closed_with = int.from_bytes(data[:2], "big") if len(data) >= 2 else None
                raise websocket.WebSocketConnectionClosedException(f"closed by the server: {self.closed_with}")
            if opcode == websocket.ABNF.OPCODE_TEXT:
                break
        message = json.loads(data)
        self.frames.append(message)
        if message["type"] == "table" and (self.view is None or message["version"] > self.view["version"]):
            self.view = message["table"]
        elif message["type"] == "patch":
            self.view = patched(self.view, message)
            self.patched += 1
        return message

    def next_of(self, kind: str) -> dict:
        """The next frame of ``kind`` (the others read are kept)."""
        while True:
            message = self.read()
            if message["type"] == kind:
                return message

    def send(self, move: dict, move_id: str | None = None, **extra) -> str:
        move_id = move_id or f"m{next(_ids)}"
        self.ws.send(json.dumps({"type": "move", "id": move_id, "move": move, **extra}))
        return move_id

    def answer(self, move_id) -> dict:
        """The ack or error of ``move_id`` (the frames before it are kept)."""
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            message = self.read(max(0.1, deadline - time.monotonic()))
            if message["type"] in ("ack", "error") and message.get("id") == move_id:
                return message
        raise AssertionError(f"no answer to {move_id} within {self.timeout}s")

    def move(self, move: dict, move_id: str | None = None, **extra) -> dict:
        return self.answer(self.send(move, move_id, **extra))

    def ok(self, move: dict, move_id: str | None = None) -> dict:
        answer = self.move(move, move_id)
        assert answer["type"] == "ack", answer
        return answer

    def wait_for_version(self, version: int) -> dict:
        deadline = time.monotonic() + self.timeout
        while self.view is None or self.view["version"] < version:
            if time.monotonic() > deadline:
                # what it did read says which side lost the change, should this ever fail again
                seen = [(f["type"], f.get("version")) for f in self.frames[-8:]]
                raise AssertionError(f"no view of version {version} within {self.timeout}s; "
                                     f"the last frames read: {seen}; view {self.view and self.view['version']}")
            with contextlib.suppress(websocket.WebSocketTimeoutException):  # said above, with what was read
                self.read(max(0.1, deadline - time.monotonic()))
        return self.view

    def close(self) -> None:
        self.ws.close()


def patched(view: dict | None, patch: dict) -> dict:
    """The view a ``patch`` message takes ``view`` to; the server sends one only from the view it sent last."""
    assert view is not None and patch["from"] == view["version"], (patch["from"], view and view["version"])
    out = {**view, **patch["set"]}
    if "history_add" in patch:
        out["history"] = view["history"] + patch["history_add"]
    out["labels"] = {**view["labels"], **patch["labels_add"]}
    assert out["version"] == patch["version"]
    return out


def random_move(view: dict, rng) -> dict:
    """A legal move for the player to move in ``view`` (their own), as tests/api/conftest.play_out picks."""
    if view["fifteen_to_take"] and rng.random() < 0.5:
        return {"type": "take_fifteen", "cards": rng.choice(view["fifteen_to_take"]["sets"])}
    option = rng.choice(view["options"])
    take = option["captures"] and (not option["may_leave"] or rng.random() < 0.7)
    return {"type": "play", "card": option["card"], "capture": rng.choice(option["captures"]) if take else []}


def play_over_sockets(players: dict[int, SocketPlayer], rng, version: int = 0, max_moves: int = 5000) -> dict:
    """Plays the table to its end with moves over the sockets alone (from ``version`` or later);
    every socket sees every change."""
    for _ in range(max_moves):
        version = max(version, *(p.view["version"] for p in players.values()))
        for p in players.values():
            p.wait_for_version(version)
        view = next(iter(players.values())).view
        if view["status"] in ("finished", "expired"):
            return view
        if view["status"] == "round_over":
            ack = players[rng.choice(list(players))].ok({"type": "next_round"})
        else:
            mover = players[view["turn"]]
            ack = mover.ok(random_move(mover.view, rng))
            # the mover's own view of that version follows the ack, in the same write
            after = mover.read()
            assert after["type"] in ("table", "patch") and after["version"] >= ack["version"], after
        for p in players.values():
            p.wait_for_version(ack["version"])
    raise AssertionError("game did not end")
