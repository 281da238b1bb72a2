// Actionability and editors: whether the element behind a ref can be
// acted on where a person would (visible, enabled, in view, not covered),
// and the focus, caret, paste and selection an action needs.

// Names what covers an element the way a model would: the nearest
// ancestor with a role, else a dialog inside the covering layer (a
// backdrop), else its tag.
function describe(el) {
  const LANDMARKS = new Set(['main', 'banner', 'contentinfo', 'navigation', 'complementary', 'region', 'form']);
  for (let node = el; node && node.nodeType === Node.ELEMENT_NODE; node = node.parentElement || (node.getRootNode() && node.getRootNode().host)) {
    const role = roleOf(node);
    if (role && !LANDMARKS.has(role)) return { role, name: clip(nameOf(node, role), 80) };
  }
  const dialog = el.querySelector && el.querySelector('dialog, [role=dialog], [role=alertdialog]');
  if (dialog) {
    const role = roleOf(dialog);
    return { role, name: clip(nameOf(dialog, role), 80) };
  }
  const tag = el.tagName ? el.tagName.toLowerCase() : 'node';
  return { role: tag + (el.id ? '#' + el.id : ''), name: '' };
}

// Checks that the element behind `ref` is still the one the model saw and
// can be acted on; scrolls it into view and returns the action point in
// this document's viewport.
async function prepare(ref, expected, action) {
  const el = deref(ref);
  if (!el || !el.isConnected) return { status: 'gone', doc };
  const role = roleOf(el) || 'generic';
  const now = fingerprint(el, role, clip(nameOf(el, role), FINGERPRINT_NAME));
  if (expected && !sameFingerprint(now, expected)) return { status: 'changed', now };
  // Text goes where the focus is, not to a point: a field that takes
  // text is not refused for its size or for what covers it (editors keep
  // their input in a hidden, zero-size or covered proxy).
  const typing = action === 'type' || action === 'fill';
  // The hidden input of a code editor is acted on where a person would
  // click it: the editor.
  const box = proxiedBy(el) || el;
  if (!el.checkVisibility({ visibilityProperty: true })) return { status: 'not-actionable', reason: 'hidden' };
  const needsEnabled = !['hover', 'focus', 'scroll'].includes(action);
  if (needsEnabled && ((el.matches && el.matches(':disabled')) || el.getAttribute('aria-disabled') === 'true')) {
    return { status: 'not-actionable', reason: 'disabled' };
  }
  // Into view as a person's wheel would bring it, nearest scroller first:
  // every scrolling box it sits in (and the page) scrolls only as far as
  // it must; an element off the page is centred.
  const before = box.getBoundingClientRect();
  const view = viewOf(box);
  const offPage = before.bottom <= 0 || before.right <= 0 || before.top >= view.height || before.left >= view.width;
  const revealed = !offPage && !clippedBy(box, before) ? null : reveal(box, offPage ? 'center' : 'nearest');
  let rect = await steadyBox(box, !!revealed);
  if (!rect) return { status: 'not-actionable', reason: 'still moving' };
  if (!typing && (rect.width < 1 || rect.height < 1)) return { status: 'not-actionable', reason: 'zero-size' };
  let x = rect.left + rect.width / 2;
  let y = rect.top + rect.height / 2;
  if (action !== 'focus' && action !== 'scroll' && !typing) {
    let hit = hitAt(box, x, y);
    // A sticky header or footer (of the page or of the scrolled box) may
    // lie over it where it scrolled to: try it centred, at the end, at the
    // start. (Not under a layer that covers the whole view: a modal's
    // backdrop stays wherever the page scrolls.)
    for (const block of ['center', 'end', 'start']) {
      if (hit.ok || !hit.by || coversView(hit.by)) break;
      reveal(box, block);
      rect = (await steadyBox(box, true)) || box.getBoundingClientRect();
      x = rect.left + rect.width / 2;
      y = rect.top + rect.height / 2;
      hit = hitAt(box, x, y);
    }
    // What covers it may be on its way out (a popup closing with an
    // animation, often inside a shadow root): look again for a few
    // frames (about a third of a second) before calling it covered.
    for (let i = 0; !hit.ok && i < 20; i++) {
      await frame();
      hit = hitAt(box, x, y);
    }
    if (!hit.ok) {
      return { status: 'not-actionable', reason: 'covered', by: hit.by ? describe(hit.by) : { role: 'nothing', name: '' } };
    }
  }
  // Translate into the top-level viewport through same-origin frames.
  let offsetX = 0;
  let offsetY = 0;
  for (let win = el.ownerDocument.defaultView; win && win.frameElement; win = win.parent) {
    const frameRect = win.frameElement.getBoundingClientRect();
    offsetX += frameRect.left + win.frameElement.clientLeft;
    offsetY += frameRect.top + win.frameElement.clientTop;
  }
  // Typing goes where the focus is: put it there now, saving a round trip.
  let editor = null;
  let wasFocused = false;
  if (typing) {
    const focused = focusForTyping(ref, action === 'fill');
    if (focused.status !== 'ok') return { status: 'not-actionable', reason: 'it does not accept text' };
    editor = focused.editor || null;
    wasFocused = !!focused.wasFocused;
  }
  return { status: 'ok', x: x + offsetX, y: y + offsetY, width: rect.width, height: rect.height, editor, wasFocused };
}

