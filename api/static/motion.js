// Showing every play: views arrive (socket, poll, our own moves) and wait in a
// queue; each change is drawn in turn, its plays first shown moving (the card from
// its seat to the table, the capture to the side's pile) and announced, so a bot's
// play a second after the last one is seen, not just found changed.

import { cardFigure } from "./cards.js";
import { fitTable, onLayout, watchTable } from "./layout.js";
import { $, api, app, say, seatName, sleep, v } from "./state.js";
import { t } from "./i18n.js";
import { playText, render, scoresRead } from "./table.js";
import { cardsText, namesText } from "./words.js";
import { sound } from "./sound.js";

const queue = [];
let pumping = false;
export const hooks = { afterRender: () => {}, keepPick: () => {} };

/** A view from anywhere: shown after the ones before it. `now` skips the motion. */
export function receive(view, { now = false } = {}) {
  if (!view || !forThisTable(view)) return;
  app.latest = Math.max(app.latest, view.version);
  if (now) { // a new deck design or a new seat: same table, drawn again at once
    queue.length = 0;
    show(view);
    return;
  }
  queue.push(view);
  pump();
}

export const busyShowing = () => pumping || queue.length > 0;

// a view of a table this page has left (Back to the home while plays were being shown) is dropped
const forThisTable = (view) => !!app.tableId && (!view.table_id || view.table_id === app.tableId);

// each time the page leaves a table: a play being shown then stops at its next step
let visit = 0;

/** Drop the views waiting to be shown (the page leaves the table). */
export function dropQueue() {
  queue.length = 0;
  visit += 1;
}

function show(view) {
  if (!forThisTable(view)) return;
  const old = app.view;
  app.view = view;
  hooks.keepPick(old, view);
  render();
  fitTable();
  watchTable();
  keepBanner(); // the seats were drawn again (a badge came or went): the banner follows its seat
  hooks.afterRender(old, view);
}

async function pump() {
  if (pumping) return;
  pumping = true;
  try {
    while (queue.length) {
      const next = queue.shift();
      const old = app.view;
      if (old && next.table_id === old.table_id && next.version <= old.version) continue; // stale or seen
      // far behind (a tab in the background): catch up without the show
      const quick = !old || document.hidden || queue.length > 4 || app.pace === 0;
      if (quick) {
        const rises = escobaRises(old, next);
        markSweeps(old, next, rises);
        show(next);
        // caught up without the show, the plays are still heard, in one message
        const plays = old ? newPlays(old, next).filter((p) => p.kind !== "opening") : [];
        if (plays.length) say(plays.map((p) => t("say.play", { play: playText(p, next) })).join(" "), { hold: 4000 });
        announceStep(old, next, false, rises);
        continue;
      }
      await step(old, next);
    }
  } finally {
    pumping = false;
  }
}

/** The plays in `next` that `old` did not show yet. */
export function newPlays(old, next) {
  if (!old || !next || next.status === "waiting") return [];
  const oh = old.history || [];
  const nh = next.history || [];
  const same = old.round === next.round && old.game === next.game && old.status !== "waiting";
  if (same) return nh.length >= oh.length ? nh.slice(oh.length) : [];
  return nh;
}

function seatEl(seat) {
  return document.querySelector(`.seat[data-seat="${seat}"]`);
}
function pileEl(seat) {
  const s = seatEl(seat);
  return (s && s.querySelector(".pile")) || s;
}
function rectOf(el) {
  return el ? el.getBoundingClientRect() : null;
}

/** A card's figure moving from one place on the screen to another. */
async function fly(card, from, to, view, ms) {
  if (!from || !to) return;
  const fig = cardFigure(card, view);
  fig.classList.add("flying");
  document.body.append(fig);
  const w = fig.offsetWidth || 56;
  const h = fig.offsetHeight || 80;
  const x0 = from.left + from.width / 2 - w / 2;
  const y0 = from.top + from.height / 2 - h / 2;
  const x1 = to.left + to.width / 2 - w / 2;
  const y1 = to.top + to.height / 2 - h / 2;
  fig.style.left = "0px";
  fig.style.top = "0px";
  const reduced = matchMedia("(prefers-reduced-motion: reduce)").matches;
  const frames = reduced
    ? [{ transform: `translate(${x1}px, ${y1}px)`, opacity: 1 }, { transform: `translate(${x1}px, ${y1}px)`, opacity: 1 }]
    : [{ transform: `translate(${x0}px, ${y0}px) scale(.9)` }, { transform: `translate(${x1}px, ${y1}px) scale(1)` }];
  const anim = fig.animate(frames, { duration: Math.max(1, ms * app.pace), easing: "ease-in-out", fill: "forwards" });
  try { await anim.finished; } catch { /* cancelled */ }
  return fig;
}

function banner(text, cls = "", seat = null) {
  const b = $("banner");
  b.textContent = text;
  b.className = `banner ${cls}`;
  b.hidden = false;
  placeBanner(b, seat);
  clearTimeout(banner.t);
  banner.t = setTimeout(() => { b.hidden = true; }, 2600 * Math.max(app.pace, 0.4));
}

