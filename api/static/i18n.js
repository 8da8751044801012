// The page's words: one catalogue a language (static/i18n/<lang>.json, the same keys in each),
// chosen from `?lang=`, else the reader's pick in the menu (kept in this browser), else the
// browser's languages. Plurals and numbers come from the browser's Intl; nothing is worded in code.
//
// Every module that shows words imports this one; its top-level await means none of them
// runs before the catalogue is here.

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

const plural = new Intl.PluralRules(lang);
const number = new Intl.NumberFormat(lang);

/** A catalogue string with its `{name}` placeholders filled; an entry that is an object picks its
 * plural form by `count` (Intl.PluralRules). Numbers are written in the reader's way. */
export function t(key, params = {}) {
  let entry = catalogue[key];
  if (entry === undefined) {
    console.warn(`i18n: no "${key}" in ${lang}`);
    return key;
  }
  if (typeof entry === "object") {
    const n = Number(params.count ?? 0);
    entry = entry[plural.select(n)] ?? entry.other;
  }
  const text = entry.replace(/\{(\w+)\}/g, (whole, name) => {
    if (!(name in params)) return whole;
    const val = params[name];
    return typeof val === "number" ? number.format(val) : String(val);
  });
  return pseudo ? `⟦${text}⟧` : text;
}

export const formatNumber = (n) => number.format(n);

/** Words the HTML carries by key: data-i18n (text), data-i18n-label (aria-label),
 * data-i18n-placeholder, data-i18n-title. */
export function translate(root = document) {
  for (const el of root.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll("[data-i18n-label]")) el.setAttribute("aria-label", t(el.dataset.i18nLabel));
  for (const el of root.querySelectorAll("[data-i18n-placeholder]")) el.setAttribute("placeholder", t(el.dataset.i18nPlaceholder));
  for (const el of root.querySelectorAll("[data-i18n-title]")) el.setAttribute("title", t(el.dataset.i18nTitle));
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
