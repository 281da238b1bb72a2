// Element refs and fingerprints: the same live element always maps to
// the same ref, a ref never moves to another element, and a fingerprint
// tells whether the element behind a ref is still the one the model saw.

// Names are compared on their first characters only, so long texts stay cheap.
const FINGERPRINT_NAME = 100;

const refs = { byElement: new WeakMap(), byRef: new Map(), issued: 0 };

// Cross-origin iframes get a slot id so the provider can put the frame's
// own tree (walked in that frame) where the iframe sits.
const slots = { byElement: new WeakMap(), next: 1 };

function slotOf(el) {
  let slot = slots.byElement.get(el);
  if (!slot) {
    slot = 'f' + slots.next++;
    slots.byElement.set(el, slot);
  }
  return slot;
}

const doc = (crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2));

function fingerprint(el, role, name) {
  return {
    role: role || '',
    name: name || '',
    tag: el.tagName.toLowerCase(),
    type: el.getAttribute('type') || '',
    href: el.tagName === 'A' && el.href ? el.href : '',
  };
}

function sameFingerprint(a, b) {
  return a.role === b.role && a.name === b.name && a.tag === b.tag && a.type === b.type && a.href === b.href;
}

// Thrown by `refFor` in a walk that may not hand out refs (`newRefs:
// false`): frames walked side by side cannot share one ref counter, so
// such a walk stops at the first element without a ref and is walked
// again once the refs before it are known.
const NEW_REF_NEEDED = { newRefNeeded: true };

function refFor(el, state) {
  let ref = refs.byElement.get(el);
  if (!ref) {
    if (state.refuseNewRefs) throw NEW_REF_NEEDED;
    // Never below a number this world already handed out, whatever the caller says.
    state.nextRef = Math.max(state.nextRef, refs.issued + 1);
    refs.issued = state.nextRef;
    ref = 'e' + state.nextRef++;
    refs.byElement.set(el, ref);
    refs.byRef.set(ref, new WeakRef(el));
  }
  return ref;
}

function deref(ref) {
  const weak = refs.byRef.get(ref);
  return weak ? weak.deref() : undefined;
}

// Looks for live elements with a fingerprint, to suggest a fresh ref
// after a stale one. Assigns a ref only when exactly one matches.
function suggest(expected, nextRef) {
  const state = { nextRef };
  const matches = [];
  for (const el of elementsDeep(document, expected.tag || '*')) {
    const role = roleOf(el) || 'generic';
    if (role !== expected.role) continue;
    if (sameFingerprint(fingerprint(el, role, clip(nameOf(el, role), FINGERPRINT_NAME)), expected)) matches.push(el);
    if (matches.length > 1) break;
  }
  if (matches.length !== 1) return { nextRef, ref: null };
  const ref = refFor(matches[0], state);
  return { nextRef: state.nextRef, ref };
}

function element(ref) {
  const el = deref(ref);
  return el && el.isConnected ? el : null;
}
