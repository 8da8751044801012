// Game review: step through a finished game, every hand shown, from the server's log; each step
// said as the table page announces a play, its cards drawn as cards, the round-end box at each
// round's end, and the game's analysis (GET/POST /tables/{id}/analysis) beside the moves.
//
// The server builds every state (GET /tables/{id}/review/{version}) and judges every move; this
// page only shows them and never works out a rule. Who may look: a seat token of this table (from
// the table page's localStorage) once the game is over, or an operator's admin token (asked here,
// kept in this tab's sessionStorage) for any table at any version.

import { cardFigure } from "./cards.js";
import { startGamepad } from "./gamepad.js";
import { languageSelect, lang, t, withLang } from "./i18n.js";
import { fillScoreTable } from "./scorebox.js";
import { app, errorText, seatName } from "./state.js";
import { cardName, cardsText, moveText, namesText, playText } from "./words.js";

const $ = (sel) => document.querySelector(sel);
const tableId = decodeURIComponent(location.pathname.split("/")[2] || "");
const ADMIN_KEY = "escoba.admin";
const POLL_MS = 1500;
// the reader's deck design, as the table page keeps it (a ?deck= in the address wins): labels only
const DECK = new URLSearchParams(location.search).get("deck") || app.deck;

const state = {
  final: null, // the table at the review's last step: every seat's player, named (a bot too), for the analysis
  token: null, operator: false, seated: false, steps: [], last: 0, version: 1, loading: 0, step: null,
  analysis: null, // the answer of GET .../analysis once done: {seats: [{seat, accuracy, moves}]}
  polling: null,
};

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
    super(err.message || String(status));
    this.status = status;
    this.code = err.code || null;
  }
}

