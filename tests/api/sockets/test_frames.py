"""What a change sends a socket: one frame per reader, built once per process, hidden cards kept hidden."""

from __future__ import annotations

import struct

import orjson
import pytest

import engine
from api.sockets.fanout import CHAT_BACKLOG, Mailbox
from api.sockets.frames import ViewFrames, message, text_frame
from tests.events.conftest import engine_game


def unframe(data: bytes) -> list[dict]:
    """The JSON messages in a run of unmasked server text frames."""
    out = []
    while data:
        assert data[0] == 0x81  # final text frame
        n, at = data[1], 2
        assert not n & 0x80  # a server never masks
        if n == 126:
            n, at = struct.unpack_from("!H", data, 2)[0], 4
        elif n == 127:
            n, at = struct.unpack_from("!Q", data, 2)[0], 10
        out.append(orjson.loads(data[at:at + n]))
        data = data[at + n:]
    return out


def test_a_frame_carries_its_payload_at_every_length_encoding():
    for n in (0, 125, 126, 65535, 65536, 70000):
        payload = b"x" * n
        frame = text_frame(payload)
        head = 2 if len(payload) < 126 else 4 if len(payload) < 65536 else 10
        assert len(frame) == head + len(payload) and frame.endswith(payload)
    assert unframe(message({"type": "ping"})) == [{"type": "ping"}]


def playing_state(deck=None):
    s = engine.State()
    for command in ({"type": "open", "name": "t", "preset": "selminha", "settings": {}, "player": "p0",
                     "host_name": "Ana"},
                    {"type": "sit", "player": "p1", "name": "Bea"}):
        s = engine.fold(s, engine.decide(s, command))
    from engine.cards import FULL_DECK

    return engine.fold(s, engine.decide(s, {"type": "start", "by": 0, "deck": deck or list(FULL_DECK), "pick": 0}))


def test_each_reader_gets_its_own_view_and_nobody_elses_hidden_cards():
    state = playing_state()
    frames = ViewFrames()
    seat0 = unframe(frames.frames("T", state, 0, True, None))
    seat1 = unframe(frames.frames("T", state, 1, False, None))
    spectator = unframe(frames.frames("T", state, None, False, None))
    hand0 = state.hands[0]
    assert hand0 and seat0[0]["table"]["hand"] == engine.view(state, 0)["hand"] and seat0[0]["table"]["you_are_host"]
    text1, text_spectator = orjson.dumps(seat1).decode(), orjson.dumps(spectator).decode()
    for card in hand0:
        assert f'"{card}"' not in text1 and f'"{card}"' not in text_spectator
    assert spectator[0]["table"]["hand"] == [] and spectator[0]["version"] == state.version
    # your_turn rides with the view of the player to move, and only theirs
    turn = state.turn
    mover = unframe(frames.frames("T", state, turn, turn == 0, None))
    other = unframe(frames.frames("T", state, 1 - turn, turn != 0, None))
    assert [m["type"] for m in mover] == ["table", "your_turn"] and mover[1]["seat"] == turn
    assert [m["type"] for m in other] == ["table"]


def test_a_view_is_built_once_however_many_sockets_read_it():
    state = playing_state()
    frames = ViewFrames()
    sent = [frames.frames("T", state, None, False, None) for _ in range(500)]
    assert frames.built == 1 and all(f is sent[0] for f in sent)
    frames.frames("T", state, None, False, "spanish")  # another deck design is another view
    assert frames.built == 2


def test_the_cache_keeps_only_the_latest_views():
    state = playing_state()
    frames = ViewFrames(size=2)
    for table in ("A", "B", "C"):
        frames.frames(table, state, None, False, None)
    assert len(frames._built) == 2 and ("A", state.version, None, False, None) not in frames._built


def _next(state):
    """The state after the player to move leaves their first card."""
    card = state.hands[state.turn][0]
    return engine.fold(state, engine.decide(state, {"type": "play", "by": state.turn, "card": card, "capture": []}))


