// Following the table live: one WebSocket (messages {"type": "table" | "your_turn" |
// "chat" | "events" | "error" | "ping"}), reconnecting with backoff, and a slow HTTP
// poll as a safety net. Every view goes to motion.receive, which shows it in turn.

import { addChat, loadChat } from "./chat.js";
import { receive } from "./motion.js";
import { t } from "./i18n.js";
import { $, api, app, showError } from "./state.js";

let ws = null;
let tries = 0;
let timer = null;
let poll = null;
let socketDeck = null; // the deck design this socket's views are labelled in

export function connect() {
  clearTimeout(timer);
  if (ws) { ws.onclose = null; try { ws.close(); } catch { /* gone */ } }
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const params = new URLSearchParams();
  if (app.token) params.set("token", app.token);
  if (app.deck) params.set("deck", app.deck);
  // no `after`: the page needs views, not the events it missed (a refresh catches up)
  let sock;
  try {
    sock = new WebSocket(`${proto}//${location.host}/tables/${app.tableId}/ws?${params}`);
  } catch {
    scheduleReconnect();
    return;
  }
  ws = sock;
  socketDeck = app.deck;
  sock.onopen = () => {
    tries = 0;
    $("conn").hidden = true;
    document.body.dataset.live = "yes";
    loadChat();
  };
  sock.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    // after a change of deck design a view is only a signal: fetch it in the new design
    // (closing a socket to reopen it at once made the dev server send a broken frame)
    if (msg.type === "table" && msg.table) { if (socketDeck === app.deck) receive(msg.table); else refresh(); }
    else if (msg.type === "your_turn") { if (msg.version > app.latest) refresh(); }
    else if (msg.type === "chat") addChat(msg.line);
  };
  sock.onclose = () => {
    document.body.dataset.live = "no";
    if (ws === sock) scheduleReconnect();
  };
  sock.onerror = () => { /* onclose follows */ };
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
    const view = await api("GET", `/tables/${app.tableId}`);
    receive(view, { now });
  } catch (e) {
    if (e.status === 401 && app.token) { app.token = null; }
    else if (e.status === 404) showError(t("error.not_found"));
  }
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
