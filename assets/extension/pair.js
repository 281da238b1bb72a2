// The pairing page, opened from the link `browser-shell extension pair`
// prints: #port=…&secret=…[&url=wss://…/extension] . The secret is kept
// only once the person presses Allow, and the link's fragment leaves the
// address bar at once.

import { isRelayUrl } from "./bridge.js";

const fragment = new URLSearchParams(location.hash.slice(1));
history.replaceState(null, "", location.pathname);
const port = Number(fragment.get("port"));
const secret = fragment.get("secret") ?? "";
// A relay on a server, when the shell runs there (TLS only).
const url = fragment.get("url");
const valid = Number.isInteger(port) && port > 0 && port < 65536 && /^[0-9a-f]{64}$/.test(secret) &&
  (url === null || isRelayUrl(url));

const result = document.getElementById("result");
const allow = document.getElementById("allow");
document.getElementById("where").textContent = valid
  ? url === null
    ? `It listens on 127.0.0.1:${port}.`
    : `It runs on a server: the extension connects to ${new URL(url).host} over TLS.`
  : "This pairing link is incomplete: run `browser-shell extension pair` again and open the new link.";
allow.disabled = !valid;

allow.addEventListener("click", async () => {
  allow.disabled = true;
  const pairing = { port, secret, pairedAt: Date.now() };
  if (url !== null) pairing.url = url;
  await chrome.storage.local.set({ pairing });
  const reply = await chrome.runtime.sendMessage({ type: "paired" });
  result.textContent = reply?.ok
    ? "Paired. You can close this tab; the extension's button shows the connection."
    : `Paired, but connecting failed: ${reply?.error ?? "no answer"}`;
});
document.getElementById("deny").addEventListener("click", () => window.close());
