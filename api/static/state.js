// What the page knows: the view it shows, the seat's token, the pick in hand.
// Every rule comes from the server's view (`options`, `fifteen_to_take`, `history`,
// `last_round`...): the page never adds to 15 or decides who takes what.

import { t } from "./i18n.js";

export const $ = (id) => document.getElementById(id);

function stored(key, fallback) {
  try { return localStorage.getItem(key) ?? fallback; } catch { return fallback; }
}
export function store(key, value) {
  try { localStorage.setItem(key, value); } catch { /* private mode */ }
}

export const app = {
  deck: stored("escoba.deck", ""), // the reader's own deck design ("" = the table's)
  sound: stored("escoba.sound", "on") !== "off",
  // every wait of the animations is multiplied by this (tests speed it up)
  pace: Math.max(0, Number(stored("escoba.pace", "1")) || 0),
  presets: null, // GET /presets: each preset's defaults and what a host may choose
  tableId: null,
  token: null,
  spectator: false,
  view: null, // the view drawn now (may lag the server while plays are shown)
  latest: 0, // the newest version received
  picked: null, // card code picked in hand
  selected: new Set(), // table cards marked for capture
  setIndex: -1, // which of the picked card's sets ↓ marked
  focusIndex: 0,
  busy: false,
  leftovers: null, // {round, cards, seat} from the round's RoundEnded event
  sweeps: new Map(), // "game:round:index" of a history entry → "ESCOBA!" as it was announced
};

export const storeKey = (id) => `escoba.table.${id}`;
export function loadSeat(id) {
  try { return JSON.parse(localStorage.getItem(storeKey(id)) || "null"); } catch { return null; }
}
export function saveSeat(id, data) {
  // when: the home lists the tables this browser holds, the latest first (mytables.js)
  store(storeKey(id), JSON.stringify(data ? { ...data, at: Date.now() } : data));
}

export async function api(method, path, body, extraHeaders = {}) {
  const headers = { Accept: "application/json", ...extraHeaders };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (app.token) headers.Authorization = `Bearer ${app.token}`;
  // each player's deck design changes only the labels of their own view
  if (app.deck && path.startsWith("/tables/")) path += `${path.includes("?") ? "&" : "?"}deck=${app.deck}`;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    const err = (data && data.error) || { code: null, message: "" };
    const e = new Error(err.message || String(res.status));
    e.code = err.code; e.status = res.status; e.details = err.details;
    throw e;
  }
  return data;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms * app.pace));

// Each API error `code` the page words itself (the server's `message` is English, for developers)
const ERRORS = {
  bad_request: "error.bad_request", unauthorized: "error.unauthorized", forbidden: "error.forbidden",
  host_only: "error.host_only", not_found: "error.not_found", not_your_turn: "error.not_your_turn",
  table_full: "error.table_full", seat_taken: "error.seat_taken", game_started: "error.game_started",
  version_conflict: "error.version_conflict", no_rematch: "error.no_rematch", illegal_capture: "error.illegal_capture",
  must_capture: "error.must_capture", card_not_in_hand: "error.card_not_in_hand", not_on_table: "error.not_on_table",
  no_fifteen_to_take: "error.no_fifteen_to_take", rate_limited: "error.rate_limited", unavailable: "error.unavailable",
  table_closed: "error.table_closed", table_expired: "error.table_expired", not_playing: "error.not_playing",
  not_enough_players: "error.not_enough_players", not_between_rounds: "error.not_between_rounds",
  game_over: "error.game_over", away_not_open: "error.away_not_open", game_in_progress: "error.game_in_progress",
  method_not_allowed: "error.method_not_allowed",
};

/** What went wrong, in the reader's words: from the API's `code`, never its English message. */
export function errorText(e) {
  if (e && e.code && ERRORS[e.code]) return t(ERRORS[e.code]);
  if (e && e.code) return t("error.other", { code: String(e.code) }); // a code newer than this page
  if (e && e.status) return t("error.status", { status: String(e.status) });
  return t("error.network");
}

export function showError(message) {
  const el = $("error");
  el.textContent = message || "";
  el.hidden = !message;
}

// The live line: an ESCOBA! (or any held message) is not wiped by the next
// "X's turn": later messages are added after it until the hold runs out.
let heldUntil = 0;
let held = "";
export function say(message, { hold = 0 } = {}) {
  const el = $("live");
  const now = Date.now();
  let text = message;
  if (now < heldUntil && held && !hold) text = `${held} ${message}`;
  if (hold) { held = message; heldUntil = now + hold * Math.max(app.pace, 0.5); }
  if (el.textContent === text) el.textContent = "";
  el.textContent = text;
}

// ---------------------------------------------------------------- view helpers
export const v = () => app.view;
export const isSeated = (view = v()) => !!view && view.you !== null && view.you !== undefined;

export function label(card, view = v()) {
  return (view && view.labels && view.labels[card]) || card;
}
export const worth = (card) => parseInt(card, 10);

export function seatName(seat, view = v()) {
  const s = view && view.seats.find((x) => x.seat === seat);
  if (!s || s.empty) return t("seat.numbered", { n: seat + 1 });
  // two bots (or players) with one name are told apart by their seat
  const twin = view.seats.some((x) => !x.empty && x.seat !== seat && x.name === s.name);
  const name = twin ? t("seat.twin", { name: s.name, n: seat + 1 }) : s.name;
  return s.seat === view.you ? t("seat.you", { name }) : name;
}
export const sideName = (side, view = v()) => side.seats.map((s) => seatName(s, view)).join(" & ");

export function myTurn(view = v()) {
  return !!view && view.status === "playing" && isSeated(view) && view.turn === view.you;
}
export function optionFor(card) {
  const opts = (v() && v().options) || [];
  return opts.find((o) => o.card === card) || null;
}
export function isHost(view = v()) {
  return isSeated(view) && view.host === view.you;
}
export function inviteUrl() {
  const saved = loadSeat(app.tableId);
  return (saved && saved.invite_url) || `${location.origin}/t/${app.tableId}`;
}
export const inGameSeats = (view) => view.seats.filter((s) => !s.empty && s.in_game !== false);