/** The banner beside the seat it is about (ESCOBA! next to who swept): on the felt's side of that
 * seat, else beside it, else past the felt's badges, never over a seat, the badges, the header or
 * your hand and buttons. With no seat, over the middle of the felt. Kept inside the screen. */
function placeBanner(b, seat) {
  const felt = $("felt").getBoundingClientRect();
  const s = seat === null ? null : seatEl(seat);
  const bw = b.offsetWidth;
  const bh = b.offsetHeight;
  const clamp = ([x, y]) => [Math.max(4, Math.min(x, innerWidth - bw - 4)), Math.max(4, Math.min(y, innerHeight - bh - 4))];
  let spot = clamp([felt.left + felt.width / 2 - bw / 2, felt.top + felt.height / 2 - bh / 2]);
  if (s) {
    const r = s.getBoundingClientRect();
    const gap = 6;
    const cx = r.left + r.width / 2 - bw / 2;
    const cy = r.top + r.height / 2 - bh / 2;
    const info = document.querySelector("#felt .felt-info");
    const ir = info ? info.getBoundingClientRect() : null;
    let first;
    let past; // the felt's side, beyond its badges
    if (r.bottom <= felt.top + 4) {
      first = [cx, r.bottom + gap];
      past = ir && [cx, ir.bottom + gap];
    } else if (r.top >= felt.bottom - 4) {
      first = [cx, r.top - bh - gap];
      past = ir && [cx, ir.top - bh - gap];
    } else if (r.right <= felt.left + 4) {
      first = [r.right + gap, cy];
    } else {
      first = [r.left - bw - gap, cy];
    }
    const keep = [...document.querySelectorAll(".seat, .top, #me")].concat(info ? [info] : [])
      .map((e) => e.getBoundingClientRect()).filter((k) => k.width && k.height);
    const free = (p) => {
      if (!p) return false;
      const [x, y] = clamp(p);
      return keep.every((k) => !(x < k.right && x + bw > k.left && y < k.bottom && y + bh > k.top));
    };
    spot = clamp([first, [r.right + gap, cy], [r.left - bw - gap, cy], past].find(free) || first);
    b.dataset.seat = String(seat);
  } else {
    delete b.dataset.seat;
  }
  b.style.left = `${Math.round(spot[0])}px`;
  b.style.top = `${Math.round(spot[1])}px`;
}

function keepBanner() {
  const b = $("banner");
  if (!b.hidden && b.dataset.seat) placeBanner(b, Number(b.dataset.seat));
}
onLayout(keepBanner);

/** Which side's escobas rose in this change (the server counted them). */
function escobaRises(old, next) {
  const out = [];
  if (!old || !next.captured) return out;
  const same = old.round === next.round && old.game === next.game && old.captured;
  next.captured.forEach((side, i) => {
    const before = same ? (old.captured[i] || { escobas: 0 }).escobas : 0;
    if (side.escobas > before) out.push({ side, n: side.escobas - before });
  });
  return out;
}

async function step(old, next) {
  const seen = visit;
  const left = () => seen !== visit; // the page left the table meanwhile: nothing more is shown or said
  const plays = newPlays(old, next);
  const mine = (p) => next.you !== null && next.you !== undefined && p.seat === next.you;
  const rises = escobaRises(old, next);
  for (const p of plays) {
    if (p.kind === "opening") continue; // dealt and taken at once: shown after the deal is drawn
    if (left()) return;
    const own = mine(p);
    const from = own
      ? rectOf(document.querySelector(`#hand [data-card="${p.card}"]`)) || rectOf(seatEl(p.seat))
      : rectOf(seatEl(p.seat));
    const felt = $("table-cards");
    const fr = felt.getBoundingClientRect();
    // lands on the felt among the table cards, clear of its badges
    const spot = { left: fr.left + fr.width / 2, top: fr.top + fr.height / 2, width: 0, height: 0 };
    say(t("say.play", { play: playText(p, next) }), { hold: 4000 });
    let fig = null;
    if (p.kind === "play") {
      const src = own ? document.querySelector(`#hand [data-card="${p.card}"]`) : null;
      if (src) src.classList.add("gone");
      fig = await fly(p.card, from, spot, next, own ? 260 : 520);
    } else if (p.kind === "fifteen") {
      const el = felt.querySelector(`[data-card="${p.card}"]`);
      if (el) el.classList.add("taking");
      banner(t("banner.fifteen"), "fifteen", p.seat);
    }
    if (p.captured && p.captured.length) {
      const taken = p.captured.map((c) => felt.querySelector(`[data-card="${c}"]`)).filter(Boolean);
      taken.forEach((el) => el.classList.add("taking"));
      sound("capture");
      await sleep(own ? 450 : 1100); // long enough to read what was taken
      if (left()) return;
      const to = rectOf(pileEl(p.seat));
      const flights = taken.map((el) => {
        const r = el.getBoundingClientRect();
        el.classList.add("gone");
        return fly(el.dataset.card, r, to, next, 420).then((f) => f && f.remove());
      });
      if (fig) flights.push(fly(p.card, fig.getBoundingClientRect(), to, next, 420).then((f) => f && f.remove()));
      if (fig) fig.remove();
      if (p.kind === "fifteen") {
        const el = felt.querySelector(`[data-card="${p.card}"]`);
        if (el) flights.push(fly(p.card, el.getBoundingClientRect(), to, next, 420).then((f) => f && f.remove()));
        if (el) el.classList.add("gone");
      }
      await Promise.all(flights);
      if (left()) return;
    } else if (fig) {
      fig.remove();
    }
  }
  // the round's end: what was left on the table goes to the last to capture (the server says who)
  const ended = old && old.status === "playing" && (next.status === "round_over" || next.status === "finished");
  if (ended) await leftovers(old, next);
  if (left()) return;
  markSweeps(old, next, rises);
  show(next);
  const last = plays[plays.length - 1];
  if (last && last.kind === "play" && !(last.captured && last.captured.length)) {
    const el = $("table-cards").querySelector(`[data-card="${last.card}"]`);
    if (el) el.classList.add("just-played");
  }
  announceStep(old, next, true, rises);
  if (plays.length && !plays.every(mine)) await sleep(rises.length ? 1600 : 700);
}

