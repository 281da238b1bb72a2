// CDP through chrome.debugger: attached lazily, on a tab's first command;
// out-of-process frames through Chrome's child sessions.

import { BridgeError } from "./protocol.js";

const PROTOCOL = "1.3";

/**
 * How long a newly attached tab is given to make room for Chrome's
 * debugging bar: the bar takes its room from the page a moment after the
 * first attach, and a screenshot taken meanwhile shows the old layout
 * stretched over the new one.
 */
const BAR_SETTLES_WITHIN_MS = 400;

/** Waits, in the page, for its next resize, at most `BAR_SETTLES_WITHIN_MS`. */
const NEXT_RESIZE = `new Promise((resolve) => {
  const timer = setTimeout(() => resolve(false), ${BAR_SETTLES_WITHIN_MS});
  addEventListener("resize", () => { clearTimeout(timer); resolve(true); }, { once: true });
})`;

/** Out-of-process frames attach as child sessions of their tab's. */
export const FOLLOW_FRAMES = { autoAttach: true, waitForDebuggerOnStart: false, flatten: true };

export class Debuggers {
  /**
   * `onEvent(tabId, sessionId, method, params)` gets every CDP event of an
   * attached tab; `onDetach(tabId, reason)` when Chrome takes a tab away;
   * `setUp` is a list of `[method, params]` sent after every attach.
   */
  constructor({ onEvent, onDetach, setUp = [] }) {
    this.setUp = setUp;
    /** tabId → Promise of the attachment */
    this.attached = new Map();
    /** Tabs whose debugger went away, with why, until the next attach. */
    this.lost = new Map();
    /** Why no tab may be attached now (the person cancelled debugging), or null. */
    this.heldOff = null;
    chrome.debugger.onEvent.addListener((source, method, params) => {
      if (source.tabId === undefined) return;
      if (method === "Target.attachedToTarget" && params?.targetInfo?.type === "iframe") {
        // An out-of-process frame gets the tab's set-up too: frames nested
        // in it are followed, and the person's input in it is heard.
        this.prepareFrame(source.tabId, params.sessionId);
      }
      onEvent(source.tabId, source.sessionId ?? null, method, params ?? {});
    });
    chrome.debugger.onDetach.addListener((source, reason) => {
      if (source.tabId === undefined) return;
      this.forgetTab(source.tabId);
      this.lost.set(source.tabId, reason);
      onDetach(source.tabId, reason);
    });
  }

  /** Sends one command, attaching first when needed. */
  async send(tabId, childSession, method, params) {
    await this.attach(tabId);
    const target = childSession ? { tabId, sessionId: childSession } : { tabId };
    try {
      return (await chrome.debugger.sendCommand(target, method, params ?? {})) ?? {};
    } catch (error) {
      const failure = translate(error, this.lost.get(tabId));
      if (failure.code === "DEBUGGER_DETACHED" && this.attached.has(tabId)) {
        // Gone without a word from Chrome: the next command attaches again.
        // The shell learns from this answer that what it set up is gone (an
        // event now could reach the page it sets up anew).
        this.forgetTab(tabId);
        this.lost.set(tabId, "the debugger went away");
      }
      throw failure;
    }
  }

  /**
   * No tab is attached again until `allow()`: the person cancelled Chrome's
   * debugging bar, and attaching would put it straight back.
   */
  holdOff(why) {
    this.heldOff = why;
    // Kept for a worker that Chrome stops and starts again meanwhile.
    chrome.storage.session.set({ heldOff: why }).catch(() => {});
  }

  /** Tabs may be attached again (the person let the agents go on). */
  allow() {
    this.heldOff = null;
    chrome.storage.session.remove("heldOff").catch(() => {});
  }

  /** What an earlier worker held off, if anything (at start). */
  async loadHeldOff() {
    const { heldOff } = await chrome.storage.session.get("heldOff").catch(() => ({}));
    if (typeof heldOff === "string" && this.heldOff === null) this.heldOff = heldOff;
  }

  /** Attaches once; concurrent callers share the attempt. */
  attach(tabId) {
    let attaching = this.attached.get(tabId);
    if (!attaching && this.heldOff) {
      return Promise.reject(
        new BridgeError("DEBUGGER_DETACHED", `${this.heldOff}; agents drive tabs again once you let them go on`),
      );
    }
    if (!attaching) {
      attaching = attachTo(tabId).then((fresh) => (fresh ? this.prepare(tabId) : undefined));
      this.attached.set(tabId, attaching);
      attaching.then(
        () => this.lost.delete(tabId),
        () => this.attached.delete(tabId),
      );
    }
    return attaching;
  }

