// Frames and waits: whether the page animates, settling after an action,
// and waiting for text, a ref or a role to reach a state.

// Whether the page asks for animation frames. Frame callback ids come from
// one counter per document that the page's scripts and ours share, so ids
// taken between two probes beyond our own requests are the page's. The
// count of probes in a row that saw none tells settle() whether the page
// renders in requestAnimationFrame lately.
//
// An animation loop asks for its next frame only when a frame runs: two
// probes with no frame between them (a snapshot right after the page
// loaded, an action right after a snapshot) see nothing of it. Such a
// probe tells nothing and leaves the count as it was; a callback of our
// own, kept pending, says whether a frame ran. A hidden page runs no
// frames at all, and neither does its loop: there every probe counts.
let lastProbeId = 0;

let ownFrameRequests = 0;

let quietProbes = 0;

// Frames seen to run (by our pending callback), and their count at the
// last probe; whether that callback is pending.
let framesRun = 0;

let framesRunAtProbe = 0;

let frameWatched = false;

// Leaves one callback of ours pending, which counts the next frame.
function watchForAFrame() {
  if (frameWatched) return;
  frameWatched = true;
  ownFrameRequests++;
  requestAnimationFrame(() => {
    frameWatched = false;
    framesRun++;
  });
}

function probeFrameRequests() {
  const id = requestAnimationFrame(() => {});
  cancelAnimationFrame(id);
  const pageAsked = lastProbeId === 0 || id - lastProbeId - 1 > ownFrameRequests;
  const informative = framesRun !== framesRunAtProbe || document.visibilityState === 'hidden';
  if (pageAsked) quietProbes = 0;
  else if (informative) quietProbes++;
  lastProbeId = id;
  ownFrameRequests = 0;
  framesRunAtProbe = framesRun;
  watchForAFrame();
}

probeFrameRequests();

const task = () => new Promise((resolve) => setTimeout(resolve, 0));

// The page's next animation frame. A hidden page runs none (a background
// tab in the person's Chrome, such as the opener of a tab just opened):
// there, and once the page turns hidden while we wait, the next task
// stands in for it, so nothing waits for a frame that never comes.
const frame = () => {
  if (document.visibilityState === 'hidden') return task();
  return new Promise((resolve) => {
    ownFrameRequests++;
    const done = () => {
      document.removeEventListener('visibilitychange', hidden);
      resolve();
    };
    const hidden = () => {
      if (document.visibilityState === 'hidden') task().then(done);
    };
    document.addEventListener('visibilitychange', hidden);
    requestAnimationFrame(done);
  });
};

// Waits until the DOM stops changing for one frame, at most maxMs.
// Unless `frameAlways` (an action whose effect comes with a frame, such as
// a scroll): a page that has asked for no animation frame since the probe
// before the last look, and changes nothing in the tasks the action queued,
// has nothing left to do in a frame: it is quiet at once.
async function settle(maxMs, frameAlways) {
  let dirty = false;
  const observer = new MutationObserver(() => { dirty = true; });
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const start = performance.now();
  probeFrameRequests();
  if (!frameAlways && quietProbes >= 2) {
    await task();
    probeFrameRequests();
    if (!dirty && quietProbes >= 3) {
      observer.disconnect();
      return true;
    }
  }
  await frame();
  // A wheel scroll reaches the page from the compositor; the scroll event
  // (and what a virtualized list renders for it) can come a frame later.
  if (frameAlways && !dirty) await frame();
  while (dirty && performance.now() - start < maxMs) {
    dirty = false;
    await frame();
  }
  observer.disconnect();
  return !dirty;
}

async function frames(count) {
  for (let i = 0; i < count; i++) await frame();
  return true;
}

// The document's animations and those in every shadow root (which
// document.getAnimations() leaves out; web components animate there).
function everyAnimation() {
  const found = document.getAnimations();
  for (const el of elementsDeep(document)) {
    const shadow = shadowOf(el);
    if (shadow) found.push(...shadow.getAnimations());
  }
  return found;
}

// Waits (at most boundMs) until no finite animation has run for two
// frames: a widget clicked while it still animates its last change (a
// popup closing) can end up in a state no person would see it reach, and
// such widgets often wait a frame between one animation and the next.
async function animationsEnded(boundMs) {
  const deadline = performance.now() + boundMs;
  const timeLeft = () => new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - performance.now())));
  const running = () => everyAnimation().filter((animation) =>
    animation.playState === 'running' && Number.isFinite(animation.effect?.getComputedTiming().endTime));
  let quietFrames = 0;
  while (quietFrames < 2) {
    if (performance.now() > deadline) return false;
    const now = running();
    if (now.length) {
      quietFrames = 0;
      await Promise.race([Promise.all(now.map((animation) => animation.finished.catch(() => null))), timeLeft()]);
    } else {
      quietFrames++;
    }
    await Promise.race([frame(), timeLeft()]);
  }
  return true;
}

