// The service worker: shows the turn notices the server pushes (workers/push.py), even when
// no tab of the table is open. A message names the table and says whose turn it is; never a card.
// Served from /sw.js so that its scope is the whole site (every /t/<id> page).

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let msg = {};
  try { msg = event.data ? event.data.json() : {}; } catch { msg = {}; }
  const title = typeof msg.title === "string" ? msg.title : "Escoba";
  const options = {
    body: typeof msg.body === "string" ? msg.body : "Your turn.",
    tag: typeof msg.tag === "string" ? msg.tag : "escoba", // one notice per table: a new one replaces it
    renotify: true,
    icon: "/static/favicon-turn.svg",
    data: { url: typeof msg.url === "string" ? msg.url : "/" },
  };
  event.waitUntil(self.registration.showNotification(title, options));
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
