// The tables this browser holds a seat at (their seat tokens kept in localStorage by state.saveSeat):
// the home offers to continue them. One place for the list, so a fuller one (a player's games from
// the server, issue "Players who come back") grows here.

import { t, withLang } from "./i18n.js";
import { $, storeKey } from "./state.js";

const PREFIX = storeKey("");
const SHOWN = 6; // the latest few: each is asked of the server

/** Every table with a seat token here, the latest first: [{ id, token, at }]. */
export function heldTables() {
  const out = [];
  let keys = [];
  try { keys = Object.keys(localStorage).filter((k) => k.startsWith(PREFIX)); } catch { return out; }
  for (const key of keys) {
    let seat = null;
    try { seat = JSON.parse(localStorage.getItem(key) || "null"); } catch { seat = null; }
    if (seat && seat.token) out.push({ id: key.slice(PREFIX.length), token: seat.token, at: Number(seat.at) || 0 });
  }
  return out.sort((a, b) => b.at - a.at);
}

async function look(table) {
  try {
    const res = await fetch(`/tables/${encodeURIComponent(table.id)}`, {
      headers: { Accept: "application/json", Authorization: `Bearer ${table.token}` },
    });
    return res.ok ? await res.json() : null;
  } catch {
    return null;
  }
}

function stateText(view) {
  if (view.status === "playing" && view.you !== null && view.you !== undefined && view.turn === view.you) {
    return t("home.continue.your_turn");
  }
  const key = { waiting: "home.continue.waiting", round_over: "home.continue.round_over" }[view.status];
  return t(key || "home.continue.playing");
}

let drawing = 0;
/** Fill the home's "Continue your table" with the held tables still being played. */
export async function renderContinue() {
  const mine = ++drawing;
  const box = $("continue");
  const list = $("continue-list");
  const held = heldTables().slice(0, SHOWN);
  const views = await Promise.all(held.map(look));
  if (mine !== drawing) return; // a newer call draws the list
  list.replaceChildren();
  views.forEach((view, i) => {
    if (!view || !["waiting", "playing", "round_over"].includes(view.status)) return;
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = withLang(`/t/${encodeURIComponent(held[i].id)}`);
    a.dataset.nav = "";
    a.className = "button";
    a.textContent = view.name || t("title.unnamed");
    const note = document.createElement("span");
    note.className = "note";
    note.textContent = stateText(view);
    li.append(a, note);
    list.append(li);
  });
  box.hidden = !list.children.length;
}
