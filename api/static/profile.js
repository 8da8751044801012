// A player's public profile (GET /players/{name}, docs/api.md "Ratings"): ratings per preset and
// mode, the totals of their rated games, their recent games with a link to each review, and their
// mean analysis accuracy. Only what the server sends is shown; a profile never holds a card.

import { formatNumber, languageSelect, t, withLang } from "./i18n.js";
import { presetName } from "./forms.js";

const $ = (sel) => document.querySelector(sel);
const playerName = decodeURIComponent(location.pathname.split("/")[2] || "");

const MODE_LABELS = {
  two: "profile.mode.two", three: "profile.mode.three", teams: "profile.mode.teams", four: "profile.mode.four",
};
const TOTAL_LABELS = {
  games: "profile.games", wins: "profile.wins", losses: "profile.losses", abandons: "profile.abandons",
  escobas: "profile.escobas",
};
const RESULT_LABELS = { win: "profile.result.win", loss: "profile.result.loss" };

const cell = (text, tag = "td") => {
  const el = document.createElement(tag);
  el.textContent = text;
  return el;
};

function signed(change) {
  if (change === null || change === undefined) return "";
  const text = formatNumber(Math.abs(change));
  return change > 0 ? `+${text}` : change < 0 ? `−${text}` : text;
}

function show(profile) {
  document.title = t("profile.page_title_of", { name: profile.name });
  $("#profile-name").textContent = profile.name;
  $("#profile-joined").textContent = t("profile.joined", { date: (profile.joined || "").slice(0, 10) });

  const body = $("#ratings tbody");
  body.replaceChildren();
  for (const r of profile.ratings) {
    const row = document.createElement("tr");
    const rating = r.provisional ? t("profile.provisional", { rating: formatNumber(r.rating) }) : formatNumber(r.rating);
    row.append(cell(presetName(r.preset)), cell(MODE_LABELS[r.mode] ? t(MODE_LABELS[r.mode]) : r.mode),
               cell(rating), cell(formatNumber(r.games)));
    body.append(row);
  }
  $("#ratings").hidden = !profile.ratings.length;
  $("#no-ratings").hidden = profile.ratings.length > 0;

  const totals = $("#totals");
  totals.replaceChildren();
  for (const [key, label] of Object.entries(TOTAL_LABELS)) {
    const li = document.createElement("li");
    li.textContent = `${t(label)}: ${formatNumber(profile.totals[key] || 0)}`;
    totals.append(li);
  }
  $("#accuracy").textContent = profile.accuracy === null
    ? t("profile.no_accuracy") : t("profile.accuracy", { accuracy: formatNumber(profile.accuracy) });

  const recent = $("#recent");
  recent.replaceChildren();
  for (const game of profile.recent) {
    const li = document.createElement("li");
    const result = RESULT_LABELS[game.result] ? t(RESULT_LABELS[game.result]) : game.result;
    li.append(`${presetName(game.preset)}, ${MODE_LABELS[game.mode] ? t(MODE_LABELS[game.mode]) : game.mode}: ${result} `);
    const change = document.createElement("span");
    change.className = "rating-change";
    change.textContent = signed(game.rating_change);
    li.append(change, " ");
    const link = document.createElement("a");
    link.href = withLang(game.review);
    link.textContent = t("profile.review");
    li.append(link);
    recent.append(li);
  }
  $("#no-recent").hidden = profile.recent.length > 0;
  $("#profile").hidden = false;
}

async function start() {
  languageSelect($("#profile-lang"));
  $("#home").href = withLang("/");
  const res = await fetch(`/players/${encodeURIComponent(playerName)}`, { headers: { Accept: "application/json" } });
  if (!res.ok) {
    const el = $("#error");
    el.textContent = res.status === 404 ? t("profile.not_found") : t("profile.failed");
    el.hidden = false;
    return;
  }
  show(await res.json());
}

start();
