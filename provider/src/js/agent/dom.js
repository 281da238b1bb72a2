// The composed DOM as a person meets it: shadow roots (open, and closed
// ones the provider hands us), slots, same-origin frames; hit tests that
// see through them; small text helpers.

// Closed shadow roots, handed to us by the provider (through CDP, which
// can pierce them); hosts already checked; hosts waiting to be checked.
const closedRoots = new WeakMap();

const shadowOf = (el) => el.shadowRoot || closedRoots.get(el) || null;

// Every element under `root` matching `selector`, in every shadow root
// (open, and closed ones handed to us) too: a host's shadow content
// comes just before the host.
function* elementsDeep(root, selector = '*') {
  for (const el of root.querySelectorAll('*')) {
    const shadow = shadowOf(el);
    if (shadow) yield* elementsDeep(shadow, selector);
    if (selector === '*' || el.matches(selector)) yield el;
  }
}

// Tag checks instead of `instanceof`: elements of same-origin frames come
// from another realm, where our constructors do not match.
const is = (el, tag) => el.nodeType === Node.ELEMENT_NODE && el.tagName === tag;

const squash = (text) => text.replace(/\s+/g, ' ').trim();

const clip = (text, max) => (text.length > max ? text.slice(0, max - 1) + '…' : text);

function deepActiveElement() {
  let active = document.activeElement;
  while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
  return active;
}

// Children in composed order: shadow content, slotted nodes, same-origin frame documents.
function childrenOf(el) {
  if (el.tagName === 'SLOT') {
    const assigned = el.assignedNodes({ flatten: true });
    return assigned.length ? assigned : el.childNodes;
  }
  const shadow = shadowOf(el);
  if (shadow) return shadow.childNodes;
  if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
    try {
      const body = el.contentDocument && el.contentDocument.body;
      return body ? [body] : [];
    } catch (_) {
      return [];
    }
  }
  return el.childNodes;
}

// Elements by id among `ids`, in the root `from` lives in.
function byIds(from, ids) {
  const root = from.getRootNode();
  const find = (id) => (root.getElementById ? root.getElementById(id) : document.getElementById(id));
  return (ids || '').split(/\s+/).filter(Boolean).map(find).filter(Boolean);
}

function deepElementFromPoint(doc, x, y) {
  let hit = doc.elementFromPoint(x, y);
  while (hit && shadowOf(hit)) {
    const inner = shadowOf(hit).elementFromPoint(x, y);
    if (!inner || inner === hit) break;
    hit = inner;
  }
  return hit;
}

// Whether a hit on `host` is really on `el`: `el` lives in the shadow
// tree of `host` (or of a host inside it), and hit tests report text that
// a component slots into `el` (a web component's button label) as the host.
function slottedInto(el, host) {
  for (let root = el.getRootNode(); root && root.host; root = root.host.getRootNode()) {
    if (root.host === host) return true;
  }
  return false;
}

function composedContains(container, node) {
  for (let n = node; n; n = n.parentNode || (n.nodeType === Node.DOCUMENT_FRAGMENT_NODE && n.host ? n.host : null)) {
    if (n === container) return true;
  }
  return false;
}

// The parent in the composed tree: the slot an element is shown in, the
// host of a shadow root, else the parent element.
function composedParent(node) {
  if (node.assignedSlot) return node.assignedSlot;
  if (node.parentElement) return node.parentElement;
  const root = node.parentNode;
  return root && root.nodeType === Node.DOCUMENT_FRAGMENT_NODE && root.host ? root.host : null;
}
