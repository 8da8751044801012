// Turn notices for a player who is not looking at the table.
//
// Three layers, each used when the one before cannot reach the player:
//  1. a mark in the tab's title and favicon while the tab is in the background;
//  2. a system notification from the page (the Notification API), when the player allowed it;
//  3. Web Push: the browser subscribes with its push service, the server keeps the
//     subscription for this seat (POST /tables/{id}/push) and the worker pushes a notice
//     when the turn comes, which the service worker (/sw.js) shows with no tab open.
// No notice names a card: the table and "your turn", nothing else.
//
// The page wires it with one call once it knows the table and the seat's token:
//   import { setupTurnNotices } from "./push.js";
//   const notices = setupTurnNotices({ tableId, token, container: someElement });
//   ...on every view: notices.update(view);
// `container` (optional) gets a TURN NOTICES button that turns push on and off.

import { lang, t } from "./i18n.js";
import { errorText } from "./state.js";

const MARK = "\u25CF "; // ● before the title
const ICON = "/static/favicon.svg";
const ICON_TURN = "/static/favicon-turn.svg";
const storeKey = (tableId) => `escoba.push.${tableId}`;

function b64ToBytes(text) {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

function favicon() {
  let link = document.querySelector("link[rel~='icon']");
  if (!link) {
    link = document.createElement("link");
    link.rel = "icon";
    link.type = "image/svg+xml";
    link.href = ICON;
    document.head.appendChild(link);
  }
  return link;
}

export function pushSupported() {
  return "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

export function setupTurnNotices({ tableId, token, container = null } = {}) {
  const icon = favicon();
  let baseTitle = document.title;
  let marked = false;
  let lastTurnSeq = null; // the turn we already told the player about
  let pushOn = (() => { try { return Boolean(localStorage.getItem(storeKey(tableId))); } catch { return false; } })();
  let button = null;

  function headers() {
    return { "Content-Type": "application/json", Authorization: `Bearer ${token}` };
  }

  function mark(on) {
    if (on === marked) return;
    marked = on;
    if (on) baseTitle = document.title;
    document.title = on ? MARK + t("notice.title_mark", { title: baseTitle }) : baseTitle;
    icon.href = on ? ICON_TURN : ICON;
    document.documentElement.dataset.turnMark = on ? "on" : "off";
  }

  function showPageNotice(view) {
    if (pushOn || !("Notification" in window) || Notification.permission !== "granted") return;
    try {
      const n = new Notification(t("notice.turn_title"), {
        body: t("notice.turn_body", { table: view.name || tableId }),
        tag: `escoba-${tableId}`, // the same tag as a push notice: one replaces the other
      });
      n.onclick = () => { window.focus(); n.close(); };
    } catch { /* some browsers allow notifications from the service worker only */ }
  }

  // Called with every view the page receives.
  function update(view) {
    const myTurn = view && view.status === "playing" && view.you !== null && view.you !== undefined
      && view.turn === view.you;
    if (!myTurn) { mark(false); return; }
    if (document.hidden) {
      mark(true);
      if (lastTurnSeq !== view.turn_seq) showPageNotice(view);
    }
    lastTurnSeq = view.turn_seq;
  }

  document.addEventListener("visibilitychange", () => { if (!document.hidden) mark(false); });

  async function registration() {
    // the worker words its notices in the page's language (it has no localStorage to read)
    return navigator.serviceWorker.register(`/sw.js?lang=${encodeURIComponent(lang)}`, { scope: "/" });
  }

  // Turn Web Push on (call it from a click: browsers ask for permission only then).
  async function enable() {
    if (!pushSupported()) throw new Error(t("notice.unsupported"));
    const permission = await Notification.requestPermission();
    if (permission !== "granted") throw new Error(t("notice.denied"));
    const keyAnswer = await fetch("/push/key");
    if (!keyAnswer.ok) throw new Error(t("notice.no_server"));
    const { public_key: publicKey } = await keyAnswer.json();
    const reg = await registration();
    await navigator.serviceWorker.ready;
    let sub = await reg.pushManager.getSubscription();
    if (!sub) {
      sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64ToBytes(publicKey) });
    }
    const answer = await fetch(`/tables/${encodeURIComponent(tableId)}/push`, {
      method: "POST", headers: headers(), body: JSON.stringify(sub.toJSON()),
    });
    if (!answer.ok) {
      const body = await answer.json().catch(() => ({}));
      throw new Error(errorText({ code: body.error && body.error.code, status: answer.status }));
    }
    pushOn = true;
    try { localStorage.setItem(storeKey(tableId), sub.endpoint); } catch { /* private mode */ }
    render();
    return sub.endpoint;
  }

  // Turn Web Push off for this table (the browser's subscription stays for other tables).
  async function disable() {
    let endpoint = null;
    try { endpoint = localStorage.getItem(storeKey(tableId)); } catch { /* private mode */ }
    if (endpoint) {
      await fetch(`/tables/${encodeURIComponent(tableId)}/push`, {
        method: "DELETE", headers: headers(), body: JSON.stringify({ endpoint }),
      }).catch(() => {});
    }
    pushOn = false;
    try { localStorage.removeItem(storeKey(tableId)); } catch { /* private mode */ }
    render();
  }

  function render() {
    if (!button) return;
    button.textContent = pushOn ? t("notice.button_on") : t("notice.button_off");
    button.setAttribute("aria-pressed", pushOn ? "true" : "false");
  }

  if (container && token) {
    button = document.createElement("button");
    button.type = "button";
    button.className = "ghost turn-notices";
    button.hidden = !pushSupported();
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        if (pushOn) await disable(); else await enable();
        button.title = "";
      } catch (e) {
        button.title = e.message; // said next to the button, not in an alert
      } finally {
        button.disabled = false;
      }
    });
    container.appendChild(button);
    render();
  }

  return { update, enable, disable, get pushOn() { return pushOn; }, button };
}
