// The table's chat: lines over the socket (and HTTP on connect), an unread mark on
// the phone's CHAT button while the panel is closed, and a way to close it.

import { t } from "./i18n.js";
import { $, api, app, errorText, seatName } from "./state.js";

const seen = new Set();
let lastId = null;
let unread = 0;

const isOpen = () => document.body.classList.contains("chat-open") || getComputedStyle($("chat")).position !== "fixed";

function mark() {
  const b = $("chat-toggle");
  const n = $("chat-unread");
  n.textContent = unread ? String(unread) : "";
  n.hidden = !unread;
  b.setAttribute("aria-label", unread ? t("chat.unread", { count: unread }) : t("chat.open"));
}

export function addChat(line) {
  if (!line || seen.has(line.id)) return;
  seen.add(line.id);
  lastId = line.id;
  const li = document.createElement("li");
  const who = document.createElement("strong");
  who.textContent = t("chat.who", { name: line.name || seatName(line.seat) });
  li.append(who, document.createTextNode(line.text));
  $("chat-lines").append(li);
  li.scrollIntoView({ block: "nearest" });
  if (!isOpen()) { unread += 1; mark(); }
}

/** The page leaves the table: its lines go with it. */
export function resetChat() {
  seen.clear();
  lastId = null;
  unread = 0;
  $("chat-lines").replaceChildren();
  mark();
}

export async function loadChat() {
  try {
    const after = lastId ?? 0;
    const data = await api("GET", `/tables/${app.tableId}/chat?after=${encodeURIComponent(after)}`);
    for (const line of (data && data.lines) || []) addChat(line);
  } catch { /* chat is optional */ }
}

export function setChatOpen(open) {
  document.body.classList.toggle("chat-open", open);
  $("chat-toggle").setAttribute("aria-expanded", open ? "true" : "false");
  if (open) {
    unread = 0;
    mark();
    const lines = $("chat-lines");
    lines.scrollTop = lines.scrollHeight;
    if (!$("chat-form").hidden) $("chat-text").focus();
  } else {
    $("chat-toggle").focus();
  }
}

export function wireChat(showError) {
  $("chat-toggle").addEventListener("click", () => setChatOpen(!document.body.classList.contains("chat-open")));
  $("chat-close").addEventListener("click", () => setChatOpen(false));
  $("chat-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = $("chat-text").value.trim();
    if (!text) return;
    try {
      await api("POST", `/tables/${app.tableId}/chat`, { text });
      $("chat-text").value = "";
      loadChat();
    } catch (err) {
      showError(errorText(err));
    }
  });
  mark();
}