def test_frames_built_ahead_of_an_append_are_the_same_bytes_and_join_the_caches_only_when_kept():
    """api/sockets/fanout.py ``Fanout.ahead``: the other sockets' frames of a move are built while its append
    is in flight; a state whose append was refused (another process appended that version first) must
    never answer for the one appended."""
    from engine.cards import FULL_DECK

    before = playing_state()
    appended, refused = _next(before), _next(playing_state(list(reversed(FULL_DECK))))
    assert appended.version == refused.version and appended.hands != refused.hands
    frames = ViewFrames()
    frames.frames("T", before, 0, True, None)  # the version before, as its sockets were sent it
    lost = frames.ahead("T", refused)
    for seat in (0, 1, None):
        frames.frames("T", refused, seat, seat == 0, None, lost)
        frames.patch_frames("T", refused, before.version, seat, seat == 0, None, lost)
    built = frames.built
    kept = frames.ahead("T", appended)
    ahead = {seat: (frames.frames("T", appended, seat, seat == 0, None, kept),
                    frames.patch_frames("T", appended, before.version, seat, seat == 0, None, kept))
             for seat in (0, 1, None)}
    assert frames.built == built + 3 and ("T", appended.version, 1, False, None) not in frames._built
    kept.keep()  # ``appended`` is the one appended: its frames are kept, ``refused``'s never were
    fresh = ViewFrames()
    fresh.frames("T", before, 0, True, None)
    for seat in (0, 1, None):
        want = (fresh.frames("T", appended, seat, seat == 0, None),
                fresh.patch_frames("T", appended, before.version, seat, seat == 0, None))
        got = (frames.frames("T", appended, seat, seat == 0, None),
               frames.patch_frames("T", appended, before.version, seat, seat == 0, None))
        assert got == ahead[seat] == want
        assert got[0] != lost.built[("T", refused.version, seat, seat == 0, None)][1]
    assert frames.built == built + 3  # every one of them from the cache: none built again
    assert frames._bases[("T", None)].base.fields == fresh._bases[("T", None)].base.fields


def test_the_shared_parts_are_kept_fewer_and_a_part_built_again_makes_the_same_views():
    state = playing_state()
    frames = ViewFrames(size=16, shared_parts=2)
    first = frames.view_json("A", state, 0, True, None)
    for table in ("B", "C"):
        frames.frames(table, state, None, False, None)
    assert list(frames._bases) == [("B", None), ("C", None)]
    # A's shared part is gone, its encoded views are not; a reader of A not yet served needs the part again
    assert frames.view_json("A", state, 0, True, None) is first
    assert orjson.loads(frames.view_json("A", state, 1, False, None)) == orjson.loads(
        ViewFrames().view_json("A", state, 1, False, None))
    assert frames._bases[("A", None)].version == state.version


def test_each_table_keeps_its_latest_shared_part_only_so_many_tables_still_share_theirs(monkeypatch):
    """A table's move answer builds the part; its next mover's GET, after every other table has moved,
    finds it (one kept per table: a part per version made them push each other out)."""
    parts = []
    table_view = engine.table_view
    monkeypatch.setattr(engine, "table_view", lambda state, deck=None, previous=None: parts.append(1) or table_view(
        state, deck=deck, previous=previous))
    states = {table: playing_state() for table in "ABCDEF"}
    frames = ViewFrames(shared_parts=len(states))
    for table, state in states.items():  # a first round: nothing kept yet
        frames.view_json(table, state, state.turn, False, None)
        states[table] = _next(state)
        frames.view_json(table, states[table], 1 - states[table].turn, False, None)
    for _ in range(3):  # then each table: its next mover's GET, a round of moves after its last move
        for table, state in states.items():
            before = len(parts)
            frames.view_json(table, state, state.turn, False, None)
            assert len(parts) == before  # the part its last move built
            states[table] = _next(state)
            frames.view_json(table, states[table], 1 - states[table].turn, False, None)
    assert len(frames._bases) == len(states)
    before = states["A"]
    after = _next(before)
    frames.view_json("A", after, 0, False, None)
    late = frames._shared("A", before, None)  # a late reader of the older version: built, not kept
    assert late.version == before.version and frames._bases[("A", None)].version == after.version


def test_a_mailbox_keeps_the_latest_state_and_a_bounded_chat_backlog():
    box = Mailbox()
    old, new = engine.State(version=3), engine.State(version=5)
    box.post_state(new)
    box.post_state(old)  # late: never sent after a newer one
    for i in range(CHAT_BACKLOG + 10):
        box.post_chat(b"%d" % i)
    assert box.wake.is_set()
    state, chats = box.take()
    assert state is new and len(chats) == CHAT_BACKLOG and chats[-1] == b"%d" % (CHAT_BACKLOG + 9)
    assert box.take() == (None, [])


def test_the_view_json_is_the_table_message_s_view():
    state = playing_state()
    frames = ViewFrames()
    view = orjson.loads(frames.view_json("T", state, 1, False, None))
    assert unframe(frames.frames("T", state, 1, False, None))[0]["table"] == view
    assert view["table_id"] == "T" and view["you"] == 1 and frames.built == 1


