// Escoba reference page: plain ES module, no build step.
// It reads the public contract (shared/API.md) only: every rule decision comes
// from the server's view (`options`, `fifteen_to_take`); the page never adds to 15.

const $ = (id) => document.getElementById(id);

// What a host may choose at each preset (API.md "Settings").
const OFFERED = {
  selminha: { target: [21, 31], opening_fifteen: [true, false], opening_thirty: ["two_escobas", "two_escobas_if_split", "nothing"] },
  del15: {
    target: [10, 15, 21, 30], opening_fifteen: [true, false],
    opening_thirty: ["two_escobas", "two_escobas_if_split", "nothing"],
    all_coins_extra: [true, false], all_sevens_extra: [true, false], capture: ["spanish", "hybrid"],
  },
  cardgames: { target: [21], opening_fifteen: [true, false], opening_thirty: ["two_escobas", "two_escobas_if_split", "nothing"] },
};
const SETTING_LABELS = {
  target: "Points to win",
  opening_fifteen: "Opening table of 15 goes to the dealer (1 escoba)",
  opening_thirty: "Opening table of 30",
  all_coins_extra: "All ten coins score one more",
  all_sevens_extra: "All four sevens score one more",
  capture: "Capture rule",
};
const VALUE_LABELS = {
  two_escobas: "two escobas", two_escobas_if_split: "two escobas if it splits in two 15s",
  nothing: "nothing", spanish: "add up to 15", hybrid: "15, or same value (hybrid)",
};
const BOTS = ["carmen", "tito", "luna"];
const CATEGORY_LABELS = {
  escobas: "Escobas", cards: "Most cards", coins: "Most coins", sevens: "Most sevens",
  seven_of_coins: "7 of coins", setenta: "Setenta", all_coins: "All coins", all_sevens: "All sevens",
};
const ENDED_BY = {
  score: "reached the target", target: "reached the target", resign: "a player resigned",
  resigned: "a player resigned", exit: "a player left the game", away: "a player was away",
  expired: "the table expired",
};

// ---------------------------------------------------------------- state
const app = {
  deck: (() => { try { return localStorage.getItem("escoba.deck") || ""; } catch { return ""; } })(),
  tableId: null,
  token: null,
  spectator: false,
  view: null,
  picked: null, // card code picked in hand
  selected: new Set(), // table cards marked for capture
  setIndex: -1, // which of the picked card's sets ↓ marked
  focusIndex: 0,
  ws: null,
  wsTries: 0,
  wsTimer: null,
  pollTimer: null,
  chatIds: new Set(),
  lastChatId: null,
  busy: false,
  dragCard: null,
  escoba: null, // {seat, at: history length} of the last sweep seen live
};

const storeKey = (id) => `escoba.table.${id}`;
function loadSeat(id) {
  try { return JSON.parse(localStorage.getItem(storeKey(id)) || "null"); } catch { return null; }
}
function saveSeat(id, data) {
  try { localStorage.setItem(storeKey(id), JSON.stringify(data)); } catch { /* private mode */ }
}

// ---------------------------------------------------------------- HTTP
async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (app.token) headers.Authorization = `Bearer ${app.token}`;
  // each player's deck design changes only the labels of their own view
  if (app.deck && path.startsWith("/tables")) path += `${path.includes("?") ? "&" : "?"}deck=${app.deck}`;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) {
    const err = (data && data.error) || { code: String(res.status), message: `The server answered ${res.status}.` };
    const e = new Error(err.message || err.code);
    e.code = err.code; e.status = res.status; e.details = err.details;
    throw e;
  }
  return data;
}

function showError(message) {
  const el = $("error");
  el.textContent = message || "";
  el.hidden = !message;
}
function say(message) {
  const el = $("live");
  if (el.textContent === message) el.textContent = "";
  el.textContent = message;
}

async function move(type, fields = {}) {
  if (app.busy) return null;
  app.busy = true;
  showError("");
  try {
    const data = await api("POST", `/tables/${app.tableId}/moves`, { type, ...fields });
    if (data && data.table) setView(data.table);
    return data;
  } catch (e) {
    showError(e.message);
    if (e.status === 401) { // the seat token is gone: watch instead
      app.token = null;
    }
    return null;
  } finally {
    app.busy = false;
    render();
  }
}