async function api(path, method = "GET") {
  const res = await fetch(path, { method, headers: { Authorization: `Bearer ${state.token}`, Accept: "application/json" } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, body);
  return { status: res.status, body };
}

function showError(message) {
  const el = $("#error");
  el.textContent = message || "";
  el.hidden = !message;
}

const number = (n, digits = 2) => new Intl.NumberFormat(lang, { maximumFractionDigits: digits }).format(n);

// ---------------------------------------------------------------- cards
function cardItem(code, view) {
  const li = document.createElement("li");
  li.dataset.card = code;
  const name = document.createElement("span");
  name.className = "sr-only";
  name.textContent = cardName(code, view);
  li.append(cardFigure(code, view), name);
  return li;
}

function cardList(el, cards, view) {
  el.replaceChildren(...cards.map((c) => cardItem(c, view)));
  el.dataset.cards = cards.join(" ");
}

/** A play drawn: the card, an arrow, what it took. */
function drawPlay(el, card, captured, view) {
  const items = [];
  if (card) items.push(cardItem(card, view));
  if (captured && captured.length) {
    const arrow = document.createElement("li");
    arrow.className = "arrow";
    arrow.setAttribute("aria-hidden", "true");
    arrow.textContent = "→";
    items.push(arrow, ...captured.map((c) => cardItem(c, view)));
  }
  el.replaceChildren(...items);
  el.hidden = !items.length;
}

// ---------------------------------------------------------------- a step in words
const REASONS = {
  target: "result.why.target", score: "result.why.target", resign: "result.why.resign",
  exit: "result.why.exit", away: "result.why.away",
};

/** The step's event said as the table page says it ("Ana: 7 of coins takes 8 of cups ESCOBA!"). */
export function describe(record, view) {
  const d = record.data || {};
  const who = (seat) => seatName(seat, view);
  const escoba = (text, on) => (on ? t("review.with_escoba", { play: text, escoba: t("banner.escoba") }) : text);
  switch (record.type) {
    case "TableOpened": return t("step.opened", { who: d.host_name || "", table: d.name || t("title.unnamed") });
    case "PlayerSeated": return t("step.seated", { who: d.name, n: d.seat + 1 });
    case "BotAdded": return t("step.bot_added", { who: d.name, n: d.seat + 1 });
    case "BotRemoved": return t("step.bot_removed", { n: d.seat + 1 });
    case "PartnerChosen": return t("step.partner", { who: who(d.seat) });
    case "SettingsChanged": return t("step.settings");
    case "GameStarted": return t("step.game_started", { n: d.game });
    case "RoundDealt": return t("step.round_dealt", { n: d.round, who: who(d.dealer) });
    case "OpeningTableTaken": {
      const text = playText({ kind: "opening", seat: d.seat, captured: d.cards || [] }, view);
      if (d.escobas >= 2) return t("review.with_escoba", { play: text, escoba: t("banner.double_escoba") });
      return escoba(text, d.escobas >= 1);
    }
    case "HandsDealt": return d.last_deal ? t("step.last_deal") : t("step.dealt");
    case "CardPlayed":
      return escoba(playText({ kind: "play", seat: d.seat, card: d.card, captured: d.captured || [] }, view), d.escoba);
    case "FifteenTaken":
      return escoba(playText({ kind: "fifteen", seat: d.seat, card: d.card, captured: d.captured || [] }, view), d.escoba);
    case "RoundEnded":
      return d.leftovers && d.leftovers.length && d.to_seat !== null && d.to_seat !== undefined
        ? t("say.leftovers", { who: who(d.to_seat), cards: cardsText(d.leftovers, view), count: d.leftovers.length })
        : t("step.round_ended");
    case "RoundScored": return t("step.round_scored", { n: d.round });
    case "PlayerResigned": return d.how === "exit" ? t("step.exit", { who: who(d.seat) }) : t("step.resigned", { who: who(d.seat) });
    case "AwayOpened": return t("step.away_opened", { who: who(d.seat) });
    case "AwayClaimed": return t("step.away_claimed", { who: who(d.seat), away: who(d.away) });
    case "GameFinished": {
      const winners = d.winners || [];
      const why = REASONS[d.reason] ? t(REASONS[d.reason]) : "";
      if (!winners.length) return t("result.no_winner");
      const names = namesText(winners, view);
      return why ? t("result.win_why", { names, count: winners.length, why }) : t("result.win", { names, count: winners.length });
    }
    case "TableExpired": return t("step.expired");
    case "RematchAnswered": return d.accept ? t("step.rematch_yes", { who: who(d.seat) }) : t("step.rematch_no", { who: who(d.seat) });
    case "RematchLapsed": return t("rematch.lapsed");
    case "RematchStarted": return t("step.rematch_started");
    default: return t("step.other");
  }
}

// ---------------------------------------------------------------- drawing a step
function render(step) {
  const view = step.table;
  const d = step.record.data || {};
  state.step = step;
  document.body.dataset.version = String(step.version);
  document.body.dataset.last = String(state.last);
  $("#step-label").textContent = t("review.step_of", { n: step.version, last: state.last });
  $("#step-range").max = String(state.last);
  $("#step-range").value = String(step.version);
  $("#step-range").setAttribute("aria-valuetext", t("review.step_of", { n: step.version, last: state.last }));
  $("#step-first").disabled = $("#step-prev").disabled = step.version <= 1;
  $("#step-next").disabled = $("#step-last").disabled = step.version >= state.last;
  const event = $("#review-event");
  event.textContent = describe(step.record, view);
  event.dataset.type = step.record.type;
  if (step.record.type === "CardPlayed" || step.record.type === "FifteenTaken") drawPlay($("#review-play"), d.card, d.captured, view);
  else if (step.record.type === "OpeningTableTaken") drawPlay($("#review-play"), null, d.cards, view);
  else if (step.record.type === "RoundEnded") drawPlay($("#review-play"), null, d.leftovers, view);
  else drawPlay($("#review-play"), null, [], view);

  const round = $("#review-round");
  round.hidden = !(step.record.type === "RoundScored" && view.last_round);
  if (!round.hidden) {
    $("#review-round-title").textContent = t("round.title", { n: d.round });
    fillScoreTable($("#review-score"), view, view.last_round);
  }

  const rows = [];
  view.seats.forEach((s, i) => {
    if (s.empty) return;
    const box = document.createElement("article");
    box.className = "review-seat";
    box.dataset.seat = String(i);
    const turn = view.status === "playing" && view.turn === i;
    if (turn) box.classList.add("turn");
    const h = document.createElement("h4");
    let title = seatName(i, view);
    if (s.kind === "bot") title = t("waiting.bot", { name: title });
    if (view.dealer === i) title = t("review.dealer", { name: title });
    if (turn) title = t("review.to_play", { name: title });
    h.textContent = title;
    const hand = document.createElement("ul");
    hand.className = "review-cards hand";
    hand.dataset.seat = String(i);
    hand.setAttribute("aria-label", t("review.hand_of", { name: seatName(i, view) }));
    cardList(hand, (view.hands && view.hands[String(i)]) || [], view);
    box.append(h, hand);
    rows.push(box);
  });
  $("#review-seats").replaceChildren(...rows);

  cardList($("#review-table"), view.table_cards, view);
  $("#review-table").setAttribute("aria-label", t("review.on_table"));
  const status = { waiting: "status.waiting", playing: "status.playing", round_over: "status.round_over",
    finished: "status.finished", expired: "status.expired" }[view.status];
  $("#review-stock").textContent = t("review.stock", {
    count: view.stock_count, round: view.round || 0, game: view.game || 0, status: status ? t(status) : view.status,
  });

  const scores = view.scores.map((side, k) => {
    const li = document.createElement("li");
    const names = namesText(side.seats, view);
    const cap = (view.captured || [])[k] || {};
    li.append(document.createTextNode(t("review.side_score", {
      names,
      points: t("count.points", { count: side.points }),
      cards: t("count.captured", { count: cap.cards || 0 }),
      escobas: t("count.escobas", { count: cap.escobas || 0 }),
    })));
    const pile = document.createElement("ul");
    pile.className = "review-cards pile";
    pile.setAttribute("aria-label", t("review.pile_of", { names }));
    cardList(pile, (view.piles && view.piles[k]) || [], view);
    li.append(pile);
    return li;
  });
  if (view.winners) {
    const li = document.createElement("li");
    li.className = "winners";
    li.textContent = view.winners.length ? t("review.winners", { names: namesText(view.winners, view), count: view.winners.length }) : t("review.no_winners");
    scores.push(li);
  }
  $("#review-scores").replaceChildren(...scores);
  renderJudgement();
}

// ---------------------------------------------------------------- the analysis
const LABELS = { inaccuracy: "analysis.inaccuracy", mistake: "analysis.mistake", blunder: "analysis.blunder" };

function movesBy() {
  const out = new Map(); // version -> {seat, move}
  for (const s of (state.analysis && state.analysis.seats) || []) for (const m of s.moves || []) out.set(m.version, { seat: s.seat, move: m });
  return out;
}

/** This step's move judged: its loss and label, and the best move drawn. */
function renderJudgement() {
  const box = $("#review-judgement");
  const step = state.step;
  const found = step && movesBy().get(step.version);
  box.hidden = !found;
  if (!found) return;
  const { move } = found;
  const view = step.table;
  box.dataset.label = move.label || "none";
  const best = move.loss <= 0 || (move.best && JSON.stringify(move.best) === JSON.stringify(move.played));
  let text;
  if (best) text = t("analysis.best_played");
  else {
    const loss = t("analysis.loss", { loss: number(move.loss), count: move.loss });
    text = move.label ? t("analysis.labelled", { label: t(LABELS[move.label]), loss }) : loss;
    text = t("analysis.better", { judged: text, best: moveText(move.best, view) });
  }
  $("#judgement-text").textContent = text;
  const drawn = $("#judgement-best");
  if (best || !move.best) drawn.replaceChildren();
  else if (move.best.type === "take_fifteen") drawPlay(drawn, null, move.best.cards || [], view);
  else drawPlay(drawn, move.best.card, move.best.capture || [], view);
  drawn.hidden = best || !move.best;
}

// the players by the names they had at the game's end: a bot seated after the first step is
// Carmen, Tito or Luna, never "Seat 2"
function seatNameIn(seat) {
  const view = state.final || (state.step && state.step.table);
  return view ? seatName(seat, view) : t("seat.numbered", { n: seat + 1 });
}

const SVG = "http://www.w3.org/2000/svg";
function svg(name, attrs = {}) {
  const e = document.createElementNS(SVG, name);
  for (const [k, val] of Object.entries(attrs)) e.setAttribute(k, String(val));
  return e;
}
const CHART = { w: 640, h: 180, left: 36, right: 8, top: 10, bottom: 22 };

/** Each move's loss over the game, a line a player (inline SVG); a point is a link to its step. */
function drawChart(seats) {
  const box = $("#analysis-chart");
  const moves = seats.flatMap((s) => (s.moves || []).map((m) => ({ ...m, seat: s.seat })))
    .sort((a, b) => a.version - b.version);
  box.hidden = !moves.length;
  box.replaceChildren();
  if (!moves.length) return;
  const top = Math.max(1, ...moves.map((m) => m.loss));
  const x = (i) => CHART.left + (moves.length === 1 ? 0 : (i * (CHART.w - CHART.left - CHART.right)) / (moves.length - 1));
  const y = (loss) => CHART.top + (Math.max(0, loss) / top) * (CHART.h - CHART.top - CHART.bottom);
  const chart = svg("svg", { viewBox: `0 0 ${CHART.w} ${CHART.h}`, class: "loss-chart", role: "group" });
  chart.setAttribute("aria-label", t("analysis.chart", { top: number(top) }));
  const axis = svg("g", { class: "axis", "aria-hidden": "true" });
  axis.append(svg("line", { x1: CHART.left, y1: y(0), x2: CHART.w - CHART.right, y2: y(0) }));
  axis.append(svg("line", { x1: CHART.left, y1: y(0), x2: CHART.left, y2: y(top) }));
  for (const [v, anchor] of [[0, y(0)], [top, y(top)]]) {
    const label = svg("text", { x: CHART.left - 4, y: anchor + 4, "text-anchor": "end" });
    label.textContent = v ? `−${number(v)}` : "0";
    axis.append(label);
  }
  chart.append(axis);
  const order = seats.map((s) => s.seat);
  for (const seat of order) {
    const mine = moves.map((m, i) => [m, i]).filter(([m]) => m.seat === seat);
    const line = svg("polyline", {
      class: `loss-line seat-${order.indexOf(seat)}`, "aria-hidden": "true",
      points: mine.map(([m, i]) => `${x(i)},${y(m.loss)}`).join(" "),
    });
    chart.append(line);
  }
  moves.forEach((m, i) => {
    const a = svg("a", { href: `?v=${m.version}`, class: `point seat-${order.indexOf(m.seat)}${m.label ? ` ${m.label}` : ""}` });
    const judged = m.label ? t(LABELS[m.label]) : t("analysis.no_label");
    a.setAttribute("aria-label", t("analysis.point", {
      name: seatNameIn(m.seat), round: m.round, loss: number(m.loss), judged,
    }));
    a.dataset.version = String(m.version);
    a.append(svg("circle", { cx: x(i), cy: y(m.loss), r: m.label ? 6 : 4 }));
    a.addEventListener("click", (e) => { e.preventDefault(); go(m.version); });
    chart.append(a);
  });
  const legend = document.createElement("ul");
  legend.className = "chart-legend";
  for (const seat of order) {
    const li = document.createElement("li");
    li.className = `seat-${order.indexOf(seat)}`;
    li.textContent = seatNameIn(seat);
    legend.append(li);
  }
  box.append(chart, legend);
}

function renderAnalysis() {
  const list = $("#analysis-seats");
  const a = state.analysis;
  if (!a) { list.replaceChildren(); return; }
  list.replaceChildren(...a.seats.map((s) => {
    const li = document.createElement("li");
    li.dataset.seat = String(s.seat);
    const head = document.createElement("p");
    head.className = "accuracy";
    head.textContent = t("analysis.accuracy", { name: seatNameIn(s.seat), accuracy: number(s.accuracy, 1) });
    const count = (label) => (s.moves || []).filter((m) => m.label === label).length;
    const counts = document.createElement("p");
    counts.className = "counts";
    counts.textContent = t("analysis.counts", {
      inaccuracies: count("inaccuracy"), mistakes: count("mistake"), blunders: count("blunder"),
    });
    li.append(head, counts);
    const flagged = (s.moves || []).filter((m) => m.label);
    if (flagged.length) {
      const row = document.createElement("div");
      row.className = "row wrap";
      for (const m of flagged) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = `ghost judged ${m.label}`;
        b.dataset.version = String(m.version);
        b.textContent = t("analysis.jump", { label: t(LABELS[m.label]), round: m.round, loss: number(m.loss) });
        b.addEventListener("click", () => go(m.version));
        row.append(b);
      }
      li.append(row);
    } else {
      const p = document.createElement("p");
      p.className = "note";
      p.textContent = t("analysis.clean");
      li.append(p);
    }
    return li;
  }));
  drawChart(a.seats);
  renderJudgement();
}

