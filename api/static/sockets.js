// Following the table live: one WebSocket (messages {"type": "table" | "patch" | "your_turn" |
// "chat" | "events" | "ack" | "error"}), reconnecting with backoff, and a slow HTTP
// poll as a safety net. Every view goes to motion.receive, which shows it in turn.
// A seated player's moves go over this socket while it is open (sendMove).
// The socket asks for changes as patches (frames=patch): the whole view comes once, on
// connect, and each change after it as what changed from the view it sent last.

import { addChat, loadChat } from "./chat.js";
import { receive } from "./motion.js";
import { t } from "./i18n.js";
import { $, api, app, showError } from "./state.js";

let ws = null;
let tries = 0;
let timer = null;
let poll = null;
let socketDeck = null; // the deck design this socket's views are labelled in
let socketToken = null; // the seat token it was opened with: its moves are that seat's
let held = null; // the view this socket sent last (whole or patched): the next patch's base
let patches = true; // ask for patches; after one whose base this page does not hold, whole views
const inFlight = new Map(); // move id -> resolve, for the moves sent over the socket and not yet answered
const MOVE_WAIT = 8000; // ms an unanswered socket move waits before the caller POSTs it (same id)

export const newMoveId = () => (crypto.randomUUID ? crypto.randomUUID()
  : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`);

// A move over the socket: resolves to its ack ({version}), rejects with the server's error as api()
// does, or resolves to null when the socket is not open, drops or stays silent. The caller then
// POSTs the move with `id` as its Idempotency-Key: the server answers a repeat with the first
// answer, so a move that did land is never applied twice.
export function sendMove(id, move) {
  const sock = ws;
  if (!sock || sock.readyState !== WebSocket.OPEN || !app.token || socketToken !== app.token) return Promise.resolve(null);
  return new Promise((resolve) => {
    const timer = setTimeout(() => settle(id, null), MOVE_WAIT);
    inFlight.set(id, (answer) => { clearTimeout(timer); resolve(answer); });
    try { sock.send(JSON.stringify({ type: "move", id, move })); } catch { settle(id, null); }
  });
}

function settle(id, answer) {
  const done = inFlight.get(id);
  if (done) { inFlight.delete(id); done(answer); }
}

function dropInFlight() {
  for (const id of [...inFlight.keys()]) settle(id, null);
}

export function connect() {
  clearTimeout(timer);
  if (ws) { ws.onclose = null; try { ws.close(); } catch { /* gone */ } }
  dropInFlight(); // their callers POST them now, with the same ids
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const params = new URLSearchParams();
  if (app.token) params.set("token", app.token);
  if (app.deck) params.set("deck", app.deck);
  params.set("frames", patches ? "patch" : "view");
  // no `after`: the page needs views, not the events it missed (a refresh catches up)
  let sock;
  try {
    sock = new WebSocket(`${proto}//${location.host}/tables/${app.tableId}/ws?${params}`);
  } catch {
    scheduleReconnect();
    return;
  }
  ws = sock;
  held = null;
  socketDeck = app.deck;
  socketToken = app.token;
  sock.onopen = () => {
    tries = 0;
    $("conn").hidden = true;
    document.body.dataset.live = "yes";
    loadChat();
  };
  sock.onmessage = (ev) => {
    if (ws !== sock) return; // a socket this page has since replaced
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    // after a change of deck design a view is only a signal: fetch it in the new design
    // (closing a socket to reopen it at once made the dev server send a broken frame)
    if (msg.type === "patch") {
      if (!held || held.version !== msg.from) { // not what it sent last: start again, on whole views
        held = null;
        patches = false;
        try { sock.close(); } catch { /* gone */ }
        return;
      }
      msg = { type: "table", table: patched(held, msg) };
    }
    if (msg.type === "table" && msg.table) {
      held = msg.table;
      if (socketDeck === app.deck) receive(msg.table); else refresh();
    }
    else if (msg.type === "your_turn") { if (msg.version > app.latest) refresh(); }
    else if (msg.type === "chat") addChat(msg.line);
    else if (msg.type === "ack" && msg.id) settle(msg.id, { version: msg.version });
    else if (msg.type === "error" && msg.id && inFlight.has(msg.id)) {
      const err = msg.error || {};
      const e = new Error(err.message || err.code);
      e.code = err.code; e.details = err.details;
      settle(msg.id, e);
    }
  };
  sock.onclose = () => {
    document.body.dataset.live = "no";
    if (ws === sock) dropInFlight();
    if (ws === sock) scheduleReconnect();
  };
  sock.onerror = () => { /* onclose follows */ };
}

// The view a patch takes `view` to: its fields set, its history extended, the labels of the
// cards it newly shows added (docs/api.md). A new object: views already received stay as they were.
export function patched(view, patch) {
  const next = { ...view, ...patch.set };
  if (patch.history_add) next.history = view.history.concat(patch.history_add);
  next.labels = { ...view.labels, ...patch.labels_add };
  return next;
}

function scheduleReconnect() {
  tries += 1;
  const delay = Math.min(15000, 500 * 2 ** Math.min(tries, 5)) * (0.75 + Math.random() / 2);
  const c = $("conn");
  c.hidden = false;
  c.textContent = t("conn.reconnecting");
  refresh(); // catch up over HTTP meanwhile
  timer = setTimeout(connect, delay);
}

export async function refresh({ now = false } = {}) {
  try {
    const id = app.tableId;
    if (!id) return;
    const view = await api("GET", `/tables/${id}`);
    if (app.tableId === id) receive(view, { now }); // not a table this page has since left
  } catch (e) {
    if (e.status === 401 && app.token) { app.token = null; }
    else if (e.status === 404) showError(t("error.not_found"));
  }
}

/** Stop following the table (Back to the home): no socket, no poll, no reconnect. */
export function disconnect() {
  clearTimeout(timer);
  clearInterval(poll);
  const sock = ws;
  ws = null;
  held = null;
  tries = 0;
  if (sock) { sock.onclose = null; sock.onmessage = null; try { sock.close(); } catch { /* gone */ } }
  dropInFlight();
  $("conn").hidden = true;
  delete document.body.dataset.live;
}

export function startPolling() {
  clearInterval(poll);
  let ticks = 0;
  poll = setInterval(() => {
    ticks += 1;
    const down = !ws || ws.readyState !== WebSocket.OPEN;
    if (down || ticks % 6 === 0) refresh();
  }, 5000);
}
