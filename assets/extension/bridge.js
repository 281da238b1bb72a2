// The connection to browser-shell: native messaging first, the paired
// WebSocket where native messaging is not installed (or the relay a
// pairing names), the handshake, staying connected, and messages in and
// out once welcomed.
//
// States (each has a way out on a timer and on an event):
//   connecting   an attempt runs (bounded by HANDSHAKE_MS, then retried)
//   waiting      the native host runs but no shell holds the bridge yet
//                (the host looks for one; it says when it gives up)
//   connected    welcomed
//   retrying     the last attempt failed; the next one is due (RETRY_MS)
//   refused      the shell refused (a proof or version): retried after
//                0.3 s, 1 s, 3 s, then every 10 s; at once on Connect or
//                a new pairing
//   unpaired     no way set up (no native host, no pairing): looked at
//                again on every alarm, Connect or pairing
//   disconnected the person pressed Disconnect: nothing until Connect

import {
  MAX_MESSAGE_BYTES,
  MIN_PROTOCOL_VERSION,
  NATIVE_HOST_NAME,
  PROTOCOL_VERSION,
  hmacHex,
  proofText,
  randomHex,
  sameHex,
} from "./protocol.js";

/** How often the extension speaks when idle, so Chrome keeps its worker. */
const HEARTBEAT_MS = 20_000;
/** Waits between reconnection attempts; the last repeats. Short: a shell
 * that starts is found within the first (the native host waits for it). */
const RETRY_MS = [100, 250, 500];
/** After refusals, the next tries: soon at first (the shell may not have
 * read a pairing made a moment ago yet), then rarely. */
