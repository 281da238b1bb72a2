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

async function render() {
  const reply = await ask({ type: "status" });
  if (!reply?.ok) return;
  const { bridge, sessions, control, stopped, activity, tabs } = reply.status;
  const pill = $("bridge");
  pill.textContent = { connected: "connected", connecting: "connecting…", waiting: "waiting for browser-shell",
    retrying: "reconnecting…", unpaired: "not set up", refused: "refused", disconnected: "disconnected" }[bridge.state] ??
    bridge.state;
  pill.className = `pill ${bridge.state}`;
  pill.title = bridge.detail;
  // Which state and why, in a line of its own (its height does not change).
  $("why").textContent = bridge.state === "connected" ? `through ${bridge.detail}` : bridge.detail;
  $("disconnect").hidden = bridge.state === "disconnected" || bridge.state === "unpaired";
  // Connect acts at once, from any state but connected.
  $("connect").hidden = bridge.state === "connected";

  $("control").hidden = sessions.length === 0;
  $("holder").textContent = control === "person"
    ? `The agents stopped (${stopped || "you stopped them"}). They cannot act until you let them go on.`
    : "Agents may act in the tabs below that are shared with them.";
  $("stop").hidden = control === "person";
  $("resume").hidden = control !== "person";

  const sessionList = $("sessions");
  sessionList.replaceChildren(
    ...(sessions.length
      ? sessions.map((s) => element("li", {}, [
          element("span", { className: "title", textContent: `agent ${s.label}` }, [
            element("small", { textContent: activity[s.id] || "idle" }),
          ]),
        ]))
      : [element("li", { className: "empty", textContent: "none connected" })]),
  );

  $("tabs").replaceChildren(...tabs.map((tab) => tabRow(tab, sessions)));
  document.body.dataset.ready = "1";
}

function tabRow(tab, sessions) {
  const title = element("span", { className: "title", textContent: tab.title || tab.url }, [
    element("small", { textContent: tab.url }),
  ]);
  const row = element("li", {}, [title]);
  if (tab.session) {
    const label = sessions.find((s) => s.id === tab.session)?.label ?? tab.session;
    row.append(element("span", {
      className: tab.suspended ? "tag warn" : "tag",
      textContent: tab.suspended ? "left its site" : tab.agentOpened ? `agent ${label}'s` : `shared with ${label}`,
    }));
    if (!tab.agentOpened) {
      const follow = element("input", { type: "checkbox", checked: tab.follow });
      follow.addEventListener("change", () => ask({ type: "follow", tabId: tab.tabId, follow: follow.checked }));
      row.append(element("label", { className: "follow", title: "keep sharing this tab when it goes to another site" }, [
        follow,
        "follow",
      ]));
    }
    if (tab.suspended) row.append(shareButton(tab, tab.session, "Share again"));
    const stop = element("button", { textContent: "Stop sharing" });
    stop.addEventListener("click", () => ask({ type: "unshare", tabId: tab.tabId }).then(render));
    row.append(stop);
  } else if (tab.protected) {
    row.title = tab.protected;
    title.style.color = "#6e6e73";
  } else {
    if (tab.offeredBy) row.append(element("span", { className: "tag", textContent: "opened by a shared tab" }));
    for (const session of sessions) {
      row.append(shareButton(tab, session.id, sessions.length > 1 ? `Share with ${session.label}` : "Share"));
    }
  }
  return row;
}

function shareButton(tab, session, text) {
  const button = element("button", { textContent: text });
  button.dataset.share = session;
  button.addEventListener("click", () => ask({ type: "share", tabId: tab.tabId, session, follow: false }).then(render));
  return button;
}

$("stop").addEventListener("click", () => ask({ type: "stop" }).then(render));
$("resume").addEventListener("click", () => ask({ type: "resume" }).then(render));
$("disconnect").addEventListener("click", () => ask({ type: "disconnect" }).then(render));
$("connect").addEventListener("click", () => ask({ type: "connect" }).then(render));
chrome.runtime.onMessage.addListener((message) => {
  if (message?.type === "changed") render();
});
render();
