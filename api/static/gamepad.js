// A game controller (the Gamepad API, standard mapping), as the seed's controls say: the D-pad
// (or the left stick) browses cards and buttons, A or X picks and plays, Start opens the menu,
// Back toggles the sound, B closes what is open. Each press calls the same action as its key.
//
// The browser has no events for buttons: the pads are read once a frame while one is connected,
// and a button acts when it goes down (holding it does not repeat).

const BUTTONS = { 0: "choose", 2: "choose", 1: "back", 8: "sound", 9: "menu", 12: "up", 13: "down", 14: "left", 15: "right" };
const STICK = 0.6; // how far the stick is pushed before it counts as a D-pad press

function pads() {
  try { return [...(navigator.getGamepads ? navigator.getGamepads() : [])].filter(Boolean); } catch { return []; }
}

/** `actions`: {choose, back, sound, menu, up, down, browse(step)}; returns a stop function. */
export function startGamepad(actions) {
  const was = new Map(); // "pad:control" -> pressed at the last look
  let frame = null;
  const run = {
    choose: () => actions.choose(), back: () => actions.back(), sound: () => actions.sound(),
    menu: () => actions.menu(), up: () => actions.up(), down: () => actions.down(),
    left: () => actions.browse(-1), right: () => actions.browse(1),
  };
  const edge = (key, pressed, what) => {
    if (pressed && !was.get(key)) {
      try { run[what](); } catch (e) { console.warn("gamepad", what, e); }
    }
    was.set(key, pressed);
  };
  const look = () => {
    frame = null;
    const found = pads();
    for (const pad of found) {
      pad.buttons.forEach((b, i) => {
        if (BUTTONS[i]) edge(`${pad.index}:b${i}`, !!(b && (b.pressed || b.value > 0.5)), BUTTONS[i]);
      });
      const [x = 0, y = 0] = pad.axes || [];
      edge(`${pad.index}:x-`, x < -STICK, "left");
      edge(`${pad.index}:x+`, x > STICK, "right");
      edge(`${pad.index}:y-`, y < -STICK, "up");
      edge(`${pad.index}:y+`, y > STICK, "down");
    }
    if (found.length) frame = requestAnimationFrame(look);
    else was.clear();
  };
  const wake = () => { if (frame === null) frame = requestAnimationFrame(look); };
  window.addEventListener("gamepadconnected", wake);
  if (pads().length) wake(); // connected before the page loaded (and seen already)
  return () => {
    window.removeEventListener("gamepadconnected", wake);
    if (frame !== null) cancelAnimationFrame(frame);
    frame = null;
  };
}