// ---------------------------------------------------------------- cards
function label(card) {
  return (app.view && app.view.labels && app.view.labels[card]) || card;
}
function worth(card) {
  return parseInt(card, 10);
}
function cardButton(card, { cls = "", pressed = null, lit = false, disabled = false, extra = "" } = {}) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `card suit-${card.slice(-1)} ${cls}${lit ? " lit" : ""}`;
  b.dataset.card = card;
  const text = label(card);
  const face = document.createElement("span");
  face.className = "face";
  face.textContent = text;
  b.append(face);
  const badge = document.createElement("span");
  badge.className = "worth";
  badge.textContent = String(worth(card));
  badge.setAttribute("aria-hidden", "true");
  b.append(badge);
  let aria = `${text}, worth ${worth(card)}`;
  if (lit) aria += ", makes 15";
  if (extra) aria += `, ${extra}`;
  b.setAttribute("aria-label", aria);
  if (pressed !== null) b.setAttribute("aria-pressed", pressed ? "true" : "false");
  b.disabled = disabled;
  return b;
}

// ---------------------------------------------------------------- view helpers
const v = () => app.view;
function seatName(seat) {
  const s = v() && v().seats.find((x) => x.seat === seat);
  if (!s || s.empty) return `Seat ${seat + 1}`;
  return s.seat === v().you ? `${s.name} (you)` : s.name;
}
function sideName(side) {
  return side.seats.map(seatName).join(" & ");
}
function myTurn() {
  const view = v();
  return view && view.status === "playing" && view.you !== null && view.you !== undefined && view.turn === view.you;
}
function optionFor(card) {
  const opts = (v() && v().options) || [];
  return opts.find((o) => o.card === card) || null;
}
function isHost() {
  const view = v();
  return view && view.you !== null && view.you !== undefined && view.host === view.you;
}
function inviteUrl() {
  const saved = loadSeat(app.tableId);
  return (saved && saved.invite_url) || `${location.origin}/t/${app.tableId}`;
}

function setView(view) {
  const old = app.view;
  if (old && view.version < old.version) return false; // stale
  app.view = view;
  // a sweep: a side's escobas rose
  if (old && old.captured && view.captured && view.status === "playing") {
    view.captured.forEach((side, i) => {
      const before = old.captured[i];
      if (before && side.escobas > before.escobas) {
        const last = view.history[view.history.length - 1];
        const seat = last && side.seats.includes(last.seat) ? last.seat : side.seats[0];
        app.escoba = { seat, at: view.history.length };
        say(`ESCOBA! ${seatName(seat)} swept the table.`);
      }
    });
  }
  if (old && old.round !== view.round) app.escoba = null;
  // keep the pick only while it is still in hand and still our turn
  if (app.picked && (!view.hand.includes(app.picked) || !myTurn())) clearPick();
  else if (app.picked) {
    for (const c of [...app.selected]) if (!view.table_cards.includes(c)) app.selected.delete(c);
  }
  announce(old, view);
  return true;
}

function announce(old, view) {
  if (!old) return;
  if (view.status === "playing" && view.turn !== old.turn) {
    if (view.turn === view.you) say("Your turn.");
    else say(`${seatName(view.turn)}'s turn.`);
  }
  if (view.status === "round_over" && old.status !== "round_over") say("Round over: see the score box.");
  if (view.status === "finished" && old.status !== "finished") say(resultText(view));
}

function resultText(view) {
  const winners = view.winners || [];
  const why = ENDED_BY[view.ended_by] || view.ended_by || "";
  if (!winners.length) return `The game ended with no winner${why ? ` (${why})` : ""}.`;
  const names = winners.map(seatName).join(" & ");
  const iWon = winners.includes(view.you);
  return `${iWon ? "You win! " : ""}${names} ${winners.length > 1 ? "win" : "wins"}${why ? ` (${why})` : ""}.`;
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
  app.setIndex = (app.setIndex + 1) % opt.captures.length;
  app.selected = new Set(opt.captures[app.setIndex]);
  say(`Marked: ${opt.captures[app.setIndex].map(label).join(" + ")}.`);
  render();
}
function toggleTable(card) {
  if (!app.picked) { say("Pick a card from your hand first."); return; }
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
  // send the marked cards in table order
  const cap = v().table_cards.filter((c) => app.selected.has(c));
  const res = await move("play", { card, capture: cap });
  if (res) { clearPick(); render(); }
}
async function leave() {
  if (!app.picked) return;
  const card = app.picked;
  const res = await move("play", { card, capture: [] });
  if (res) { clearPick(); render(); }
}

