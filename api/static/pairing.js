// Quick pairing on the home (issue 56; docs/api.md "Quick pairing"): PLAY NOW for a ruleset and a
// player count, the wait with its time and a CANCEL; the lobby's open correspondence challenges to
// accept, the live tables to watch, and a challenge form. Loaded by its own <script type="module">
// tag: main.js does not know it. A table is opened the way the page opens one: the seat token kept by
// state.saveSeat, then the address /t/<id> and a popstate, which main.js's router follows.

import { t, withLang } from "./i18n.js";
import { presetName } from "./forms.js";
import { $, errorText, saveSeat, say, showError, store } from "./state.js";

const PRESETS = ["selminha", "del15", "cardgames"];
const COUNTS = [2, 3, 4];
const POLL = 2000; // ms between GET /seeks/{id} when the socket fails (a seek unheard of for 10 s is dropped)
const LOBBY_EVERY = 5000; // ms between GET /lobby while the home is shown
const CHALLENGE_KEY = "escoba.challenge"; // the correspondence seek this browser posted: {seek_id, token, preset, players}

// ---------------------------------------------------------------- the page's small tools
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node) node[k] = v;
    else node.setAttribute(k, v);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

/** The account's token when the reader signed in (issue "Players who come back" keeps it here). */
function playerToken() {
  try {
    const raw = localStorage.getItem("escoba.player");
    if (!raw) return null;
    if (raw.startsWith("{")) return JSON.parse(raw).token || null;
    return raw;
  } catch { return null; }
}

function readName() {
  try { return localStorage.getItem("escoba.name") || ""; } catch { return ""; }
}

async function call(method, path, body, token) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    const err = (data && data.error) || {};
    const e = new Error(err.message || String(res.status));
    e.code = err.code; e.status = res.status; e.details = err.details;
    throw e;
  }
  return data;
}

/** Who asks: a signed-in account's token, or a guest's name (the home's name field). */
function asker(nameInput) {
  const token = playerToken();
  if (token) return { token, body: {} };
  const name = nameInput.value.trim();
  if (!name) { nameInput.focus(); nameInput.reportValidity(); return null; }
  store("escoba.name", name);
  for (const id of ["create-name", "join-name", "seek-name", "lobby-name"]) { const i = $(id); if (i && !i.value) i.value = name; }
  return { token: null, body: { name } };
}

function openTable(tableId, seat, token) {
  saveSeat(tableId, { token, seat });
  history.pushState({}, "", withLang(`/t/${encodeURIComponent(tableId)}`));
  window.dispatchEvent(new PopStateEvent("popstate"));
}

function watchTable(tableId) {
  sessionStorage.setItem(`escoba.watch.${tableId}`, "yes");
}

