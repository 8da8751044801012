// Drawing the table from the view: seats around the felt (you at the bottom,
// partners across, play turning the view's `settings.direction`), the felt,
// your hand, the round's plays, the score box and the game's end.

import { cardBack, cardButton } from "./cards.js";
import { presetName } from "./forms.js";
import { page } from "./hooks.js";
import { formatNumber, t } from "./i18n.js";
import { fillScoreTable } from "./scorebox.js";
import {
  $, app, inGameSeats, inviteUrl, isHost, isSeated, myTurn, optionFor, seatName, sideName, v,
} from "./state.js";
import { cardName, cardsText, namesText, playText, sumText } from "./words.js";

export { playText };

const ENDED_BY = {
  score: "result.why.target", target: "result.why.target", resign: "result.why.resign",
  resigned: "result.why.resign", exit: "result.why.exit", away: "result.why.away",
  expired: "result.why.expired",
};
const BOT_NAMES = { carmen: "bot.carmen", tito: "bot.tito", luna: "bot.luna" };
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
  const why = ENDED_BY[view.ended_by] ? t(ENDED_BY[view.ended_by]) : "";
  if (!winners.length) return why ? t("result.no_winner_why", { why }) : t("result.no_winner");
  const names = namesText(winners, view);
  const count = winners.length;
  const seated = isSeated(view);
  const iWon = seated && winners.includes(view.you);
  const losers = inGameSeats(view).map((s) => s.seat).filter((s) => !winners.includes(s));
  const gone = view.ended_by === "exit" || view.ended_by === "resign";
  if (seated && !iWon && gone && losers.includes(view.you)) {
    // the one who left (or resigned) is told plainly what it cost
    const key = view.ended_by === "exit"
      ? (losers.length > 1 ? "result.you_lose_side_left" : "result.you_lose_left")
      : (losers.length > 1 ? "result.you_lose_side_resigned" : "result.you_lose_resigned");
    return t(key, { names, count });
  }
  const won = iWon ? t("result.you_win") : "";
  if (gone) {
    const who = namesText(losers, view);
    const key = view.ended_by === "exit" ? "result.left_win" : "result.resigned_win";
    return `${won}${t(key, { who, names, count, why })}`;
  }
  return `${won}${why ? t("result.win_why", { names, count, why }) : t("result.win", { names, count })}`;
}

// ---------------------------------------------------------------- rendering
export function render() {
  const view = v();
  if (!view) return;
  document.body.dataset.status = view.status;
  $("table-title").textContent = t("title.table", {
    name: view.name || t("title.unnamed"), preset: presetName(view.preset), count: view.settings.target,
  });
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
  // the game's end and the round's box side by side where the screen is wide and short
  $("overlay").classList.toggle("both", !$("round-box").hidden && !$("result").hidden);
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
    let who = s.empty ? t("waiting.open") : seatName(s.seat, view);
    if (!s.empty && s.kind === "bot") who = t("waiting.bot", { name: who });
    if (!s.empty && s.seat === view.host) who = t("waiting.host", { name: who });
    name.textContent = t("waiting.seat", { n: s.seat + 1, who });
    li.append(name);
    if (host && s.empty) {
      const sel = document.createElement("select");
      sel.setAttribute("aria-label", t("waiting.bot_for", { n: s.seat + 1 }));
      for (const b of BOTS) {
        const o = document.createElement("option");
        o.value = b; o.textContent = t(BOT_NAMES[b]);
        sel.append(o);
      }
      // a bot not seated yet, so three bots are Carmen, Tito and Luna
      sel.value = BOTS.find((b) => !usedBots.has(b)) || BOTS[s.seat % BOTS.length];
      usedBots.add(sel.value);
      const add = document.createElement("button");
      add.type = "button";
      add.textContent = t("waiting.add_bot");
      add.className = "add-bot";
      add.setAttribute("aria-label", t("waiting.add_bot_to", { n: s.seat + 1 }));
      add.addEventListener("click", () => handlers.move("add_bot", { bot: sel.value, seat: s.seat }));
      li.append(sel, add);
    }
    if (host && !s.empty && s.kind === "bot") {
      const rm = document.createElement("button");
      rm.type = "button";
      rm.textContent = t("waiting.remove");
      rm.setAttribute("aria-label", t("waiting.remove_from", { name: seatName(s.seat, view), n: s.seat + 1 }));
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
      b.textContent = current ? t("waiting.partner_now", { name: seatName(s.seat, view) }) : seatName(s.seat, view);
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
    ? (taken.length < 2 ? t("waiting.need_two") : t("waiting.empty_seats"))
    : t("waiting.for_host", { name: seatName(view.host, view) });
  if (!seated) note = t("waiting.watching");
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
      const tag = document.createElement("span");
      tag.className = `badge ${cls}`;
      tag.textContent = text;
      tags.append(tag);
    };
    if (seat === view.turn && view.status === "playing") add(t("seat.to_play"), "go");
    if (s.kind === "bot") add(t("seat.bot"));
    if (s.team !== null && s.team !== undefined) add(t("seat.team", { n: Number(s.team) + 1 }));
    if (seat === view.dealer) add(t("seat.dealer"));
    if (view.away && view.away.seat === seat) add(t("seat.away"), "warn");
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
    pts.textContent = t("seat.points_short", { count: score });
    const esc = document.createElement("span");
    esc.className = "esc";
    esc.textContent = cap && cap.escobas ? t("seat.escobas_short", { count: cap.escobas }) : "";
    info.append(hand, pile, esc, pts);
    box.append(info);
    let desc = t("seat.describe", {
      name: seatName(seat, view),
      hand: t("count.in_hand", { count: s.hand_count }),
      points: t("count.points", { count: score }),
      cards: t("count.captured", { count: cap ? cap.cards : 0 }),
      escobas: t("count.escobas", { count: cap ? cap.escobas : 0 }),
    });
    if (seat === view.dealer) desc += t("seat.describe_dealer");
    if (seat === view.turn) desc += t("seat.describe_turn");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", desc);
    $(`pos-${pos}`).append(box);
  }
  // the way play turns, drawn on the felt
  const dir = view.settings.direction === "left" ? "left" : "right";
  const d = $("direction");
  d.dataset.dir = dir;
  d.textContent = dir === "left" ? t("felt.direction_left") : t("felt.direction_right");
}

