// How the page says cards and plays in the reader's language. The French designs' names are
// their symbols ("Q♦", the view's `labels`), the same in every language; the Spanish baraja is
// named in words ("7 of coins", "7 de ouros", "7 de oros"), never half one language, half another.

import { t } from "./i18n.js";
import { label, seatName, v, worth } from "./state.js";

const SPANISH_RANKS = { 1: "card.rank.1", 8: "card.rank.8", 9: "card.rank.9", 10: "card.rank.10" };
const SPANISH_SUITS = { o: "card.suit.o", c: "card.suit.c", e: "card.suit.e", b: "card.suit.b" };

export const isSpanish = (view = v()) => !!view && view.deck === "spanish";

/** A card's name for words (announcements, names of buttons, the review). */
export function cardName(card, view = v()) {
  if (!isSpanish(view)) return label(card, view);
  const n = worth(card);
  const rank = SPANISH_RANKS[n] ? t(SPANISH_RANKS[n]) : String(n);
  return t("card.spanish", { rank, suit: t(SPANISH_SUITS[card.slice(-1)]) });
}

export const cardsText = (cards, view = v()) => cards.map((c) => cardName(c, view)).join(" + ");

/** "Ana & Bruno": the seats of a side. */
export const namesText = (seats, view = v()) => seats.map((s) => seatName(s, view)).join(" & ");

/** The coins suit as this deck calls it, for the score's words (diamonds on a French deck). */
export const coinsDeck = (view = v()) => (isSpanish(view) ? "spanish" : "french");

/** One line of the round's plays: who played what, and what it took. */
export function playText(play, view = v()) {
  const who = seatName(play.seat, view);
  if (play.kind === "opening") return t("play.text.opening", { who, cards: cardsText(play.captured, view) });
  if (play.kind === "fifteen") return t("play.text.fifteen", { who, cards: cardsText([play.card, ...play.captured], view) });
  if (play.captured && play.captured.length) {
    return t("play.text.takes", { who, card: cardName(play.card, view), cards: cardsText(play.captured, view) });
  }
  return t("play.text.left", { who, card: cardName(play.card, view) });
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
