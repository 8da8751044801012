// Card faces drawn as SVG, for the four deck designs. The name on a card is the
// view's `labels` entry ("Q♦", "Sota de oros"); only the drawing is decided here.
// No inline styles (the page runs under a strict CSP): presentation attributes and classes.

import { t } from "./i18n.js";
import { label, worth } from "./state.js";
import { cardName } from "./words.js";

const NS = "http://www.w3.org/2000/svg";
const W = 60;
const H = 90;

function el(name, attrs = {}, text) {
  const e = document.createElementNS(NS, name);
  for (const [k, val] of Object.entries(attrs)) e.setAttribute(k, String(val));
  if (text !== undefined) e.textContent = text;
  return e;
}

const FRENCH_RED = new Set(["o", "c"]);
const SPANISH_COLOR = { o: "#9a6b00", c: "#b3261e", e: "#1d4e89", b: "#2e6b2e" };
// a baraja's own corner numbers (sota 10, caballo 11, rey 12): the same on the card in every
// language, while the word at its foot is the reader's (the catalogue's card.rank.N)
const SPANISH_INDEX = { As: "1", Sota: "10", Caballo: "11", Rey: "12" };
const RANK_WORDS = { 1: "card.rank.1", 8: "card.rank.8", 9: "card.rank.9", 10: "card.rank.10" };
// The pictures are files served with the page (img-src 'self'): cards/LICENSE says whose.
const ART = "/static/cards";
const FRENCH_FILE_SUIT = { o: "D", c: "H", e: "S", b: "C" };
const FRENCH_COURTS = new Set(["J", "Q", "K"]);
const SPANISH_COURTS = { Sota: "sota", Caballo: "caballo", Rey: "rey" };
// where each figure holds its suit's object, in the figure's own 100x160 drawing
const SPANISH_HAND = { sota: [74, 60], caballo: [78, 48], rey: [78, 64] };
// the pips of 2 to 7 in the baraja's arrangement, clear of the corner index and the worth disc
const L = 24;
const C = 36;
const R = 48;
const PIPS = {
  2: [[C, 16], [C, 60]],
  3: [[C, 15], [C, 38], [C, 61]],
  4: [[L, 16], [R, 16], [L, 60], [R, 60]],
  5: [[L, 15], [R, 15], [C, 38], [L, 61], [R, 61]],
  6: [[L, 15], [R, 15], [L, 38], [R, 38], [L, 61], [R, 61]],
  7: [[L, 15], [R, 15], [C, 27], [L, 38], [R, 38], [L, 61], [R, 61]],
  // the numbers deck's spot cards
  8: [[L, 14], [R, 14], [L, 30], [R, 30], [L, 46], [R, 46], [L, 62], [R, 62]],
  9: [[L, 14], [R, 14], [L, 30], [R, 30], [C, 38], [L, 46], [R, 46], [L, 62], [R, 62]],
  10: [[L, 14], [R, 14], [C, 22], [L, 30], [R, 30], [L, 46], [R, 46], [C, 54], [L, 62], [R, 62]],
};
// the baraja's "pintas": breaks in the frame's top line tell the suit (none for oros)
const PINTAS = { o: 0, c: 1, e: 2, b: 3 };