const clock = (seconds) => `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;

// ---------------------------------------------------------------- PLAY NOW
let wanted = PRESETS[0];
let seek = null; // {id, token, started, socket, poll, timer}

function drawPlay() {
  const box = $("seek");
  const name = el("input", { id: "seek-name", name: "name", required: true, maxLength: 40, autocomplete: "nickname", value: readName() });
  const nameLabel = el("label", { className: "seek-name" }, el("span", {}, t("seek.your_name")), " ", name);
  nameLabel.hidden = !!playerToken();
  const rules = el("div", { className: "row wrap seek-presets", role: "group", "aria-labelledby": "seek-presets-label" });
  for (const p of PRESETS) {
    const b = el("button", { type: "button", className: "toggle", dataset: { preset: p } }, presetName(p));
    b.setAttribute("aria-pressed", String(p === wanted));
    b.addEventListener("click", () => {
      wanted = p;
      for (const o of rules.querySelectorAll("button")) o.setAttribute("aria-pressed", String(o.dataset.preset === p));
    });
    rules.append(b);
  }
  const counts = el("div", { className: "row wrap seek-counts" });
  for (const n of COUNTS) {
    const b = el("button", { type: "button", className: "primary", dataset: { players: String(n) } }, t("seek.play", { count: n }));
    b.addEventListener("click", () => startSeek(n, name));
    counts.append(b);
  }
  const waiting = el("div", { id: "seek-waiting", className: "seek-waiting", hidden: true },
    el("p", { id: "seek-status", className: "seek-status", role: "status" }),
    el("button", { type: "button", id: "seek-cancel", className: "danger" }, t("seek.cancel")));
  box.replaceChildren(
    el("h3", { id: "seek-title" }, t("seek.title")),
    el("p", { className: "note" }, t("seek.intro")),
    el("div", { id: "seek-choose", className: "column" },
      nameLabel,
      el("span", { id: "seek-presets-label", className: "seek-label" }, t("seek.rules")),
      rules, counts),
    waiting);
  $("seek-cancel").addEventListener("click", cancelSeek);
}

async function startSeek(players, nameInput) {
  if (seek) return;
  showError("");
  const who = asker(nameInput);
  if (!who) return;
  try {
    const data = await call("POST", "/seeks", { ...who.body, preset: wanted, players }, who.token);
    seek = { id: data.seek_id, token: data.token, started: Date.now(), preset: wanted, players };
  } catch (e) { showError(errorText(e)); return; }
  $("seek-choose").hidden = true;
  $("seek-waiting").hidden = false;
  tickWait();
  seek.timer = setInterval(tickWait, 1000);
  listen(seek);
  $("seek-cancel").focus();
  say(t("seek.looking", { preset: presetName(seek.preset), count: seek.players }));
}

function tickWait() {
  if (!seek) return;
  const waited = Math.floor((Date.now() - seek.started) / 1000);
  $("seek-status").textContent = t("seek.waiting", { preset: presetName(seek.preset), count: seek.players, time: clock(waited) });
}

/** The seek's socket; polling instead when it cannot be opened or drops before an answer. */
function listen(s) {
  let sock;
  try {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    sock = new WebSocket(`${proto}//${location.host}/seeks/${encodeURIComponent(s.id)}/ws?token=${encodeURIComponent(s.token)}`);
  } catch { poll(s); return; }
  s.socket = sock;
  sock.onmessage = (ev) => {
    let msg = null;
    try { msg = JSON.parse(ev.data); } catch { return; }
    if (msg.type === "paired") settle(s, { status: "paired", ...msg });
    else if (msg.type === "seek") settle(s, msg);
    else if (msg.type === "error") { sock.onclose = null; poll(s); }
  };
  sock.onclose = () => { if (seek === s) poll(s); };
}

function poll(s) {
  if (seek !== s || s.poll) return;
  const look = async () => {
    if (seek !== s) return;
    try {
      const data = await call("GET", `/seeks/${encodeURIComponent(s.id)}`, undefined, s.token);
      if (data.status !== "waiting") { settle(s, data); return; }
    } catch { /* the network: try again */ }
    if (seek === s) s.poll = setTimeout(look, POLL);
  };
  look();
}

function endWait() {
  const s = seek;
  seek = null;
  if (!s) return;
  clearInterval(s.timer);
  clearTimeout(s.poll);
  if (s.socket) { s.socket.onclose = null; try { s.socket.close(); } catch { /* gone */ } }
  if ($("seek-choose")) {
    $("seek-choose").hidden = false;
    $("seek-waiting").hidden = true;
  }
}

function settle(s, data) {
  if (seek !== s) return;
  endWait();
  if (data.status === "paired" && data.table_id && data.token) {
    say(t("seek.found"));
    openTable(data.table_id, data.seat, data.token);
  } else {
    say(t("seek.ended"));
    const first = document.querySelector("#seek-counts button, .seek-counts button");
    if (first) first.focus();
  }
}

async function cancelSeek() {
  const s = seek;
  if (!s) return;
  try {
    await call("DELETE", `/seeks/${encodeURIComponent(s.id)}`, undefined, s.token);
    endWait();
    say(t("seek.cancelled"));
    const first = document.querySelector(".seek-counts button");
    if (first) first.focus();
  } catch (e) {
    if (e.code === "seek_paired") { poll(s); return; } // its table is made: the poll opens it
    showError(errorText(e));
  }
}

// ---------------------------------------------------------------- the lobby
function challenge() {
  try { return JSON.parse(localStorage.getItem(CHALLENGE_KEY) || "null"); } catch { return null; }
}
function keepChallenge(c) {
  try {
    if (c) localStorage.setItem(CHALLENGE_KEY, JSON.stringify(c));
    else localStorage.removeItem(CHALLENGE_KEY);
  } catch { /* private mode */ }
}