function analysisAnswer({ status, body }) {
  clearTimeout(state.polling);
  $("#analyse").hidden = true;
  if (status === 200 && body && body.status === "done") {
    state.analysis = body;
    document.body.dataset.analysis = "done";
    $("#analysis-status").textContent = t("analysis.done");
    renderAnalysis();
    return;
  }
  document.body.dataset.analysis = "pending";
  const progress = Math.round(100 * Number((body && body.progress) || 0));
  $("#analysis-status").textContent = t("analysis.pending", { progress });
  state.polling = setTimeout(loadAnalysis, POLL_MS);
}

async function loadAnalysis() {
  try {
    analysisAnswer(await api(`/tables/${encodeURIComponent(tableId)}/analysis`));
  } catch (e) {
    if (e.status === 404 && e.code === "not_found") { // none asked for yet: a seated player (or an operator) may
      document.body.dataset.analysis = "none";
      $("#analysis-status").textContent = state.seated || state.operator ? t("analysis.none") : t("analysis.none_watcher");
      $("#analyse").hidden = !(state.seated || state.operator);
    } else {
      document.body.dataset.analysis = "error";
      $("#analysis-status").textContent = errorText(e);
    }
  }
}

async function askAnalysis() {
  $("#analyse").disabled = true;
  try {
    analysisAnswer(await api(`/tables/${encodeURIComponent(tableId)}/analysis`, "POST"));
  } catch (e) {
    showError(errorText(e));
  } finally {
    $("#analyse").disabled = false;
  }
}

