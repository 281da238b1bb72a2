// The bridge protocol between this extension and browser-shell (seed 001).
//
// A connection opens with a handshake that proves, both ways, that each
// side holds the secret from pairing, without the secret ever crossing
// the wire:
//
//   extension → shell  {type: "hello", version, extensionId, extensionVersion, nonce}
//   shell → extension  {type: "challenge", nonce, proof}      proof = HMAC(secret, "server" …)
//   extension → shell  {type: "proof", proof}                 proof = HMAC(secret, "client" …)
//   shell → extension  {type: "welcome", shell, sessions}
//
// Both proofs are bound to the handshake's version (v1), the extension id
// and both nonces. Through native messaging there is no proof: Chrome
// starts browser-shell's host for this extension only, and the host's
// socket is private to the user; the hello goes alone, the welcome comes
// back, and long messages from the shell may come in {chunk, last} pieces. After the welcome, messages are CDP-shaped: the shell sends
// commands {id, method, params, sessionId?}, the extension answers
// {id, result} or {id, error: {code, message}} and sends events
// {method, params, sessionId?}. A sessionId "tab-<id>" addresses a tab;
// other session ids are Chrome's child sessions (out-of-process frames).
// One command carries several for a tab at once, sent in order (input
// events: one message each way instead of one per event):
//
//   shell → extension  {id, method: "Extension.sendCommands",
//                       params: {sessionId, commands: [{method, params}…]}}
//   extension → shell  {id, result: {answers: [{result} | {error}…]}}

/** The newest version of the protocol this extension speaks. */
export const PROTOCOL_VERSION = 2;

/** The oldest version it still speaks (the shell picks the newest both speak). */
export const MIN_PROTOCOL_VERSION = 1;

/** The native messaging host's name (`browser-shell extension install` writes its manifest). */
export const NATIVE_HOST_NAME = "com.browser_shell.bridge";

/** The largest message either side accepts, in bytes. */
export const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** The most commands one `Extension.sendCommands` carries (the shell's MAX_BATCH). */
export const MAX_BATCH = 32;

/** Random bytes as lowercase hex. */
export function randomHex(bytes) {
  const buffer = new Uint8Array(bytes);
  crypto.getRandomValues(buffer);
  return toHex(buffer);
}

/** Bytes as lowercase hex. */
export function toHex(bytes) {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Lowercase hex as bytes; null when it is not hex. */
export function fromHex(text) {
  if (typeof text !== "string" || text.length % 2 !== 0 || !/^[0-9a-f]*$/.test(text)) {
    return null;
  }
  const bytes = new Uint8Array(text.length / 2);
  for (let i = 0; i < bytes.length; i++) {
    bytes[i] = parseInt(text.slice(i * 2, i * 2 + 2), 16);
  }
  return bytes;
}

/** The text each side signs: who signs it, bound to the whole handshake. */
export function proofText(role, extensionId, clientNonce, serverNonce) {
  return `browser-shell bridge v1|${role}|${extensionId}|${clientNonce}|${serverNonce}`;
}

/** HMAC-SHA-256 of `text` under the pairing secret (hex), as hex. */
export async function hmacHex(secretHex, text) {
  const secret = fromHex(secretHex);
  if (!secret) throw new Error("the pairing secret is not hex");
  const key = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const signature = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text));
  return toHex(signature);
}

/** Compares two hex strings in time that does not depend on where they differ. */
export function sameHex(a, b) {
  if (typeof a !== "string" || typeof b !== "string" || a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/** An error answer with one of browser-shell's stable codes. */
export class BridgeError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}