function renderFelt(view) {
  const felt = $("felt");
  felt.hidden = view.status === "waiting";
  if (felt.hidden) return;
  $("stock").textContent = t("felt.deck", { count: view.stock_count });
  $("stock").setAttribute("aria-label", t("felt.deck_label", { count: view.stock_count }));
  $("last-deal").hidden = !view.last_deal;
  $("round-info").textContent = t("felt.round", { n: view.round });
  const box = $("table-cards");
  box.replaceChildren();
  const opt = app.picked ? optionFor(app.picked) : null;
  const litSet = new Set(opt ? opt.captures.flat() : []);
  const ft = view.fifteen_to_take;
  const fifteenSet = new Set(ft && ft.sets.length === 1 ? ft.sets[0] : ft ? [ft.card] : []);
  if (!view.table_cards.length) {
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = view.status === "playing" ? t("felt.empty") : "";
    box.append(p);
  }
  const turn = myTurn(view);
  for (const c of view.table_cards) {
    const sel = app.selected.has(c);
    let cls = sel ? "selected" : "";
    if (fifteenSet.has(c)) cls += " fifteen-card";
    const b = cardButton(c, { cls, pressed: sel, lit: litSet.has(c), disabled: !turn, extra: fifteenSet.has(c) ? t("card.part_of_fifteen") : "" }, view);
    b.addEventListener("click", () => handlers.toggleTable(c));
    box.append(b);
  }
  // TAKE THE 15: each set it can be taken with, its cards shown on the button
  const f = $("fifteen");
  f.replaceChildren();
  f.hidden = !ft;
  if (ft) {
    const p = document.createElement("p");
    p.textContent = t("fifteen.left", { who: seatName(ft.left_by, view), card: cardName(ft.card, view) });
    f.append(p);
    if (turn) {
      ft.sets.forEach((set) => {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "primary take-fifteen";
        b.textContent = t("play.take_fifteen", { cards: cardsText(set, view, true) });
        b.setAttribute("aria-label", t("play.take_fifteen", { cards: cardsText(set, view) }) + t("play.sum", { sum: sumText(set) }));
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

function renderStrip(view) {
  const strip = $("strip");
  const hist = view.history || [];
  strip.hidden = view.status === "waiting";
  strip.replaceChildren();
  const items = hist.map((p, i) => {
    const swept = app.sweeps.get(`${view.game}:${view.round}:${i}`);
    const spoken = playText(p, view);
    const short = playText(p, view, true);
    return {
      text: swept ? t("strip.swept", { play: spoken, escoba: swept }) : spoken,
      shown: swept ? t("strip.swept", { play: short, escoba: swept }) : short,
      cls: p.captured && p.captured.length ? "took" : "",
    };
  });
  for (const e of app.stripExtras || []) if (e.round === view.round && e.game === view.game) items.splice(e.at, 0, { text: e.text, cls: e.cls });
  if (!items.length) {
    const li = document.createElement("li");
    li.className = "none";
    li.textContent = view.status === "playing" ? t("strip.none") : "";
    strip.append(li);
  }
  items.forEach((it, i) => {
    const li = document.createElement("li");
    // the eye reads the short form (a French card's symbols), the screen reader the words
    if (it.shown && it.shown !== it.text) {
      const seen = document.createElement("span");
      seen.setAttribute("aria-hidden", "true");
      seen.textContent = it.shown;
      const heard = document.createElement("span");
      heard.className = "sr-only";
      heard.textContent = it.text;
      li.append(seen, heard);
    } else {
      li.textContent = it.text;
    }
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
      extra: turn ? (ways ? t("card.ways", { count: ways }) : t("card.no_fifteen")) : "",
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
  $("leave").title = opt && !opt.may_leave ? t("play.leave_refused") : "";
  const playing = view.status === "playing" || view.status === "round_over";
  $("capture").hidden = view.status !== "playing";
  $("leave").hidden = view.status !== "playing";
  $("resign").hidden = !playing;
  $("claim-away").hidden = !(view.away && view.turn !== view.you && view.status === "playing");
  const hint = $("hint");
  if (view.status !== "playing") hint.textContent = "";
  else if (!turn) hint.textContent = t("hint.waiting", { name: seatName(view.turn, view) });
  else if (!app.picked) hint.textContent = view.fifteen_to_take ? t("hint.turn_fifteen") : t("hint.turn");
  else if (opt && opt.captures.length > 1 && !app.selected.size) hint.textContent = t("hint.mark_many");
  else if (app.selected.size) hint.textContent = t("hint.capture");
  else if (opt && opt.captures.length) hint.textContent = t("hint.mark");
  else hint.textContent = t("hint.leave");
}

/** The sides' points in words, for the live line: at a round's end its points and the game's. */
export function scoresRead(view) {
  const lr = view.last_round || [];
  if (view.status === "round_over" && lr.length) {
    return lr.map((side) => {
      const sc = (view.scores || []).find((x) => x.seats.join() === side.seats.join());
      return t("round.side_read", { names: sideName(side, view), round: side.round_points, count: sc ? sc.points : 0 });
    }).join("; ");
  }
  return (view.scores || []).map((sc) => t("score.side_has", { names: sideName(sc, view), count: sc.points })).join("; ");
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
  return t("round.tie", { names: tied.map((s) => sideName(s, view)).join(" & "), top, target, count: tied.length });
}

function renderRound(view, seated) {
  const box = $("round-box");
  const lr = view.last_round;
  box.hidden = !(lr && (view.status === "round_over" || view.status === "finished"));
  if (box.hidden) return;
  $("round-title").textContent = view.status === "finished" ? t("round.last_title") : t("round.title", { n: view.round });
  fillScoreTable($("score-table"), view, lr);
  const game = lr.map((side) => {
    const sc = (view.scores || []).find((x) => x.seats.join() === side.seats.join());
    return sc ? sc.points : 0;
  });
  fillHeadline($("round-score"), [
    [t("round.headline_round"), lr.map((side) => side.round_points)],
    [t("round.headline_game"), game],
  ], lr.map((side) => t("round.side_read", {
    names: sideName(side, view), round: side.round_points, count: game[lr.indexOf(side)],
  })));
  const lo = app.leftovers;
  const note = $("round-note");
  const parts = [];
  if (lo && lo.round === view.round && lo.game === view.game && lo.cards.length) {
    parts.push(t("round.leftovers", { cards: cardsText(lo.cards, view), who: seatName(lo.seat, view), count: lo.cards.length }));
  }
  const tie = tieText(view);
  if (tie) parts.push(tie);
  note.textContent = parts.join(" ");
  note.hidden = !parts.length;
  $("next-round").hidden = !(seated && view.status === "round_over");
}

/** A score in its headline: the numbers large ("21–19"), each `[label, numbers]` a line, the sides'
 * names under them when given; a screen reader hears `read` instead (the sides with their points). */
function fillHeadline(el, lines, read, names = null) {
  el.replaceChildren();
  const shown = document.createElement("span");
  shown.setAttribute("aria-hidden", "true");
  shown.className = "headline-lines";
  for (const [label, nums] of lines) {
    const line = document.createElement("span");
    line.className = "headline-line";
    if (label) {
      const l = document.createElement("span");
      l.className = "headline-label";
      l.textContent = label;
      line.append(l);
    }
    const n = document.createElement("span");
    n.className = "nums";
    n.textContent = nums.map((x) => formatNumber(x)).join("–");
    line.append(n);
    shown.append(line);
  }
  if (names) {
    const who = document.createElement("span");
    who.className = "headline-names";
    who.textContent = names.join(" · ");
    shown.append(who);
  }
  const sr = document.createElement("span");
  sr.className = "sr-only";
  sr.textContent = read.join("; ");
  el.append(shown, sr);
}

function renderResult(view, seated) {
  const box = $("result");
  box.hidden = !(view.status === "finished" || view.status === "expired");
  if (box.hidden) return;
  $("result-text").textContent = resultText(view);
  const scores = view.scores || [];
  fillHeadline($("result-score"), [["", scores.map((sc) => sc.points)]],
    scores.map((sc) => t("score.side_has", { names: sideName(sc, view), count: sc.points })),
    scores.map((sc) => sideName(sc, view)));
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
  if (rm.closed === "lapsed") text = t("rematch.lapsed");
  else if (rm.closed === "declined") text = t("rematch.declined");
  else if (rm.closed) text = t("rematch.closed");
  else {
    const yes = Object.entries(answers).filter(([, a]) => a).map(([s]) => seatName(Number(s), view));
    text = yes.length ? t("rematch.ask_yes", { names: yes.join(", ") }) : t("rematch.ask");
    // teams exist only with four
    if (rm.teams && four) text += t(rm.teams === "swap" ? "rematch.teams_swap" : "rematch.teams_keep");
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
