// The doorbell: an offscreen document that wakes the service worker at once
// when Chrome stops it (or it crashes), so the bridge to browser-shell is
// back within a moment instead of at the next alarm.
//
// It holds a port to the worker; the port breaks when the worker stops,
// and connecting again starts the worker. Nothing else passes through it.

const FIRST_DELAY_MS = 50;
const LONGEST_DELAY_MS = 5000;
/** A port that lived this long means the worker was fine: start over quickly. */
const HEALTHY_MS = 10000;

let delay = FIRST_DELAY_MS;

function ring() {
  const opened = Date.now();
  let port;
  try {
    port = chrome.runtime.connect({ name: "doorbell" });
  } catch {
    // The extension is being reloaded or removed.
    return;
  }
  port.onDisconnect.addListener(() => {
    // Reading lastError keeps Chrome from logging it as unchecked.
    void chrome.runtime.lastError;
    if (Date.now() - opened > HEALTHY_MS) delay = FIRST_DELAY_MS;
    setTimeout(ring, delay);
    delay = Math.min(delay * 2, LONGEST_DELAY_MS);
  });
}

ring();
