// The service worker: holds the bridge to browser-shell, keeps the grants,
// routes the shell's commands to tabs through chrome.debugger, and answers
// the popup. Chrome may stop it at any time; everything it must remember
// lives in chrome.storage (see grants.js) and it reconnects on its own.

import { Bridge } from "./bridge.js";
import { Debuggers, FOLLOW_FRAMES, tabOrNull } from "./debugger.js";
import { Grants, protectedReason, siteOf } from "./grants.js";
import { AgentInput, BINDING, INSTALL, WORLD, expectedReport, pressesIn } from "./hands.js";
import { BridgeError, MAX_BATCH } from "./protocol.js";

/** `tab-<id>` for a tab, `tab-<id>:<child session>` for one of its frames. */
const TAB_SESSION = /^tab-(\d+)(?::(.+))?$/;
const GROUP_COLORS = ["blue", "purple", "cyan", "orange", "pink", "green", "red", "yellow"];

const grants = new Grants();
/**
 * What the shell told us: its sessions, who holds control, what agents do;
 * and why the person holds control, when they do.
 */
const shell = { sessions: [], sessionsVersion: 0, control: "agent", activity: {}, latest: null, stopped: "" };
/** Tabs opened by a shared tab: offered to the person, not shared. */
const offers = new Map();

/** The agent's own input, to tell the person's apart from it. */
const agentInput = new AgentInput();

const debuggers = new Debuggers({
  setUp: [["Target.setAutoAttach", FOLLOW_FRAMES], ...INSTALL],
  onEvent(tabId, childSession, method, params) {
    if (method === "Runtime.bindingCalled" && params.name === BINDING) {
      personInput(tabId, params.payload);
      return;
    }
    // Our listener's world is ours alone.
    if (method === "Runtime.executionContextCreated" && params.context?.name === WORLD) return;
    const record = grants.visible(tabId);
    if (!record || record.suspended) return;
    // Child sessions are named with their tab, so a worker that restarted
    // still knows where a frame's command goes.
    const named = (child) => `tab-${tabId}:${child}`;
    if ((method === "Target.attachedToTarget" || method === "Target.detachedFromTarget") && params.sessionId) {
      params = { ...params, sessionId: named(params.sessionId) };
    }
    bridge.send({ method, params, sessionId: childSession ? named(childSession) : `tab-${tabId}` });
  },
  onDetach(tabId, reason) {
    if (!grants.visible(tabId)) return;
    // Cancel on Chrome's debugging bar (it lets go of every tab at once) is
    // the person saying stop: no tab is attached again behind their back.
    if (reason === "canceled_by_user") {
      const why = "you pressed Cancel on Chrome's debugging bar";
      debuggers.holdOff(why);
      if (shell.control === "agent") stopAgents(why, { tabId });
    }
    bridge.send({ method: "Extension.debuggerDetached", params: { tabId, reason } });
  },
});

const bridge = new Bridge({
  onMessage: (message) => route(message),
  onState: () => {
    updateBadge();
    notifyPopup();
  },
  onWelcome: (welcome) => {
    if (grants.shell !== welcome.shell) {
      // A different shell (it restarted): its sessions are new, so are the grants.
      for (const tabId of grants.tabs.keys()) debuggers.detach(tabId);
      grants.tabs.clear();
      grants.sessions.clear();
      grants.shell = welcome.shell;
      grants.save();
    }
    // A new connection numbers its session lists afresh.
    shell.sessionsVersion = 0;
    setSessions(welcome.sessions ?? [], welcome.sessionsVersion);
  },
});

const ready = Promise.all([grants.load(), debuggers.loadHeldOff(), loadControl()]).then(() => bridge.ensure());

/** Who held control before this worker started (Chrome stops and starts it). */
async function loadControl() {
  const { control } = await chrome.storage.session.get("control").catch(() => ({}));
  if (control?.holder === "person") {
    shell.control = "person";
    shell.stopped = String(control.stopped ?? "");
  }
}