// The code editor whose zero-size input proxy `el` is, if it is one.
function proxiedBy(el) {
  const own = el.getBoundingClientRect();
  if (own.width >= 1 && own.height >= 1) return null;
  for (let node = el.parentElement, depth = 0; node && depth < 12; node = node.parentElement, depth++) {
    if (editorOf(node)) return node;
  }
  return null;
}

// Whether a box (at `rect`) is cut off by a scrolling or clipping box it
// sits in, or by the viewport: a person would scroll before acting.
function clippedBy(el, rect) {
  const shown = visiblePart(el, rect);
  const view = viewOf(el);
  return shown.right - shown.left < Math.min(rect.width, view.width) - 1 ||
    shown.bottom - shown.top < Math.min(rect.height, view.height) - 1;
}

// The size of the viewport `el` is laid out in (a same-origin frame's own).
function viewOf(el) {
  const win = el.ownerDocument.defaultView || window;
  return { width: win.innerWidth, height: win.innerHeight };
}

// The part of `rect` (the box of `el`) left visible by every ancestor that
// clips what overflows it (scroll boxes, `overflow: hidden`), across
// shadow roots and slots, and by the viewport.
function visiblePart(el, rect) {
  let { left, top, right, bottom } = rect;
  for (let node = composedParent(el); node && node.nodeType === Node.ELEMENT_NODE; node = composedParent(node)) {
    if (node === node.ownerDocument.body || node === node.ownerDocument.documentElement) break;
    const style = getComputedStyle(node);
    const clipsX = style.overflowX !== 'visible';
    const clipsY = style.overflowY !== 'visible';
    if (clipsX || clipsY) {
      const box = node.getBoundingClientRect();
      const innerLeft = box.left + node.clientLeft;
      const innerTop = box.top + node.clientTop;
      if (clipsX) { left = Math.max(left, innerLeft); right = Math.min(right, innerLeft + node.clientWidth); }
      if (clipsY) { top = Math.max(top, innerTop); bottom = Math.min(bottom, innerTop + node.clientHeight); }
    }
    // A fixed box is placed by the viewport, not by the boxes around it.
    if (style.position === 'fixed') break;
  }
  const view = viewOf(el);
  return { left: Math.max(left, 0), top: Math.max(top, 0), right: Math.min(right, view.width), bottom: Math.min(bottom, view.height) };
}

// Scrolls every scroller around `el` (and the page, and the frames it is
// in) to show it, at once (never smoothly: the action must not wait for a
// scroll animation). Returns the alignment used.
function reveal(el, block) {
  el.scrollIntoView({ block, inline: block === 'nearest' ? 'nearest' : 'center', behavior: 'instant' });
  return block;
}

// The box of `el` once it stops moving (a scroll just done, an animation):
// at most ten frames, null if it still moves. Looked at at once when
// nothing scrolled and nothing animates.
async function steadyBox(el, scrolled) {
  let rect = el.getBoundingClientRect();
  const animating = typeof document.getAnimations === 'function' && document.getAnimations().length > 0;
  for (let i = 0; (animating || scrolled) && i < 10; i++) {
    await frame();
    const next = el.getBoundingClientRect();
    const still = next.x === rect.x && next.y === rect.y && next.width === rect.width && next.height === rect.height;
    rect = next;
    if (still) return rect;
  }
  return animating || scrolled ? null : rect;
}

// Whether `el` lies over (nearly) the whole viewport, as a modal's backdrop does.
function coversView(el) {
  const box = el.getBoundingClientRect();
  const view = viewOf(el);
  return box.width * box.height >= 0.5 * view.width * view.height;
}

// Whether a click at (x, y) reaches `el` (or its label, or text slotted
// into it); if not, what it reaches.
function hitAt(el, x, y) {
  const hit = deepElementFromPoint(el.ownerDocument, x, y);
  const ok = !!hit && (hit === el || composedContains(el, hit) || (hit.control && hit.control === el) || (el.labels && [...el.labels].some((l) => composedContains(l, hit))) || slottedInto(el, hit));
  return { ok, by: hit };
}

