// The page's words: one catalogue a language (static/i18n/<lang>.json, the same keys in each),
// chosen from `?lang=`, else the reader's pick in the menu (kept in this browser), else the
// browser's languages. Each entry is an ICU MessageFormat message: plural forms by `{count, plural,
// ...}` (Portuguese's "=0" beside its "one", which CLDR gives to 0 as well), a side's one or several
// players by `{count, plural, ...}` or `{many, select, ...}`; intl-messageformat (vendored, docs/words.md
// says why) reads them. Nothing is worded in code.
//
// Every module that shows words imports this one; its top-level await means none of them
// runs before the catalogue is here.

import { IntlMessageFormat } from "./vendor/intl-messageformat.js";

export const LANGUAGES = ["en", "pt-BR", "es"];
const STORE = "escoba.lang";

function stored(key) {
  try { return localStorage.getItem(key); } catch { return null; }
}

/** The closest of our languages to a BCP 47 tag ("pt" and "pt-PT" read pt-BR, "es-AR" es), or null. */
export function closest(tag) {
  if (!tag) return null;
  const lower = String(tag).toLowerCase();
  const exact = LANGUAGES.find((l) => l.toLowerCase() === lower);
  if (exact) return exact;
  const base = lower.split("-")[0];
  return LANGUAGES.find((l) => l.toLowerCase().split("-")[0] === base) || null;
}

export function chooseLanguage() {
  const asked = closest(new URLSearchParams(location.search).get("lang"));
  if (asked) return asked;
  const kept = closest(stored(STORE));
  if (kept) return kept;
  for (const tag of navigator.languages || [navigator.language]) {
    const found = closest(tag);
    if (found) return found;
  }
  return "en";
}

export const lang = chooseLanguage();
// tests set it: every catalogue string comes out wrapped, so text the catalogue did not give shows bare
const pseudo = stored("escoba.pseudo") === "on";

async function load(code) {
  const res = await fetch(`/static/i18n/${code}.json`, { headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(`catalogue ${code}: ${res.status}`);
  return res.json();
}

let catalogue = {};
try {
  catalogue = await load(lang);
} catch {
  catalogue = lang === "en" ? {} : await load("en").catch(() => ({}));
}

const number = new Intl.NumberFormat(lang);
const compiled = new Map(); // key -> IntlMessageFormat, each message parsed once

/** A numbers-only argument in the reader's way ("1.234" in Portuguese); a plural's own number stays a number. */
function shown(params) {
  const out = {};
  for (const [name, val] of Object.entries(params)) out[name] = typeof val === "number" && name !== "count" ? number.format(val) : val;
  return out;
}

/** A catalogue message filled with `params` (ICU MessageFormat: `{name}`, `{count, plural, ...}`,
 * `{x, select, ...}`). A message that cannot be read or filled says so in the console and shows its
 * text with what it could fill, never nothing. */
export function t(key, params = {}) {
  const entry = catalogue[key];
  if (typeof entry !== "string") {
    console.warn(`i18n: no "${key}" in ${lang}`);
    return key;
  }
  let text = entry;
  if (entry.includes("{")) {
    try {
      let mf = compiled.get(key);
      if (!mf) {
        mf = new IntlMessageFormat(entry, lang, undefined, { ignoreTag: true });
        compiled.set(key, mf);
      }
      text = String(mf.format(shown(params)));
    } catch (e) {
      console.warn(`i18n: "${key}" in ${lang}: ${e.message}`);
      text = entry.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
    }
  }
  return pseudo ? `⟦${text}⟧` : text;
}

export const formatNumber = (n) => number.format(n);

/** Words the HTML carries by key: data-i18n (text), data-i18n-label (aria-label),
 * data-i18n-placeholder, data-i18n-title, data-i18n-alt (an image's words). */
export function translate(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-label]")) el.setAttribute("aria-label", t(el.dataset.i18nLabel));
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.setAttribute("placeholder", t(el.dataset.i18nPlaceholder));
  for (const el of root.querySelectorAll("[data-i18n-title]")) el.setAttribute("title", t(el.dataset.i18nTitle));
  for (const el of root.querySelectorAll("[data-i18n-alt]")) el.setAttribute("alt", t(el.dataset.i18nAlt));
}

/** A link of this site that keeps the address's `?lang=` (it is not kept otherwise). */
export function withLang(path) {
  const asked = closest(new URLSearchParams(location.search).get("lang"));
  if (!asked) return path;
  const url = new URL(path, location.origin);
  url.searchParams.set("lang", asked);
  return url.pathname + url.search + url.hash;
}

/** The reader picks a language (the menu): kept in this browser, the page shown again in it. */
export function pickLanguage(code) {
  const chosen = closest(code) || "en";
  try { localStorage.setItem(STORE, chosen); } catch { /* private mode */ }
  const url = new URL(location.href);
  url.searchParams.delete("lang"); // the address's choice would win over the new pick
  location.replace(url.href);
}

/** A <select> of the languages, each named in its own tongue (the catalogue's `language.*`). */
export function languageSelect(select) {
  const names = { en: "language.en", "pt-BR": "language.pt_BR", es: "language.es" };
  select.replaceChildren(...LANGUAGES.map((code) => {
    const o = document.createElement("option");
    o.value = code;
    o.lang = code;
    o.textContent = t(names[code]);
    return o;
  }));
  select.value = lang;
  select.addEventListener("change", () => pickLanguage(select.value));
}

document.documentElement.lang = lang;
translate();
