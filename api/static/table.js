// Drawing the table from the view: seats around the felt (you at the bottom,
// partners across, play turning the view's `settings.direction`), the felt,
// your hand, the round's plays, the score box and the game's end.

import { cardBack, cardButton } from "./cards.js";
import { page } from "./hooks.js";
import {
  $, app, inGameSeats, inviteUrl, isHost, isSeated, label, myTurn, optionFor, seatName, sideName, v,
} from "./state.js";

const CATEGORY_LABELS = {
  escobas: "Escobas", cards: "Most cards", coins: "Most coins", sevens: "Most sevens",
  seven_of_coins: "7 of coins", setenta: "Setenta", all_coins: "All coins", all_sevens: "All sevens",
};
const ENDED_BY = {
  score: "reached the target", target: "reached the target", resign: "a player resigned",
  resigned: "a player resigned", exit: "a player left the game", away: "a player was away",
  expired: "the table expired",
};
export const BOTS = ["carmen", "tito", "luna"];
const POSITIONS = ["bottom", "right", "top", "left"];

// handlers the page's wiring supplies (main.js): the table only draws
export const handlers = {
  move: async () => null, pick: () => {}, toggleTable: () => {}, startDrag: () => {},
};

/** Where each seat in the game sits on the screen: the reader at the bottom. */
export function seatPositions(view) {
  const seats = inGameSeats(view).map((s) => s.seat);
  const out = new Map();
  if (!seats.length) return out;
  const me = isSeated(view) && seats.includes(view.you) ? view.you : seats[0];
  const start = seats.indexOf(me);
  const order = seats.slice(start).concat(seats.slice(0, start)); // play order from the reader
  // play turns to the right (counterclockwise seen from above) or to the left
  let spots;
  if (order.length === 2) spots = ["bottom", "top"];
  else if (order.length === 3) spots = ["bottom", "right", "left"];
  else spots = POSITIONS;
  if (view.settings && view.settings.direction === "left") {
    spots = spots.map((p) => (p === "right" ? "left" : p === "left" ? "right" : p));
  }
  order.forEach((seat, i) => out.set(seat, spots[i]));
  return out;
}

export function resultText(view) {
  const winners = view.winners || [];
  const why = ENDED_BY[view.ended_by] || view.ended_by || "";
  if (!winners.length) return `The game ended with no winner${why ? ` (${why})` : ""}.`;
  const names = winners.map((s) => seatName(s, view)).join(" & ");
  const seated = isSeated(view);
  const iWon = seated && winners.includes(view.you);
  const losers = inGameSeats(view).map((s) => s.seat).filter((s) => !winners.includes(s));
  if (seated && !iWon && (view.ended_by === "exit" || view.ended_by === "resign")) {
    // the one who left (or resigned) is told plainly what it cost
    const me = losers.includes(view.you);
    const gone = view.ended_by === "exit" ? "left the game" : "resigned";
    if (me) return `You lose: ${losers.length > 1 ? "your side" : "you"} ${gone}. ${names} ${winners.length > 1 ? "win" : "wins"}.`;
  }
  if (view.ended_by === "exit" || view.ended_by === "resign") {
    const who = losers.map((s) => seatName(s, view)).join(" & ");
    const gone = view.ended_by === "exit" ? "left the game" : "resigned";
    return `${iWon ? "You win! " : ""}${who} ${gone}: ${names} ${winners.length > 1 ? "win" : "wins"} (${why}).`;
  }
  return `${iWon ? "You win! " : ""}${names} ${winners.length > 1 ? "win" : "wins"}${why ? ` (${why})` : ""}.`;
}

// ---------------------------------------------------------------- rendering
export function render() {
  const view = v();
  if (!view) return;
  document.body.dataset.status = view.status;
  $("table-title").textContent = `${view.name || "Table"} · ${view.preset} · to ${view.settings.target}`;
  $("menu-button").hidden = false;
  const seated = isSeated(view);
  $("menu-exit").hidden = !(seated && (view.status === "playing" || view.status === "round_over"));
  $("invite").hidden = view.status !== "waiting";
  $("invite-url").value = inviteUrl();

  renderWaiting(view, seated);
  renderSeats(view);
  renderFelt(view);
  renderStrip(view);
  renderHand(view, seated);
  renderRound(view, seated);
  renderResult(view, seated);
  const over = !$("round-box").hidden || !$("result").hidden;
  $("overlay").hidden = !over;
  document.body.classList.toggle("boxed", over);

  $("chat-form").hidden = !seated;
  $("chat-note").hidden = seated;
  document.body.dataset.version = String(view.version);
}