/** Keeps who holds control for the next worker. */
function rememberControl() {
  chrome.storage.session.set({ control: { holder: shell.control, stopped: shell.stopped } }).catch(() => {});
}

// The doorbell (doorbell.js) starts this worker again as soon as it stops.
chrome.runtime.onConnect.addListener((port) => {
  if (port.name !== "doorbell" || port.sender?.id !== chrome.runtime.id) return;
  port.postMessage("up");
  ready.then(() => bridge.ensure());
});
openDoorbell().catch((error) => console.warn("no doorbell:", error));

chrome.runtime.onStartup.addListener(() => ready);
chrome.alarms.create("bridge", { periodInMinutes: 0.5 });
chrome.alarms.onAlarm.addListener(() => ready.then(() => bridge.ensure()));

// ---- commands from the shell ------------------------------------------

async function route(message) {
  if (message.method === undefined || message.id === undefined) return;
  try {
    const result = await answer(message);
    bridge.send({ id: message.id, result: result ?? {} });
  } catch (error) {
    bridge.send({ id: message.id, error: errorAnswer(error) });
  }
}

/** A failure as the shell reads it: `CODE: text` for our own refusals, CDP's words otherwise. */
function errorAnswer(error) {
  // Chrome refuses extension calls of a worker it is stopping ("No SW"):
  // the call was cut by the worker's end, as if the bridge had dropped.
  if (String(error?.message ?? error) === "No SW") {
    error = new BridgeError("CALL_CUT", "the extension's worker stopped during the call (Chrome said: No SW); look before doing it again");
  }
  const text = error instanceof BridgeError ? `${error.code}: ${error.message}` : String(error?.message ?? error);
  return { code: error?.cdpCode ?? -32000, message: text };
}

async function answer({ method, params = {}, sessionId }) {
  await ready;
  if (sessionId !== undefined) return forward(sessionId, method, params);
  switch (method) {
    case "Extension.getVersion":
      return {
        product: (navigator.userAgent.match(/(Chrome|Edg)\/[\d.]+/) ?? ["Chrome"])[0],
        extensionVersion: chrome.runtime.getManifest().version,
      };
    case "Extension.sendCommands":
      return sendCommands(params);
    case "Extension.listTabs":
      return { tabs: await visibleTabs() };
    case "Extension.createTab":
      return createTab(params);
    case "Extension.closeTab":
      await reachable(params.tabId);
      await chrome.tabs.remove(params.tabId).catch(() => {});
      return {};
    case "Extension.activateTab": {
      await reachable(params.tabId);
      const tab = await chrome.tabs.update(params.tabId, { active: true });
      await chrome.windows.update(tab.windowId, { focused: true }).catch(() => {});
      return {};
    }
    case "Extension.releaseTab":
      await release(params.tabId, "returned by the agent");
      return {};
    case "Extension.keepTab": {
      const record = grants.visible(params.tabId);
      if (record) {
        record.kept = true;
        grants.save();
      }
      return {};
    }
    case "Extension.setSessions":
      setSessions(params.sessions ?? [], params.version);
      return {};
    case "Extension.setControl":
      shell.control = params.holder === "person" ? "person" : "agent";
      if (shell.control === "agent") {
        shell.stopped = "";
        debuggers.allow();
      }
      rememberControl();
      notifyPopup();
      return {};
    case "Extension.setActivity":
      shell.activity[params.session] = String(params.text ?? "").slice(0, 200);
      shell.latest = { session: params.session, text: shell.activity[params.session] };
      notifyPopup();
      return {};
    default:
      throw new BridgeError("INVALID_ARGUMENT", `unknown method ${method}`);
  }
}

/** A CDP command for a tab (or one of its frames), checked against the grants. */
async function forward(sessionId, method, params) {
  const { tabId, child, record } = await admitted(sessionId);
  return sendAsAgent(tabId, child, record, method, params);
}