// Spanish suit symbols, drawn around (0, 0) in a box about 20 units high.
function spanishSuit(suit, scale = 1) {
  const g = el("g", { transform: `scale(${scale})` });
  const c = SPANISH_COLOR[suit];
  if (suit === "o") { // oros: a gold coin with its rim and a flower
    g.append(el("circle", { r: 9.5, fill: "#e8b923", stroke: c, "stroke-width": 1.6 }));
    g.append(el("circle", { r: 6.5, fill: "none", stroke: c, "stroke-width": 1.2 }));
    g.append(el("circle", { r: 2.6, fill: "#b3261e" }));
  } else if (suit === "c") { // copas: a goblet
    g.append(el("path", { d: "M-8,-10 H8 Q8.5,0 1.8,2.5 V5.5 Q5.5,6.5 6,10 H-6 Q-5.5,6.5 -1.8,5.5 V2.5 Q-8.5,0 -8,-10 Z", fill: "#e8b923", stroke: c, "stroke-width": 1.5 }));
    g.append(el("path", { d: "M-7.6,-6.5 H7.6", stroke: c, "stroke-width": 1.5 }));
  } else if (suit === "e") { // espadas: a sword, point up
    g.append(el("path", { d: "M0,-11.5 L2.4,-8 V3 H-2.4 V-8 Z", fill: "#d9e2ec", stroke: c, "stroke-width": 1.3 }));
    g.append(el("rect", { x: -6.5, y: 3, width: 13, height: 2.6, rx: 1.2, fill: c }));
    g.append(el("rect", { x: -1.3, y: 5.6, width: 2.6, height: 4.4, fill: "#8a5a2b" }));
    g.append(el("circle", { cy: 11, r: 1.6, fill: c }));
  } else { // bastos: a knotted club
    g.append(el("path", { d: "M-2.2,11 L-4.2,-6 Q-4.6,-11.5 0,-11.5 Q4.6,-11.5 4.2,-6 L2.2,11 Z", fill: "#a8743a", stroke: c, "stroke-width": 1.3 }));
    g.append(el("circle", { cx: -3.6, cy: -2, r: 1.3, fill: c }));
    g.append(el("circle", { cx: 3.2, cy: 3, r: 1.2, fill: c }));
  }
  return g;
}

function at(x, y, child) {
  const g = el("g", { transform: `translate(${x} ${y})` });
  g.append(child);
  return g;
}

/** The parts of a label: corner index, suit mark, the words in the middle. */
export function faceParts(card, text, deck) {
  const suit = card.slice(-1);
  if (deck === "spanish" || / de /.test(text)) {
    const [rank, ...rest] = text.split(" de ");
    return { spanish: true, suit, index: SPANISH_INDEX[rank] || rank, rank, suitName: rest.join(" de ") };
  }
  const mark = text.slice(-1);
  return { spanish: false, suit, index: text.slice(0, -1), rank: text.slice(0, -1), mark };
}

function spanishFace(svg, p, card) {
  const color = SPANISH_COLOR[p.suit];
  // the frame, broken by the suit's pintas
  svg.append(el("rect", { x: 3.5, y: 3.5, width: W - 7, height: H - 7, rx: 3.5, fill: "none", stroke: color, "stroke-width": 1.2 }));
  for (let i = 0; i < PINTAS[p.suit]; i++) {
    svg.append(el("rect", { x: W / 2 - 1.5 + (i - (PINTAS[p.suit] - 1) / 2) * 6, y: 2, width: 3, height: 3, class: "face-gap" }));
  }
  svg.append(el("text", { x: 9.5, y: 17, "text-anchor": "middle", "font-size": 13, "font-weight": 800, fill: color, class: "idx" }, p.index));
  const figure = SPANISH_COURTS[p.rank];
  const n = Number(card.slice(0, -1));
  if (figure) {
    const [fx, fy, fw] = [15, 4, 42];
    const k = fw / 100;
    svg.append(el("image", { href: `${ART}/spanish/${figure}.svg`, x: fx, y: fy, width: fw, height: fw * 1.6, class: "art" }));
    const [hx, hy] = SPANISH_HAND[figure];
    svg.append(at(fx + hx * k, fy + hy * k, spanishSuit(p.suit, 0.62)));
    svg.append(el("text", { x: 5.5, y: H - 7.5, "font-size": 7.5, "font-weight": 700, fill: "#1d1d1b" }, t(RANK_WORDS[n])));
  } else if (n === 1) {
    svg.append(at(W / 2 + 2, 40, spanishSuit(p.suit, 1.6)));
    svg.append(el("text", { x: 5.5, y: H - 7.5, "font-size": 7.5, "font-weight": 700, fill: "#1d1d1b" }, t(RANK_WORDS[n])));
  } else {
    for (const [x, y] of PIPS[n] || []) svg.append(at(x, y, spanishSuit(p.suit, 0.66)));
  }
}

