// The page's wiring: screens, picking and playing, drag, keys, the forms.
// Rules come from the view only (`options`, `fifteen_to_take`).

import { loadChat, wireChat, setChatOpen } from "./chat.js";
import { cardFigure } from "./cards.js";
import { buildSettings, loadPresets, readSettings } from "./forms.js";
import { page } from "./hooks.js";
import { busyShowing, hooks, receive } from "./motion.js";
import { setupTurnNotices } from "./push.js";
import { connect, newMoveId, refresh, sendMove, startPolling } from "./sockets.js";
import { toggleSound } from "./sound.js";
import {
  $, api, app, inviteUrl, isSeated, label, loadSeat, myTurn, optionFor, saveSeat, say, showError, store, v,
} from "./state.js";
import { handlers, render } from "./table.js";

// ---------------------------------------------------------------- moves
async function move(type, fields = {}) {
  if (app.busy) return null;
  app.busy = true;
  showError("");
  try {
    // over the socket when it is open; otherwise, or if it drops first, by POST with the same id
    const id = newMoveId();
    let data = await sendMove(id, { type, ...fields });
    if (data instanceof Error) throw data;
    if (data === null) data = await api("POST", `/tables/${app.tableId}/moves`, { type, ...fields }, { "Idempotency-Key": id });
    if (data && data.table) receive(data.table); // a POST's answer; a socket's view comes as a message
    return data;
  } catch (e) {
    showError(e.message);
    if (e.status === 401) app.token = null; // the seat token is gone: watch instead
    render();
    return null;
  } finally {
    app.busy = false;
  }
}

// ---------------------------------------------------------------- picking
function clearPick() {
  app.picked = null;
  app.selected = new Set();
  app.setIndex = -1;
}
function pick(card) {
  if (!myTurn()) { say("It is not your turn."); return; }
  showError("");
  if (app.picked === card) { playPicked(); return; }
  clearPick();
  app.picked = card;
  const opt = optionFor(card);
  if (opt && opt.captures.length === 1) { // only one way: already marked
    app.selected = new Set(opt.captures[0]);
    app.setIndex = 0;
  }
  const ways = opt ? opt.captures.length : 0;
  say(`${label(card)} picked. ${ways === 0 ? "It makes no 15: leave it on the table." : ways === 1 ? "One way to make 15: marked." : `${ways} ways to make 15: pick the table cards.`}`);
  render();
}
function nextSet() {
  const opt = app.picked && optionFor(app.picked);
  if (!opt || !opt.captures.length) return;
  showError("");
  app.setIndex = (app.setIndex + 1) % opt.captures.length;
  app.selected = new Set(opt.captures[app.setIndex]);
  say(`Marked: ${opt.captures[app.setIndex].map((c) => label(c)).join(" + ")}.`);
  render();
}
function toggleTable(card) {
  if (!app.picked) { say("Pick a card from your hand first."); return; }
  showError(""); // the marks changed: an earlier "not 15" no longer applies
  if (app.selected.has(card)) app.selected.delete(card);
  else app.selected.add(card);
  app.setIndex = -1;
  render();
}
async function playPicked() {
  if (!app.picked) return;
  if (app.selected.size) return capture();
  const opt = optionFor(app.picked);
  if (opt && opt.captures.length) {
    say(opt.may_leave
      ? "Mark the table cards to capture (↓ marks a 15), or tap LEAVE ON TABLE."
      : "This card must capture: mark the table cards it makes 15 with.");
    render();
    return;
  }
  if (opt && opt.may_leave) return leave();
  showError("This card must capture: mark the table cards it makes 15 with.");
}
async function capture() {
  if (!app.picked || !app.selected.size) return;
  const card = app.picked;
  const cap = v().table_cards.filter((c) => app.selected.has(c)); // in table order
  const res = await move("play", { card, capture: cap });
  if (res) clearPick();
}
async function leave() {
  if (!app.picked) return;
  const res = await move("play", { card: app.picked, capture: [] });
  if (res) clearPick();
}