/**
 * Several CDP commands for one tab (input events that must arrive in
 * order), in one message each way. The tab is checked once; then every
 * command is handed to Chrome in its order, nothing awaited in between.
 */
async function sendCommands({ sessionId, commands }) {
  if (typeof sessionId !== "string" || !Array.isArray(commands) || commands.length > MAX_BATCH) {
    throw new BridgeError("INVALID_ARGUMENT", `a batch is a sessionId and at most ${MAX_BATCH} commands`);
  }
  if (!commands.every((command) => typeof command?.method === "string")) {
    throw new BridgeError("INVALID_ARGUMENT", "every command of a batch needs a method");
  }
  const { tabId, child, record } = await admitted(sessionId);
  await debuggers.attach(tabId);
  const sent = commands.map(({ method, params }) => sendAsAgent(tabId, child, record, method, params ?? {}));
  const settled = await Promise.allSettled(sent);
  return {
    answers: settled.map((outcome) =>
      outcome.status === "fulfilled" ? { result: outcome.value ?? {} } : { error: errorAnswer(outcome.reason) },
    ),
  };
}

/** The tab (and frame) a session id names, if an agent may drive it now. */
async function admitted(sessionId) {
  const tabMatch = TAB_SESSION.exec(sessionId);
  if (!tabMatch) throw new BridgeError("TAB_NOT_FOUND", "no such tab or frame");
  const tabId = Number(tabMatch[1]);
  const child = tabMatch[2] ?? null;
  const record = await reachable(tabId);
  const blocked = protectedReason(await urlOf(tabId));
  if (blocked) throw new BridgeError("PAGE_PROTECTED", blocked);
  return { tabId, child, record };
}

/**
 * Sends an admitted command: what it does to the share is noted, and a
 * press it makes is owed a report from the page (counted from the moment
 * Chrome has handed it to the page, when its report is on its way).
 */
function sendAsAgent(tabId, child, record, method, params) {
  if (method === "Page.navigate" && typeof params.url === "string") {
    // The agent's own navigation takes the share with it.
    record.site = siteOf(params.url);
    grants.save();
  }
  const report = expectedReport(method, params);
  const owed = report ? agentInput.expect(tabId, report) : null;
  const sent = debuggers.send(tabId, child, method, params);
  if (owed) sent.finally(() => agentInput.delivered(owed)).catch(() => {});
  return sent;
}

/**
 * Where a tab is, kept from Chrome's tab events so that a command does not
 * ask Chrome each time (Chrome itself still refuses its own pages).
 */
const tabUrls = new Map();

async function urlOf(tabId) {
  const known = tabUrls.get(tabId);
  if (known !== undefined) return known;
  const tab = await tabOrNull(tabId);
  if (!tab) throw new BridgeError("TAB_NOT_FOUND", "the tab was closed");
  const url = tab.pendingUrl || tab.url || "";
  tabUrls.set(tabId, url);
  return url;
}

/**
 * A click or key press in a driven tab that is not the agent's: the person
 * took over, as if they had pressed Stop; agents' calls answer
 * HUMAN_INTERVENED until the person lets them go on.
 */
function personInput(tabId, payload) {
  // Every press pays what the agent owes, whatever happens next.
  const persons = [];
  for (const [kind, count] of Object.entries(pressesIn(payload))) {
    if (agentInput.personsPresses(tabId, kind, count) > 0) persons.push(kind);
  }
  if (persons.length === 0 || shell.control !== "agent" || !grants.visible(tabId)) return;
  const kind = persons.includes("key") ? "key" : "click";
  const what = kind === "key" ? "typed" : "clicked";
  stopAgents(`you ${what} in a tab an agent drives`, { tabId, input: kind });
}

/** The person holds control from now on; the shell hears why. */
function stopAgents(why, detail = {}) {
  shell.control = "person";
  shell.stopped = why;
  rememberControl();
  bridge.send({ method: "Extension.stop", params: { reason: why, ...detail } });
  notifyPopup();
}

