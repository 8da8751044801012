// Short sounds (your turn, a capture, an escoba), made with WebAudio: no files to fetch.
// M toggles them; the choice is kept in this browser.

import { app, store } from "./state.js";

let ctx = null;
const NOTES = { turn: [[660, 0.09]], capture: [[440, 0.07], [550, 0.07]], escoba: [[523, 0.1], [659, 0.1], [784, 0.16]] };

export function sound(kind) {
  if (!app.sound || !NOTES[kind]) return;
  try {
    ctx = ctx || new (window.AudioContext || window.webkitAudioContext)();
    if (ctx.state === "suspended") ctx.resume().catch(() => {});
    let t = ctx.currentTime;
    for (const [freq, len] of NOTES[kind]) {
      const o = ctx.createOscillator();
      const g = ctx.createGain();
      o.frequency.value = freq;
      g.gain.setValueAtTime(0.0001, t);
      g.gain.exponentialRampToValueAtTime(0.15, t + 0.01);
      g.gain.exponentialRampToValueAtTime(0.0001, t + len);
      o.connect(g).connect(ctx.destination);
      o.start(t);
      o.stop(t + len + 0.02);
      t += len;
    }
  } catch { /* no audio here */ }
}

export function toggleSound() {
  app.sound = !app.sound;
  store("escoba.sound", app.sound ? "on" : "off");
  return app.sound;
}
