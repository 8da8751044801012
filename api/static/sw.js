// The service worker: shows the turn notices the server pushes (workers/push.py), even when
// no tab of the table is open. A message names the table and says whose turn it is; never a card.
// Served from /sw.js so that its scope is the whole site (every /t/<id> page).

// The page registers /sw.js?lang=<its language>; the notices are worded from that catalogue
// (the server's English title and body are only the fallback when it cannot be read).
const LANG = ["en", "pt-BR", "es"].find((l) => l === new URLSearchParams(self.location.search).get("lang")) || "en";
let words = null;

async function catalogue() {
  if (words) return words;
  try {
    const res = await fetch(`/static/i18n/${LANG}.json`);
    if (res.ok) words = await res.json();
  } catch { /* offline: the fallback words */ }
  return words || {};
}

function fill(text, params) {
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}

/** The notice's title and body in the page's language: a turn, or PLAYER AWAY open. */
async function worded(msg) {
  const cat = await catalogue();
  const table = typeof msg.table_name === "string" ? msg.table_name : "";
  const keys = msg.reason === "away" ? ["notice.away_title", "notice.away_body"] : ["notice.turn_title", "notice.turn_body"];
  const [title, body] = keys.map((k) => (typeof cat[k] === "string" ? fill(cat[k], { table }) : null));
  return {
    title: title || (typeof msg.title === "string" ? msg.title : "Escoba"),
    body: body || (typeof msg.body === "string" ? msg.body : ""),
  };
}

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let msg = {};
  try { msg = event.data ? event.data.json() : {}; } catch { msg = {}; }
  event.waitUntil(worded(msg).then(({ title, body }) => self.registration.showNotification(title, {
    body,
    tag: typeof msg.tag === "string" ? msg.tag : "escoba", // one notice per table: a new one replaces it
    renotify: true,
    icon: "/static/favicon-turn.svg",
    data: { url: typeof msg.url === "string" ? msg.url : "/" },
  })));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const target = new URL((event.notification.data && event.notification.data.url) || "/", self.location.origin);
  // only our own pages: a message cannot send the player elsewhere
  const url = target.origin === self.location.origin ? target.href : self.location.origin + "/";
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    for (const w of windows) {
      if (w.url === url && "focus" in w) return w.focus();
    }
    return self.clients.openWindow(url);
  })());
});