/** The grant of a tab an agent may reach now. */
async function reachable(tabId) {
  const record = grants.visible(tabId);
  if (!record) throw new BridgeError("NOT_SHARED", "this tab is not shared with agents");
  if (record.suspended) {
    throw new BridgeError(
      "NOT_SHARED",
      "the tab went to another site since it was shared; the person must share it again",
    );
  }
  return record;
}

async function visibleTabs() {
  const tabs = [];
  for (const [tabId, record] of grants.tabs) {
    const tab = await tabOrNull(tabId);
    if (!tab) {
      grants.forget(tabId);
      continue;
    }
    tabs.push(describe(tab, record));
  }
  return tabs;
}

/** A tab as the shell sees it; `openerId` when known better than Chrome's opener. */
function describe(tab, record, openerId = tab.openerTabId) {
  return {
    tabId: tab.id,
    url: tab.pendingUrl || tab.url || "",
    title: tab.title ?? "",
    openerTabId: openerId ?? null,
    session: record.session,
    agentOpened: record.agentOpened,
    suspended: record.suspended,
  };
}

async function createTab({ session, background, url, sessionsVersion }) {
  if (typeof session !== "string" || !session) throw new BridgeError("INVALID_ARGUMENT", "no session");
  if (!shell.sessions.some((s) => s.id === session)) {
    // The shell's list that names the session may still be on its way; an
    // older one arriving after this tab must not end it.
    shell.sessions.push({ id: session, label: session });
    if (Number.isInteger(sessionsVersion)) {
      shell.sessionsVersion = Math.max(shell.sessionsVersion, sessionsVersion);
    }
  }
  const target = url && !protectedReason(url) ? url : "about:blank";
  const tab = await chrome.tabs.create({ url: target, active: !background });
  grants.adopt(tab.id, session, target);
  await groupTab(tab.id, session).catch((error) => console.warn("tab group:", error));
  return { tabId: tab.id };
}

/** Agent tabs live in a tab group named after their session. */
async function groupTab(tabId, session) {
  const known = grants.sessions.get(session) ?? { label: session, groupId: null };
  let groupId = known.groupId;
  if (groupId !== null) {
    const exists = await chrome.tabGroups.get(groupId).catch(() => null);
    if (!exists) groupId = null;
  }
  groupId = await chrome.tabs.group(groupId === null ? { tabIds: [tabId] } : { tabIds: [tabId], groupId });
  const index = shell.sessions.findIndex((s) => s.id === session);
  await chrome.tabGroups.update(groupId, {
    title: `agent ${known.label}`,
    color: GROUP_COLORS[Math.max(index, 0) % GROUP_COLORS.length],
  });
  grants.sessions.set(session, { ...known, groupId });
  grants.save();
}

/** Ends an agent's hold on a tab: the share ends, the debugger lets go. */
async function release(tabId, reason) {
  if (!grants.forget(tabId)) return;
  await debuggers.detach(tabId);
  bridge.send({ method: "Extension.tabRemoved", params: { tabId, reason } });
  notifyPopup();
}

/** The shell's agent sessions, numbered `version`; an older list than one already seen is ignored. */
function setSessions(sessions, version) {
  if (Number.isInteger(version)) {
    if (version < shell.sessionsVersion) return;
    shell.sessionsVersion = version;
  }
  shell.sessions = sessions
    .filter((s) => s && typeof s.id === "string")
    .map((s) => ({ id: s.id, label: String(s.label ?? s.id) }));
  const live = new Set(shell.sessions.map((s) => s.id));
  for (const s of shell.sessions) {
    const known = grants.sessions.get(s.id);
    grants.sessions.set(s.id, { label: s.label, groupId: known?.groupId ?? null });
  }
  for (const id of [...grants.sessions.keys()]) if (!live.has(id)) grants.sessions.delete(id);
  // A share ends with its session; the agent's own tabs close with it
  // (the shell closes them first; this is for a shell that went away).
  for (const [tabId, record] of [...grants.tabs]) {
    if (live.has(record.session)) continue;
    release(tabId, "its session ended");
    if (record.agentOpened && !record.kept) chrome.tabs.remove(tabId).catch(() => {});
  }
  grants.save();
  notifyPopup();
}