function renderWaiting(view, seated) {
  const box = $("waiting");
  box.hidden = view.status !== "waiting";
  if (box.hidden) return;
  const host = isHost(view);
  const list = $("waiting-seats");
  list.replaceChildren();
  const usedBots = new Set(view.seats.filter((s) => !s.empty && s.kind === "bot").map((s) => s.bot));
  for (const s of view.seats) {
    const li = document.createElement("li");
    li.className = "waiting-seat";
    const name = document.createElement("span");
    const who = s.empty ? "open" : `${seatName(s.seat, view)}${s.kind === "bot" ? " (bot)" : ""}${s.seat === view.host ? " (host)" : ""}`;
    name.textContent = `Seat ${s.seat + 1}: ${who}`;
    li.append(name);
    if (host && s.empty) {
      const sel = document.createElement("select");
      sel.setAttribute("aria-label", `Bot for seat ${s.seat + 1}`);
      for (const b of BOTS) {
        const o = document.createElement("option");
        o.value = b; o.textContent = b[0].toUpperCase() + b.slice(1);
        sel.append(o);
      }
      // a bot not seated yet, so three bots are Carmen, Tito and Luna
      sel.value = BOTS.find((b) => !usedBots.has(b)) || BOTS[s.seat % BOTS.length];
      usedBots.add(sel.value);
      const add = document.createElement("button");
      add.type = "button";
      add.textContent = "ADD A BOT";
      add.className = "add-bot";
      add.setAttribute("aria-label", `ADD A BOT to seat ${s.seat + 1}`);
      add.addEventListener("click", () => handlers.move("add_bot", { bot: sel.value, seat: s.seat }));
      li.append(sel, add);
    }
    if (host && !s.empty && s.kind === "bot") {
      const rm = document.createElement("button");
      rm.type = "button";
      rm.textContent = "REMOVE";
      rm.setAttribute("aria-label", `Remove ${seatName(s.seat, view)} from seat ${s.seat + 1}`);
      rm.addEventListener("click", () => handlers.move("remove_bot", { seat: s.seat }));
      li.append(rm);
    }
    list.append(li);
  }
  const taken = view.seats.filter((s) => !s.empty);
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
      b.textContent = `${current ? "✓ " : ""}${seatName(s.seat, view)}`;
      b.setAttribute("aria-pressed", current ? "true" : "false");
      b.addEventListener("click", () => handlers.move("choose_partner", { seat: s.seat }));
      pb.append(b);
    }
  }
  const hs = $("host-settings");
  hs.hidden = !host;
  if (host && !hs.contains(document.activeElement) && handlers.buildSettings) {
    handlers.buildSettings(hs, view.preset, view.settings, (key, value) => handlers.move("settings", { settings: { [key]: value } }));
  }
  $("start").hidden = !host;
  $("start").disabled = taken.length < 2;
  let note = host
    ? (taken.length < 2 ? "Send the link or ADD A BOT: two or more must be seated to start." : "Empty seats sit this game out.")
    : `Waiting for ${seatName(view.host, view)} to start the game.`;
  if (!seated) note = "You are watching. The game starts when the host is ready.";
  $("waiting-note").textContent = note;
}

function sideOf(view, seat) {
  const i = (view.scores || []).findIndex((x) => x.seats.includes(seat));
  return i;
}