function options(select, values, word) {
  select.replaceChildren(...values.map((v) => el("option", { value: String(v) }, word(v))));
}

function drawLobby() {
  const box = $("lobby");
  const name = el("input", { id: "lobby-name", name: "name", required: true, maxLength: 40, autocomplete: "nickname", value: readName() });
  const nameLabel = el("label", {}, el("span", {}, t("lobby.your_name")), " ", name);
  nameLabel.hidden = !!playerToken();
  const preset = el("select", { id: "lobby-preset", name: "preset" });
  options(preset, PRESETS, presetName);
  const players = el("select", { id: "lobby-players", name: "players" });
  options(players, COUNTS, (n) => t("lobby.players", { count: n }));
  const form = el("form", { id: "lobby-form", className: "form lobby-form" },
    el("h4", {}, t("lobby.challenge_title")),
    el("p", { className: "note" }, t("lobby.challenge_intro")),
    nameLabel,
    el("label", {}, el("span", {}, t("lobby.rules")), " ", preset),
    el("label", {}, el("span", {}, t("lobby.players_label")), " ", players),
    el("button", { type: "submit", className: "primary" }, t("lobby.post")));
  form.addEventListener("submit", postChallenge);
  const mine = el("div", { id: "lobby-mine", className: "lobby-mine", hidden: true },
    el("p", { id: "lobby-mine-text", role: "status" }),
    el("button", { type: "button", id: "lobby-cancel", className: "danger" }, t("seek.cancel")));
  box.replaceChildren(
    el("h3", { id: "lobby-title" }, t("lobby.title")),
    el("div", { className: "lobby-open" },
      el("h4", { id: "lobby-seeks-title" }, t("lobby.seeks_title")),
      el("ul", { id: "lobby-seeks", className: "lobby-list", "aria-labelledby": "lobby-seeks-title" }),
      el("p", { id: "lobby-seeks-none", className: "note", hidden: true }, t("lobby.no_seeks")),
      mine, form),
    el("div", { className: "lobby-watch" },
      el("h4", { id: "lobby-live-title" }, t("lobby.live_title")),
      el("ul", { id: "lobby-live", className: "lobby-list", "aria-labelledby": "lobby-live-title" }),
      el("p", { id: "lobby-live-none", className: "note", hidden: true }, t("lobby.no_live"))));
  $("lobby-cancel").addEventListener("click", cancelChallenge);
  showMine();
}

function showMine() {
  const c = challenge();
  $("lobby-mine").hidden = !c;
  $("lobby-form").hidden = !!c;
  if (c) $("lobby-mine-text").textContent = t("lobby.yours", { preset: presetName(c.preset), count: c.players });
}

async function postChallenge(e) {
  e.preventDefault();
  showError("");
  const who = asker($("lobby-name"));
  if (!who) return;
  const preset = $("lobby-preset").value;
  const players = Number($("lobby-players").value);
  try {
    const data = await call("POST", "/seeks", { ...who.body, preset, players, correspondence: true }, who.token);
    keepChallenge({ seek_id: data.seek_id, token: data.token, preset, players });
  } catch (err) { showError(errorText(err)); return; }
  showMine();
  say(t("lobby.posted"));
  $("lobby-cancel").focus();
  refreshLobby();
}

async function cancelChallenge() {
  const c = challenge();
  if (!c) return;
  try {
    await call("DELETE", `/seeks/${encodeURIComponent(c.seek_id)}`, undefined, c.token);
    keepChallenge(null);
    showMine();
    say(t("seek.cancelled"));
    refreshLobby();
  } catch (err) {
    if (err.code === "seek_paired") { checkChallenge(); return; }
    showError(errorText(err));
  }
}

/** The challenge this browser posted: once someone took the last seat, its table opens. */
async function checkChallenge() {
  const c = challenge();
  if (!c) return;
  let data;
  try { data = await call("GET", `/seeks/${encodeURIComponent(c.seek_id)}`, undefined, c.token); } catch (err) {
    if (err.status === 401 || err.status === 404) { keepChallenge(null); showMine(); }
    return;
  }
  if (data.status === "waiting") return;
  keepChallenge(null);
  showMine();
  if (data.status === "paired" && data.table_id && data.token && homeShown()) {
    say(t("seek.found"));
    openTable(data.table_id, data.seat, data.token);
  } else if (data.status === "paired" && data.table_id && data.token) {
    saveSeat(data.table_id, { token: data.token, seat: data.seat });
  }
}

