// The page's wiring: screens, picking and playing, drag, keys, the forms.
// Rules come from the view only (`options`, `fifteen_to_take`).

import { loadChat, resetChat, wireChat, setChatOpen } from "./chat.js";
import { languageSelect, t, withLang } from "./i18n.js";
import { startGamepad } from "./gamepad.js";
import { cardFigure } from "./cards.js";
import { buildSettings, loadPresets, presetName, readSettings } from "./forms.js";
import { page } from "./hooks.js";
import { busyShowing, dropQueue, hooks, receive } from "./motion.js";
import { accountToken, forgetAccount, onAccount, wireAccount } from "./account.js";
import { claimGuestTables, homeTitle, renderContinue } from "./mytables.js";
import { setupTurnNotices } from "./push.js";
import { connect, disconnect, newMoveId, refresh, sendMove, startPolling } from "./sockets.js";
import { toggleSound } from "./sound.js";
import {
  $, api, app, errorText, inviteUrl, isSeated, loadSeat, myTurn, optionFor, saveSeat, say, showError, store, v,
} from "./state.js";
import { cardName, cardsText, sumText } from "./words.js";
import { handlers, render } from "./table.js";

// ---------------------------------------------------------------- moves
async function move(type, fields = {}) {
  if (app.busy) return null;
  app.busy = true;
  showError("");
  try {
    // over the socket when it is open; otherwise, or if it drops first, by POST with the same id
    const id = newMoveId();
    const since = v() ? v().version : 0;
    const table = app.tableId;
    let data = await sendMove(id, { type, ...fields });
    if (data instanceof Error) throw data;
    if (data === null) data = await api("POST", `/tables/${app.tableId}/moves`, { type, ...fields }, { "Idempotency-Key": id });
    if (app.tableId !== table) return null; // the page left the table meanwhile
    if (data && data.table) receive(data.table); // a POST's answer; a socket's view comes as a message
    wantFocus(type, since);
    return data;
  } catch (e) {
    showError(errorText(e));
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
  if (!myTurn()) { say(t("say.not_your_turn")); return; }
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
  const how = ways === 0 ? "say.picked_none" : ways === 1 ? "say.picked_one" : "say.picked_many";
  const marked = ways === 1 ? opt.captures[0] : [];
  say(t(how, { card: cardName(card), count: ways, cards: cardsText(marked), sum: sumText([card, ...marked]) }));
  render();
}
function nextSet() {
  const opt = app.picked && optionFor(app.picked);
  if (!opt || !opt.captures.length) return;
  showError("");
  app.setIndex = (app.setIndex + 1) % opt.captures.length;
  app.selected = new Set(opt.captures[app.setIndex]);
  const set = opt.captures[app.setIndex];
  say(t("say.marked", { cards: cardsText(set), sum: sumText([app.picked, ...set]) }));
  render();
}
function toggleTable(card) {
  if (!app.picked) { say(t("say.pick_first")); return; }
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
    say(opt.may_leave ? t("say.mark_or_leave") : t("say.must_capture"));
    render();
    return;
  }
  if (opt && opt.may_leave) return leave();
  showError(t("say.must_capture"));
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

/** The signed-in player's token as the Authorization of a POST that seats (app.token is null then). */
function playerHeaders() {
  const token = accountToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

// ---------------------------------------------------------------- screens
function show(id) {
  for (const s of ["home", "join", "game"]) $(s).hidden = s !== id;
}

/** Back to the home (or on to another table): the table's socket, poll, header, chat and live line go. */
function leaveTable() {
  disconnect();
  dropQueue();
  focusWanted = null;
  if (notices) { try { notices.update(null); } catch { /* optional */ } notices = null; }
  $("menu-notices").replaceChildren();
  for (const d of ["menu", "confirm"]) if ($(d).open) $(d).close();
  app.tableId = null;
  app.token = null;
  app.view = null;
  app.latest = 0;
  app.leftovers = null;
  app.sweeps.clear();
  app.stripExtras = [];
  clearPick();
  $("table-title").textContent = "";
  $("chat-toggle").hidden = true;
  $("menu-button").hidden = true;
  document.body.classList.remove("chat-open", "boxed");
  resetChat();
  $("live").textContent = "";
  $("overlay").hidden = true;
  for (const k of ["status", "version", "role"]) delete document.body.dataset[k];
}

async function enterTable(id) {
  app.tableId = id;
  const saved = loadSeat(id);
  // no seat token kept here: the account's player token, which acts for the seat it holds (docs/api.md v1.3)
  app.token = saved && saved.token ? saved.token : accountToken();
  homeTitle(0);
  let view;
  try {
    await loadPresets();
    view = await api("GET", `/tables/${id}`);
  } catch (e) {
    if (e.status === 401 && app.token) { // a stale token: ask again
      if (app.token === accountToken()) forgetAccount(); // the session ended: a guest now
      app.token = null;
      saveSeat(id, null);
      return enterTable(id);
    }
    leaveTable();
    show("home");
    renderContinue();
    showError(e.status === 404 ? t("error.no_table") : errorText(e));
    return;
  }
  app.view = null;
  const watching = sessionStorage.getItem(`escoba.watch.${id}`) === "yes";
  if (!isSeated(view) && !watching) {
    const open = view.status === "waiting" && view.seats.some((s) => s.empty);
    app.view = view;
    const host = view.seats.find((s) => s.seat === view.host);
    $("join-info").textContent = open
      ? t("join.info", {
        host: host ? host.name : t("join.the_host"), table: view.name || t("join.a_table"),
        preset: presetName(view.preset), count: view.settings.target,
      })
      : t("join.closed");
    $("join-form").hidden = !open;
    show("join");
    if (open) $("join-name").focus();
    return;
  }
  startGame(view);
}

let notices = null;
const NAME_MAX = 40; // the API's longest name

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

// the create form's settings left out: the table's deck (the reader picks their own design), and the
// rated choice for a guest, who cannot play a rated game (docs/api.md v1.3: every seat an account)
const createSkips = () => (accountToken() ? ["deck"] : ["deck", "rated"]);

function wire() {
  $("open-table").addEventListener("click", async () => {
    try { await loadPresets(); } catch (e) { showError(errorText(e)); return; }
    $("create-form").hidden = false;
    $("open-table").hidden = true;
    buildSettings($("create-settings"), $("create-preset").value, null, undefined, { skip: createSkips() });
    $("create-name").focus();
  });
  $("create-preset").addEventListener("change", () => buildSettings($("create-settings"), $("create-preset").value, null, undefined, { skip: createSkips() }));
  $("create-deck").value = app.deck;
  $("create-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    showError("");
    const name = $("create-name").value.trim();
    const preset = $("create-preset").value;
    try {
      setDeck($("create-deck").value);
      const body = { name, preset, settings: readSettings($("create-settings"), preset) };
      // unnamed, the table is named in the host's language ("Ana's table", "Mesa de Ana"), not the server's
      const tableName = $("create-table-name").value.trim() || t("title.default_name", { name }).slice(0, NAME_MAX);
      body.table_name = tableName;
      const data = await api("POST", "/tables", body, playerHeaders()); // signed in: the account is seated
      saveSeat(data.table_id, { token: data.token, seat: data.seat, invite_url: data.invite_url });
      store("escoba.name", name);
      history.pushState({}, "", withLang(`/t/${data.table_id}`));
      app.token = data.token;
      app.tableId = data.table_id;
      let view = data.table;
      if (app.deck) view = await api("GET", `/tables/${data.table_id}`); // labels in the reader's design
      startGame(view);
      say(t("say.table_open"));
    } catch (err) {
      showError(errorText(err));
    }
  });
  $("join-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    showError("");
    const name = $("join-name").value.trim();
    try {
      app.token = null;
      const data = await api("POST", `/tables/${app.tableId}/seats`, { name }, playerHeaders());
      saveSeat(app.tableId, { token: data.token, seat: data.seat });
      store("escoba.name", name);
      app.token = data.token;
      startGame(data.table);
      say(t("say.seated", { n: data.seat + 1 }));
    } catch (err) {
      showError(errorText(err));
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
      say(t("say.copied"));
    } catch {
      const inp = $("invite-url");
      inp.select();
      try { document.execCommand("copy"); say(t("say.copied")); } catch { say(t("say.copy_by_hand")); }
    }
    $("copy-link").textContent = t("invite.copied");
    $("copy-link").setAttribute("aria-label", t("invite.copy"));
    setTimeout(() => { $("copy-link").textContent = t("invite.copy"); }, 1500);
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
  $("resign").addEventListener("click", () => confirmThen("resign"));
  $("menu-exit").addEventListener("click", () => confirmThen("exit"));
  $("confirm-yes").addEventListener("click", () => $("confirm").close("yes"));
  $("confirm-no").addEventListener("click", () => $("confirm").close("no"));
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
  startGamepad(actions);
  languageSelect($("home-lang"));
  languageSelect($("menu-lang"));
  wireAccount();
  onAccount(async (account) => { // signed in: this browser's guest seats become the account's, then the list
    if (account) { try { await claimGuestTables(); } catch { /* the list shows them as a guest's all the same */ } }
    if (!$("home").hidden) renderContinue();
  });
  window.addEventListener("popstate", route);
  document.addEventListener("click", onNavClick);
  let name = null;
  try { name = localStorage.getItem("escoba.name"); } catch { /* private mode */ }
  if (name) { $("create-name").value = name; $("join-name").value = name; }
}

// RESIGN and EXIT GAME (in the menu) ask in the page's own dialog; the answer closes it
const CONFIRM = {
  resign: { title: "confirm.resign_title", text: "confirm.resign", yes: "play.resign" },
  exit: { title: "confirm.exit_title", text: "confirm.exit", yes: "play.exit" },
};
function confirmThen(type) {
  const words = CONFIRM[type];
  const dlg = $("confirm");
  $("menu").close();
  $("confirm-title").textContent = t(words.title);
  $("confirm-text").textContent = t(words.text);
  $("confirm-yes").textContent = t(words.yes);
  dlg.returnValue = "";
  dlg.addEventListener("close", () => {
    if (dlg.returnValue === "yes") move(type);
    else $("menu-button").focus();
  }, { once: true });
  dlg.showModal();
  $("confirm-no").focus();
}

// ---------------------------------------------------------------- focus after an action
// ADD A BOT, START THE GAME and NEXT ROUND redraw what held the focus: it goes on to the next
// sensible control once a view newer than the move's start is drawn (the next ADD A BOT or START
// THE GAME; the hand's card in focus).
let focusWanted = null;
const FOCUS_WAIT = 10000; // ms: a view later than this is someone else's change, not our answer
const handFocus = () => {
  const cards = handCards();
  return !$("me").hidden && cards.length ? cards[Math.min(app.focusIndex, cards.length - 1)] : null;
};
const FOCUS_NEXT = {
  add_bot: () => document.querySelector(".waiting-seat .add-bot") || $("start"),
  remove_bot: () => document.querySelector(".waiting-seat .add-bot"),
  start: handFocus,
  next_round: handFocus,
};
function wantFocus(type, since) {
  if (!FOCUS_NEXT[type]) return;
  focusWanted = { find: FOCUS_NEXT[type], since, until: Date.now() + FOCUS_WAIT };
  tryFocus();
}
function tryFocus() {
  if (!focusWanted) return;
  if (Date.now() > focusWanted.until) { focusWanted = null; return; }
  const view = v();
  if (!view || view.version <= focusWanted.since) return;
  const el = focusWanted.find();
  if (el && visible(el)) {
    focusWanted = null;
    el.focus();
  }
}

function showSound(on) {
  $("sound").setAttribute("aria-pressed", on ? "true" : "false");
  $("sound").textContent = on ? t("menu.sound_on") : t("menu.sound_off");
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

// ---------------------------------------------------------------- keys and controller: one set of actions
const visible = (el) => !el.hidden && !el.disabled && el.getClientRects().length > 0;
const handCards = () => [...$("hand").querySelectorAll("button.card")];
// the buttons ↑ reaches: the round's or the game's end first (NEXT ROUND, REMATCH), then TAKE THE 15,
// then the play's (CAPTURE, LEAVE ON TABLE... RESIGN last)
const buttonRow = () => ["#overlay button, #overlay a.button", "#fifteen button", "#actions button"]
  .flatMap((sel) => [...document.querySelectorAll(sel)]).filter(visible);
const handShown = () => !$("game").hidden && !$("me").hidden && handCards().length > 0;
// the dialog's controls, or (with no hand to browse) every control on the screen, in page order
function controls(root) {
  return [...root.querySelectorAll("button, a[href], select, input:not([type=hidden]):not([readonly]), summary")]
    .filter((el) => visible(el) && !el.closest("[hidden]") && !el.closest("#hand") && !folded(el));
}
// inside a closed <details> (the account's panel) but its summary: laid out, yet it takes no focus, and a
// controller stepping onto it stood still
function folded(el) {
  const closed = el.parentElement && el.parentElement.closest("details:not([open])");
  return !!closed && !(el.tagName === "SUMMARY" && el.parentElement === closed);
}
function moveFocus(list, step) {
  if (!list.length) return;
  const at = list.indexOf(document.activeElement);
  const i = at < 0 ? (step > 0 ? 0 : list.length - 1) : (at + step + list.length) % list.length;
  list[i].focus();
}
function focusCard(i) {
  const cards = handCards();
  const n = (i + cards.length) % cards.length;
  app.focusIndex = n;
  cards.forEach((b, j) => { b.tabIndex = j === n ? 0 : -1; });
  cards[n].focus();
}
function stepSelect(sel, step) {
  const i = Math.max(0, Math.min(sel.options.length - 1, sel.selectedIndex + step));
  if (i === sel.selectedIndex) return;
  sel.selectedIndex = i;
  sel.dispatchEvent(new Event("change", { bubbles: true }));
}

/** What a key or a controller's button does: the keyboard and the Gamepad API call these. */
export const actions = {
  menu() {
    if ($("game").hidden) return;
    if ($("menu").open) $("menu").close();
    else openMenu();
  },
  back() {
    if ($("menu").open) $("menu").close();
    else if (document.body.classList.contains("chat-open")) setChatOpen(false);
  },
  sound() { showSound(toggleSound()); say(app.sound ? t("say.sound_on") : t("say.sound_off")); },
  full() { toggleFull(); },
  /** ← →: the hand's cards, or the buttons when one has the focus. */
  browse(step) {
    const active = document.activeElement;
    if ($("menu").open) {
      if (active && active.tagName === "SELECT") stepSelect(active, step);
      else moveFocus(controls($("menu")), step);
      return;
    }
    if (!handShown()) { moveFocus(controls(document.body), step); return; }
    const row = buttonRow();
    if (row.includes(active)) { moveFocus(row, step); return; }
    const inHand = $("hand").contains(active);
    focusCard(inHand ? app.focusIndex + step : app.focusIndex);
  },
  /** ↑: up to the buttons (NEXT ROUND, CAPTURE...). */
  up() {
    if ($("menu").open) { moveFocus(controls($("menu")), -1); return; } // ← → change a select; ↑ ↓ leave it
    const row = buttonRow();
    if (row.length && !row.includes(document.activeElement)) row[0].focus();
    else if (!handShown()) this.browse(-1);
  },
  /** ↓: back to the cards; with a card picked, the next 15 it makes. */
  down() {
    if ($("menu").open) { moveFocus(controls($("menu")), 1); return; }
    if (!handShown()) { this.browse(1); return; }
    if (app.picked && $("hand").contains(document.activeElement)) nextSet();
    else focusCard(Math.min(app.focusIndex, handCards().length - 1));
  },
  /** Enter, A or X: the control in focus, or the card in focus picked (and played when picked). */
  choose() {
    const active = document.activeElement;
    if (active && active !== document.body && /^(BUTTON|A)$/.test(active.tagName)) { active.click(); return; }
    if (handShown()) { pick(handCards()[Math.min(app.focusIndex, handCards().length - 1)].dataset.card); return; }
    const first = buttonRow()[0];
    if (first) first.focus();
  },
};

function onKey(e) {
  const tag = (e.target && e.target.tagName) || "";
  const typing = /INPUT|TEXTAREA|SELECT/.test(tag);
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if ($("confirm").open) return; // the dialog's own buttons and Esc
  if (e.key === "Escape" && document.body.classList.contains("chat-open")) { setChatOpen(false); return; }
  if (e.key === "Escape" || ((e.key === "p" || e.key === "P") && !typing)) {
    if ($("game").hidden) return;
    if ($("menu").open) return; // the dialog closes itself on Esc
    e.preventDefault();
    actions.menu();
    return;
  }
  if (typing) return;
  if (e.key === "m" || e.key === "M") { actions.sound(); return; }
  if (e.key === "f" || e.key === "F") { actions.full(); return; }
  if ($("game").hidden || $("menu").open || !handShown()) return; // the browser's own Tab and arrows
  const keys = {
    ArrowLeft: () => actions.browse(-1), ArrowRight: () => actions.browse(1),
    ArrowUp: () => actions.up(), ArrowDown: () => actions.down(),
  };
  if (keys[e.key]) {
    e.preventDefault();
    keys[e.key]();
  } else if (e.key === "Enter" && !(document.activeElement && document.activeElement.tagName === "BUTTON")) {
    e.preventDefault(); // on a button, Enter is the button's own click
    actions.choose();
  }
}

function route() {
  const m = location.pathname.match(/^\/t\/([^/?#]+)/);
  showError("");
  if (m) {
    const id = decodeURIComponent(m[1]);
    if (app.tableId && app.tableId !== id) leaveTable();
    enterTable(id);
  } else {
    leaveTable();
    show("home");
    renderContinue();
  }
}

// The site's own links (data-nav: the brand, NEW TABLE, "continue your table") move in this page with a
// history state, so Back and Forward go between the home and a table without a reload.
function onNavClick(e) {
  const a = e.target.closest && e.target.closest("a[data-nav]");
  if (!a || e.defaultPrevented || e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey || e.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  e.preventDefault();
  if (url.pathname + url.search !== location.pathname + location.search) history.pushState({}, "", url.pathname + url.search);
  route();
}

Object.assign(handlers, { move, pick, toggleTable, startDrag, buildSettings });
hooks.keepPick = keepPick;
hooks.afterRender = (old, view) => {
  tryFocus();
  if (notices) { try { notices.update(view); } catch { /* notices are optional */ } }
  for (const f of page.onView) { try { f(old, view); } catch { /* optional */ } }
};
// game over: a link to the move-by-move review (review.html, served at /t/<id>/review)
page.reviewUrl = (view) => withLang(`/t/${encodeURIComponent(view.table_id || app.tableId)}/review`);
window.escobaShowing = busyShowing; // tests wait for the plays to be shown
// the strip of plays keeps its latest in view when its width changes (a rotation, a resize)
if (typeof ResizeObserver !== "undefined") {
  new ResizeObserver(() => { const s = $("strip"); s.scrollLeft = s.scrollWidth; }).observe($("strip"));
}
wire();
route();