function renderSeats(view) {
  const playing = view.status !== "waiting";
  $("tablegrid").hidden = !playing;
  for (const p of POSITIONS) $(`pos-${p}`).replaceChildren();
  if (!playing) return;
  const spots = seatPositions(view);
  const grid = $("tablegrid");
  grid.dataset.players = String(spots.size);
  for (const [seat, pos] of spots) {
    const s = view.seats[seat];
    const box = document.createElement("div");
    box.className = "seat";
    box.dataset.seat = String(seat);
    box.dataset.pos = pos;
    if (seat === view.turn && view.status === "playing") box.classList.add("turn");
    if (seat === view.you) box.classList.add("you");
    const head = document.createElement("div");
    head.className = "seat-head";
    const name = document.createElement("strong");
    name.className = "seat-name";
    name.textContent = seatName(seat, view);
    head.append(name);
    const tags = document.createElement("span");
    tags.className = "tags";
    const add = (text, cls = "") => {
      const t = document.createElement("span");
      t.className = `badge ${cls}`;
      t.textContent = text;
      tags.append(t);
    };
    if (seat === view.turn && view.status === "playing") add("TO PLAY", "go");
    if (s.kind === "bot") add("BOT");
    if (s.team !== null && s.team !== undefined) add(`TEAM ${Number(s.team) + 1}`);
    if (seat === view.dealer) add("DEALER");
    if (view.away && view.away.seat === seat) add("AWAY", "warn");
    head.append(tags);
    box.append(head);
    const info = document.createElement("div");
    info.className = "seat-info";
    const side = sideOf(view, seat);
    const score = side >= 0 ? view.scores[side].points : 0;
    const cap = side >= 0 && view.captured ? view.captured[side] : null;
    const hand = document.createElement("span");
    hand.className = "hand-backs";
    if (seat !== view.you) for (let i = 0; i < s.hand_count; i++) hand.append(cardBack());
    const pile = document.createElement("span");
    pile.className = "pile";
    pile.dataset.side = String(side);
    pile.append(cardBack(), document.createTextNode(String(cap ? cap.cards : 0)));
    const pts = document.createElement("span");
    pts.className = "pts";
    pts.textContent = `${score} pts`;
    const esc = document.createElement("span");
    esc.className = "esc";
    esc.textContent = cap && cap.escobas ? `${cap.escobas} esc.` : "";
    info.append(hand, pile, esc, pts);
    box.append(info);
    const desc = `${seatName(seat, view)}: ${s.hand_count} in hand, ${score} points, captured ${cap ? cap.cards : 0}, escobas ${cap ? cap.escobas : 0}`;
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", `${desc}${seat === view.dealer ? ", dealer" : ""}${seat === view.turn ? ", to play" : ""}`);
    $(`pos-${pos}`).append(box);
  }
  // the way play turns, drawn on the felt
  const dir = view.settings.direction === "left" ? "left" : "right";
  const d = $("direction");
  d.dataset.dir = dir;
  d.textContent = dir === "left" ? "↻ play passes to the left" : "↺ play passes to the right";
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
  const ft = view.fifteen_to_take;
  const fifteenSet = new Set(ft && ft.sets.length === 1 ? ft.sets[0] : ft ? [ft.card] : []);
  if (!view.table_cards.length) {
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = view.status === "playing" ? "The table is empty." : "";
    box.append(p);
  }
  const turn = myTurn(view);
  for (const c of view.table_cards) {
    const sel = app.selected.has(c);
    let cls = sel ? "selected" : "";
    if (fifteenSet.has(c)) cls += " fifteen-card";
    const b = cardButton(c, { cls, pressed: sel, lit: litSet.has(c), disabled: !turn, extra: fifteenSet.has(c) ? "part of the 15 left behind" : "" }, view);
    b.addEventListener("click", () => handlers.toggleTable(c));
    box.append(b);
  }
  // TAKE THE 15: each set it can be taken with, its cards shown on the button
  const f = $("fifteen");
  f.replaceChildren();
  f.hidden = !ft;
  if (ft) {
    const p = document.createElement("p");
    p.textContent = `${seatName(ft.left_by, view)} left a 15 with ${label(ft.card, view)}.`;
    f.append(p);
    if (turn) {
      ft.sets.forEach((set) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "primary take-fifteen";
        const words = set.map((c) => label(c, view)).join(" + ");
        b.textContent = `TAKE THE 15: ${words}`;
        b.dataset.cards = set.join(" ");
        const light = (on) => {
          for (const c of set) {
            const el = box.querySelector(`[data-card="${c}"]`);
            if (el) el.classList.toggle("fifteen-card", on || (ft.sets.length === 1));
          }
        };
        b.addEventListener("mouseenter", () => light(true));
        b.addEventListener("mouseleave", () => light(false));
        b.addEventListener("focus", () => light(true));
        b.addEventListener("blur", () => light(false));
        b.addEventListener("click", () => handlers.move("take_fifteen", { cards: set }));
        f.append(b);
      });
    }
  }
}

