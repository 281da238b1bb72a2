// Which of the person's tabs agents may see (seed 002 §7).
//
// A tab is visible to the shell only when the person shared it with one
// agent session, or an agent opened it. A share is bound to the tab's site
// at the time of sharing: when the tab goes to another site by itself, the
// share is suspended (every command answers NOT_SHARED) until the person
// shares it again, unless the person ticked "follow this tab". Navigations
// the agent asked for (Page.navigate) move the share with them.
//
// The records live in chrome.storage.session: they survive the service
// worker stopping, not the browser quitting.

const KEY = "grants";

/** The site of a URL: scheme and host without its first label when it has three or more. */
export function siteOf(url) {
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return parsed.protocol;
    const host = parsed.hostname;
    const labels = host.split(".");
    const numeric = /^[0-9.]+$/.test(host) || host.startsWith("[");
    const registrable = numeric || labels.length <= 2 ? host : labels.slice(-2).join(".");
    return `${parsed.protocol}//${registrable}`;
  } catch {
    return "";
  }
}

/** Pages Chrome lets no extension drive, and pages an agent must never touch. */
export function protectedReason(url) {
  if (!url || url === "about:blank") return null;
  const lower = url.toLowerCase();
  if (/^(chrome|chrome-extension|chrome-untrusted|devtools|edge|view-source|chrome-search):/.test(lower)) {
    return `${url.split("/").slice(0, 3).join("/")} is one of the browser's own pages`;
  }
  if (/^https:\/\/(chromewebstore\.google\.com|chrome\.google\.com\/webstore)/.test(lower)) {
    return "the Chrome Web Store is protected by Chrome";
  }
  if (!/^(https?:|about:)/.test(lower)) return `${url.split(":")[0]}: pages are not shared with agents`;
  return null;
}

/** The grant records, with helpers that keep storage in step. */
export class Grants {
  constructor() {
    /** tabId → {session, site, follow, suspended, agentOpened, kept} */
    this.tabs = new Map();
    /** session id → {label, groupId} */
    this.sessions = new Map();
    /** The shell these records belong to; other shells' records are dropped. */
    this.shell = null;
  }

  async load() {
    const { [KEY]: saved } = await chrome.storage.session.get(KEY);
    if (!saved) return;
    this.shell = saved.shell ?? null;
    for (const [tabId, record] of saved.tabs ?? []) this.tabs.set(Number(tabId), record);
    for (const [id, record] of saved.sessions ?? []) this.sessions.set(id, record);
  }

  save() {
    return chrome.storage.session.set({
      [KEY]: { shell: this.shell, tabs: [...this.tabs], sessions: [...this.sessions] },
    });
  }

  /** The record of a tab an agent may reach, or null. */
  visible(tabId) {
    return this.tabs.get(tabId) ?? null;
  }

  /** The person shares a tab with a session. */
  share(tab, session, follow) {
    const record = {
      session,
      site: siteOf(tab.url ?? ""),
      follow: Boolean(follow),
      suspended: false,
      agentOpened: false,
      kept: false,
    };
    this.tabs.set(tab.id, record);
    this.save();
    return record;
  }

  /** A tab an agent opened, or (`popup`) a tab one of its tabs opened. */
  adopt(tabId, session, url, popup = false) {
    const record = { session, site: siteOf(url ?? ""), follow: true, suspended: false, agentOpened: true, kept: false, popup };
    this.tabs.set(tabId, record);
    this.save();
    return record;
  }

  forget(tabId) {
    const had = this.tabs.delete(tabId);
    if (had) this.save();
    return had;
  }

  /** Tabs of one session. */
  tabsOf(session) {
    return [...this.tabs].filter(([, r]) => r.session === session).map(([id]) => id);
  }
}