// ---------------------------------------------------------------- rendering
function render() {
  const view = v();
  if (!view) return;
  document.body.dataset.status = view.status;
  $("table-title").textContent = `${view.name || "Table"} · ${view.preset} · to ${view.settings.target}`;
  $("menu-button").hidden = false;
  const seated = view.you !== null && view.you !== undefined;
  $("menu-exit").hidden = !(seated && (view.status === "playing" || view.status === "round_over"));

  // invitation link while seats are open
  $("invite").hidden = view.status !== "waiting";
  $("invite-url").value = inviteUrl();

  renderWaiting(view, seated);
  renderSeats(view);
  renderFelt(view);
  renderHand(view, seated);
  renderRound(view, seated);
  renderResult(view, seated);

  $("chat-form").hidden = !seated;
  $("chat-note").hidden = seated;
  document.body.dataset.version = String(view.version);
}

function renderWaiting(view, seated) {
  const box = $("waiting");
  box.hidden = view.status !== "waiting";
  if (box.hidden) return;
  const host = isHost();
  const list = $("waiting-seats");
  list.replaceChildren();
  for (const s of view.seats) {
    const li = document.createElement("li");
    li.className = "waiting-seat";
    const name = document.createElement("span");
    name.textContent = s.empty ? `Seat ${s.seat + 1}: open` : `Seat ${s.seat + 1}: ${s.name}${s.kind === "bot" ? " (bot)" : ""}${s.seat === view.host ? " (host)" : ""}${s.seat === view.you ? " (you)" : ""}`;
    li.append(name);
    if (host && s.empty) {
      const sel = document.createElement("select");
      sel.setAttribute("aria-label", `Bot for seat ${s.seat + 1}`);
      for (const b of BOTS) {
        const o = document.createElement("option");
        o.value = b; o.textContent = b[0].toUpperCase() + b.slice(1);
        sel.append(o);
      }
      sel.value = BOTS[s.seat % 3 === 0 ? 0 : (s.seat - 1) % 3];
      const add = document.createElement("button");
      add.type = "button";
      add.textContent = "ADD A BOT";
      add.className = "add-bot";
      add.setAttribute("aria-label", `Add a bot to seat ${s.seat + 1}`);
      add.addEventListener("click", () => move("add_bot", { bot: sel.value, seat: s.seat }));
      li.append(sel, add);
    }
    if (host && !s.empty && s.kind === "bot") {
      const rm = document.createElement("button");
      rm.type = "button";
      rm.textContent = "REMOVE";
      rm.setAttribute("aria-label", `Remove ${s.name} from seat ${s.seat + 1}`);
      rm.addEventListener("click", () => move("remove_bot", { seat: s.seat }));
      li.append(rm);
    }
    list.append(li);
  }
  const taken = view.seats.filter((s) => !s.empty);
  // partners: with four, the host picks
  const partner = $("partner");
  partner.hidden = !(host && taken.length === 4 && view.settings.teams && view.settings.choose_partner);
  if (!partner.hidden) {
    const pb = $("partner-buttons");
    pb.replaceChildren();
    for (const s of taken) {
      if (s.seat === view.you) continue;
      const b = document.createElement("button");
      b.type = "button";
      const current = s.seat === (view.you + 2) % 4;
      b.textContent = `${current ? "✓ " : ""}${s.name}`;
      b.setAttribute("aria-pressed", current ? "true" : "false");
      b.addEventListener("click", () => move("choose_partner", { seat: s.seat }));
      pb.append(b);
    }
  }
  // host's settings
  const hs = $("host-settings");
  hs.hidden = !host;
  if (host && !hs.contains(document.activeElement)) {
    buildSettings(hs, view.preset, view.settings, (key, value) => move("settings", { settings: { [key]: value } }));
  }
  $("start").hidden = !host;
  $("start").disabled = taken.length < 2;
  $("waiting-note").textContent = host
    ? (taken.length < 2 ? "Send the link or ADD A BOT: two or more must be seated to start." : "Empty seats sit this game out.")
    : `Waiting for ${seatName(view.host)} to start the game.`;
  if (!seated) $("waiting-note").textContent = "You are watching. The game starts when the host is ready.";
}