@pytest.mark.parametrize("players", [2, 4])
def test_a_view_s_bytes_are_the_reader_s_whole_view_encoded(players):
    """Each view is spliced from its version's shared runs, encoded once, and the reader's own fields:
    the very bytes of the whole view, ``engine.for_reader`` for that reader, encoded in one go, for
    every reader (seats, a spectator, a seat out of range), host or not, deck or not, all game long."""
    decks = [None, *list(engine.cards.DECKS)[:1]]
    for _, state in engine_game(11, players=players, max_events=300):
        frames = ViewFrames()
        for deck in decks:
            base = engine.table_view(state, deck=deck)
            for reader in (None, 0, 1, 2, 3, 7):
                for host in (False, True):
                    whole = orjson.dumps({"table_id": "T", **engine.for_reader(base, state, reader),
                                          "you_are_host": host})
                    spliced = frames.view_json("T", state, reader, host, deck)
                    assert orjson.loads(spliced) == orjson.loads(whole)
                    assert spliced == orjson.dumps({"table_id": "T", **engine.for_reader(
                        frames._bases[("T", deck)].base, state, reader), "you_are_host": host})


def test_a_table_s_next_views_take_its_earlier_plays_again_and_are_the_same_views():
    """A version's shared part takes the history entries of the table's previous part for the plays they
    share (engine.view.table_view's ``previous``): a move builds its own play's entry only, and every
    view is still the whole view built afresh."""
    frames, reused = ViewFrames(), 0
    for _, state in engine_game(5, players=2, max_events=200):
        before = frames._bases.get(("T", None))
        for reader in (None, 0, 1):
            fresh = {"table_id": "T", **engine.view(state, reader), "you_are_host": False}
            assert orjson.loads(frames.view_json("T", state, reader, False, None)) == orjson.loads(orjson.dumps(fresh))
        after = frames._bases[("T", None)].base
        if before is not None and state.history and before.base.plays:
            shared = [i for i, play in enumerate(state.history)
                      if i < len(before.base.plays) and before.base.plays[i] is play]
            reused += sum(after.fields["history"][i] is before.base.fields["history"][i] for i in shared)
            assert all(after.fields["history"][i] is before.base.fields["history"][i] for i in shared)
    assert reused > 50


def _applied(view: dict, patch: dict) -> dict:
    """What a client holds after a ``patch`` message (docs/api.md, ``frames=patch``)."""
    out = {**view, **patch["set"]}
    if "history_add" in patch:
        out["history"] = view["history"] + patch["history_add"]
    out["labels"] = {**view["labels"], **patch["labels_add"]}
    return out


@pytest.mark.parametrize("preset", ["selminha", "del15", "cardgames"])
def test_a_patch_takes_the_view_a_socket_holds_to_the_next_and_says_whose_turn_it_is(preset):
    """Two games (a rematch) patched for each reader from the version before, or from two versions
    before (a socket that slept through one: the whole view then), as the sockets ask: the view the
    reader then holds is the one a whole frame would have sent (labels may keep earlier cards), in the
    reader's deck design, with the same ``your_turn``."""
    frames, states = ViewFrames(), [s for _e, s in engine_game(5, preset=preset, games=2)]
    assert states[-1].game == 2
    readers = ((0, True, None), (1, False, "spanish"), (None, False, None))
    held = {r: unframe(frames.frames("T", states[0], *r))[0]["table"] for r in readers}
    patched = whole_sent = 0
    for k, (before, state) in enumerate(zip(states, states[1:], strict=False)):
        for r in readers:
            missed = k % 7 == 0 and k > 0  # now and then the socket missed a version
            since = before.version - 1 if missed else before.version
            sent = unframe(frames.patch_frames("T", state, since, *r))
            whole = unframe(ViewFrames().frames("T", state, *r))
            assert sent[1:] == whole[1:]  # your_turn, on its turn
            if missed:  # from a version this process no longer holds: the whole view
                assert sent[0] == whole[0]
                held[r], whole_sent = sent[0]["table"], whole_sent + 1
                continue
            assert sent[0]["type"] == "patch" and sent[0]["from"] == since == before.version
            assert sent[0]["version"] == state.version
            got = _applied(held[r], sent[0])
            labels = whole[0]["table"]["labels"]
            assert {c: got["labels"][c] for c in labels} == labels  # each card named in the reader's design
            assert {**got, "labels": None} == {**whole[0]["table"], "labels": None}
            held[r] = got
            patched += 1
    assert patched == 3 * (len(states) - 1) - whole_sent and whole_sent > 30


def test_a_patch_from_a_version_this_process_no_longer_holds_is_the_whole_view():
    first = playing_state()
    second = _next(first)
    third = _next(second)
    frames = ViewFrames()
    for state in (first, second, third):
        frames.frames("T", state, None, False, None)
    # the shared parts of 2 and 3 are held: from 2 a patch, from 1 (or a version never seen) the view
    assert unframe(frames.patch_frames("T", third, second.version, 0, True, None))[0]["type"] == "patch"
    for since in (first.version, third.version + 5):
        sent = unframe(frames.patch_frames("T", third, since, 0, True, None))
        assert sent[0] == unframe(frames.frames("T", third, 0, True, None))[0]
