// How the page says cards and plays in the reader's language. Every card has a name in words
// ("7 of hearts", "Dama de ouros", "Sota de oros"), whatever its deck: the screen reader hears it, and
// the live line and the review show it. Where space is short and the eye reads (the strip of plays,
// TAKE THE 15's button) a French design's card may show its symbols ("Q♦", the view's `labels`),
// the same in every language, its words beside them for the screen reader.

import { t } from "./i18n.js";
import { label, seatName, v, worth } from "./state.js";

const SPANISH_RANKS = { 1: "card.rank.1", 8: "card.rank.8", 9: "card.rank.9", 10: "card.rank.10" };
const SPANISH_SUITS = { o: "card.suit.o", c: "card.suit.c", e: "card.suit.e", b: "card.suit.b" };
// the French designs' letters (the view's label before its suit symbol) and their suits
const FRENCH_RANKS = { A: "card.french_rank.A", J: "card.french_rank.J", Q: "card.french_rank.Q", K: "card.french_rank.K" };
const FRENCH_SUITS = { o: "card.french_suit.o", c: "card.french_suit.c", e: "card.french_suit.e", b: "card.french_suit.b" };

export const isSpanish = (view = v()) => !!view && view.deck === "spanish";

/** A card's name in words (announcements, names of buttons, the review): "Queen of diamonds". */
export function cardName(card, view = v()) {
  const suit = card.slice(-1);
  if (isSpanish(view)) {
    const n = worth(card);
    const rank = SPANISH_RANKS[n] ? t(SPANISH_RANKS[n]) : String(n);
    return t("card.spanish", { rank, suit: t(SPANISH_SUITS[suit]) });
  }
  const mark = label(card, view) || String(worth(card));
  const letter = mark.replace(/[♦♥♠♣]$/u, "");
  const rank = FRENCH_RANKS[letter] ? t(FRENCH_RANKS[letter]) : letter;
  return t("card.french", { rank, suit: t(FRENCH_SUITS[suit]) });
}

/** A card as the eye reads it where space is short: a French design's symbols ("Q♦"), else words. */
export const cardMark = (card, view = v()) => (isSpanish(view) ? cardName(card, view) : label(card, view));

/** A capture's sum in worths: "7 + 8 = 15". */
export const sumText = (cards) => `${cards.map(worth).join(" + ")} = ${cards.reduce((a, c) => a + worth(c), 0)}`;

export const cardsText = (cards, view = v(), short = false) =>
  cards.map((c) => (short ? cardMark(c, view) : cardName(c, view))).join(" + ");

/** "Ana & Bruno": the seats of a side. */
export const namesText = (seats, view = v()) => seats.map((s) => seatName(s, view)).join(" & ");

/** The coins suit as this deck calls it, for the score's words (diamonds on a French deck). */
export const coinsDeck = (view = v()) => (isSpanish(view) ? "spanish" : "french");

/** One line of the round's plays: who played what, and what it took. In words, a capture read as its
 * sum ("7 of diamonds takes 8 of clubs: 7 + 8 = 15"); `short`, as the strip shows it ("7♦ takes 8♣"). */
export function playText(play, view = v(), short = false) {
  const who = seatName(play.seat, view);
  const cards = (list) => cardsText(list, view, short);
  const sum = (list) => (short ? "" : t("play.sum", { sum: sumText(list) }));
  if (play.kind === "opening") return t("play.text.opening", { who, cards: cards(play.captured) }) + sum(play.captured);
  if (play.kind === "fifteen") {
    return t("play.text.fifteen", { who, cards: cards([play.card, ...play.captured]) }) + sum([play.card, ...play.captured]);
  }
  const card = short ? cardMark(play.card, view) : cardName(play.card, view);
  if (play.captured && play.captured.length) {
    return t("play.text.takes", { who, card, cards: cards(play.captured) }) + sum([play.card, ...play.captured]);
  }
  return t("play.text.left", { who, card });
}

/** A move in the shape of POST /moves (the analysis' `played` and `best`), in words. */
export function moveText(move, view = v()) {
  if (!move) return "";
  if (move.type === "take_fifteen") return t("move.take_fifteen", { cards: cardsText(move.cards || [], view) });
  if (move.capture && move.capture.length) {
    return t("move.capture", { card: cardName(move.card, view), cards: cardsText(move.capture, view) });
  }
  return t("move.leave", { card: cardName(move.card, view) });
}
