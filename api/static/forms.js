// The host's choices: built from GET /presets (each preset's own defaults and what
// a host may set), so a form never overrides a preset with another's values.

import { api, app } from "./state.js";

const SETTING_LABELS = {
  target: "Points to win",
  opening_fifteen: "Opening table of 15 goes to the dealer (1 escoba)",
  opening_thirty: "Opening table of 30",
  all_coins_extra: "All ten coins score one more",
  all_sevens_extra: "All four sevens score one more",
  capture: "Capture rule",
  deck: "The table's deck design",
};
const VALUE_LABELS = {
  two_escobas: "two escobas", two_escobas_if_split: "two escobas if it splits in two 15s",
  nothing: "nothing", spanish: "add up to 15", hybrid: "15, or same value (hybrid)",
  french: "French: Q 8, J 9, K 10", french_swapped: "French: J 8, Q 9, K 10",
  numeric: "Numbers A to 10",
};
export const DECK_NAMES = {
  french: "French: Q 8, J 9, K 10", french_swapped: "French: J 8, Q 9, K 10",
  spanish: "Spanish baraja", numeric: "Numbers A to 10",
};

export async function loadPresets() {
  if (!app.presets) app.presets = (await api("GET", "/presets")).presets;
  return app.presets;
}

const valueText = (key, val) => {
  if (typeof val === "boolean") return val ? "yes" : "no";
  if (key === "target") return `${val} points`;
  return VALUE_LABELS[val] || String(val);
};

/** The preset's choices as selects, set to `current` (a table's settings) or the preset's defaults. */
export function buildSettings(fieldset, preset, current, onChange) {
  const legend = fieldset.querySelector("legend");
  fieldset.replaceChildren(legend);
  const p = app.presets && app.presets[preset];
  if (!p) return;
  const values = current || p.defaults;
  for (const [key, choices] of Object.entries(p.offered)) {
    const lab = document.createElement("label");
    lab.textContent = `${SETTING_LABELS[key] || key} `;
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
