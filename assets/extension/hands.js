// Telling the person's own clicks and keys apart from the agent's.
//
// In the page both are trusted events (CDP's Input domain makes trusted
// events), so the page alone cannot tell them apart. This worker can: every
// agent input passes through it. A small listener in an isolated world of
// each driven tab reports trusted pointer presses and key presses through a
// CDP binding, a burst of them as counts. Each press the agent sends is
// owed, counted before it is sent; a reported press nothing is owed for is
// the person's own.

/** The isolated world the listener lives in (the page cannot see it). */
export const WORLD = "browser-shell-person";
/** The binding the listener reports through. */
export const BINDING = "__browserShellPersonInput";

/**
 * How long an agent input's own report is waited for: past that, the
 * input made none (it hit a frame without the listener) and a report of
 * that kind is the person's again. Far longer than the listener gathers.
 */
const EXPECTED_FOR_MS = 2000;

/**
 * How long the listener gathers presses after reporting one: a burst (the
 * agent typing a sentence) makes two reports instead of one per key, each
 * of which would cross three processes to reach this worker.
 */
const GATHER_MS = 50;

/**
 * Reports trusted pointer presses and key presses, nothing else: the first
 * at once, then what came in the next GATHER_MS together, as counts
 * (`{"click": n, "key": n}`).
 */
const LISTENER = `(() => {
  if (globalThis.__browserShellWatching) return;
  globalThis.__browserShellWatching = true;
  const counts = { click: 0, key: 0 };
  let gathering = false;
  const flush = () => {
    const binding = globalThis[${JSON.stringify(BINDING)}];
    if (typeof binding === "function" && counts.click + counts.key > 0) binding(JSON.stringify(counts));
    counts.click = 0;
    counts.key = 0;
  };
  const report = (kind) => (event) => {
    if (!event.isTrusted) return;
    counts[kind] += 1;
    // A hidden page's timers may wait a minute; only the agent presses
    // there, and its presses are owed their reports within seconds.
    if (document.visibilityState === "hidden") return flush();
    if (gathering) return;
    flush();
    gathering = true;
    setTimeout(() => {
      gathering = false;
      flush();
    }, ${GATHER_MS});
  };
  addEventListener("pointerdown", report("click"), true);
  addEventListener("keydown", report("key"), true);
})();`;

/** More presses than a report can honestly hold in GATHER_MS. */
const MOST_PRESSES = 10_000;

/**
 * The presses in a listener's report, by kind. A listener of an older
 * version, still in a page, reports one press by its kind's name.
 */
export function pressesIn(payload) {
  if (payload === "click" || payload === "key") return { [payload]: 1 };
  try {
    const counts = JSON.parse(payload);
    const presses = {};
    for (const kind of ["click", "key"]) {
      const count = counts?.[kind];
      if (Number.isInteger(count) && count > 0) presses[kind] = Math.min(count, MOST_PRESSES);
    }
    return presses;
  } catch {
    return {};
  }
}

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

  /** The agent is about to press something in a tab; what it owes, to mark delivered. */
  expect(tabId, kind) {
    const owed = this.owed.get(tabId) ?? [];
    const entry = { kind, until: Date.now() + EXPECTED_FOR_MS };
    owed.push(entry);
    this.owed.set(tabId, owed);
    return entry;
  }

  /**
   * Chrome answered the press: the page has it, and its report comes
   * within EXPECTED_FOR_MS from now (a busy page may have held it back).
   */
  delivered(entry) {
    entry.until = Date.now() + EXPECTED_FOR_MS;
  }

  /**
   * How many of `count` presses of `kind` reported in this tab now are the
   * person's own: those the agent's owed presses do not pay for.
   */
  personsPresses(tabId, kind, count) {
    const now = Date.now();
    const owed = (this.owed.get(tabId) ?? []).filter((entry) => entry.until >= now);
    let paid = 0;
    const left = owed.filter((entry) => {
      if (entry.kind !== kind || paid >= count) return true;
      paid += 1;
      return false;
    });
    this.owed.set(tabId, left);
    return count - paid;
  }

  forget(tabId) {
    this.owed.delete(tabId);
  }
}