function frenchFace(svg, p) {
  const color = FRENCH_RED.has(p.suit) ? "#b3261e" : "#1d1d1b";
  // corner index and suit, top left (the worth takes the bottom right)
  svg.append(el("text", { x: 8, y: 15, "text-anchor": "middle", "font-size": p.index.length > 1 ? 10.5 : 13, "font-weight": 700, fill: color, class: "idx" }, p.index));
  svg.append(el("text", { x: 8, y: 27, "text-anchor": "middle", "font-size": 11, fill: color }, p.mark));
  if (FRENCH_COURTS.has(p.index)) {
    // the court's picture (its own frame) beside the index column
    svg.append(el("image", {
      href: `${ART}/french/${p.index}${FRENCH_FILE_SUIT[p.suit]}.svg`, x: 16, y: 4, width: 40, height: 63.3,
      preserveAspectRatio: "none", class: "art",
    }));
    return;
  }
  const pips = PIPS[Number(p.index)];
  if (pips) { // a spot card: its marks laid out as on a real card
    for (const [x, y] of pips) svg.append(el("text", { x, y: y + 5, "text-anchor": "middle", "font-size": 15, fill: color }, p.mark));
    return;
  }
  svg.append(el("text", { x: W / 2 + 2, y: 48, "text-anchor": "middle", "font-size": 24, "font-weight": 700, fill: color }, p.index));
  svg.append(el("text", { x: W / 2 + 2, y: 70, "text-anchor": "middle", "font-size": 20, fill: color }, p.mark));
}

/** An SVG card face (aria-hidden: the button around it carries the name). */
export function cardSvg(card, text, deck) {
  const p = faceParts(card, text, deck);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "face", "aria-hidden": "true", focusable: "false" });
  svg.append(el("rect", { x: 0.5, y: 0.5, width: W - 1, height: H - 1, rx: 6, class: "face-bg" }));
  if (p.spanish) spanishFace(svg, p, card);
  else frenchFace(svg, p);
  // the worth when adding to 15, in a dark disc that reads at any size
  svg.append(el("circle", { cx: W - 10.5, cy: H - 10.5, r: 9.5, class: "worth-disc" }));
  svg.append(el("text", { x: W - 10.5, y: H - 6, "text-anchor": "middle", "font-size": 13, "font-weight": 800, class: "worth-num" }, String(worth(card))));
  return svg;
}

/** A card as a button: its face, and a name that says what it is worth. */
export function cardButton(card, { cls = "", pressed = null, lit = false, disabled = false, extra = "" } = {}, view) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = `card suit-${card.slice(-1)} ${cls}${lit ? " lit" : ""}`;
  b.dataset.card = card;
  const text = label(card, view);
  b.append(cardSvg(card, text, view && view.deck));
  let aria = t("card.name", { name: cardName(card, view), worth: worth(card) });
  if (lit) aria += t("card.makes_fifteen");
  if (extra) aria += t("card.extra", { extra });
  b.setAttribute("aria-label", aria);
  if (pressed !== null) b.setAttribute("aria-pressed", pressed ? "true" : "false");
  b.disabled = disabled;
  return b;
}

/** A card drawn for motion only (a play flying across the table). */
export function cardFigure(card, view) {
  const d = document.createElement("div");
  d.className = `card figure suit-${card.slice(-1)}`;
  d.append(cardSvg(card, label(card, view), view && view.deck));
  return d;
}

/** A small card back: the other players' hands, the piles. */
export function cardBack() {
  const svg = el("svg", { viewBox: "0 0 20 28", class: "back", "aria-hidden": "true", focusable: "false" });
  svg.append(el("rect", { x: 0.5, y: 0.5, width: 19, height: 27, rx: 3, class: "back-bg" }));
  svg.append(el("rect", { x: 3, y: 3, width: 14, height: 22, rx: 2, fill: "none", class: "back-line" }));
  return svg;
}