function keepPick(old, view) {
  if (app.picked && (!view.hand.includes(app.picked) || !myTurn(view))) clearPick();
  else if (app.picked) for (const c of [...app.selected]) if (!view.table_cards.includes(c)) app.selected.delete(c);
  if (old && old.round !== view.round) app.stripExtras = (app.stripExtras || []).filter((e) => e.round === view.round);
}

// ---------------------------------------------------------------- drag (pointer events: mouse, pen and touch)
function dropOnTable(card) {
  if (!myTurn()) return;
  if (app.picked !== card) {
    clearPick();
    app.picked = card;
    const opt = optionFor(card);
    if (opt && opt.captures.length === 1) app.selected = new Set(opt.captures[0]);
  }
  playPicked();
}
function startDrag(e, card, el) {
  if (e.pointerType === "mouse" && e.button !== 0) return;
  const id = e.pointerId;
  const x0 = e.clientX;
  const y0 = e.clientY;
  let ghost = null;
  const felt = $("felt");
  const over = (ev) => {
    const r = felt.getBoundingClientRect();
    return ev.clientX >= r.left && ev.clientX <= r.right && ev.clientY >= r.top && ev.clientY <= r.bottom;
  };
  const onMove = (ev) => {
    if (ev.pointerId !== id) return;
    if (!ghost && Math.hypot(ev.clientX - x0, ev.clientY - y0) > 10) {
      ghost = cardFigure(card, v());
      ghost.classList.add("drag-ghost");
      document.body.append(ghost);
      el.classList.add("dragging");
    }
    if (ghost) {
      ev.preventDefault();
      ghost.style.left = `${ev.clientX - ghost.offsetWidth / 2}px`;
      ghost.style.top = `${ev.clientY - ghost.offsetHeight / 2}px`;
      felt.classList.toggle("drop-target", over(ev));
    }
  };
  const done = (ev) => {
    if (ev.pointerId !== id) return;
    window.removeEventListener("pointermove", onMove);
    window.removeEventListener("pointerup", done);
    window.removeEventListener("pointercancel", done);
    felt.classList.remove("drop-target");
    el.classList.remove("dragging");
    if (!ghost) return; // a tap: the click picks
    ghost.remove();
    // the click that may follow on this card is not a pick; a click on another card is (a tap on the
    // next turn's hand, made within the window, was swallowed when any click counted)
    app.dragged = card;
    setTimeout(() => { if (app.dragged === card) app.dragged = null; }, 400);
    if (ev.type === "pointerup" && over(ev)) dropOnTable(card);
  };
  window.addEventListener("pointermove", onMove, { passive: false });
  window.addEventListener("pointerup", done);
  window.addEventListener("pointercancel", done);
}

// ---------------------------------------------------------------- screens
function show(id) {
  for (const s of ["home", "join", "game"]) $(s).hidden = s !== id;
}

async function enterTable(id) {
  app.tableId = id;
  const saved = loadSeat(id);
  app.token = saved && saved.token ? saved.token : null;
  let view;
  try {
    await loadPresets();
    view = await api("GET", `/tables/${id}`);
  } catch (e) {
    if (e.status === 401 && app.token) { // a stale token: ask again
      app.token = null;
      saveSeat(id, null);
      return enterTable(id);
    }
    show("home");
    showError(e.status === 404 ? "There is no such table. Open a new one." : e.message);
    return;
  }
  app.view = null;
  const watching = sessionStorage.getItem(`escoba.watch.${id}`) === "yes";
  if (!isSeated(view) && !watching) {
    const open = view.status === "waiting" && view.seats.some((s) => s.empty);
    app.view = view;
    const host = view.seats.find((s) => s.seat === view.host);
    $("join-info").textContent = open
      ? `${host ? host.name : "The host"} invites you to ${view.name || "a table"} (${view.preset}, to ${view.settings.target} points). Take a seat or watch.`
      : "The seats are taken or the game has started: you can watch.";
    $("join-form").hidden = !open;
    show("join");
    if (open) $("join-name").focus();
    return;
  }
  startGame(view);
}

let notices = null;