function renderSeats(view) {
  const ul = $("seats");
  ul.replaceChildren();
  const playing = view.status !== "waiting";
  ul.hidden = !playing;
  if (!playing) return;
  const last = view.history && view.history[view.history.length - 1];
  const swept = last && last.captured && last.captured.length && view.table_cards.length === 0 && view.status === "playing";
  const live = app.escoba && app.escoba.at === view.history.length && view.status === "playing" ? app.escoba.seat : null;
  for (const s of view.seats) {
    if (s.empty || s.in_game === false) continue;
    const li = document.createElement("li");
    li.className = "seat";
    li.dataset.seat = String(s.seat);
    if (s.seat === view.turn) li.classList.add("turn");
    if (s.seat === view.you) li.classList.add("you");
    const name = document.createElement("strong");
    name.textContent = seatName(s.seat);
    li.append(name);
    const tags = document.createElement("span");
    tags.className = "tags";
    const add = (text, cls = "") => {
      const t = document.createElement("span");
      t.className = `badge ${cls}`;
      t.textContent = text;
      tags.append(t);
    };
    if (s.kind === "bot") add("BOT");
    if (s.team !== null && s.team !== undefined) add(`TEAM ${Number(s.team) + 1}`);
    if (s.seat === view.dealer) add("DEALER");
    if (s.seat === view.turn) add("TO PLAY", "go");
    if ((swept && last.seat === s.seat) || live === s.seat) {
      const side = (view.captured || []).find((x) => x.seats.includes(s.seat));
      const double = last && last.kind === "opening" && side && side.escobas >= 2;
      add(double ? "DOUBLE ESCOBA!" : "ESCOBA!", "escoba");
    }
    if (view.away && view.away.seat === s.seat) add("AWAY", "warn");
    li.append(tags);
    const info = document.createElement("span");
    info.className = "seat-info";
    const sideIdx = (view.scores || []).findIndex((x) => x.seats.includes(s.seat));
    const score = sideIdx >= 0 ? view.scores[sideIdx].points : 0;
    const cap = sideIdx >= 0 && view.captured ? view.captured[sideIdx] : null;
    info.textContent = `${s.hand_count} in hand · ${score} pts` + (cap ? ` · captured ${cap.cards} · escobas ${cap.escobas}` : "");
    li.append(info);
    li.setAttribute("aria-label", `${seatName(s.seat)}: ${info.textContent}${s.seat === view.dealer ? ", dealer" : ""}${s.seat === view.turn ? ", to play" : ""}`);
    ul.append(li);
  }
}

function renderFelt(view) {
  const felt = $("felt");
  felt.hidden = view.status === "waiting";
  if (felt.hidden) return;
  $("stock").textContent = `Deck: ${view.stock_count}`;
  $("stock").setAttribute("aria-label", `${view.stock_count} cards left in the deck`);
  $("last-deal").hidden = !view.last_deal;
  $("round-info").textContent = `Round ${view.round}`;
  const box = $("table-cards");
  box.replaceChildren();
  const opt = app.picked ? optionFor(app.picked) : null;
  const litSet = new Set(opt ? opt.captures.flat() : []);
  if (!view.table_cards.length) {
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = view.status === "playing" ? "The table is empty." : "";
    box.append(p);
  }
  for (const c of view.table_cards) {
    const sel = app.selected.has(c);
    const b = cardButton(c, { cls: sel ? "selected" : "", pressed: sel, lit: litSet.has(c), disabled: !myTurn() });
    b.addEventListener("click", () => toggleTable(c));
    box.append(b);
  }
  // TAKE THE 15
  const f = $("fifteen");
  f.replaceChildren();
  const ft = view.fifteen_to_take;
  f.hidden = !ft;
  if (ft) {
    const p = document.createElement("p");
    p.textContent = `${seatName(ft.left_by)} left a 15 on the table with ${label(ft.card)}.`;
    f.append(p);
    if (myTurn()) {
      ft.sets.forEach((set) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "primary take-fifteen";
        b.textContent = ft.sets.length === 1 ? "TAKE THE 15" : `TAKE THE 15: ${set.map(label).join(" + ")}`;
        b.setAttribute("aria-label", `Take the 15: ${set.map(label).join(" + ")}`);
        b.addEventListener("click", () => move("take_fifteen", { cards: set }));
        f.append(b);
      });
    }
  }
}

