// The host's choices: built from GET /presets (each preset's own defaults and what
// a host may set), so a form never overrides a preset with another's values.

import { t } from "./i18n.js";
import { api, app } from "./state.js";

const SETTING_LABELS = {
  target: "settings.target", opening_fifteen: "settings.opening_fifteen", opening_thirty: "settings.opening_thirty",
  all_coins_extra: "settings.all_coins_extra", all_sevens_extra: "settings.all_sevens_extra",
  capture: "settings.capture", deck: "settings.deck", rated: "settings.rated",
};
const VALUE_LABELS = {
  two_escobas: "settings.value.two_escobas", two_escobas_if_split: "settings.value.two_escobas_if_split",
  nothing: "settings.value.nothing", spanish: "settings.value.spanish", hybrid: "settings.value.hybrid",
  french: "deck.french", french_swapped: "deck.french_swapped", numeric: "deck.numeric",
};
const PRESET_NAMES = { selminha: "preset.selminha", del15: "preset.del15", cardgames: "preset.cardgames" };

/** A preset's name as players know it. */
export const presetName = (preset) => (PRESET_NAMES[preset] ? t(PRESET_NAMES[preset]) : preset);

export async function loadPresets() {
  if (!app.presets) app.presets = (await api("GET", "/presets")).presets;
  return app.presets;
}

const valueText = (key, val) => {
  if (typeof val === "boolean") return val ? t("settings.yes") : t("settings.no");
  if (key === "target") return t("settings.points", { count: val });
  // the table's deck may be the Spanish baraja: named as the deck, not as the capture rule
  if (key === "deck" && val === "spanish") return t("deck.spanish");
  return VALUE_LABELS[val] ? t(VALUE_LABELS[val]) : String(val);
};

/** The preset's choices as selects, set to `current` (a table's settings) or the preset's defaults;
 * `skip` leaves some out (the create form: the deck is the reader's own choice there, not a second one). */
export function buildSettings(fieldset, preset, current, onChange, { skip = [] } = {}) {
  const legend = fieldset.querySelector("legend");
  fieldset.replaceChildren(legend);
  const p = app.presets && app.presets[preset];
  if (!p) return;
  const values = current || p.defaults;
  for (const [key, choices] of Object.entries(p.offered)) {
    if (skip.includes(key)) continue;
    const lab = document.createElement("label");
    lab.textContent = `${SETTING_LABELS[key] ? t(SETTING_LABELS[key]) : key} `;
    const sel = document.createElement("select");
    sel.name = key;
    sel.dataset.setting = key;
    for (const val of choices) {
      const o = document.createElement("option");
      o.value = JSON.stringify(val);
      o.textContent = valueText(key, val);
      sel.append(o);
    }
    if (key in values) sel.value = JSON.stringify(values[key]);
    sel.disabled = choices.length < 2;
    if (onChange) sel.addEventListener("change", () => onChange(key, JSON.parse(sel.value)));
    lab.append(sel);
    fieldset.append(lab);
  }
}

/** Only what the host changed from the preset's defaults. */
export function readSettings(fieldset, preset) {
  const defaults = (app.presets && app.presets[preset] && app.presets[preset].defaults) || {};
  const out = {};
  for (const sel of fieldset.querySelectorAll("select[data-setting]")) {
    if (sel.disabled) continue;
    const val = JSON.parse(sel.value);
    if (defaults[sel.dataset.setting] !== val) out[sel.dataset.setting] = val;
  }
  return out;
}