async function accept(s) {
  showError("");
  const who = asker($("lobby-name"));
  if (!who) return;
  try {
    const data = await call("POST", `/seeks/${encodeURIComponent(s.seek_id)}/accept`, who.body, who.token);
    openTable(data.table_id, data.seat, data.token);
  } catch (err) {
    showError(errorText(err));
    refreshLobby();
  }
}

function seekLine(s) {
  const mine = challenge();
  const words = t(s.rated ? "lobby.seek_rated" : "lobby.seek", {
    name: s.name, preset: presetName(s.preset), count: s.players, rating: Math.round(s.rating || 1500),
  });
  const li = el("li", {}, el("span", { className: "lobby-what" }, words));
  if (!mine || mine.seek_id !== s.seek_id) {
    const b = el("button", { type: "button", className: "primary" }, t("lobby.accept"));
    b.setAttribute("aria-label", t("lobby.accept_label", { name: s.name, preset: presetName(s.preset), count: s.players }));
    b.addEventListener("click", () => accept(s));
    li.append(b);
  }
  return li;
}

function liveLine(table) {
  const names = table.players.join(", ");
  const a = el("a", { className: "button", href: withLang(`/t/${encodeURIComponent(table.table_id)}`), dataset: { nav: "" } },
    t("lobby.watch"));
  a.setAttribute("aria-label", t("lobby.watch_label", { names, preset: presetName(table.preset) }));
  a.addEventListener("click", () => watchTable(table.table_id)); // before main.js's router, on the document
  return el("li", {}, el("span", { className: "lobby-what" }, t("lobby.live", { names, preset: presetName(table.preset) })), a);
}

let lobbyTurn = 0;
async function refreshLobby() {
  const mine = ++lobbyTurn;
  let data;
  try { data = await call("GET", "/lobby"); } catch { return; }
  if (mine !== lobbyTurn || !$("lobby-seeks")) return;
  const keep = document.activeElement && $("lobby").contains(document.activeElement) ? document.activeElement : null;
  const keepText = keep && keep.getAttribute("aria-label");
  $("lobby-seeks").replaceChildren(...data.seeks.map(seekLine));
  $("lobby-seeks-none").hidden = data.seeks.length > 0;
  $("lobby-live").replaceChildren(...data.live.map(liveLine));
  $("lobby-live-none").hidden = data.live.length > 0;
  // the focus stays on the line it was on when the list is drawn again
  if (keepText && !$("lobby").contains(document.activeElement)) {
    const again = [...$("lobby").querySelectorAll("[aria-label]")].find((n) => n.getAttribute("aria-label") === keepText);
    if (again) again.focus();
  }
}

// ---------------------------------------------------------------- while the home is shown
const homeShown = () => $("home") && !$("home").hidden;
let lobbyTimer = null;
function onHome() {
  const shown = homeShown();
  // OPEN A TABLE's form has the home to itself (it fits one laptop screen, tests/api/page/test_home.py)
  const creating = $("create-form") && !$("create-form").hidden;
  $("seek").hidden = creating;
  $("lobby").hidden = creating;
  if (shown && !lobbyTimer) {
    refreshLobby();
    checkChallenge();
    lobbyTimer = setInterval(() => { refreshLobby(); checkChallenge(); }, LOBBY_EVERY);
  } else if (!shown && lobbyTimer) {
    clearInterval(lobbyTimer);
    lobbyTimer = null;
    if (seek) cancelSeek(); // the reader left the home mid-wait: nobody is seated against an empty chair
  }
}

function start() {
  if (!$("seek") || !$("lobby")) return;
  drawPlay();
  drawLobby();
  const watch = new MutationObserver(onHome);
  watch.observe($("home"), { attributes: true, attributeFilter: ["hidden"] });
  if ($("create-form")) watch.observe($("create-form"), { attributes: true, attributeFilter: ["hidden"] });
  onHome();
}

start();
