// A player's account on the home (docs/api.md v1.3 "Players"): sign up, sign in by password or by
// passkey (WebAuthn), sign out. The player token is kept in localStorage; with it the home lists the
// account's games (mytables.js) and the page opens and joins tables as that player (main.js).

import { t, withLang } from "./i18n.js";
import { $, api, errorText, store } from "./state.js";

const KEY = "escoba.player";
const listeners = [];

/** The signed-in player ({ token, name, player_id }) or null (a guest). */
export function account() {
  try {
    const a = JSON.parse(localStorage.getItem(KEY) || "null");
    return a && a.token && a.name ? a : null;
  } catch {
    return null;
  }
}
export const accountToken = () => (account() || {}).token || null;

/** `f(account)` after each sign-in and sign-out (the home redraws its list). */
export const onAccount = (f) => listeners.push(f);

function keep(a) {
  if (a) store(KEY, JSON.stringify({ token: a.token, name: a.name, player_id: a.player_id }));
  else { try { localStorage.removeItem(KEY); } catch { /* private mode */ } }
  draw();
  for (const f of listeners) { try { f(account()); } catch { /* optional */ } }
}

/** The token was refused (its session ended elsewhere): this browser is a guest again. */
export function forgetAccount() { keep(null); }

const bearer = (token) => ({ Authorization: `Bearer ${token}` });

// ---------------------------------------------------------------- WebAuthn's JSON (base64url) shapes
const b64ToBytes = (s) => {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
};
const bytesToB64 = (buf) => {
  let bin = "";
  for (const b of new Uint8Array(buf)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};
const withIds = (list) => (list || []).map((c) => ({ ...c, id: b64ToBytes(c.id) }));

// The server (py_webauthn's options_to_json) sends binary fields as base64url; a browser that has the
// JSON helpers (parse...FromJSON, toJSON) reads them itself, else they are converted here.
function creationOptions(json) {
  if (PublicKeyCredential.parseCreationOptionsFromJSON) return PublicKeyCredential.parseCreationOptionsFromJSON(json);
  return { ...json, challenge: b64ToBytes(json.challenge), user: { ...json.user, id: b64ToBytes(json.user.id) },
    excludeCredentials: withIds(json.excludeCredentials) };
}
function requestOptions(json) {
  if (PublicKeyCredential.parseRequestOptionsFromJSON) return PublicKeyCredential.parseRequestOptionsFromJSON(json);
  return { ...json, challenge: b64ToBytes(json.challenge), allowCredentials: withIds(json.allowCredentials) };
}
function credentialJSON(cred) {
  if (typeof cred.toJSON === "function") return cred.toJSON();
  const r = cred.response;
  const response = { clientDataJSON: bytesToB64(r.clientDataJSON) };
  if (r.attestationObject) {
    response.attestationObject = bytesToB64(r.attestationObject);
    response.transports = r.getTransports ? r.getTransports() : [];
  } else {
    response.authenticatorData = bytesToB64(r.authenticatorData);
    response.signature = bytesToB64(r.signature);
    if (r.userHandle) response.userHandle = bytesToB64(r.userHandle);
  }
  return { id: cred.id, rawId: bytesToB64(cred.rawId), type: cred.type, response,
    clientExtensionResults: cred.getClientExtensionResults(), authenticatorAttachment: cred.authenticatorAttachment };
}
export const passkeysOffered = () => typeof window.PublicKeyCredential === "function" && !!navigator.credentials;

// ---------------------------------------------------------------- ceremonies
async function signUp(name, password) {
  const body = password ? { name, password } : { name };
  const a = await api("POST", "/players", body);
  keep(a);
  if (!password) await addPasskey(); // no password: the account's key is a passkey, made now
}

async function signIn(name, password) {
  keep(await api("POST", "/sessions", { name, password }));
}

async function addPasskey() {
  const token = accountToken();
  const options = await api("POST", "/players/passkeys/options", undefined, bearer(token));
  const cred = await navigator.credentials.create({ publicKey: creationOptions(options) });
  await api("POST", "/players/passkeys", credentialJSON(cred), bearer(token));
  say(t("account.passkey_added"));
}

async function signInWithPasskey(name) {
  const options = await api("POST", "/sessions/passkey/options", name ? { name } : {});
  const cred = await navigator.credentials.get({ publicKey: requestOptions(options) });
  keep(await api("POST", "/sessions/passkey", credentialJSON(cred)));
}

async function signOut() {
  const token = accountToken();
  keep(null);
  try { await api("DELETE", "/sessions", undefined, bearer(token)); } catch { /* signed out here all the same */ }
}

// ---------------------------------------------------------------- the panel
function say(message) { $("account-status").textContent = message || ""; }
function fail(message) {
  const el = $("account-error");
  el.textContent = message || "";
  el.hidden = !message;
}

/** The account's errors in the reader's words (the rest as every API error). */
function accountError(e) {
  if (e && e.name === "NotAllowedError") return t("account.passkey_cancelled");
  if (e && e.code === "unauthorized") return t("account.wrong");
  if (e && e.code === "name_taken") return t("account.name_taken");
  if (e && e.code === "bad_request" && e.details) {
    if ("name" in e.details) return t("account.bad_name");
    if ("password" in e.details) return t("account.bad_password");
  }
  return errorText(e);
}

function draw() {
  const a = account();
  $("account-in").hidden = !a;
  $("account-out").hidden = !!a;
  if (a) {
    const link = $("account-name");
    link.textContent = a.name;
    link.href = withLang(`/p/${encodeURIComponent(a.name)}`);
    for (const id of ["create-name", "join-name"]) $(id).value = a.name; // the server seats the account's name
  }
  const offered = passkeysOffered();
  $("account-passkey").hidden = !offered;
  $("account-add-passkey").hidden = !offered;
}

function busy(f) {
  return async (e) => {
    if (e) e.preventDefault();
    fail("");
    say("");
    const buttons = [...$("account").querySelectorAll("button")];
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await f();
    } catch (err) {
      fail(accountError(err));
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  };
}

const typed = () => [$("account-user").value.trim(), $("account-password").value];

export function wireAccount() {
  $("account-form").addEventListener("submit", busy(async () => {
    const [name, password] = typed();
    await signIn(name, password);
    $("account-password").value = "";
  }));
  $("account-sign-up").addEventListener("click", busy(async () => {
    const [name, password] = typed();
    await signUp(name, password);
    $("account-password").value = "";
  }));
  $("account-passkey").addEventListener("click", busy(() => signInWithPasskey(typed()[0])));
  $("account-add-passkey").addEventListener("click", busy(addPasskey));
  $("account-sign-out").addEventListener("click", busy(signOut));
  draw();
}
