// Telling the person's own clicks and keys apart from the agent's.
//
// In the page both are trusted events (CDP's Input domain makes trusted
// events), so the page alone cannot tell them apart. This worker can: every
// agent input passes through it. A small listener in an isolated world of
// each driven tab reports trusted pointer presses and key presses through a
// CDP binding. Each press the agent sends is owed one report, counted
// before it is sent; a report nothing is owed for is the person's own.

/** The isolated world the listener lives in (the page cannot see it). */
export const WORLD = "browser-shell-person";
/** The binding the listener reports through. */
export const BINDING = "__browserShellPersonInput";

/**
 * How long an agent input's own report is waited for: past that, the
 * input made none (it hit a frame without the listener) and a report of
 * that kind is the person's again.
 */
const EXPECTED_FOR_MS = 2000;

/** One report per trusted pointer press or key press, nothing else. */
const LISTENER = `(() => {
  if (globalThis.__browserShellWatching) return;
  globalThis.__browserShellWatching = true;
  const report = (kind) => (event) => {
    if (!event.isTrusted) return;
    const binding = globalThis[${JSON.stringify(BINDING)}];
    if (typeof binding === "function") binding(kind);
  };
  addEventListener("pointerdown", report("click"), true);
  addEventListener("keydown", report("key"), true);
})();`;

/**
 * The CDP commands that put the listener in a tab, after each attach, in
 * this order: new documents get the script only while Page is enabled, and
 * a binding reaches the world `runImmediately` made only when added after it.
 */
export const INSTALL = [
  ["Page.enable", {}],
  ["Page.addScriptToEvaluateOnNewDocument", { source: LISTENER, worldName: WORLD, runImmediately: true }],
  ["Runtime.addBinding", { name: BINDING, executionContextName: WORLD }],
];

/**
 * The report an agent's CDP command will cause in the page, if any: a
 * pressed mouse button or a touch start makes a pointer press, a key down
 * a key press.
 */
export function expectedReport(method, params) {
  if (method === "Input.dispatchMouseEvent" && params?.type === "mousePressed") return "click";
  if (method === "Input.dispatchTouchEvent" && params?.type === "touchStart") return "click";
  if (method === "Input.dispatchKeyEvent" && (params?.type === "keyDown" || params?.type === "rawKeyDown")) {
    return "key";
  }
  return null;
}

/**
 * The reports each tab's page owes the agent: one for each of its presses,
 * counted before the command is sent. A report with none owed is the person's.
 */
export class AgentInput {
  constructor() {
    /** tabId → list of {kind, until} */
    this.owed = new Map();
  }

  /** The agent is about to press something in a tab. */
  expect(tabId, kind) {
    const owed = this.owed.get(tabId) ?? [];
    owed.push({ kind, until: Date.now() + EXPECTED_FOR_MS });
    this.owed.set(tabId, owed);
  }

  /** Whether a report of `kind` in this tab, now, is the person's own (else it pays an agent's). */
  isPersons(tabId, kind) {
    const now = Date.now();
    const owed = (this.owed.get(tabId) ?? []).filter((entry) => entry.until >= now);
    const index = owed.findIndex((entry) => entry.kind === kind);
    if (index >= 0) owed.splice(index, 1);
    this.owed.set(tabId, owed);
    return index < 0;
  }

  forget(tabId) {
    this.owed.delete(tabId);
  }
}