function startGame(view) {
  show("game");
  $("chat-toggle").hidden = false;
  app.view = null;
  receive(view, { now: true });
  app.spectator = !isSeated(view);
  document.body.dataset.role = app.spectator ? "spectator" : "player";
  // turn notices (title mark, notification, Web Push) for a seated player: push.js
  if (app.token && !notices) {
    try { notices = setupTurnNotices({ tableId: app.tableId, token: app.token, container: $("menu-notices") }); } catch { notices = null; }
  }
  for (const f of page.onTable) { try { f({ tableId: app.tableId, token: app.token }); } catch { /* optional */ } }
  loadChat();
  connect();
  startPolling();
}

// ---------------------------------------------------------------- wiring
function setDeck(deck) {
  app.deck = deck;
  store("escoba.deck", deck);
  $("menu-deck").value = deck;
}

function wire() {
  $("open-table").addEventListener("click", async () => {
    try { await loadPresets(); } catch (e) { showError(e.message); return; }
    $("create-form").hidden = false;
    $("open-table").hidden = true;
    buildSettings($("create-settings"), $("create-preset").value, null);
    $("create-name").focus();
  });
  $("create-preset").addEventListener("change", () => buildSettings($("create-settings"), $("create-preset").value, null));
  $("create-deck").value = app.deck;
  $("create-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    showError("");
    const name = $("create-name").value.trim();
    const preset = $("create-preset").value;
    try {
      setDeck($("create-deck").value);
      const body = { name, preset, settings: readSettings($("create-settings"), preset) };
      const tableName = $("create-table-name").value.trim();
      if (tableName) body.table_name = tableName;
      const data = await api("POST", "/tables", body);
      saveSeat(data.table_id, { token: data.token, seat: data.seat, invite_url: data.invite_url });
      store("escoba.name", name);
      history.pushState({}, "", `/t/${data.table_id}`);
      app.token = data.token;
      app.tableId = data.table_id;
      let view = data.table;
      if (app.deck) view = await api("GET", `/tables/${data.table_id}`); // labels in the reader's design
      startGame(view);
      say("Your table is open: COPY the link and send it, or ADD A BOT.");
    } catch (err) {
      showError(err.message);
    }
  });
  $("join-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    showError("");
    const name = $("join-name").value.trim();
    try {
      app.token = null;
      const data = await api("POST", `/tables/${app.tableId}/seats`, { name });
      saveSeat(app.tableId, { token: data.token, seat: data.seat });
      store("escoba.name", name);
      app.token = data.token;
      startGame(data.table);
      say(`You sit at seat ${data.seat + 1}.`);
    } catch (err) {
      showError(err.message);
    }
  });
  $("join-watch").addEventListener("click", () => {
    sessionStorage.setItem(`escoba.watch.${app.tableId}`, "yes");
    app.token = null;
    startGame(v());
  });
  const copy = async () => {
    const url = inviteUrl();
    try {
      await navigator.clipboard.writeText(url);
      say("Link copied.");
    } catch {
      const inp = $("invite-url");
      inp.select();
      try { document.execCommand("copy"); say("Link copied."); } catch { say("Copy the link from the box."); }
    }
    $("copy-link").textContent = "COPIED";
    $("copy-link").setAttribute("aria-label", "COPY");
    setTimeout(() => { $("copy-link").textContent = "COPY"; }, 1500);
  };
  $("copy-link").addEventListener("click", copy);
  $("menu-copy").addEventListener("click", copy);
  $("menu-deck").value = app.deck;
  $("menu-deck").addEventListener("change", () => {
    setDeck($("menu-deck").value);
    if (app.tableId) refresh({ now: true }); // the socket's next views are fetched in this design
  });
  $("start").addEventListener("click", () => move("start"));
  $("capture").addEventListener("click", capture);
  $("leave").addEventListener("click", leave);
  $("next-round").addEventListener("click", () => move("next_round"));
  $("resign").addEventListener("click", () => {
    if (confirm("Resign? The game ends and you lose.")) move("resign");
  });
  $("menu-exit").addEventListener("click", () => {
    if (confirm("Leave the game? It ends and you lose.")) { $("menu").close(); move("exit"); }
  });
  $("claim-away").addEventListener("click", () => move("claim_away"));
  $("rematch-yes").addEventListener("click", () => move("rematch", { accept: true }));
  $("rematch-no").addEventListener("click", () => move("rematch", { accept: false }));
  $("teams-keep").addEventListener("click", () => move("rematch", { accept: true, teams: "keep" }));
  $("teams-swap").addEventListener("click", () => move("rematch", { accept: true, teams: "swap" }));
  $("menu-button").addEventListener("click", openMenu);
  $("menu-close").addEventListener("click", () => $("menu").close());
  $("sound").addEventListener("click", () => showSound(toggleSound()));
  $("full").addEventListener("click", toggleFull);
  showSound(app.sound);
  wireChat(showError);
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", route);
  let name = null;
  try { name = localStorage.getItem("escoba.name"); } catch { /* private mode */ }
  if (name) { $("create-name").value = name; $("join-name").value = name; }
}