  /** Sends the set-up commands; a tab that refuses one is still driven. */
  async prepare(tabId) {
    const resized = chrome.debugger
      .sendCommand({ tabId }, "Runtime.evaluate", { expression: NEXT_RESIZE, awaitPromise: true, returnByValue: true })
      .catch(() => {});
    for (const [method, params] of this.setUp) {
      try {
        await chrome.debugger.sendCommand({ tabId }, method, params);
      } catch (error) {
        console.warn(`set-up ${method} failed in tab ${tabId}:`, error);
      }
    }
    // The debugging bar takes its room: a capture meanwhile would stretch.
    await resized;
  }

  /** Sends the set-up commands to an out-of-process frame's session. */
  async prepareFrame(tabId, sessionId) {
    for (const [method, params] of this.setUp) {
      try {
        await chrome.debugger.sendCommand({ tabId, sessionId }, method, params);
      } catch {
        // The frame went away meanwhile.
      }
    }
  }

  /** Lets go of a tab (its share ended). */
  async detach(tabId) {
    const was = this.attached.get(tabId);
    this.forgetTab(tabId);
    if (!was) return;
    try {
      await was;
      await chrome.debugger.detach({ tabId });
    } catch {
      // Gone already.
    }
  }

  forgetTab(tabId) {
    this.attached.delete(tabId);
  }
}

/**
 * Attaches to a tab; true for a new attachment, false for one of ours that
 * outlived the last worker (everything set up on it is still there).
 */
async function attachTo(tabId) {
  try {
    await chrome.debugger.attach({ tabId }, PROTOCOL);
    return true;
  } catch (error) {
    const message = String(error?.message ?? error);
    if (/already attached/i.test(message)) {
      // Ours from before this worker stopped answers commands; another
      // debugger's does not.
      try {
        await chrome.debugger.sendCommand({ tabId }, "Target.getTargetInfo", {});
        return false;
      } catch {
        throw new BridgeError(
          "DEBUGGER_DETACHED",
          "another debugger (DevTools or another extension) holds this tab; close it and call again",
        );
      }
    }
    if (/no tab with/i.test(message)) throw new BridgeError("TAB_NOT_FOUND", "the tab was closed");
    if (/cannot access|cannot attach/i.test(message)) {
      throw new BridgeError("PAGE_PROTECTED", `Chrome does not let extensions drive this page (${message})`);
    }
    throw new BridgeError("PROTOCOL_ERROR", `cannot attach to the tab: ${message}`);
  }
}

/** A tab, or null when it is closed; other failures (the worker stopping) thrown as codes. */
export async function tabOrNull(tabId) {
  try {
    return await chrome.tabs.get(tabId);
  } catch (error) {
    const failure = translate(error, undefined);
    if (failure.code === "TAB_NOT_FOUND") return null;
    throw failure;
  }
}

function translate(error, lostReason) {
  if (error instanceof BridgeError) return error;
  const message = String(error?.message ?? error);
  if (/not attached|detached/i.test(message)) {
    return new BridgeError(
      "DEBUGGER_DETACHED",
      `the tab's debugger went away (${lostReason ?? message}); call again once DevTools is closed`,
    );
  }
  if (/no tab with/i.test(message)) return new BridgeError("TAB_NOT_FOUND", "the tab was closed");
  if (/cannot access/i.test(message)) {
    return new BridgeError("PAGE_PROTECTED", `Chrome does not let extensions drive this page (${message})`);
  }
  // Chrome is stopping this worker under the command: whether it ran is unknown.
  if (/^no sw$/i.test(message.trim())) {
    return new BridgeError("CALL_CUT", "the extension's worker stopped during the call");
  }
  // A CDP error from the page: Chrome hands it on as its JSON text.
  try {
    const parsed = JSON.parse(message);
    if (parsed && typeof parsed.message === "string") {
      const failure = new Error(parsed.message);
      failure.cdpCode = parsed.code;
      return failure;
    }
  } catch {
    // Plain text.
  }
  return new Error(message);
}
