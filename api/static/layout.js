// The table cards' size: as large as the felt allows (up to the screen's --table-max), never
// overlapping, spread over the felt. Flex wrapping alone let a fifth row run off the felt on a
// phone with three or four players; here the size is chosen so every row fits.

const GAP = 8; // matches .table-cards' gap: wider than a card grows when it is taken (scale 1.04)
const MIN = 30;

/** The largest card width (px) that lays `n` cards of ratio 2:3 in a w x h box, in rows. */
export function fitWidth(n, w, h, max) {
  if (n <= 0 || w <= 0 || h <= 0) return max;
  for (let cw = Math.floor(max); cw > MIN; cw--) {
    const cols = Math.max(1, Math.floor((w + GAP) / (cw + GAP)));
    const rows = Math.ceil(n / cols);
    if (rows * (cw * 1.5 + GAP) - GAP <= h) return cw;
  }
  return MIN;
}

export function fitTable() {
  const box = document.getElementById("table-cards");
  if (!box || box.offsetParent === null) return;
  const n = box.querySelectorAll(".card").length;
  const cs = getComputedStyle(box);
  const max = parseFloat(getComputedStyle(document.documentElement).getPropertyValue("--table-max")) || 84;
  const w = box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const h = box.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
  // with few cards the size still follows the felt, so a card's size does not jump as cards come
  const cw = fitWidth(Math.max(n, 8), w, h, max);
  box.style.setProperty("--table-w", `${cw}px`);
}

let watching = false;
const listeners = [];
/** Also called when the felt or the seats change size (motion.js keeps its banner by its seat). */
export const onLayout = (f) => listeners.push(f);

/** Fit again whenever the felt or a seat changes size (a rotation, the hint or a seat growing a line). */
export function watchTable() {
  if (watching || typeof ResizeObserver === "undefined") return;
  const box = document.getElementById("table-cards");
  const grid = document.getElementById("tablegrid");
  if (!box || !grid) return;
  watching = true;
  const ro = new ResizeObserver(() => {
    fitTable();
    for (const f of listeners) f();
  });
  ro.observe(box);
  // the seats are drawn anew on every change: their places are watched, not the seats themselves
  for (const pos of grid.querySelectorAll(".pos")) ro.observe(pos);
}