function showSound(on) {
  $("sound").setAttribute("aria-pressed", on ? "true" : "false");
  $("sound").textContent = on ? "SOUND ON" : "SOUND OFF";
  document.body.dataset.sound = on ? "on" : "off";
}
function toggleFull() {
  try {
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
    else if (document.documentElement.requestFullscreen) document.documentElement.requestFullscreen().catch(() => {});
  } catch { /* not offered here */ }
}
function openMenu() {
  const m = $("menu");
  if (!m.open) m.showModal();
}

function onKey(e) {
  const tag = (e.target && e.target.tagName) || "";
  const typing = /INPUT|TEXTAREA|SELECT/.test(tag);
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "Escape" && document.body.classList.contains("chat-open")) { setChatOpen(false); return; }
  if (e.key === "Escape" || ((e.key === "p" || e.key === "P") && !typing)) {
    if ($("game").hidden) return;
    if ($("menu").open) return; // the dialog closes itself on Esc
    e.preventDefault();
    openMenu();
    return;
  }
  if (typing) return;
  if (e.key === "m" || e.key === "M") { showSound(toggleSound()); say(app.sound ? "Sound on." : "Sound off."); return; }
  if (e.key === "f" || e.key === "F") { toggleFull(); return; }
  if ($("game").hidden || $("menu").open) return;
  const hand = $("hand");
  const cards = [...hand.querySelectorAll("button.card")];
  if (!cards.length || $("me").hidden) return;
  if (e.key === "ArrowLeft" || e.key === "ArrowRight") {
    e.preventDefault();
    const inHand = hand.contains(document.activeElement);
    let i = inHand ? app.focusIndex : app.focusIndex - (e.key === "ArrowRight" ? 1 : -1);
    i += e.key === "ArrowRight" ? 1 : -1;
    i = (i + cards.length) % cards.length;
    app.focusIndex = i;
    cards.forEach((b, j) => { b.tabIndex = j === i ? 0 : -1; });
    cards[i].focus();
  } else if (e.key === "ArrowUp") {
    e.preventDefault();
    const first = [...document.querySelectorAll("#actions button, #fifteen button")].find((b) => !b.hidden && !b.disabled);
    if (first) first.focus();
  } else if (e.key === "ArrowDown") {
    e.preventDefault();
    if (app.picked && hand.contains(document.activeElement)) nextSet();
    else cards[Math.min(app.focusIndex, cards.length - 1)].focus();
  } else if (e.key === "Enter" && !(document.activeElement && document.activeElement.tagName === "BUTTON")) {
    e.preventDefault();
    pick(cards[Math.min(app.focusIndex, cards.length - 1)].dataset.card);
  }
}

function route() {
  const m = location.pathname.match(/^\/t\/([^/?#]+)/);
  showError("");
  if (m) {
    enterTable(decodeURIComponent(m[1]));
  } else {
    show("home");
    $("menu-button").hidden = true;
  }
}

Object.assign(handlers, { move, pick, toggleTable, startDrag, buildSettings });
hooks.keepPick = keepPick;
hooks.afterRender = (old, view) => {
  if (notices) { try { notices.update(view); } catch { /* notices are optional */ } }
  for (const f of page.onView) { try { f(old, view); } catch { /* optional */ } }
};
// game over: a link to the move-by-move review (review.html, served at /t/<id>/review)
page.reviewUrl = (view) => `/t/${encodeURIComponent(view.table_id || app.tableId)}/review`;
window.escobaShowing = busyShowing; // tests wait for the plays to be shown
wire();
route();
