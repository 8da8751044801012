// Game review: step through a finished game, every hand shown, from the server's log.
//
// The server builds every state (GET /tables/{id}/review/{version}); this page only shows
// them and never works out a rule. Who may look: a seat token of this table (from the
// table page's localStorage) once the game is over, or an operator's admin token (asked
// here, kept in this tab's sessionStorage) for any table at any version.

const $ = (sel) => document.querySelector(sel);
const tableId = decodeURIComponent(location.pathname.split("/")[2] || "");
const ADMIN_KEY = "escoba.admin";

const state = { token: null, operator: false, steps: [], last: 0, version: 1, loading: 0 };

function seatToken() {
  try {
    const saved = JSON.parse(localStorage.getItem(`escoba.table.${tableId}`) || "null");
    return saved && saved.token ? saved.token : null;
  } catch { return null; }
}

function adminToken() {
  try { return sessionStorage.getItem(ADMIN_KEY); } catch { return null; }
}

class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || `The server answered ${status}.`);
    this.status = status;
    this.code = err.code || "error";
  }
}

async function api(path) {
  const res = await fetch(path, { headers: { Authorization: `Bearer ${state.token}` } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

function showError(message) {
  const el = $("#error");
  el.textContent = message || "";
  el.hidden = !message;
}

function cardItem(code, labels) {
  const li = document.createElement("li");
  li.dataset.card = code;
  li.textContent = labels[code] || code;
  const suit = code.slice(-1);
  if (suit === "o" || suit === "c") li.classList.add("red");
  return li;
}

function cardList(el, cards, labels) {
  el.replaceChildren(...cards.map((c) => cardItem(c, labels)));
  el.dataset.cards = cards.join(" ");
}

function seatName(view, seat) {
  const s = view.seats[seat];
  return s && s.name ? s.name : `Seat ${seat + 1}`;
}

function describe(record, view) {
  const who = record.actor && record.actor.startsWith("seat:")
    ? seatName(view, Number(record.actor.slice(5))) : record.actor;
  return `v${record.version} ${record.type} (${who}) ${record.summary || ""}`.trim();
}

function render(step) {
  const view = step.table;
  const labels = view.labels || {};
  document.body.dataset.version = String(step.version);
  document.body.dataset.last = String(state.last);
  $("#step-label").textContent = `step ${step.version} of ${state.last}`;
  $("#step-range").max = String(state.last);
  $("#step-range").value = String(step.version);
  $("#step-first").disabled = $("#step-prev").disabled = step.version <= 1;
  $("#step-next").disabled = $("#step-last").disabled = step.version >= state.last;
  const event = $("#review-event");
  event.textContent = describe(step.record, view);
  event.dataset.type = step.record.type;

  const seats = $("#review-seats");
  const rows = [];
  view.seats.forEach((s, i) => {
    if (s.empty) return;
    const box = document.createElement("article");
    box.className = "review-seat";
    box.dataset.seat = String(i);
    if (view.status === "playing" && view.turn === i) box.classList.add("turn");
    const h = document.createElement("h4");
    h.textContent = `${s.name}${s.kind === "bot" ? " (bot)" : ""}${view.dealer === i ? ", dealer" : ""}`
      + `${view.status === "playing" && view.turn === i ? ": to play" : ""}`;
    const hand = document.createElement("ul");
    hand.className = "review-cards hand";
    hand.dataset.seat = String(i);
    hand.setAttribute("aria-label", `${s.name}'s hand`);
    cardList(hand, (view.hands && view.hands[String(i)]) || [], labels);
    box.append(h, hand);
    rows.push(box);
  });
  seats.replaceChildren(...rows);

  cardList($("#review-table"), view.table_cards, labels);
  $("#review-stock").textContent = `${view.stock_count} cards in the stock`
    + ` \u00B7 round ${view.round || 0}, game ${view.game || 0} \u00B7 ${view.status}`;

  const scores = view.scores.map((side, k) => {
    const li = document.createElement("li");
    const names = side.seats.map((s) => seatName(view, s)).join(" & ");
    const cap = (view.captured || [])[k] || {};
    li.textContent = `${names}: ${side.points} points; captured ${cap.cards || 0} cards, `
      + `${cap.escobas || 0} escobas`;
    const pile = document.createElement("ul");
    pile.className = "review-cards pile";
    pile.setAttribute("aria-label", `${names}'s captured cards`);
    cardList(pile, (view.piles && view.piles[k]) || [], labels);
    li.append(pile);
    return li;
  });
  if (view.winners) {
    const li = document.createElement("li");
    li.textContent = `Winners: ${view.winners.map((s) => seatName(view, s)).join(" & ") || "nobody"}`;
    scores.push(li);
  }
  $("#review-scores").replaceChildren(...scores);
}

async function go(version) {
  const n = Math.max(1, Math.min(state.last, version));
  const ticket = ++state.loading;
  try {
    const step = await api(`/tables/${encodeURIComponent(tableId)}/review/${n}`);
    if (ticket !== state.loading) return; // a later step was asked for meanwhile
    state.version = n;
    render(step);
    showError("");
    const params = new URLSearchParams(location.search);
    params.set("v", String(n));
    history.replaceState(null, "", `?${params}`);
  } catch (e) {
    showError(e.message);
  }
}

async function start() {
  state.operator = false;
  state.token = seatToken();
  const admin = adminToken();
  const wantsOperator = new URLSearchParams(location.search).has("operator");
  if (admin && (wantsOperator || !state.token)) { state.token = admin; }
  if (!state.token) {
    showError("Open the table from the browser you played on to review it, or use the admin token.");
    $("#admin-form").hidden = false;
    return;
  }
  let index;
  try {
    index = await api(`/tables/${encodeURIComponent(tableId)}/review`);
  } catch (e) {
    showError(e.message);
    $("#review").hidden = true;
    $("#admin-form").hidden = false;
    document.body.dataset.refused = e.code;
    return;
  }
  delete document.body.dataset.refused;
  state.operator = index.operator;
  state.steps = index.steps;
  state.last = index.last;
  document.body.dataset.operator = String(index.operator);
  $("#review-title").textContent = `Review: ${index.name}${index.operator ? " (operator)" : ""}`;
  $("#admin-form").hidden = true;
  $("#review").hidden = false;
  const asked = Number(new URLSearchParams(location.search).get("v")) || 1;
  await go(asked);
}

function wire() {
  $("#back").href = `/t/${encodeURIComponent(tableId)}`;
  $("#step-first").addEventListener("click", () => go(1));
  $("#step-prev").addEventListener("click", () => go(state.version - 1));
  $("#step-next").addEventListener("click", () => go(state.version + 1));
  $("#step-last").addEventListener("click", () => go(state.last));
  $("#step-range").addEventListener("input", (e) => go(Number(e.target.value)));
  document.addEventListener("keydown", (e) => {
    if ($("#review").hidden || e.target.closest("input, textarea, select")) return;
    if (e.key === "ArrowRight") go(state.version + 1);
    else if (e.key === "ArrowLeft") go(state.version - 1);
    else if (e.key === "Home") go(1);
    else if (e.key === "End") go(state.last);
    else return;
    e.preventDefault();
  });
  $("#admin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    try { sessionStorage.setItem(ADMIN_KEY, $("#admin-token").value.trim()); } catch { /* private mode */ }
    $("#admin-token").value = "";
    const params = new URLSearchParams(location.search);
    params.set("operator", "1");
    history.replaceState(null, "", `?${params}`);
    start();
  });
}

wire();
start();