// ---- the person's tabs ------------------------------------------------

// Which tab's page opened a new tab: Chrome's `openerTabId` names the tab
// in front, not the page that opened it (a link with target=_blank in an
// agent's background tab names the person's tab in front). Navigation events
// name the page's own tab, a moment after the tab appears.
const openedBy = new Map();
const openedByWaiters = new Map();
const OPENED_BY_WAIT_MS = 250;

chrome.webNavigation.onCreatedNavigationTarget.addListener(async ({ sourceTabId, tabId }) => {
  openedBy.set(tabId, sourceTabId);
  openedByWaiters.get(tabId)?.();
  await ready;
  await popupOpened(tabId, sourceTabId);
});

/** The tab whose page opened `tabId`, if navigation events tell within a bound. */
async function pageOpener(tabId) {
  if (!openedBy.has(tabId)) {
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, OPENED_BY_WAIT_MS);
      openedByWaiters.set(tabId, () => {
        clearTimeout(timer);
        resolve();
      });
    });
    openedByWaiters.delete(tabId);
  }
  const source = openedBy.get(tabId);
  openedBy.delete(tabId);
  return source;
}

chrome.tabs.onCreated.addListener(async (tab) => {
  await ready;
  notifyPopup();
  if (tab.openerTabId === undefined) return;
  // A tab Chrome gives an opener but no page opened (rare) counts as the opener's.
  const source = (await pageOpener(tab.id)) ?? tab.openerTabId;
  await popupOpened(tab.id, source);
});

/** A tab that `openerId`'s page opened; told once, whichever event comes first. */
async function popupOpened(tabId, openerId) {
  if (grants.visible(tabId) || offers.has(tabId)) return;
  const opener = grants.visible(openerId);
  if (!opener) return;
  const tab = await chrome.tabs.get(tabId).catch(() => null);
  if (!tab || grants.visible(tabId) || offers.has(tabId)) return;
  if (opener.agentOpened) {
    // A popup of an agent's tab is the agent's too.
    grants.adopt(tabId, opener.session, tab.pendingUrl || tab.url, true);
    groupTab(tabId, opener.session).catch(() => {});
    bridge.send({ method: "Extension.tabShared", params: describe(tab, grants.visible(tabId), openerId) });
  } else {
    // A popup of a shared tab is offered to the person, never shared implicitly.
    offers.set(tabId, opener.session);
    notifyPopup();
  }
}

chrome.tabs.onUpdated.addListener(async (tabId, change, tab) => {
  if (change.url) tabUrls.set(tabId, change.url);
  await ready;
  const record = grants.visible(tabId);
  if (change.url || change.title !== undefined) notifyPopup();
  if (!record) return;
  if (record.popup && change.url && protectedReason(change.url)) {
    // Chrome counts a tab opened while an agent's tab was in front as its
    // popup; one that goes to the browser's own pages is the person's.
    await release(tabId, "it went to one of the browser's own pages");
    return;
  }
  if (change.url && !record.follow && !record.suspended && siteOf(change.url) !== record.site) {
    record.suspended = true;
    grants.save();
    notifyPopup();
  }
  if (change.url || change.title !== undefined || change.status) {
    bridge.send({ method: "Extension.tabUpdated", params: describe(tab, record) });
  }
});

chrome.tabs.onRemoved.addListener(async (tabId) => {
  tabUrls.delete(tabId);
  await ready;
  offers.delete(tabId);
  notifyPopup();
  if (!grants.forget(tabId)) return;
  debuggers.forgetTab(tabId);
  agentInput.forget(tabId);
  bridge.send({ method: "Extension.tabRemoved", params: { tabId, reason: "closed" } });
  notifyPopup();
});

