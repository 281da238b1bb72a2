// The pairing page, opened from the link `browser-shell extension pair`
// prints: #port=…&secret=… . The secret is kept only once the person
// presses Allow, and the link's fragment leaves the address bar at once.

const fragment = new URLSearchParams(location.hash.slice(1));
history.replaceState(null, "", location.pathname);
const port = Number(fragment.get("port"));
const secret = fragment.get("secret") ?? "";
const valid = Number.isInteger(port) && port > 0 && port < 65536 && /^[0-9a-f]{64}$/.test(secret);

const result = document.getElementById("result");
const allow = document.getElementById("allow");
document.getElementById("where").textContent = valid
  ? `It listens on 127.0.0.1:${port}.`
  : "This pairing link is incomplete: run `browser-shell extension pair` again and open the new link.";
allow.disabled = !valid;

allow.addEventListener("click", async () => {
  allow.disabled = true;
  await chrome.storage.local.set({ pairing: { port, secret, pairedAt: Date.now() } });
  const reply = await chrome.runtime.sendMessage({ type: "paired" });
  result.textContent = reply?.ok
    ? "Paired. You can close this tab; the extension's button shows the connection."
    : `Paired, but connecting failed: ${reply?.error ?? "no answer"}`;
});
document.getElementById("deny").addEventListener("click", () => window.close());