async function leftovers(old, next) {
  let found = null;
  try {
    const data = await api("GET", `/tables/${next.table_id || app.tableId}/events?after=${old.version}`);
    const ev = (data.events || []).find((e) => e.type === "RoundEnded");
    if (ev) found = ev.data;
  } catch { /* the score box still opens */ }
  if (!found || !found.leftovers || !found.leftovers.length || found.to_seat === null) {
    app.leftovers = null;
    return;
  }
  app.leftovers = { round: next.round, game: next.game, cards: found.leftovers, seat: found.to_seat };
  const text = t("say.leftovers", {
    who: seatName(found.to_seat, next), cards: cardsText(found.leftovers, next), count: found.leftovers.length,
  });
  app.stripExtras = (app.stripExtras || []).concat([{ round: next.round, game: next.game, at: (next.history || []).length, text, cls: "leftovers" }]);
  say(text, { hold: 2500 });
  const felt = $("table-cards");
  const to = rectOf(pileEl(found.to_seat));
  const flights = found.leftovers.map((c) => {
    const el = felt.querySelector(`[data-card="${c}"]:not(.gone)`);
    if (!el) return null;
    const r = el.getBoundingClientRect();
    el.classList.add("gone");
    return fly(c, r, to, next, 500).then((f) => f && f.remove());
  }).filter(Boolean);
  await Promise.all(flights);
  await sleep(500);
}

/** The play that made a side's escoba: its last capture in this change. */
function sweeper(old, next, side) {
  const plays = newPlays(old, next).filter((p) => side.seats.includes(p.seat) && p.captured.length);
  return plays.length ? plays[plays.length - 1] : null;
}

/** The strip marks the plays that swept (before the change is drawn). */
function markSweeps(old, next, rises) {
  for (const { side, n } of rises) {
    const by = sweeper(old, next, side);
    if (by) app.sweeps.set(`${next.game}:${next.round}:${next.history.indexOf(by)}`, n >= 2 ? t("banner.double_escoba") : t("banner.escoba"));
  }
}

/** What a change means, said and shown: ESCOBA!, DOUBLE ESCOBA!, a new round, the end. */
function announceStep(old, next, animated, rises = escobaRises(old, next)) {
  for (const { side, n } of rises) {
    const by = sweeper(old, next, side);
    const who = by ? seatName(by.seat, next) : namesText(side.seats, next);
    const double = n >= 2 || (by && by.kind === "opening" && n >= 2);
    const word = double ? t("banner.double_escoba") : t("banner.escoba");
    const how = by && by.kind === "opening" ? "say.escoba_opening" : "say.escoba_swept";
    say(t(how, { escoba: word, who }), { hold: 3000 });
    banner(word, "escoba", by ? by.seat : null);
    if (animated) sound("escoba");
    const s = by ? document.querySelector(`.seat[data-seat="${by.seat}"]`) : null;
    if (s) s.classList.add("swept");
  }
  if (!old) return;
  if (next.status === "playing" && (next.turn !== old.turn || old.status !== "playing")) {
    if (next.turn === next.you) { say(t("say.your_turn")); sound("turn"); }
    else say(t("say.turn_of", { name: seatName(next.turn, next) }));
  }
  if (next.status === "round_over" && old.status !== "round_over") say(t("say.round_over", { scores: scoresRead(next) }));
  if (next.status === "finished" && old.status !== "finished") {
    say(t("say.game_over", { result: $("result-text").textContent, scores: scoresRead(next) }));
  }
}

export const currentView = v;