function renderHand(view, seated) {
  const me = $("me");
  const inGame = seated && view.seats[view.you] && view.seats[view.you].in_game !== false;
  me.hidden = !(inGame && (view.status === "playing" || view.status === "round_over"));
  if (me.hidden) return;
  const hand = $("hand");
  const hadFocus = hand.contains(document.activeElement);
  hand.replaceChildren();
  const turn = myTurn();
  if (app.focusIndex >= view.hand.length) app.focusIndex = Math.max(0, view.hand.length - 1);
  view.hand.forEach((c, i) => {
    const opt = optionFor(c);
    const ways = opt ? opt.captures.length : 0;
    const b = cardButton(c, {
      cls: app.picked === c ? "picked" : "",
      pressed: app.picked === c,
      lit: turn && ways > 0,
      extra: turn ? (ways ? `${ways} way${ways > 1 ? "s" : ""} to make 15` : "no 15") : "",
    });
    b.tabIndex = i === app.focusIndex ? 0 : -1;
    b.addEventListener("click", () => { app.focusIndex = i; pick(c); });
    b.addEventListener("focus", () => { app.focusIndex = i; });
    if (turn) { // dragging the card onto the table plays it too
      b.draggable = true;
      b.addEventListener("dragstart", (e) => {
        app.dragCard = c;
        e.dataTransfer.setData("text/plain", c);
        e.dataTransfer.effectAllowed = "move";
      });
    }
    hand.append(b);
  });
  if (hadFocus && hand.children[app.focusIndex]) hand.children[app.focusIndex].focus();
  const opt = app.picked ? optionFor(app.picked) : null;
  $("capture").disabled = !(turn && app.picked && app.selected.size);
  $("leave").disabled = !(turn && app.picked && opt && opt.may_leave);
  $("leave").title = opt && !opt.may_leave ? "This card must capture" : "";
  const playing = view.status === "playing" || view.status === "round_over";
  $("capture").hidden = view.status !== "playing";
  $("leave").hidden = view.status !== "playing";
  $("resign").hidden = !playing;
  $("claim-away").hidden = !(view.away && view.turn !== view.you && view.status === "playing");
  const hint = $("hint");
  if (view.status !== "playing") hint.textContent = "";
  else if (!turn) hint.textContent = `Waiting for ${seatName(view.turn)}.`;
  else if (!app.picked) hint.textContent = view.fifteen_to_take ? "Your turn: TAKE THE 15, or pick a card." : "Your turn: pick a card.";
  else if (opt && opt.captures.length > 1 && !app.selected.size) hint.textContent = "Mark the table cards to take (↓ marks the next 15), then CAPTURE.";
  else if (app.selected.size) hint.textContent = "CAPTURE, or tap your card again.";
  else hint.textContent = "No 15 with this card: LEAVE ON TABLE.";
}

function renderRound(view, seated) {
  const box = $("round-box");
  const lr = view.last_round;
  box.hidden = !(lr && (view.status === "round_over" || view.status === "finished"));
  if (box.hidden) return;
  $("round-title").textContent = view.status === "finished" ? "Last round" : `Round ${view.round} is over`;
  const t = $("score-table");
  t.replaceChildren();
  const head = t.createTHead().insertRow();
  const th0 = document.createElement("th");
  th0.scope = "col";
  th0.textContent = "";
  head.append(th0);
  for (const side of lr) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = sideName(side);
    head.append(th);
  }
  const body = t.createTBody();
  const row = (title, cells, cls = "") => {
    const r = body.insertRow();
    if (cls) r.className = cls;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = title;
    r.append(th);
    for (const c of cells) r.insertCell().textContent = String(c);
  };
  const yes = (b) => (b ? "yes" : "—");
  row("Escobas", lr.map((s) => s.escobas));
  row("Cards", lr.map((s) => s.cards));
  row(coinsName(), lr.map((s) => s.coins));
  row("Sevens", lr.map((s) => s.sevens));
  row(`7 of ${coinsName().toLowerCase()}`, lr.map((s) => yes(s.seven_of_coins)));
  if (lr.some((s) => s.setenta !== null && s.setenta !== undefined)) row("Setenta", lr.map((s) => s.setenta ?? "—"));
  // a fixed order (JSON objects may arrive with their keys sorted or not)
  const cats = Object.keys(CATEGORY_LABELS).filter((k) => lr.some((s) => s.points && k in s.points));
  for (const s of lr) for (const k of Object.keys(s.points || {})) if (!cats.includes(k)) cats.push(k);
  for (const k of cats) row(`Points: ${categoryLabel(k)}`, lr.map((s) => (s.points && s.points[k]) || 0), "pts");
  row("Round points", lr.map((s) => s.round_points), "total");
  row("Score", lr.map((s) => {
    const sc = (view.scores || []).find((x) => x.seats.join() === s.seats.join());
    return sc ? sc.points : "";
  }), "total");
  $("next-round").hidden = !(seated && view.status === "round_over");
}