// Focuses an editable element and places the caret: at the end to
// append, or over everything to replace.
function focusForTyping(ref, replace) {
  const el = element(ref);
  if (!el) return { status: 'gone' };
  const editor = editorOf(el);
  if (editor) {
    // The editor selects and replaces through its own keys; the provider
    // presses them. Only its input proxy takes the focus here.
    const input = editorInput(el, editor);
    if (!input) return { status: 'not-editable' };
    const wasFocused = composedContains(el, deepActiveElement());
    if (!wasFocused) input.focus();
    return { status: 'ok', editor: editor.kind, wasFocused };
  }
  el.focus();
  const isField = is(el, 'INPUT') || is(el, 'TEXTAREA');
  if (isField) {
    const length = el.value.length;
    try {
      if (replace) el.setSelectionRange(0, length);
      else el.setSelectionRange(length, length);
    } catch (_) {
      if (replace) el.select();
    }
  } else if (el.isContentEditable) {
    const range = document.createRange();
    range.selectNodeContents(el);
    if (!replace) range.collapse(false);
    const selection = getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  } else {
    return { status: 'not-editable' };
  }
  return { status: 'ok', empty: isField ? el.value.length === 0 : !el.textContent };
}

// Hands `text` to whatever has the focus as a paste would: a code editor
// then holds it exactly (a paste skips auto-closing and auto-indent).
// Returns whether the page took the paste (editors cancel the event and
// insert the text themselves).
function pasteText(text) {
  const target = deepActiveElement() || document.body;
  const data = new DataTransfer();
  data.setData('text/plain', text);
  const event = new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true, composed: true });
  target.dispatchEvent(event);
  return event.defaultPrevented;
}