// ---------------------------------------------------------------- stepping
async function go(version) {
  const n = Math.max(1, Math.min(state.last, version));
  const ticket = ++state.loading;
  try {
    const deck = DECK ? `?deck=${encodeURIComponent(DECK)}` : "";
    const { body: step } = await api(`/tables/${encodeURIComponent(tableId)}/review/${n}${deck}`);
    if (ticket !== state.loading) return; // a later step was asked for meanwhile
    state.version = n;
    render(step);
    showError("");
    const params = new URLSearchParams(location.search);
    params.set("v", String(n));
    history.replaceState(null, "", `?${params}`);
  } catch (e) {
    showError(errorText(e));
  }
}

async function start() {
  state.operator = false;
  state.token = seatToken();
  state.seated = !!state.token;
  const admin = adminToken();
  const wantsOperator = new URLSearchParams(location.search).has("operator");
  if (admin && (wantsOperator || !state.token)) { state.token = admin; state.seated = false; }
  if (!state.token) {
    showError(t("review.no_token"));
    $("#admin-form").hidden = false;
    return;
  }
  let index;
  try {
    ({ body: index } = await api(`/tables/${encodeURIComponent(tableId)}/review`));
  } catch (e) {
    showError(errorText(e));
    $("#review").hidden = true;
    $("#admin-form").hidden = false;
    document.body.dataset.refused = e.code || String(e.status || "");
    return;
  }
  delete document.body.dataset.refused;
  state.operator = index.operator;
  state.steps = index.steps;
  state.last = index.last;
  document.body.dataset.operator = String(index.operator);
  $("#review-title").textContent = index.operator
    ? t("review.title_operator", { table: index.name || tableId }) : t("review.title_of", { table: index.name || tableId });
  $("#admin-form").hidden = true;
  $("#review").hidden = false;
  // the players' names as the game ended them (the analysis names each seat's player)
  try {
    const deck = DECK ? `?deck=${encodeURIComponent(DECK)}` : "";
    state.final = (await api(`/tables/${encodeURIComponent(tableId)}/review/${index.last}${deck}`)).body.table;
  } catch { state.final = null; }
  // where a link says (?v=), else the first deal: the hands in view, not the empty table being opened
  const firstDeal = (index.steps || []).find((s) => s.type === "RoundDealt");
  const asked = Number(new URLSearchParams(location.search).get("v")) || (firstDeal ? firstDeal.version : 1);
  await go(asked);
  loadAnalysis();
}