function coinsName() {
  return v() && v().deck === "spanish" ? "Oros" : "Diamonds";
}
function categoryLabel(k) {
  if (k === "coins") return `Most ${coinsName().toLowerCase()}`;
  if (k === "seven_of_coins") return `7 of ${coinsName().toLowerCase()}`;
  return CATEGORY_LABELS[k] || k.replaceAll("_", " ");
}

function renderResult(view, seated) {
  const box = $("result");
  box.hidden = !(view.status === "finished" || view.status === "expired");
  if (box.hidden) return;
  $("result-text").textContent = resultText(view);
  const rm = view.rematch;
  const r = $("rematch");
  r.hidden = !(rm && (rm.allowed || rm.closed));
  if (r.hidden) return;
  const answers = rm.answers || {};
  const mine = seated ? answers[String(view.you)] : undefined;
  let text;
  if (rm.closed === "declined") text = "No rematch: someone declined.";
  else if (rm.closed === "lapsed") text = "No rematch: the time to answer ran out.";
  else if (rm.closed) text = `No rematch (${rm.closed}).`;
  else {
    const yes = Object.entries(answers).filter(([, a]) => a).map(([s]) => seatName(Number(s)));
    text = `Rematch at this table? ${yes.length ? `Yes so far: ${yes.join(", ")}.` : "Everyone has to agree."}`;
    if (rm.teams) text += ` Teams: ${rm.teams.toUpperCase()}.`;
  }
  $("rematch-text").textContent = text;
  const open = seated && rm.allowed && !rm.closed;
  $("rematch-yes").hidden = !open || mine === true;
  $("rematch-no").hidden = !open || mine === false;
  const four = view.seats.filter((s) => !s.empty && s.in_game !== false).length === 4;
  const teamsChoice = open && isHost() && four;
  $("teams-keep").hidden = !teamsChoice;
  $("teams-swap").hidden = !teamsChoice;
  $("teams-keep").setAttribute("aria-pressed", rm.teams === "keep" ? "true" : "false");
  $("teams-swap").setAttribute("aria-pressed", rm.teams === "swap" ? "true" : "false");
}

// ---------------------------------------------------------------- settings form
function buildSettings(fieldset, preset, current, onChange) {
  const legend = fieldset.querySelector("legend");
  fieldset.replaceChildren(legend);
  const offered = OFFERED[preset] || {};
  for (const [key, values] of Object.entries(offered)) {
    const lab = document.createElement("label");
    lab.textContent = `${SETTING_LABELS[key] || key} `;
    const sel = document.createElement("select");
    sel.name = key;
    sel.dataset.setting = key;
    for (const val of values) {
      const o = document.createElement("option");
      o.value = JSON.stringify(val);
      o.textContent = typeof val === "boolean" ? (val ? "yes" : "no") : VALUE_LABELS[val] || String(val);
      sel.append(o);
    }
    if (current && key in current) sel.value = JSON.stringify(current[key]);
    sel.disabled = values.length < 2;
    if (onChange) sel.addEventListener("change", () => onChange(key, JSON.parse(sel.value)));
    lab.append(sel);
    fieldset.append(lab);
  }
}
function readSettings(fieldset) {
  const out = {};
  for (const sel of fieldset.querySelectorAll("select[data-setting]")) {
    if (!sel.disabled) out[sel.dataset.setting] = JSON.parse(sel.value);
  }
  return out;
}

