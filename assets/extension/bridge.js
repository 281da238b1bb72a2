// The connection to browser-shell: pairing data, the handshake, staying
// connected while paired, and messages in and out once welcomed.

import {
  MAX_MESSAGE_BYTES,
  PROTOCOL_VERSION,
  hmacHex,
  proofText,
  randomHex,
  sameHex,
} from "./protocol.js";

/** How often the extension speaks when idle, so Chrome keeps its worker. */
const HEARTBEAT_MS = 20_000;
/** Waits between reconnection attempts; the last repeats. */
const RECONNECT_DELAYS_MS = [250, 1000, 2000, 5000];
/** How long a handshake may take. */
const HANDSHAKE_MS = 5_000;

/** The pairing stored by pair.html: where the shell listens and the shared secret. */
export async function loadPairing() {
  const { pairing } = await chrome.storage.local.get("pairing");
  return pairing && Number.isInteger(pairing.port) && typeof pairing.secret === "string" ? pairing : null;
}

/**
 * One bridge to the shell. `onMessage(message)` gets every message after
 * the welcome; `onState()` is told whenever the state changes.
 */
/**
 * Where the bridge is: the shell on this machine (127.0.0.1), or a relay
 * on a server over TLS when the pairing names one (`wss://…/extension`).
 */
export function bridgeAddress(pairing) {
  if (typeof pairing.url === "string" && isRelayUrl(pairing.url)) {
    return { url: pairing.url, shown: new URL(pairing.url).host };
  }
  return { url: `ws://127.0.0.1:${pairing.port}/extension`, shown: `127.0.0.1:${pairing.port}` };
}

/** Only TLS crosses the network: a wss:// URL of the bridge's path, nothing else in it. */
export function isRelayUrl(text) {
  try {
    const url = new URL(text);
    return url.protocol === "wss:" && url.hostname !== "" && url.pathname === "/extension" &&
      url.username === "" && url.password === "" && url.search === "" && url.hash === "";
  } catch {
    return false;
  }
}

export class Bridge {
  constructor({ onMessage, onState, onWelcome }) {
    this.onMessage = onMessage;
    this.onState = onState;
    this.onWelcome = onWelcome;
    this.socket = null;
    this.state = "unpaired"; // unpaired | connecting | connected | disconnected | refused
    this.detail = "";
    this.shell = null;
    this.attempt = 0;
    this.retry = null;
    this.heartbeat = null;
    this.wanted = true;
  }

  /** Connects if paired, wanted and not connected yet. */
  async ensure() {
    if (!this.wanted || this.socket) return;
    const pairing = await loadPairing();
    if (!pairing) {
      this.setState("unpaired", "open the link `browser-shell extension pair` prints");
      return;
    }
    this.open(pairing);
  }

  /** The person pressed Disconnect: close and stay closed until Connect. */
  disconnect() {
    this.wanted = false;
    clearTimeout(this.retry);
    this.socket?.close(1000, "disconnected by the person");
    this.socket = null;
    this.setState("disconnected", "disconnected by you");
  }

  /** The person pressed Connect (or paired): connect now. */
  connect() {
    this.wanted = true;
    this.attempt = 0;
    clearTimeout(this.retry);
    this.socket?.close(1000, "reconnecting");
    this.socket = null;
    return this.ensure();
  }

  /** Sends one message once welcomed; false when there is no connection. */
  send(message) {
    if (this.state !== "connected" || !this.socket) return false;
    const text = JSON.stringify(message);
    if (text.length > MAX_MESSAGE_BYTES) {
      if (message.id !== undefined) {
        this.socket.send(
          JSON.stringify({
            id: message.id,
            error: { code: -32000, message: "PROTOCOL_ERROR: the answer is larger than 8 MiB" },
          }),
        );
      }
      return true;
    }
    this.socket.send(text);
    return true;
  }

  setState(state, detail = "") {
    this.state = state;
    this.detail = detail;
    this.onState();
  }

  open(pairing) {
    const address = bridgeAddress(pairing);
    this.setState("connecting", address.shown);
    let socket;
    try {
      socket = new WebSocket(address.url);
    } catch (error) {
      this.closed(`cannot connect: ${error.message}`);
      return;
    }
    this.socket = socket;
    const clientNonce = randomHex(32);
    let serverNonce = null;
    const deadline = setTimeout(() => socket.close(4000, "handshake took too long"), HANDSHAKE_MS);
    socket.onopen = () => {
      socket.send(
        JSON.stringify({
          type: "hello",
          version: PROTOCOL_VERSION,
          extensionId: chrome.runtime.id,
          extensionVersion: chrome.runtime.getManifest().version,
          nonce: clientNonce,
        }),
      );
    };
    socket.onmessage = async (event) => {
      if (this.socket !== socket) return;
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        socket.close(4002, "malformed message");
        return;
      }
      if (this.state === "connected") {
        this.onMessage(message);
        return;
      }
      if (message.type === "challenge" && serverNonce === null) {
        serverNonce = String(message.nonce);
        const expected = await hmacHex(
          pairing.secret,
          proofText("server", chrome.runtime.id, clientNonce, serverNonce),
        );
        if (!sameHex(expected, message.proof)) {
          socket.close(4001, "the shell could not prove it holds the pairing secret");
          this.refused("the shell did not prove the pairing: pair again with `browser-shell extension pair`");
          return;
        }
        const proof = await hmacHex(pairing.secret, proofText("client", chrome.runtime.id, clientNonce, serverNonce));
        socket.send(JSON.stringify({ type: "proof", proof }));
      } else if (message.type === "welcome") {
        clearTimeout(deadline);
        this.attempt = 0;
        this.shell = message.shell ?? null;
        this.setState("connected", address.shown);
        this.startHeartbeat(socket);
        this.onWelcome(message);
      } else if (message.type === "refused") {
        this.refused(String(message.reason ?? "refused"));
      }
    };
    socket.onclose = (event) => {
      clearTimeout(deadline);
      if (this.socket !== socket) return;
      this.socket = null;
      clearInterval(this.heartbeat);
      if (this.state === "refused") return;
      this.closed(event.reason || `closed (${event.code})`);
    };
  }

  startHeartbeat(socket) {
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (this.socket === socket && this.state === "connected") {
        socket.send(JSON.stringify({ method: "Extension.heartbeat", params: {} }));
      }
    }, HEARTBEAT_MS);
  }

  refused(reason) {
    this.wanted = false;
    this.setState("refused", reason);
  }

  closed(reason) {
    this.setState("disconnected", reason);
    if (!this.wanted) return;
    const delay = RECONNECT_DELAYS_MS[Math.min(this.attempt, RECONNECT_DELAYS_MS.length - 1)];
    this.attempt += 1;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.ensure(), delay);
  }
}