const REFUSED_RETRY_MS = [300, 1000, 3000, 10_000];
/** How long a handshake may take. */
const HANDSHAKE_MS = 5_000;
/** Chrome's words when no native host of that name is installed. */
const NO_NATIVE_HOST = /not found|forbidden/i;

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
    /** The open link: {kind: "native"|"websocket", send(text|object), close(reason)}. */
    this.link = null;
    /** An attempt is being set up (guards against two at once). */
    this.opening = false;
    this.state = "connecting";
    this.detail = "";
    this.via = "";
    this.shell = null;
    this.attempt = 0;
    /** Refusals since the last welcome (they space the next tries). */
    this.refusals = 0;
    this.retry = null;
    this.deadline = null;
    this.heartbeat = null;
    this.wanted = true;
    /** Native messaging answered that no host is installed: the pairing serves. */
    this.nativeMissing = false;
  }

  /** Connects if wanted and not connected or connecting yet. */
  async ensure() {
    if (!this.wanted || this.link || this.opening) return;
    this.opening = true;
    clearTimeout(this.retry);
    try {
      const pairing = await loadPairing();
      if (!this.wanted || this.link) return;
      if (pairing && typeof pairing.url === "string" && isRelayUrl(pairing.url)) {
        // A shell on another machine, named by the pairing: its relay.
        this.openWebSocket(pairing);
      } else if (!this.nativeMissing || !pairing) {
        this.openNative(pairing);
      } else {
        this.openWebSocket(pairing);
      }
    } finally {
      this.opening = false;
    }
  }

  /** The person pressed Disconnect: tell the shell, close, stay closed until Connect. */
  disconnect() {
    this.wanted = false;
    clearTimeout(this.retry);
    this.send({ method: "Extension.goodbye", params: { reason: "disconnected by the person" } });
    this.drop("disconnected by the person");
    this.setState("disconnected", "disconnected by you: press Connect to let agents in again");
  }

  /** The person pressed Connect (or paired): connect now, whatever the state. */
  connect() {
    this.wanted = true;
    this.attempt = 0;
    this.refusals = 0;
    this.nativeMissing = false;
    clearTimeout(this.retry);
    this.drop("reconnecting");
    return this.ensure();
  }

  /** Sends one message once welcomed; false when there is no connection. */
  send(message) {
    if (this.state !== "connected" || !this.link) return false;
    if (this.link.kind === "native") {
      this.link.send(message);
      return true;
    }
    const text = JSON.stringify(message);
    if (text.length > MAX_MESSAGE_BYTES) {
      if (message.id !== undefined) {
        this.link.send(
          JSON.stringify({
            id: message.id,
            error: { code: -32000, message: "PROTOCOL_ERROR: the answer is larger than 8 MiB" },
          }),
        );
      }
      return true;
    }
    this.link.send(text);
    return true;
  }

  setState(state, detail = "") {
    this.state = state;
    this.detail = detail;
    this.onState();
  }

  /** Closes the current link, if any, without retrying because of it. */
  drop(reason) {
    const link = this.link;
    this.link = null;
    clearTimeout(this.deadline);
    clearInterval(this.heartbeat);
    link?.close(reason);
  }

  /** Through Chrome's native messaging: Chrome starts browser-shell's host. */
  openNative(pairing) {
    let port;
    try {
      port = chrome.runtime.connectNative(NATIVE_HOST_NAME);
    } catch (error) {
      this.nativeGone(pairing, String(error?.message ?? error));
      return;
    }
    let pieces = [];
    const link = {
      kind: "native",
      send: (message) => port.postMessage(message),
      close: () => port.disconnect(),
    };
    this.link = link;
    this.via = "native messaging";
    this.setState("connecting", "native messaging");
    this.armDeadline(link);
    port.onMessage.addListener((message) => {
      if (this.link !== link) return;
      if (message && typeof message.chunk === "string") {
        // A message too long for one native messaging frame, in pieces.
        pieces.push(message.chunk);
        if (!message.last) return;
        try {
          message = JSON.parse(pieces.join(""));
        } catch {
          pieces = [];
          return;
        }
        pieces = [];
      }
      if (this.state === "connected") {
        this.onMessage(message);
        return;
      }
      switch (message?.type) {
        case "waiting":
          // The host runs and looks for a shell: no deadline while it does.
          clearTimeout(this.deadline);
          this.setState("waiting", String(message.reason ?? "no browser-shell holds the bridge yet"));
          break;
        case "unavailable":
          this.detail = String(message.reason ?? "");
          break;
        case "welcome":
          this.welcomed(link, message);
          break;
        case "refused":
          this.refused(link, String(message.reason ?? "refused"));
          break;
      }
    });
    port.onDisconnect.addListener(() => {
      const error = chrome.runtime.lastError?.message ?? "";
      if (this.link !== link) return;
      this.link = null;
      clearTimeout(this.deadline);
      clearInterval(this.heartbeat);
      if (this.state === "refused") return;
      if (this.state === "connecting" && NO_NATIVE_HOST.test(error)) {
        this.nativeGone(pairing, error);
        return;
      }
      this.closed(error || this.detail || "the native messaging host stopped");
    });
    port.postMessage({
      type: "hello",
      version: PROTOCOL_VERSION,
      minVersion: MIN_PROTOCOL_VERSION,
      extensionId: chrome.runtime.id,
      extensionVersion: chrome.runtime.getManifest().version,
    });
  }

  /** Native messaging is not installed: the paired WebSocket, if paired. */
  nativeGone(pairing, why) {
    this.nativeMissing = true;
    if (pairing) {
      this.openWebSocket(pairing);
    } else {
      this.setState(
        "unpaired",
        `native messaging is not installed (${why}): run \`browser-shell extension install\` (or pair with \`browser-shell extension pair\`)`,
      );
    }
  }

  /** Through the paired WebSocket (loopback, or a relay over TLS). */
  openWebSocket(pairing) {
    const address = bridgeAddress(pairing);
    let socket;
    try {
      socket = new WebSocket(address.url);
    } catch (error) {
      this.closed(`cannot connect: ${error.message}`);
      return;
    }
    const link = {
      kind: "websocket",
      send: (text) => socket.send(text),
      close: (reason) => socket.close(1000, reason),
    };
    this.link = link;
    this.via = address.shown;
    this.setState("connecting", address.shown);
    this.armDeadline(link);
    const clientNonce = randomHex(32);
    let serverNonce = null;
    socket.onopen = () => {
      socket.send(
        JSON.stringify({
          type: "hello",
          version: PROTOCOL_VERSION,
          minVersion: MIN_PROTOCOL_VERSION,
          extensionId: chrome.runtime.id,
          extensionVersion: chrome.runtime.getManifest().version,
          nonce: clientNonce,
        }),
      );
    };
    socket.onmessage = async (event) => {
      if (this.link !== link) return;
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
        if (this.link !== link) return;
        if (!sameHex(expected, message.proof)) {
          this.refused(link, "the shell did not prove the pairing: pair again with `browser-shell extension pair`");
          return;
        }
        const proof = await hmacHex(pairing.secret, proofText("client", chrome.runtime.id, clientNonce, serverNonce));
        if (this.link === link) socket.send(JSON.stringify({ type: "proof", proof }));
      } else if (message.type === "welcome") {
        this.welcomed(link, message);
      } else if (message.type === "refused") {
        this.refused(link, String(message.reason ?? "refused"));
      }
    };
    socket.onclose = (event) => {
      if (this.link !== link) return;
      this.link = null;
      clearTimeout(this.deadline);
      clearInterval(this.heartbeat);
      if (this.state === "refused") return;
      this.closed(event.reason || `closed (${event.code})`);
    };
  }

  /** An attempt that is neither welcomed nor waiting within HANDSHAKE_MS is dropped and retried. */
  armDeadline(link) {
    clearTimeout(this.deadline);
    this.deadline = setTimeout(() => {
      if (this.link !== link || this.state === "connected" || this.state === "waiting") return;
      this.drop("the handshake took too long");
      this.closed("the handshake took too long");
    }, HANDSHAKE_MS);
  }

  welcomed(link, message) {
    clearTimeout(this.deadline);
    this.attempt = 0;
    this.refusals = 0;
    this.shell = message.shell ?? null;
    this.setState("connected", this.via);
    this.startHeartbeat(link);
    this.onWelcome(message);
  }

  startHeartbeat(link) {
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      if (this.link === link && this.state === "connected") {
        this.send({ method: "Extension.heartbeat", params: {} });
      }
    }, HEARTBEAT_MS);
  }

  /** Refused by the shell: said in the popup, tried again later (or at once on Connect). */
  refused(link, reason) {
    this.setState("refused", reason);
    if (this.link === link) this.drop("refused");
    const delay = REFUSED_RETRY_MS[Math.min(this.refusals, REFUSED_RETRY_MS.length - 1)];
    this.refusals += 1;
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      if (this.state === "refused") this.ensure();
    }, delay);
  }

  closed(reason) {
    if (!this.wanted) return;
    const delay = RETRY_MS[Math.min(this.attempt, RETRY_MS.length - 1)];
    this.attempt += 1;
    this.setState("retrying", reason);
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.ensure(), delay);
  }
}
