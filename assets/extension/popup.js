// The popup: what the bridge and the agents are doing, and the person's
// buttons (share a tab, stop sharing, stop the agents, disconnect).

const $ = (id) => document.getElementById(id);

function ask(message) {
  return chrome.runtime.sendMessage(message);
}

function element(tag, props = {}, children = []) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

/** Tab rows in the order they were first seen: new tabs are appended, never inserted above. */
const rows = new Map();

async function render() {
  const reply = await ask({ type: "status" });
  if (!reply?.ok) return;
  const { bridge, sessions, control, stopped, latest, tabs } = reply.status;
  const pill = $("bridge");
  pill.textContent = { connected: "connected", connecting: "connecting…", waiting: "waiting for browser-shell",
    retrying: "reconnecting…", unpaired: "not set up", refused: "refused", disconnected: "disconnected" }[bridge.state] ??
    bridge.state;
  pill.className = `pill ${bridge.state}`;
  pill.title = bridge.detail;
  // Which state and why, in a line of its own (its height does not change).
  $("why").textContent = bridge.state === "connected" ? `through ${bridge.detail}` : bridge.detail;
  // Connect acts at once, from any state but connected; both in one place.
  $("connect").hidden = bridge.state === "connected";
  $("disconnect").hidden = !$("connect").hidden;

  // The control line is always there: Stop and Let go on take each other's place.
  const person = control === "person";
  $("control").className = sessions.length === 0 && !person ? "idle" : "";
  $("holder").textContent = person
    ? `The agents stopped (${stopped || "you stopped them"}). They cannot act until you let them go on.`
    : sessions.length === 0
      ? "No agent session is connected."
      : "Agents may act in the tabs below that are shared with them.";
  $("stop").hidden = person;
  $("stop").disabled = sessions.length === 0;
  $("resume").hidden = !person;
  const label = (id) => sessions.find((s) => s.id === id)?.label ?? id;
  $("activity").textContent = latest ? `agent ${label(latest.session)}: ${latest.text || "idle"}` : "";

  const list = $("tabs");
  const open = new Set();
  for (const tab of tabs) {
    open.add(tab.tabId);
    let row = rows.get(tab.tabId);
    if (!row) {
      row = element("li");
      rows.set(tab.tabId, row);
      list.append(row);
    }
    // Rebuilt only when what it shows changed: a button replaced between
    // a press and its release would lose the person's click.
    const shows = JSON.stringify([tab, sessions]);
    if (row.dataset.shows === shows) continue;
    row.dataset.shows = shows;
    row.className = "";
    row.dataset.tab = String(tab.tabId);
    row.replaceChildren(...tabRow(tab, sessions));
  }
  // A closed tab keeps its place, struck through, while rows below it
  // would move up into it; at the end of the list it goes.
  for (const [tabId, row] of rows) {
    if (open.has(tabId) || row.className === "closed") continue;
    row.className = "closed";
    row.title = "closed";
    row.dataset.shows = "";
    row.replaceChildren(row.querySelector(".title") ?? element("span", { className: "title" }));
  }
  while (list.lastElementChild?.className === "closed") {
    rows.delete(Number(list.lastElementChild.dataset.tab));
    list.lastElementChild.remove();
  }

  $("sessions").replaceChildren(
    ...(sessions.length
      ? sessions.map((s) => element("li", {}, [
          element("span", { className: "title", textContent: `agent ${s.label}` }, [
            element("small", { textContent: reply.status.activity[s.id] || "idle" }),
          ]),
        ]))
      : [element("li", { className: "empty", textContent: "none connected" })]),
  );
  document.body.dataset.ready = "1";
}

function tabRow(tab, sessions) {
  const title = element("span", { className: "title", textContent: tab.title || tab.url }, [
    element("small", { textContent: tab.url }),
  ]);
  const row = [title];
  const append = (...nodes) => row.push(...nodes);
  if (tab.session) {
    const label = sessions.find((s) => s.id === tab.session)?.label ?? tab.session;
    append(element("span", {
      className: tab.suspended ? "tag warn" : "tag",
      textContent: tab.suspended ? "left its site" : tab.agentOpened ? `agent ${label}'s` : `shared with ${label}`,
    }));
    if (!tab.agentOpened) {
      const follow = element("input", { type: "checkbox", checked: tab.follow });
      follow.addEventListener("change", () => ask({ type: "follow", tabId: tab.tabId, follow: follow.checked }));
      append(element("label", { className: "follow", title: "keep sharing this tab when it goes to another site" }, [
        follow,
        "follow",
      ]));
    }
    if (tab.suspended) append(shareButton(tab, tab.session, "Share again"));
    const stop = element("button", { textContent: "Stop sharing" });
    stop.addEventListener("click", () => ask({ type: "unshare", tabId: tab.tabId }).then(refresh));
    append(stop);
  } else if (tab.protected) {
    title.title = tab.protected;
    title.style.color = "#6e6e73";
  } else {
    if (tab.offeredBy) append(element("span", { className: "tag", textContent: "opened by a shared tab" }));
    for (const session of sessions) {
      append(shareButton(tab, session.id, sessions.length > 1 ? `Share with ${session.label}` : "Share"));
    }
  }
  return row;
}

function shareButton(tab, session, text) {
  const button = element("button", { textContent: text });
  button.dataset.share = session;
  button.addEventListener("click", () => ask({ type: "share", tabId: tab.tabId, session, follow: false }).then(refresh));
  return button;
}

/**
 * Renders again, one render at a time: changes that come while one runs
 * (an agent in a tight loop sends many) make one more render after it.
 */
let rendering = null;
let renderAgain = false;
function refresh() {
  if (rendering) {
    renderAgain = true;
    return;
  }
  rendering = render()
    .catch(() => {})
    .finally(() => {
      rendering = null;
      if (renderAgain) {
        renderAgain = false;
        refresh();
      }
    });
}

$("stop").addEventListener("click", () => ask({ type: "stop" }).then(refresh));
$("resume").addEventListener("click", () => ask({ type: "resume" }).then(refresh));
$("disconnect").addEventListener("click", () => ask({ type: "disconnect" }).then(refresh));
$("connect").addEventListener("click", () => ask({ type: "connect" }).then(refresh));
chrome.runtime.onMessage.addListener((message) => {
  if (message?.type === "changed") refresh();
});
refresh();