/** Keys and the controller step alike: ← → a step, Home/End (↑ ↓ on a controller) the first and last. */
const actions = {
  browse: (step) => go(state.version + step),
  up: () => go(1),
  down: () => go(state.last),
  choose: () => {
    const active = document.activeElement;
    if (active && /^(BUTTON|A)$/.test(active.tagName)) active.click();
    else go(state.version + 1);
  },
  menu: () => { $("#step-next").focus(); },
  back: () => { location.href = $("#back").href; },
  sound: () => {},
};

function wire() {
  $("#back").href = withLang(`/t/${encodeURIComponent(tableId)}`);
  languageSelect($("#review-lang"));
  $("#step-first").addEventListener("click", () => go(1));
  $("#step-prev").addEventListener("click", () => go(state.version - 1));
  $("#step-next").addEventListener("click", () => go(state.version + 1));
  $("#step-last").addEventListener("click", () => go(state.last));
  $("#step-range").addEventListener("input", (e) => go(Number(e.target.value)));
  $("#analyse").addEventListener("click", askAnalysis);
  document.addEventListener("keydown", (e) => {
    if ($("#review").hidden || e.target.closest("input, textarea, select")) return;
    if (e.key === "ArrowRight") actions.browse(1);
    else if (e.key === "ArrowLeft") actions.browse(-1);
    else if (e.key === "Home") actions.up();
    else if (e.key === "End") actions.down();
    else return;
    e.preventDefault();
  });
  startGamepad({ ...actions, choose: () => { if (!$("#review").hidden) actions.choose(); } });
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