// ---- the popup and the pairing page -----------------------------------

chrome.runtime.onMessage.addListener((message, sender, reply) => {
  if (sender.id !== chrome.runtime.id) return false;
  ready
    .then(() => fromPerson(message))
    .then(
      (result) => reply({ ok: true, ...result }),
      (error) => reply({ ok: false, error: String(error?.message ?? error) }),
    );
  return true;
});

async function fromPerson(message) {
  switch (message.type) {
    case "status":
      return { status: await status() };
    case "share": {
      const tab = await chrome.tabs.get(message.tabId);
      const blocked = protectedReason(tab.url);
      if (blocked) throw new Error(blocked);
      if (!shell.sessions.some((s) => s.id === message.session)) throw new Error("that agent session ended");
      offers.delete(tab.id);
      const record = grants.share(tab, message.session, message.follow);
      bridge.send({ method: "Extension.tabShared", params: describe(tab, record) });
      notifyPopup();
      return {};
    }
    case "unshare":
      await release(message.tabId, "the person stopped sharing it");
      return {};
    case "follow": {
      const record = grants.visible(message.tabId);
      if (record) {
        record.follow = Boolean(message.follow);
        grants.save();
      }
      return {};
    }
    case "stop":
      stopAgents("you pressed Stop");
      return {};
    case "resume":
      debuggers.allow();
      bridge.send({ method: "Extension.resume", params: {} });
      shell.control = "agent";
      shell.stopped = "";
      rememberControl();
      notifyPopup();
      return {};
    case "disconnect":
      bridge.disconnect();
      return {};
    case "connect":
    case "paired":
      await bridge.connect();
      return {};
    default:
      throw new Error(`unknown request ${message.type}`);
  }
}

async function status() {
  const tabs = await chrome.tabs.query({});
  return {
    bridge: { state: bridge.state, detail: bridge.detail },
    sessions: shell.sessions,
    control: shell.control,
    stopped: shell.stopped,
    activity: shell.activity,
    latest: shell.latest,
    tabs: tabs.map((tab) => {
      const record = grants.visible(tab.id);
      return {
        tabId: tab.id,
        title: tab.title ?? "",
        url: tab.url ?? "",
        protected: protectedReason(tab.url),
        session: record?.session ?? null,
        agentOpened: record?.agentOpened ?? false,
        follow: record?.follow ?? false,
        suspended: record?.suspended ?? false,
        offeredBy: offers.get(tab.id) ?? null,
      };
    }),
  };
}

/** How often at most the popup is told that something changed. */
const NOTIFY_EVERY_MS = 50;
let notifyPending = null;

/**
 * Tells the popup that something changed, at most every NOTIFY_EVERY_MS:
 * agents in a tight loop (or a page opening tabs without end) would
 * otherwise keep it too busy for the person's clicks.
 */
function notifyPopup() {
  if (notifyPending) return;
  notifyPending = setTimeout(() => {
    notifyPending = null;
    chrome.runtime.sendMessage({ type: "changed" }).catch(() => {});
  }, NOTIFY_EVERY_MS);
}

/** Opens the doorbell document unless it is open already. */
async function openDoorbell() {
  const url = chrome.runtime.getURL("doorbell.html");
  const open = await chrome.runtime.getContexts({ contextTypes: ["OFFSCREEN_DOCUMENT"], documentUrls: [url] });
  if (open.length > 0) return;
  await chrome.offscreen.createDocument({
    url,
    reasons: ["WORKERS"],
    justification: "wakes the extension's worker when Chrome stops it, so its connection to browser-shell comes back at once",
  });
}

function updateBadge() {
  const text = { connected: "", connecting: "…", waiting: "…", retrying: "…", unpaired: "!", refused: "!", disconnected: "off" }[
    bridge.state
  ];
  chrome.action.setBadgeText({ text: text ?? "" }).catch(() => {});
}
