// The doorbell: an offscreen document that wakes the service worker at once
// when Chrome stops it (or it crashes), so the bridge to browser-shell is
// back within a moment instead of at the next alarm.
//
// It holds a port to the worker; the port breaks when the worker stops,
// and connecting again starts the worker. Nothing else passes through it.

const FIRST_DELAY_MS = 50;
const LONGEST_DELAY_MS = 5000;

let delay = FIRST_DELAY_MS;

function ring() {
  let port;
  try {
    port = chrome.runtime.connect({ name: "doorbell" });
  } catch {
    // The extension is being reloaded or removed.
    return;
  }
  // The worker answers "up" once it runs: the next stop rings quickly again.
  port.onMessage.addListener(() => {
    delay = FIRST_DELAY_MS;
  });
  port.onDisconnect.addListener(() => {
    // Reading lastError keeps Chrome from logging it as unchecked.
    void chrome.runtime.lastError;
    setTimeout(ring, delay);
    delay = Math.min(delay * 2, LONGEST_DELAY_MS);
  });
}

ring();
