// The home's list of your games (docs/api.md v1.3 "Players"): signed in, the account's (GET /me/tables,
// on any device); as a guest, the tables whose seat tokens this browser kept (state.saveSeat), asked
// of the server in one POST /tables/summaries. Each row: whose turn, the table, its players, how long
// the turn has waited and when END GAME: PLAYER AWAY opens; the tab title counts the games at your turn.

import { account, accountToken, forgetAccount } from "./account.js";
import { lang, t, withLang } from "./i18n.js";
import { $, api, storeKey } from "./state.js";

const PREFIX = storeKey("");
const MAX_TOKENS = 100; // POST /tables/summaries and /me/claim take 1..100
const CLAIMED = "escoba.claimed"; // the guest tokens already offered to an account: claimed once

/** Every table with a seat token here, the latest first: [{ id, token, at }]. */
export function heldTables() {
  const out = [];
  let keys = [];
  try { keys = Object.keys(localStorage).filter((k) => k.startsWith(PREFIX)); } catch { return out; }
  for (const key of keys) {
    let seat = null;
    try { seat = JSON.parse(localStorage.getItem(key) || "null"); } catch { seat = null; }
    // a player token kept for a table (opened signed in) is not a guest's seat: the account lists it
    if (seat && seat.token && !String(seat.token).startsWith("P.")) out.push({ id: key.slice(PREFIX.length), token: seat.token, at: Number(seat.at) || 0 });
  }
  return out.sort((a, b) => b.at - a.at);
}


const bearer = (token) => ({ Authorization: `Bearer ${token}` });

/** After a sign-in: the guest seats this browser kept become the account's (POST /me/claim), once. */
export async function claimGuestTables() {
  const a = account();
  if (!a) return 0;
  let done = {};
  try { done = JSON.parse(localStorage.getItem(CLAIMED) || "{}") || {}; } catch { done = {}; }
  const asked = new Set(done[a.player_id] || []);
  const tokens = heldTables().map((h) => h.token).filter((tok) => !asked.has(tok)).slice(0, MAX_TOKENS);
  if (!tokens.length) return 0;
  const answer = await api("POST", "/me/claim", { tokens }, bearer(a.token));
  done[a.player_id] = [...asked, ...tokens];
  try { localStorage.setItem(CLAIMED, JSON.stringify(done)); } catch { /* private mode */ }
  return answer.claimed;
}

async function rows() {
  const token = accountToken();
  if (token) {
    try {
      return (await api("GET", "/me/tables", undefined, bearer(token))).tables;
    } catch (e) {
      if (e.status === 401) forgetAccount(); // the session ended (signed out elsewhere): a guest here
      else throw e;
    }
  }
  const held = heldTables();
  const tokens = held.map((h) => h.token).filter(named).slice(0, MAX_TOKENS);
  const found = tokens.length ? (await api("POST", "/tables/summaries", { tokens })).tables : [];
  // a token issued before v1.3 names no table: the summaries leave it out, so its table is asked itself
  const older = await Promise.all(held.filter((h) => !named(h.token)).slice(0, OLDER).map(olderRow));
  const rest = older.filter(Boolean);
  return [...found.filter((r) => r.your_turn), ...rest.filter((r) => r.your_turn),
    ...found.filter((r) => !r.your_turn), ...rest.filter((r) => !r.your_turn)];
}

const OLDER = 6; // the latest few older tokens: each is one GET
const named = (token) => String(token).includes("."); // `<table id>.<secret>` (docs/api.md v1.3)

async function olderRow(h) {
  try {
    const view = await api("GET", `/tables/${encodeURIComponent(h.id)}`, undefined, bearer(h.token));
    const mine = view.you !== null && view.you !== undefined;
    return { table_id: h.id, name: view.name, status: view.status,
      your_turn: view.status === "playing" && mine && view.turn === view.you,
      players: view.seats.filter((x) => !x.empty).map((x) => x.name) };
  } catch {
    return null;
  }
}

function stateText(row) {
  if (row.your_turn) return t("mygames.your_turn");
  const key = { waiting: "mygames.waiting", round_over: "mygames.round_over" }[row.status];
  return t(key || "mygames.their_turn");
}

/** "3 minutes", "2 hours", "5 days": the largest whole unit. */
function span(ms) {
  const minutes = Math.max(0, Math.floor(ms / 60000));
  if (minutes < 60) return t("mygames.minutes", { count: minutes });
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return t("mygames.hours", { count: hours });
  return t("mygames.days", { count: Math.floor(hours / 24) });
}

function awayText(row, now) {
  const at = Date.parse(row.away_claimable_at);
  if (Number.isNaN(at)) return "";
  const when = new Intl.DateTimeFormat(lang, { dateStyle: "short", timeStyle: "short" }).format(new Date(at));
  // at your turn, when the others may end the game; at theirs, when you may
  if (row.your_turn) return t(at <= now ? "mygames.you_away_now" : "mygames.you_away_at", { time: when });
  return t(at <= now ? "mygames.away_now" : "mygames.away_at", { time: when });
}

function span_(text, cls) {
  const el = document.createElement("span");
  el.className = cls;
  el.textContent = text;
  return el;
}

/** The tab title on the home: "(2) Escoba..." when two games wait on you. */
export function homeTitle(count = 0) {
  const title = t("page.title");
  document.title = count > 0 ? t("mygames.tab_title", { count, title }) : title;
}

const REFRESH_MS = 60000; // the home redraws its list each minute: waits grow, turns come round
let refresher = 0;

let drawing = 0;
/** Fill the home's list with your games still being played (signed in or as a guest). */
export async function renderContinue() {
  if (!refresher) refresher = setInterval(() => { if (!$("home").hidden) renderContinue(); }, REFRESH_MS);
  const mine = ++drawing;
  const box = $("continue");
  const list = $("continue-list");
  let found = [];
  try { found = await rows(); } catch { found = []; }
  if (mine !== drawing) return; // a newer call draws the list
  const token = accountToken();
  const held = new Map(heldTables().map((h) => [h.id, h.token]));
  const now = Date.now();
  list.replaceChildren();
  const live = found.filter((row) => ["waiting", "playing", "round_over"].includes(row.status));
  for (const row of live) {
    // the table opens with the token that holds this seat: this browser's kept one, else the account's
    // (main.js enterTable falls back to the player token)
    if (!held.has(row.table_id) && !token) continue;
    const li = document.createElement("li");
    li.className = row.your_turn ? "mine your-turn" : "mine";
    li.dataset.table = row.table_id;
    const a = document.createElement("a");
    a.href = withLang(`/t/${encodeURIComponent(row.table_id)}`);
    a.dataset.nav = "";
    a.className = row.your_turn ? "button primary" : "button";
    a.textContent = row.name || t("title.unnamed");
    const info = document.createElement("span");
    info.className = "mine-info";
    info.append(span_(stateText(row), row.your_turn ? "turn-word yours" : "turn-word"));
    if ((row.players || []).length) info.append(span_(row.players.join(", "), "mine-players"));
    if (row.status === "playing" && row.updated_at) {
      const since = Date.parse(row.updated_at);
      if (!Number.isNaN(since)) info.append(span_(t("mygames.waited", { time: span(now - since) }), "mine-waited"));
    }
    if (row.away_claimable_at) info.append(span_(awayText(row, now), "mine-away"));
    li.append(a, info);
    list.append(li);
  }
  box.hidden = !list.children.length;
  if (!$("home").hidden) homeTitle(live.filter((row) => row.your_turn).length);
}