// ---------------------------------------------------------------- chat
function addChat(line) {
  if (!line || app.chatIds.has(line.id)) return;
  app.chatIds.add(line.id);
  app.lastChatId = line.id;
  const li = document.createElement("li");
  const who = document.createElement("strong");
  who.textContent = `${line.name || seatName(line.seat)}: `;
  li.append(who, document.createTextNode(line.text));
  $("chat-lines").append(li);
  li.scrollIntoView({ block: "nearest" });
}
async function loadChat() {
  try {
    const after = app.lastChatId ?? 0;
    const data = await api("GET", `/tables/${app.tableId}/chat?after=${encodeURIComponent(after)}`);
    for (const line of (data && data.lines) || []) addChat(line);
  } catch { /* chat is optional */ }
}

// ---------------------------------------------------------------- live updates
function connect() {
  clearTimeout(app.wsTimer);
  if (app.ws) { app.ws.onclose = null; try { app.ws.close(); } catch { /* gone */ } }
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const params = new URLSearchParams();
  if (app.token) params.set("token", app.token);
  if (app.deck) params.set("deck", app.deck);
  params.set("after", String(app.view ? app.view.version : 0));
  let ws;
  try {
    ws = new WebSocket(`${proto}//${location.host}/tables/${app.tableId}/ws?${params}`);
  } catch {
    scheduleReconnect();
    return;
  }
  app.ws = ws;
  ws.onopen = () => {
    app.wsTries = 0;
    $("conn").hidden = true;
    document.body.dataset.live = "yes";
    // a change that landed while the socket was being set up is caught here
    refresh();
    loadChat();
  };
  ws.onmessage = (ev) => {
    let msg;
    try { msg = JSON.parse(ev.data); } catch { return; }
    if (msg.type === "table" && msg.table) {
      if (setView(msg.table)) render();
    } else if (msg.type === "your_turn") {
      if (v() && msg.seat === v().you) say("Your turn.");
      if (v() && msg.version > v().version) refresh();
    } else if (msg.type === "chat") {
      addChat(msg.line);
    }
  };
  ws.onclose = () => {
    document.body.dataset.live = "no";
    if (app.ws === ws) scheduleReconnect();
  };
  ws.onerror = () => { /* onclose follows */ };
}
function scheduleReconnect() {
  app.wsTries += 1;
  const delay = Math.min(15000, 500 * 2 ** Math.min(app.wsTries, 5)) * (0.75 + Math.random() / 2);
  const c = $("conn");
  c.hidden = false;
  c.textContent = "Reconnecting…";
  refresh(); // catch up over HTTP meanwhile
  app.wsTimer = setTimeout(connect, delay);
}
async function refresh() {
  try {
    const view = await api("GET", `/tables/${app.tableId}`);
    if (setView(view)) render();
  } catch (e) {
    if (e.status === 401 && app.token) { app.token = null; }
    else if (e.status === 404) showError("There is no such table.");
  }
}
function startPolling() {
  // a slow safety net: if the socket is down, the page still follows the table
  clearInterval(app.pollTimer);
  let ticks = 0;
  app.pollTimer = setInterval(() => {
    ticks += 1;
    const down = !app.ws || app.ws.readyState !== WebSocket.OPEN;
    if (down || ticks % 6 === 0) refresh();
  }, 5000);
}

// ---------------------------------------------------------------- screens
function show(id) {
  for (const s of ["home", "join", "game"]) $(s).hidden = s !== id;
}

