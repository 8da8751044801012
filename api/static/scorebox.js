// The round-end box's table: each side's escobas, cards, coins, sevens, seven of coins (and
// setenta), the points each earned and the score. The table page and the review both draw it.

import { formatNumber as n, t } from "./i18n.js";
import { sideName } from "./state.js";
import { coinsDeck } from "./words.js";

// the points rows in the order a round is scored; any the page does not know comes last
const POINT_ORDER = ["escobas", "cards", "coins", "sevens", "seven_of_coins", "setenta"];
const POINT_ROWS = {
  escobas: "score.points.escobas", cards: "score.points.cards", sevens: "score.points.sevens",
  setenta: "score.points.setenta",
};
// the coins suit as the deck in view calls it: diamonds on a French deck, coins (oros) on the baraja
const COINS = { french: "score.coins.french", spanish: "score.coins.spanish" };
const MOST_COINS = { french: "score.points.coins.french", spanish: "score.points.coins.spanish" };
const SEVEN = { french: "score.seven_of_coins.french", spanish: "score.seven_of_coins.spanish" };

/** Fill `table` with the breakdown of `lastRound` (the view's `last_round`) and the view's scores. */
export function fillScoreTable(table, view, lastRound) {
  const lr = lastRound;
  const deck = coinsDeck(view);
  const coins = t(COINS[deck]);
  const seven = t(SEVEN[deck]);
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  const th0 = document.createElement("th");
  th0.scope = "col";
  th0.textContent = t("score.side");
  th0.className = "sr-col";
  head.append(th0);
  for (const side of lr) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = sideName(side, view);
    head.append(th);
  }
  const body = table.createTBody();
  const row = (title, cells, cls = "") => {
    const r = body.insertRow();
    if (cls) r.className = cls;
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = title;
    r.append(th);
    for (const c of cells) r.insertCell().textContent = c;
  };
  const yes = (b) => (b ? t("score.yes") : "—");
  const setenta = view.settings && view.settings.sevens === "setenta";
  row(t("score.escobas"), lr.map((s) => n(s.escobas)));
  row(t("score.cards"), lr.map((s) => n(s.cards)));
  row(coins, lr.map((s) => n(s.coins)));
  row(t("score.sevens"), lr.map((s) => n(s.sevens)));
  row(seven, lr.map((s) => yes(s.seven_of_coins)));
  if (lr.some((s) => s.setenta !== null && s.setenta !== undefined)) {
    row(t("score.setenta"), lr.map((s) => (s.setenta === null || s.setenta === undefined ? "—" : n(s.setenta))));
  }
  const cats = POINT_ORDER.filter((k) => lr.some((s) => s.points && k in s.points));
  for (const s of lr) for (const k of Object.keys(s.points || {})) if (!cats.includes(k)) cats.push(k);
  for (const k of cats) {
    // with the setenta, "most sevens" scores nothing: its row is only the all-sevens extra, when on
    if (k === "sevens" && setenta && !view.settings.all_sevens_extra) continue;
    let what;
    if (k === "coins") what = t(MOST_COINS[deck]);
    else if (k === "seven_of_coins") what = seven;
    else if (k === "sevens" && setenta) what = t("score.points.all_sevens");
    else what = POINT_ROWS[k] ? t(POINT_ROWS[k]) : k.replaceAll("_", " ");
    row(t("score.points_row", { what }), lr.map((s) => n((s.points && s.points[k]) || 0)), "pts");
  }
  row(t("score.round_points"), lr.map((s) => n(s.round_points)), "total");
  row(t("score.score"), lr.map((s) => {
    const sc = (view.scores || []).find((x) => x.seats.join() === s.seats.join());
    return sc ? n(sc.points) : "";
  }), "total");
}