// Selects options of a <select> by value or visible label.
function selectOptions(ref, wanted) {
  const el = element(ref);
  if (!el) return { status: 'gone' };
  if (!is(el, 'SELECT')) {
    const role = roleOf(el);
    if (role === 'combobox' || role === 'listbox') {
      return { status: 'custom', open: role === 'listbox' || el.getAttribute('aria-expanded') === 'true' };
    }
    return { status: 'not-select' };
  }
  const options = [...el.options];
  const chosen = [];
  const missing = [];
  for (const want of wanted) {
    const option = options.find((o) => o.value === want) || options.find((o) => squash(o.label || o.text) === squash(want));
    if (option) chosen.push(option);
    else missing.push(want);
  }
  if (missing.length) return { status: 'missing', missing, available: options.map((o) => squash(o.label || o.text)) };
  if (chosen.length > 1 && !el.multiple) return { status: 'single', available: [] };
  for (const option of options) option.selected = chosen.includes(option);
  el.dispatchEvent(new Event('input', { bubbles: true, composed: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { status: 'ok', selected: chosen.map((o) => o.value) };
}

function checkedState(ref) {
  const el = element(ref);
  if (!el) return null;
  if (is(el, 'INPUT') && (el.type === 'checkbox' || el.type === 'radio')) return el.checked;
  const aria = el.getAttribute('aria-checked');
  return aria === null ? null : aria === 'true';
}

// Watching whether pointer input reaches an element (used for elements in
// out-of-process frames, which can miss input right after they load).
const armed = new Map();

function armInput(ref) {
  const el = element(ref);
  if (!el) return false;
  const state = { hit: false };
  const mark = () => { state.hit = true; };
  el.addEventListener('pointerdown', mark, { capture: true, once: true });
  armed.set(ref, { state, el, mark });
  return true;
}

async function inputArrived(ref) {
  const entry = armed.get(ref);
  if (!entry) return false;
  if (!entry.state.hit) await frame();
  armed.delete(ref);
  entry.el.removeEventListener('pointerdown', entry.mark, { capture: true });
  return entry.state.hit;
}

function focus(ref) {
  const el = element(ref);
  if (!el) return false;
  el.focus();
  return true;
}

// Whether the press and moves since `watchDragStart` began an HTML5 drag
// that the page let go on (a `dragstart` nobody cancelled): then Chrome
// hands the drag to the provider instead of the operating system.
let dragStart = null;
function watchDragStart() {
  if (dragStart) removeEventListener('dragstart', dragStart.listener, { capture: true });
  const watch = { event: null, listener: (event) => { watch.event = event; } };
  addEventListener('dragstart', watch.listener, { capture: true });
  dragStart = watch;
  return true;
}
async function dragStarted() {
  // (The page's own handlers, which may cancel it, run after ours.)
  await task();
  const watch = dragStart;
  dragStart = null;
  if (!watch) return false;
  removeEventListener('dragstart', watch.listener, { capture: true });
  return !!watch.event && !watch.event.defaultPrevented;
}

// Where an element is now, for the result of a drag: as the snapshot
// shows it, its place among its siblings, and the nearest container with
// a role (as the snapshot names that).
function placeOf(ref) {
  const el = element(ref);
  if (!el) return null;
  const shown = (node, role) => clip(squash(nameOf(node, role)) || squash(contentText(node, true)), 80);
  const role = roleOf(el) || 'generic';
  const siblings = el.parentElement ? [...el.parentElement.children].filter((c) => c.checkVisibility()) : [el];
  let container = composedParent(el);
  while (container && container.nodeType === Node.ELEMENT_NODE && !roleOf(container)) container = composedParent(container);
  const place = { role, name: shown(el, role), index: siblings.indexOf(el) + 1, of: siblings.length };
  if (container && container.nodeType === Node.ELEMENT_NODE) {
    const containerRole = roleOf(container);
    place.container = { role: containerRole, name: clip(squash(nameOf(container, containerRole)), 80) };
  }
  return place;
}

// The element a person would hit at (x, y) of the page's viewport (CSS
// pixels, as a screenshot shows them), for acting at a point: the nearest
// element with a role there, handed a ref so the result can name it.
// `outside` when the point is not in the viewport.
function elementAt(x, y, nextRef) {
  if (!(x >= 0 && y >= 0 && x < innerWidth && y < innerHeight)) {
    return { status: 'outside', width: innerWidth, height: innerHeight };
  }
  const hit = deepElementFromPoint(document, x, y);
  let el = hit;
  while (el && el.nodeType === Node.ELEMENT_NODE && !roleOf(el)) el = composedParent(el);
  const found = el && el.nodeType === Node.ELEMENT_NODE ? el : hit;
  if (!found) return { status: 'nothing' };
  const role = roleOf(found) || 'generic';
  const state = { nextRef };
  const ref = refFor(found, state);
  const fingerprints = { [ref]: fingerprint(found, role, clip(nameOf(found, role), FINGERPRINT_NAME)) };
  return {
    status: 'ok',
    handedOut: { doc, refs: [ref], fingerprints, nextRef: state.nextRef },
    role,
    name: clip(squash(nameOf(found, role)) || squash(contentText(found, true)), 80),
  };
}

// Whether a box scrolls (overflow that scrolls, and more content than room).
function scrolls(el) {
  const style = getComputedStyle(el);
  const y = /auto|scroll|overlay/.test(style.overflowY) && el.scrollHeight > el.clientHeight + 1;
  const x = /auto|scroll|overlay/.test(style.overflowX) && el.scrollWidth > el.clientWidth + 1;
  return x || y;
}

// What a scroll brought into view: the nearest box around the element that
// scrolls (the page without an element, or when none does), how far it is
// scrolled, and the first and last things with a role a person sees in it.
function scrolledView(ref) {
  const el = ref ? element(ref) : null;
  let box = el && el.nodeType === Node.ELEMENT_NODE && scrolls(el) ? el : el ? composedParent(el) : null;
  while (box && box.nodeType === Node.ELEMENT_NODE && box !== document.body && box !== document.documentElement && !scrolls(box)) box = composedParent(box);
  const page = !box || box.nodeType !== Node.ELEMENT_NODE || box === document.body || box === document.documentElement;
  const scroller = page ? document.scrollingElement || document.documentElement : box;
  const area = page ? { left: 0, top: 0, right: innerWidth, bottom: innerHeight } : box.getBoundingClientRect();
  const named = (node) => {
    for (let n = node; n && n.nodeType === Node.ELEMENT_NODE && (page || composedContains(box, n)); n = composedParent(n)) {
      const role = roleOf(n);
      if (role && n !== box) return { role, name: clip(squash(nameOf(n, role)) || squash(contentText(n, true)), 60) };
    }
    return null;
  };
  // Looked for a few pixels inside the box's edges, across its middle.
  const at = (y) => named(deepElementFromPoint(document, (Math.max(area.left, 0) + Math.min(area.right, innerWidth)) / 2, y));
  const top = Math.max(area.top, 0);
  const bottom = Math.min(area.bottom, innerHeight);
  const view = {
    left: Math.round(scroller.scrollLeft),
    top: Math.round(scroller.scrollTop),
    maxLeft: Math.max(0, scroller.scrollWidth - scroller.clientWidth),
    maxTop: Math.max(0, scroller.scrollHeight - scroller.clientHeight),
    first: bottom > top ? at(top + 4) : null,
    last: bottom > top ? at(bottom - 4) : null,
  };
  if (!page) {
    const role = roleOf(box) || 'generic';
    view.container = { role, name: clip(squash(nameOf(box, role)), 60) };
  }
  return view;
}