/** One line of the round's plays: who played what, and what it took. */
export function playText(play, view) {
  const who = seatName(play.seat, view);
  const names = (cards) => cards.map((c) => label(c, view)).join(" + ");
  if (play.kind === "opening") return `${who} takes the opening table: ${names(play.captured)}`;
  if (play.kind === "fifteen") return `${who} TAKES THE 15: ${names([play.card, ...play.captured])}`;
  if (play.captured && play.captured.length) return `${who}: ${label(play.card, view)} takes ${names(play.captured)}`;
  return `${who}: ${label(play.card, view)} left on the table`;
}

function renderStrip(view) {
  const strip = $("strip");
  const hist = view.history || [];
  strip.hidden = view.status === "waiting";
  strip.replaceChildren();
  const items = hist.map((p, i) => {
    const swept = app.sweeps.get(`${view.game}:${view.round}:${i}`);
    return { text: `${playText(p, view)}${swept ? ` · ${swept}` : ""}`, cls: p.captured && p.captured.length ? "took" : "" };
  });
  for (const e of app.stripExtras || []) if (e.round === view.round && e.game === view.game) items.splice(e.at, 0, { text: e.text, cls: e.cls });
  if (!items.length) {
    const li = document.createElement("li");
    li.className = "none";
    li.textContent = view.status === "playing" ? "No plays yet this round." : "";
    strip.append(li);
  }
  items.forEach((it, i) => {
    const li = document.createElement("li");
    li.textContent = it.text;
    if (it.cls) li.className = it.cls;
    if (i === items.length - 1) li.classList.add("latest");
    strip.append(li);
  });
  strip.scrollLeft = strip.scrollWidth;
}