async function enterTable(id) {
  app.tableId = id;
  const saved = loadSeat(id);
  app.token = saved && saved.token ? saved.token : null;
  try {
    const view = await api("GET", `/tables/${id}`);
    app.view = null;
    setView(view);
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
  const view = v();
  const seated = view.you !== null && view.you !== undefined;
  const watching = sessionStorage.getItem(`escoba.watch.${id}`) === "yes";
  if (!seated && !watching) {
    const open = view.status === "waiting" && view.seats.some((s) => s.empty);
    $("join-info").textContent = open
      ? `${seatName(view.host)} invites you to ${view.name || "a table"} (${view.preset}, to ${view.settings.target} points). Take a seat or watch.`
      : "The seats are taken or the game has started: you can watch.";
    $("join-form").hidden = !open;
    show("join");
    if (open) $("join-name").focus();
    return;
  }
  startGame();
}

function startGame() {
  show("game");
  $("chat-toggle").hidden = false;
  app.spectator = !(v().you !== null && v().you !== undefined);
  document.body.dataset.role = app.spectator ? "spectator" : "player";
  render();
  loadChat();
  connect();
  startPolling();
}

// ---------------------------------------------------------------- wiring
function dropOnTable(e) {
  e.preventDefault();
  const card = app.dragCard;
  app.dragCard = null;
  if (!card || !myTurn()) return;
  if (app.picked !== card) {
    clearPick();
    app.picked = card;
    const opt = optionFor(card);
    if (opt && opt.captures.length === 1) app.selected = new Set(opt.captures[0]);
  }
  playPicked();
}

function wire() {
  $("felt").addEventListener("dragover", (e) => { if (app.dragCard) e.preventDefault(); });
  $("felt").addEventListener("drop", dropOnTable);
  $("open-table").addEventListener("click", () => {
    $("create-form").hidden = false;
    $("open-table").hidden = true;
    buildSettings($("create-settings"), $("create-preset").value, null);
    $("create-name").focus();
  });
  $("create-preset").addEventListener("change", () => buildSettings($("create-settings"), $("create-preset").value, null));
  $("create-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    showError("");
    const name = $("create-name").value.trim();
    const preset = $("create-preset").value;
    try {
      const body = { name, preset, settings: readSettings($("create-settings")) };
      const tableName = $("create-table-name").value.trim();
      if (tableName) body.table_name = tableName;
      const data = await api("POST", "/tables", body);
      saveSeat(data.table_id, { token: data.token, seat: data.seat, invite_url: data.invite_url });
      localStorage.setItem("escoba.name", name);
      history.pushState({}, "", `/t/${data.table_id}`);
      app.view = null;
      app.token = data.token;
      app.tableId = data.table_id;
      setView(data.table);
      startGame();
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
      localStorage.setItem("escoba.name", name);
      app.token = data.token;
      app.view = null;
      setView(data.table);
      startGame();
      say(`You sit at seat ${data.seat + 1}.`);
    } catch (err) {
      showError(err.message);
    }
  });
  $("join-watch").addEventListener("click", () => {
    sessionStorage.setItem(`escoba.watch.${app.tableId}`, "yes");
    app.token = null;
    startGame();
  });
  const copy = async () => {
    const url = inviteUrl();
    try {
      await navigator.clipboard.writeText(url);
      say("Link copied.");
    } catch {
      const inp = $("invite-url");
      inp.hidden = false;
      inp.select();
      try { document.execCommand("copy"); say("Link copied."); } catch { say("Copy the link from the box."); }
    }
    $("copy-link").textContent = "COPIED";
    setTimeout(() => { $("copy-link").textContent = "COPY"; }, 1500);
  };
  $("copy-link").addEventListener("click", copy);
  $("menu-copy").addEventListener("click", copy);
  $("menu-deck").value = app.deck;
  $("menu-deck").addEventListener("change", () => {
    app.deck = $("menu-deck").value;
    try { localStorage.setItem("escoba.deck", app.deck); } catch { /* private mode */ }
    if (app.tableId) { refresh(); connect(); }
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
  $("chat-toggle").addEventListener("click", () => {
    const open = document.body.classList.toggle("chat-open");
    $("chat-toggle").setAttribute("aria-expanded", open ? "true" : "false");
  });
  $("chat-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("chat-text").value.trim();
    if (!text) return;
    try {
      await api("POST", `/tables/${app.tableId}/chat`, { text });
      $("chat-text").value = "";
      loadChat();
    } catch (err) {
      showError(err.message);
    }
  });
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", route);
  const name = localStorage.getItem("escoba.name");
  if (name) { $("create-name").value = name; $("join-name").value = name; }
}

function openMenu() {
  const m = $("menu");
  if (!m.open) m.showModal();
}

function onKey(e) {
  const tag = (e.target && e.target.tagName) || "";
  if (e.key === "Escape" || ((e.key === "p" || e.key === "P") && !/INPUT|TEXTAREA|SELECT/.test(tag))) {
    if ($("game").hidden) return;
    const m = $("menu");
    if (m.open) return; // the dialog closes itself on Esc
    e.preventDefault();
    openMenu();
    return;
  }
  if (/INPUT|TEXTAREA|SELECT/.test(tag) || $("game").hidden || $("menu").open) return;
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
    // Enter anywhere else: pick the focused hand card, or play the picked one
    e.preventDefault();
    const card = cards[Math.min(app.focusIndex, cards.length - 1)].dataset.card;
    pick(card);
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

wire();
route();
