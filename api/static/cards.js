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
const SPANISH_INDEX = { As: "1", Sota: "S", Caballo: "C", Rey: "R" };

// Spanish suit symbols, drawn around (0, 0) in a box about 20 units high.
function spanishSuit(suit, scale = 1) {
  const g = el("g", { transform: `scale(${scale})` });
  const c = SPANISH_COLOR[suit];
  if (suit === "o") { // oros: a coin
    g.append(el("circle", { r: 9, fill: "#e0b325", stroke: c, "stroke-width": 2 }));
    g.append(el("circle", { r: 4.5, fill: "none", stroke: c, "stroke-width": 1.5 }));
  } else if (suit === "c") { // copas: a cup
    g.append(el("path", { d: "M-8,-9 H8 Q8,1 2,3 V6 H5 V9 H-5 V6 H-2 V3 Q-8,1 -8,-9 Z", fill: c }));
  } else if (suit === "e") { // espadas: a sword
    g.append(el("path", { d: "M0,-11 L2.5,3 H-2.5 Z", fill: c }));
    g.append(el("rect", { x: -6, y: 3, width: 12, height: 2.5, rx: 1, fill: c }));
    g.append(el("rect", { x: -1.3, y: 5.5, width: 2.6, height: 5, fill: c }));
  } else { // bastos: a club
    g.append(el("path", { d: "M-2.5,10 L-4,-6 Q-4,-11 0,-11 Q4,-11 4,-6 L2.5,10 Z", fill: c }));
    g.append(el("circle", { cx: -1, cy: -4, r: 1, fill: "#fff" }));
    g.append(el("circle", { cx: 1, cy: 2, r: 1, fill: "#fff" }));
  }
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

/** An SVG card face (aria-hidden: the button around it carries the name). */
export function cardSvg(card, text, deck) {
  const p = faceParts(card, text, deck);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, class: "face", "aria-hidden": "true", focusable: "false" });
  svg.append(el("rect", { x: 0.5, y: 0.5, width: W - 1, height: H - 1, rx: 6, class: "face-bg" }));
  const color = p.spanish ? SPANISH_COLOR[p.suit] : FRENCH_RED.has(p.suit) ? "#b3261e" : "#1d1d1b";
  // corner index and suit, top left (the worth takes the bottom right)
  const corner = () => {
    const g = el("g");
    g.append(el("text", { x: 8, y: 15, "text-anchor": "middle", "font-size": 13, "font-weight": 700, fill: color, class: "idx" }, p.index));
    if (p.spanish) {
      const s = spanishSuit(p.suit, 0.42);
      const wrap = el("g", { transform: "translate(8 24)" });
      wrap.append(s);
      g.append(wrap);
    } else {
      g.append(el("text", { x: 8, y: 27, "text-anchor": "middle", "font-size": 11, fill: color }, p.mark));
    }
    return g;
  };
  svg.append(corner());
  if (p.spanish) {
    const big = el("g", { transform: `translate(${W / 2} 33)` });
    big.append(spanishSuit(p.suit, 1.05));
    svg.append(big);
    // the rank's word on its own line, never split mid-word; the suit's name below
    const size = 12;
    svg.append(el("text", { x: W / 2, y: 57, "text-anchor": "middle", "font-size": size, "font-weight": 700, fill: "#1d1d1b" }, p.rank));
    svg.append(el("text", { x: W / 2, y: 67, "text-anchor": "middle", "font-size": 8.5, fill: "#3b3a36" }, `de ${p.suitName}`));
  } else {
    svg.append(el("text", { x: W / 2, y: 48, "text-anchor": "middle", "font-size": p.index.length > 1 ? 20 : 24, "font-weight": 700, fill: color }, p.index));
    svg.append(el("text", { x: W / 2, y: 70, "text-anchor": "middle", "font-size": 20, fill: color }, p.mark));
  }
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