function renderHand(view, seated) {
  const me = $("me");
  const inGame = seated && view.seats[view.you] && view.seats[view.you].in_game !== false;
  me.hidden = !(inGame && (view.status === "playing" || view.status === "round_over"));
  if (me.hidden) return;
  const hand = $("hand");
  const hadFocus = hand.contains(document.activeElement);
  hand.replaceChildren();
  const turn = myTurn(view);
  if (app.focusIndex >= view.hand.length) app.focusIndex = Math.max(0, view.hand.length - 1);
  view.hand.forEach((c, i) => {
    const opt = optionFor(c);
    const ways = opt ? opt.captures.length : 0;
    const b = cardButton(c, {
      cls: app.picked === c ? "picked" : "",
      pressed: app.picked === c,
      lit: turn && ways > 0,
      extra: turn ? (ways ? `${ways} way${ways > 1 ? "s" : ""} to make 15` : "no 15") : "",
    }, view);
    b.tabIndex = i === app.focusIndex ? 0 : -1;
    b.addEventListener("click", (e) => {
      if (app.dragged === c) { app.dragged = null; e.preventDefault(); return; }
      app.focusIndex = i; handlers.pick(c);
    });
    b.addEventListener("focus", () => { app.focusIndex = i; });
    if (turn) b.addEventListener("pointerdown", (e) => handlers.startDrag(e, c, b));
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
  else if (!turn) hint.textContent = `Waiting for ${seatName(view.turn, view)}.`;
  else if (!app.picked) hint.textContent = view.fifteen_to_take ? "Your turn: TAKE THE 15, or pick a card." : "Your turn: pick a card (or drag it to the table).";
  else if (opt && opt.captures.length > 1 && !app.selected.size) hint.textContent = "Mark the table cards to take (↓ marks the next 15), then CAPTURE.";
  else if (app.selected.size) hint.textContent = "CAPTURE, or tap your card again.";
  else if (opt && opt.captures.length) hint.textContent = "Mark the table cards it makes 15 with.";
  else hint.textContent = "No 15 with this card: LEAVE ON TABLE.";
}

function coinsName(view) {
  return view.deck === "spanish" ? "Oros" : "Diamonds";
}
function categoryLabel(k, view) {
  const setenta = view.settings && view.settings.sevens === "setenta";
  if (k === "coins") return `Most ${coinsName(view).toLowerCase()}`;
  if (k === "seven_of_coins") return `7 of ${coinsName(view).toLowerCase()}`;
  if (k === "sevens" && setenta) return "All four sevens";
  return CATEGORY_LABELS[k] || k.replaceAll("_", " ");
}

/** A tie at the target: why one more round is dealt. */
export function tieText(view) {
  if (view.status !== "round_over") return "";
  const target = view.settings.target;
  const scores = view.scores || [];
  const over = scores.filter((s) => s.points >= target);
  if (!over.length) return "";
  const top = Math.max(...over.map((s) => s.points));
  const tied = over.filter((s) => s.points === top);
  return `${tied.map((s) => sideName(s, view)).join(" and ")} ${tied.length > 1 ? "are" : "is"} tied at ${top}, over the target of ${target}: the highest score wins, so one more round is dealt.`;
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
  th0.textContent = "Side";
  th0.className = "sr-col";
  head.append(th0);
  for (const side of lr) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = sideName(side, view);
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
  const setenta = view.settings && view.settings.sevens === "setenta";
  row("Escobas", lr.map((s) => s.escobas));
  row("Cards", lr.map((s) => s.cards));
  row(coinsName(view), lr.map((s) => s.coins));
  row("Sevens", lr.map((s) => s.sevens));
  row(`7 of ${coinsName(view).toLowerCase()}`, lr.map((s) => yes(s.seven_of_coins)));
  if (lr.some((s) => s.setenta !== null && s.setenta !== undefined)) row("Setenta", lr.map((s) => s.setenta ?? "—"));
  const cats = Object.keys(CATEGORY_LABELS).filter((k) => lr.some((s) => s.points && k in s.points));
  for (const s of lr) for (const k of Object.keys(s.points || {})) if (!cats.includes(k)) cats.push(k);
  for (const k of cats) {
    // with the setenta, "most sevens" scores nothing: its row is only the all-sevens extra, when on
    if (k === "sevens" && setenta && !view.settings.all_sevens_extra) continue;
    row(`Points: ${categoryLabel(k, view)}`, lr.map((s) => (s.points && s.points[k]) || 0), "pts");
  }
  row("Round points", lr.map((s) => s.round_points), "total");
  row("Score", lr.map((s) => {
    const sc = (view.scores || []).find((x) => x.seats.join() === s.seats.join());
    return sc ? sc.points : "";
  }), "total");
  const lo = app.leftovers;
  const note = $("round-note");
  const parts = [];
  if (lo && lo.round === view.round && lo.game === view.game && lo.cards.length) {
    parts.push(`${lo.cards.map((c) => label(c, view)).join(", ")} left on the table went to ${seatName(lo.seat, view)}, the last to capture.`);
  }
  const tie = tieText(view);
  if (tie) parts.push(tie);
  note.textContent = parts.join(" ");
  note.hidden = !parts.length;
  $("next-round").hidden = !(seated && view.status === "round_over");
}

function renderResult(view, seated) {
  const box = $("result");
  box.hidden = !(view.status === "finished" || view.status === "expired");
  if (box.hidden) return;
  $("result-text").textContent = resultText(view);
  const rm = view.rematch;
  const r = $("rematch");
  r.hidden = !(rm && (rm.allowed || rm.closed));
  $("review-link").hidden = !page.reviewUrl;
  if (page.reviewUrl) $("review-link").href = page.reviewUrl(view);
  if (r.hidden) return;
  const answers = rm.answers || {};
  const mine = seated ? answers[String(view.you)] : undefined;
  const four = inGameSeats(view).length === 4;
  let text;
  if (rm.closed === "declined") text = "No rematch: someone declined.";
  else if (rm.closed === "lapsed") text = "No rematch: the time to answer ran out.";
  else if (rm.closed) text = `No rematch (${rm.closed}).`;
  else {
    const yes = Object.entries(answers).filter(([, a]) => a).map(([s]) => seatName(Number(s), view));
    text = `Rematch at this table? ${yes.length ? `Yes so far: ${yes.join(", ")}.` : "Everyone has to agree."}`;
    if (rm.teams && four) text += ` Teams: ${rm.teams.toUpperCase()}.`; // teams exist only with four
  }
  $("rematch-text").textContent = text;
  const open = seated && rm.allowed && !rm.closed;
  $("rematch-yes").hidden = !open || mine === true;
  $("rematch-no").hidden = !open || mine === false;
  const teamsChoice = open && isHost(view) && four;
  $("teams-keep").hidden = !teamsChoice;
  $("teams-swap").hidden = !teamsChoice;
  $("teams-keep").setAttribute("aria-pressed", rm.teams === "keep" ? "true" : "false");
  $("teams-swap").setAttribute("aria-pressed", rm.teams === "swap" ? "true" : "false");
}