// The state of an element for a wait: gone, hidden, disabled or ready.
function elementState(el) {
  if (!el || !el.isConnected) return 'gone';
  if (!el.checkVisibility({ visibilityProperty: true })) return 'hidden';
  if ((el.matches && el.matches(':disabled')) || el.getAttribute('aria-disabled') === 'true') return 'disabled';
  return 'enabled';
}

// Whether an element state satisfies what a wait asks for.
function stateMeets(state, wanted) {
  if (wanted === 'hidden') return state === 'gone' || state === 'hidden';
  if (wanted === 'enabled') return state === 'enabled';
  return state === 'enabled' || state === 'disabled';
}

// Elements with exactly this role and the name (or, unnamed, the text)
// the snapshot shows.
function byRole(role, name) {
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    if ((roleOf(el) || 'generic') === role && shownAs(el, role, name)) found.push(el);
  }
  return found;
}

// The waits running in this document, by the provider's id: how to end
// each at once (its observer and timers), when the call that started it
// was cancelled or gave up, so nothing of it runs on in the page.
const activeWaits = new Map();
function endWait(id) {
  const end = activeWaits.get(id);
  if (end) end();
  return !!end;
}

// Waits until `spec` holds: checked now, then after DOM changes (batched
// by a short timer, never on a fixed poll), until `maxMs`. Returns
// { ok, seen }: `seen` says what was last observed, for a timeout.
// `id` lets the provider end it early (endWait).
async function waitFor(spec, maxMs, id) {
  const check = () => {
    if (spec.kind === 'text') {
      const body = squash((document.body && document.body.innerText) || '');
      const found = body.includes(spec.text);
      return { ok: spec.gone ? !found : found, seen: clip(body, 200) };
    }
    if (spec.kind === 'ref') {
      const state = elementState(deref(spec.ref));
      return { ok: stateMeets(state, spec.state), seen: state };
    }
    if (spec.kind === 'role') {
      const states = byRole(spec.role, spec.name).map(elementState);
      const ok = spec.state === 'hidden' ? states.every((s) => stateMeets(s, 'hidden')) : states.some((s) => stateMeets(s, spec.state));
      return { ok, seen: states.length ? states.join(', ') : 'none on the page' };
    }
    return { ok: false, seen: 'unknown condition' };
  };
  // What a virtualized grid or list holds further on exists only once
  // scrolled to: look there first (half the time at most).
  const started = performance.now();
  const appears = !spec.gone && spec.state !== 'hidden' && (spec.kind === 'text' || spec.kind === 'role');
  const finder = globalThis.__browserShell;
  if (appears && !check().ok && finder.virtualScrollers().size > 0) await finder.seekWhere(() => check().ok, maxMs / 2);
  maxMs = Math.max(0, maxMs - (performance.now() - started));
  return new Promise((resolve) => {
    let last = check();
    if (last.ok) { resolve(last); return; }
    let timer = null;
    const done = () => {
      activeWaits.delete(id);
      observer.disconnect();
      clearTimeout(timer);
      clearTimeout(deadline);
      resolve(last);
    };
    const observer = new MutationObserver(() => {
      if (timer) return;
      timer = setTimeout(() => { timer = null; last = check(); if (last.ok) done(); }, 10);
    });
    observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    const deadline = setTimeout(done, maxMs);
    if (id != null) activeWaits.set(id, done);
  });
}

// Resolves once the DOM has not changed for `quietMs` (true), or at
// `maxMs` while it still changes (false).
function waitStable(quietMs, maxMs, id) {
  return new Promise((resolve) => {
    let quiet = null;
    const finish = (stable) => {
      activeWaits.delete(id);
      observer.disconnect();
      clearTimeout(quiet);
      clearTimeout(deadline);
      resolve(stable);
    };
    if (id != null) activeWaits.set(id, () => finish(false));
    const observer = new MutationObserver(() => { clearTimeout(quiet); quiet = setTimeout(() => finish(true), quietMs); });
    observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
    quiet = setTimeout(() => finish(true), quietMs);
    const deadline = setTimeout(() => finish(false), maxMs);
  });
}
