// The walk: the visible page as a tree of roles, names and refs, with
// owned popups placed under their owners, windows of virtualized
// collections and elements a person can operate though no role says so.

// Roles whose own text is worth showing when it is not already their name.
const TEXT_ROLES = new Set(['paragraph', 'listitem', 'blockquote', 'code', 'term', 'definition', 'status', 'alert', 'note', 'log', 'figure', 'caption', 'label', 'legend', 'generic', 'cell', 'gridcell', 'columnheader', 'rowheader', 'heading']);

// Containers whose children are capped: the first few are walked, the rest counted.
const COLLECTIONS = new Set(['list', 'table', 'grid', 'treegrid', 'listbox', 'menu', 'menubar', 'tree', 'tablist', 'rowgroup', 'navigation']);

// Attributes that make an element operable (a tabindex needs a second look).
const OPERABLE_ATTRIBUTES = '[tabindex], [onclick], [onmousedown], [onpointerdown], [draggable=true]';
// Cursors that say "press here" or "pick this up": an element that shows
// one of its own is something a person clicks or drags.
const OPERABLE_CURSORS = new Set(['pointer', 'grab', 'grabbing', 'move']);

// Native options shown under a <select>; the rest are counted.
const SELECT_OPTIONS_SHOWN = 25;

// Custom elements already checked for a closed shadow root, and those the
// provider is to check (through CDP, which can pierce them) after a walk.
const checkedHosts = new WeakSet();
let pendingHosts = [];

// Lists of plain items (cards, rows of text) already checked for listeners,
// and those the provider is to check: a page that listens for pointer,
// mouse, touch or drag events on a list (or its items) lets a person press
// and drag those items, which then get refs. Scripts cannot see listeners;
// CDP can (`DOMDebugger.getEventListeners`).
const checkedLists = new WeakSet();
let pendingLists = [];
const listening = new WeakSet();

// Who owns whom (aria-owns; the popup of an expanded combobox or menu
// button that lives elsewhere in the DOM), and which elements are some
// widget's active descendant. One query a walk.
function relationsOf(scope) {
  const ownedBy = new Map();
  const owns = new Map();
  const active = new Set();
  const root = scope.querySelectorAll ? scope : document;
  for (const el of root.querySelectorAll('[aria-owns], [aria-controls][aria-expanded=true], [aria-activedescendant]')) {
    const descendant = el.getAttribute('aria-activedescendant');
    if (descendant) for (const target of byIds(el, descendant)) active.add(target);
    let targets = byIds(el, el.getAttribute('aria-owns'));
    if (!targets.length && el.getAttribute('aria-expanded') === 'true' &&
        (el.getAttribute('role') === 'combobox' || (el.getAttribute('aria-haspopup') || 'false') !== 'false')) {
      targets = byIds(el, el.getAttribute('aria-controls'));
    }
    for (const target of targets) {
      // Never an ancestor, a descendant, something owned twice, or an
      // owner of its owner (a cycle would hide both).
      if (target === el || ownedBy.has(target) || composedContains(target, el) || composedContains(el, target)) continue;
      let cycle = false;
      for (let owner = ownedBy.get(el), hops = 0; owner && hops < 100; owner = ownedBy.get(owner), hops++) {
        if (owner === target) { cycle = true; break; }
      }
      if (cycle) continue;
      ownedBy.set(target, el);
      if (!owns.has(el)) owns.set(el, []);
      owns.get(el).push(target);
    }
  }
  return { ownedBy, owns, active };
}

// Where the DOM holds only a window of a larger collection: which items
// are here out of how many (`aria-rowcount`/`aria-rowindex`,
// `aria-setsize`/`aria-posinset`).
function windowOf(el, role) {
  if (role === 'grid' || role === 'treegrid' || role === 'table') {
    const total = Number(el.getAttribute('aria-rowcount'));
    if (!(total > 0 || total === -1)) return null;
    let from = Infinity;
    let to = 0;
    const indexes = new Set();
    for (const row of el.querySelectorAll('[aria-rowindex]')) {
      const index = Number(row.getAttribute('aria-rowindex'));
      // Header rows are always there; the window is about the data.
      if (index > 0 && row.checkVisibility() && !row.querySelector('[role=columnheader]')) {
        from = Math.min(from, index);
        to = Math.max(to, index);
        indexes.add(index);
      }
    }
    if (!to) return null;
    return { unit: 'rows', from, to, count: indexes.size, of: total > 0 ? total : null };
  }
  if (role === 'listbox' || role === 'list' || role === 'tree' || role === 'menu' || role === 'feed') {
    // Items carry the size (looked for on the first item, or inside the
    // first child a virtualizer wraps them in: no subtree query per list).
    const child = el.firstElementChild;
    const grandchild = child && child.firstElementChild;
    const first = child && child.hasAttribute('aria-setsize') ? child
      : grandchild && grandchild.hasAttribute('aria-setsize') ? grandchild : null;
    if (!first) return null;
    const total = Number(first.getAttribute('aria-setsize'));
    let from = Infinity;
    let to = 0;
    const indexes = new Set();
    for (const item of el.querySelectorAll('[aria-posinset]')) {
      const index = Number(item.getAttribute('aria-posinset'));
      if (index > 0) { from = Math.min(from, index); to = Math.max(to, index); indexes.add(index); }
    }
    if (!to || !(total > indexes.size || total === -1)) return null;
    return { unit: 'items', from, to, count: indexes.size, of: total > 0 ? total : null };
  }
  return null;
}

// A native select's options (within optgroups), the first few shown.
function nativeOptions(select, maxText) {
  const children = [];
  let shown = 0;
  let more = 0;
  const option = (o, groupDisabled) => {
    if (o.hidden) return null;
    if (shown >= SELECT_OPTIONS_SHOWN) { more++; return null; }
    shown++;
    const item = { role: 'option', name: clip(squash(o.label || o.text), maxText) };
    if (o.selected) item.selected = true;
    if (o.disabled || groupDisabled) item.disabled = true;
    return item;
  };
  for (const child of select.children) {
    if (child.tagName === 'OPTION') {
      const item = option(child, false);
      if (item) children.push(item);
    } else if (child.tagName === 'OPTGROUP') {
      const group = { role: 'group', name: clip(squash(child.label || ''), maxText), children: [] };
      if (child.disabled) group.disabled = true;
      for (const o of child.children) {
        if (o.tagName !== 'OPTION') continue;
        const item = option(o, child.disabled);
        if (item) group.children.push(item);
      }
      if (group.children.length) children.push(group);
    }
  }
  return { children, more };
}

// What whole-page walks find by querying the document (relations,
// pointer candidates), kept until the DOM changes. The watcher stops at
// its first record, so a page that keeps changing pays for one record
// between walks, not for every change.
const queried = { fresh: false, relations: null, pointers: null, scannedRoots: null, cursorEverywhere: null };

const watcher = new MutationObserver(() => {
  queried.fresh = false;
  watcher.disconnect();
});

const WATCHED = {
  subtree: true, childList: true, attributes: true,
  attributeFilter: ['class', 'style', 'id', 'aria-owns', 'aria-controls', 'aria-expanded', 'aria-activedescendant'],
};

function watchForChanges(root) {
  if (queried.fresh) watcher.observe(root, WATCHED);
}

// Which elements may show a pointer (or grab, or move) cursor of their own, without asking
// every element for its computed style (that doubled the walk on large
// pages): those a style rule that sets such a cursor selects (its
// `:hover`/`:focus`/`:active` part left out) or an inline style names.
// Rules are read once per style sheet and kept while the sheet keeps its
// length. A sheet that cannot be read (cross-origin, no CORS) makes the
// walk also ask every other element of that document or shadow root.
const pointerRules = new WeakMap();

function pointerSelectors(sheets, out) {
  for (const sheet of sheets) {
    let rules;
    try {
      rules = sheet.cssRules;
    } catch (_) {
      out.unreadable = true;
      continue;
    }
    const cached = pointerRules.get(sheet);
    if (cached && cached.length === rules.length) {
      out.push(...cached.selectors);
      continue;
    }
    const selectors = [];
    const visit = (list) => {
      for (const rule of list) {
        if (rule.style && OPERABLE_CURSORS.has(rule.style.cursor) && rule.selectorText) {
          for (const part of rule.selectorText.split(',')) {
            const selector = part.replace(/:(hover|active|focus-visible|focus-within|focus)\b/g, '').trim();
            // A rule for the pointer over it: the element shows the
            // cursor to a person's mouse, if not now.
            if (selector) selectors.push({ selector, hover: selector !== part.trim(), cursor: rule.style.cursor });
          }
        }
        if (rule.cssRules) visit(rule.cssRules);
      }
    };
    visit(rules);
    pointerRules.set(sheet, { length: rules.length, selectors });
    out.push(...selectors);
  }
}

// Adds the pointer candidates of a document or shadow root to `state`.
function scanPointers(root, state) {
  if (state.scannedRoots.has(root)) return;
  state.scannedRoots.add(root);
  watchForChanges(root);
  const selectors = [];
  pointerSelectors(root.styleSheets || [], selectors);
  pointerSelectors(root.adoptedStyleSheets || [], selectors);
  if (selectors.unreadable) state.cursorEverywhere.add(root);
  selectors.push({ selector: '[style*="cursor"]', hover: false });
  // Hover rules last: what they select shows their cursor whatever its
  // style says now (kept as the cursor; `false`: ask the computed style).
  const hoverCursors = [...new Set(selectors.filter((s) => s.hover).map((s) => s.cursor))];
  for (const shown of [false, ...hoverCursors]) {
    const group = selectors.filter((s) => (shown ? s.hover && s.cursor === shown : !s.hover)).map((s) => s.selector);
    if (!group.length) continue;
    const add = (selector) => { for (const el of root.querySelectorAll(selector)) state.pointers.set(el, shown); };
    try {
      add(group.join(','));
    } catch (_) {
      // One selector the query does not take (a pseudo-element, nesting):
      // the others one by one.
      for (const selector of group) {
        try { add(selector); } catch (_) { /* not a selector a query takes */ }
      }
    }
  }
}

function walk(options) {
  const started = performance.now();
  const state = {
    nextRef: options.nextRef,
    visited: 0,
    omitted: 0,
    focused: deepActiveElement(),
    maxNodes: options.maxNodes,
    maxText: options.maxText,
    maxDepth: options.maxDepth,
    maxChildren: options.maxChildren || 50,
    fingerprints: {},
    refuseNewRefs: options.newRefs === false,
  };

  const pushText = (list, text) => {
    const last = list[list.length - 1];
    if (last && last.role === 'text') last.text = clip(last.text + ' ' + text, state.maxText);
    else list.push({ role: 'text', text: clip(text, state.maxText) });
  };

  // Relations that move nodes in the tree: `aria-owns` (and the popup of
  // an expanded combobox or menu button rendered elsewhere, in a portal)
  // re-parents elements under their owner; `aria-activedescendant` marks
  // the active option.
  // Whole-page walks reuse what the last one queried while the DOM stays
  // as it was (a warm snapshot of a still page queries nothing).
  const whole = !options.root;
  if (!whole || !queried.fresh) {
    queried.relations = relationsOf(options.root || document);
    queried.pointers = new Map();
    queried.scannedRoots = new Set();
    queried.cursorEverywhere = new Set();
    queried.fresh = whole;
    if (!whole) watcher.disconnect();
  }
  state.ownedBy = queried.relations.ownedBy;
  // (Placing owned elements consumes this map: each walk gets a copy.)
  state.owns = new Map(queried.relations.owns);
  state.active = queried.relations.active;
  state.placing = options.root || null;
  state.pointers = queried.pointers;
  state.scannedRoots = queried.scannedRoots;
  state.cursorEverywhere = queried.cursorEverywhere;
  scanPointers((options.root || document).getRootNode(), state);

  // `limit`, inside a capped collection: how many children it may keep
  // and a tally of what it skipped. `ctx` is what the parent passes down:
  // its cursor, whether an ancestor holds a ref, whether it is in a grid.
  const build = (node, depth, out, limit, ctx) => {
    if (node.nodeType === Node.TEXT_NODE) {
      const text = squash(node.textContent);
      if (text && !(limit && out.length >= limit.cap)) pushText(out, text);
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    if (SKIP_TAGS.has(el.tagName)) return;
    // An owned element is shown under its owner, not where the DOM has it.
    if (state.ownedBy.has(el) && state.placing !== el) return;
    if (limit && out.length >= limit.cap) {
      // Counted without walking: this is what keeps huge tables cheap.
      if (!el.hidden && el.getAttribute('aria-hidden') !== 'true') {
        limit.items++;
        limit.nodes += 1 + el.getElementsByTagName('*').length;
      }
      return;
    }
    // A table's caption and a fieldset's legend are their names already.
    if (el.tagName === 'CAPTION' || (el.tagName === 'LEGEND' && el.parentElement && el.parentElement.tagName === 'FIELDSET')) return;
    // A custom element without an open shadow root may hide a closed one.
    // (At most 20 a walk; only hosts that are rendered.)
    if (el.localName.includes('-') && !shadowOf(el) && !checkedHosts.has(el) && pendingHosts.length < 20) {
      checkedHosts.add(el);
      if (el.getClientRects().length > 0) pendingHosts.push(el);
    }
    if (state.visited >= state.maxNodes) {
      state.omitted += 1 + el.getElementsByTagName('*').length;
      return;
    }
    state.visited++;
    if (el.hidden || el.getAttribute('aria-hidden') === 'true' || el.inert) return;
    // One check for the common case (visible); a second only to tell
    // `display: none` (skip the subtree) from `visibility: hidden` (children may show).
    const shown = el.checkVisibility({ visibilityProperty: true });
    if (!shown && !el.checkVisibility()) {
      // `display: contents` (slots, framework wrappers) has no box of its
      // own, but its children do.
      if (getComputedStyle(el).display !== 'contents') return;
      for (const child of childrenOf(el)) build(child, depth, out, limit, ctx);
      placeOwned(el, depth, out, ctx);
      return;
    }
    if (depth >= state.maxDepth) {
      state.omitted += 1 + el.getElementsByTagName('*').length;
      return;
    }
    let role = shown ? roleOf(el) : null;
    // Something a person can operate though its role does not say so.
    const shadow = shadowOf(el);
    if (shadow) scanPointers(shadow, state);
    const askCursor = shown && (state.pointers.has(el) || (state.cursorEverywhere.size > 0 && state.cursorEverywhere.has(el.getRootNode())));
    const cursor = !askCursor ? ctx.cursor : state.pointers.get(el) || getComputedStyle(el).cursor;
    const operable = shown && !INTERACTIVE.has(role) && role !== 'label' && (
      ((role === 'columnheader' || role === 'rowheader') && (ctx.grid || el.hasAttribute('aria-sort'))) ||
      (OPERABLE_CURSORS.has(cursor) && cursor !== ctx.cursor && !ctx.inRef) ||
    (role === 'listitem' && !ctx.inRef && listening.has(composedParent(el))) ||
      // (One selector match: most elements have none of these attributes.)
      (el.hasAttributes() && el.matches(OPERABLE_ATTRIBUTES) &&
        (!el.hasAttribute('tabindex') || el.tabIndex >= 0 || el.hasAttribute('aria-label') ||
          el.hasAttribute('onclick') || el.hasAttribute('onmousedown') || el.hasAttribute('onpointerdown') ||
          el.getAttribute('draggable') === 'true')));
    if (!role && operable) role = 'generic';
    if (!role) {
      const inner = cursor === ctx.cursor ? ctx : { ...ctx, cursor };
      for (const child of childrenOf(el)) build(child, depth, out, limit, inner);
      placeOwned(el, depth, out, inner);
      return;
    }
    // A label's text is its control's name already: keep only its elements.
    // (What it wraps inherits its cursor without being a control of its own.)
    if (role === 'label' && el.control) {
      const inner = { ...ctx, cursor, inRef: true };
      const kept = [];
      for (const child of childrenOf(el)) if (child.nodeType === Node.ELEMENT_NODE) build(child, depth, kept, limit, inner);
      for (const item of kept) if (item.role !== 'text') out.push(item);
      return;
    }
    // A native control a widget library replaced: visually hidden (a
    // pixel or less) and taken out of the tab order; the library's own
    // control stands for it.
    if (el.tabIndex < 0 && el.hasAttribute('tabindex') && (el.tagName === 'SELECT' || el.tagName === 'INPUT')) {
      const box = el.getBoundingClientRect();
      if (box.width <= 1 || box.height <= 1) return;
    }
    const item = { role };
    const fullName = nameOf(el, role);
    const name = clip(fullName, state.maxText);
    if (name) item.name = name;
    Object.assign(item, statesOf(el, role, state.focused));
    if (state.active.has(el)) item.active = true;
    const editor = role === 'textbox' ? editorOf(el) : null;
    const value = editor ? editorText(el, editor) : valueOf(el, role);
    if (value !== undefined && value !== '') item.value = editor ? value : clip(value, state.maxText);
    if (role === 'link' && el.href) item.url = el.href;
    if ((INTERACTIVE.has(role) || operable) && el.tagName !== 'IFRAME') {
      item.ref = refFor(el, state);
      state.fingerprints[item.ref] = fingerprint(el, role, clip(fullName, FINGERPRINT_NAME));
    }
    const span = windowOf(el, role);
    if (span) item.window = span;
    const inner = {
      cursor,
      inRef: ctx.inRef || !!item.ref,
      grid: ctx.grid || role === 'grid' || role === 'treegrid',
    };
    // Controls whose content is their value: a native select shows its
    // options, an editor its text; only owned popups go below them.
    if (editor || el.tagName === 'SELECT' || el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') {
      const children = [];
      if (el.tagName === 'SELECT') {
        const options = nativeOptions(el, state.maxText);
        children.push(...options.children);
        if (options.more) item.more = options.more;
      }
      placeOwned(el, depth + 1, children, inner);
      if (children.length) item.children = children;
      out.push(item);
      return;
    }
    if (el.tagName === 'IFRAME' || el.tagName === 'FRAME') {
      let readable = false;
      try {
        readable = !!el.contentDocument;
      } catch (_) {
        readable = false;
      }
      if (!readable) item.frame = slotOf(el);
      else scanPointers(el.contentDocument, state);
    }
    const children = [];
    const childLimit = COLLECTIONS.has(role) ? { cap: state.maxChildren, items: 0, nodes: 0 } : null;
    for (const child of childrenOf(el)) build(child, depth + 1, children, childLimit, inner);
    placeOwned(el, depth + 1, children, inner);
    if (childLimit && childLimit.items) {
      item.more = childLimit.items;
      state.omitted += childLimit.nodes;
    }
    // A list of plain items (no control in any): the provider asks
    // whether the page listens for presses on it (once per list; at most
    // ten a walk).
    if (role === 'list' && !ctx.inRef && !checkedLists.has(el) && pendingLists.length < 10 &&
        children.some((c) => c.role === 'listitem') && children.every((c) => c.role !== 'listitem' || !hasRef(c))) {
      checkedLists.add(el);
      pendingLists.push(el);
    }
    // Text the name or the value already says is noise.
    const kept = children.filter((c) => !(c.role === 'text' && (NAME_FROM_CONTENT.has(role) || (item.value && item.value.includes(c.text)))));
    if (TEXT_ROLES.has(role) && kept.length && kept.every((c) => c.role === 'text') && (!item.name || role === 'generic')) {
      item.text = clip(kept.map((c) => c.text).join(' '), state.maxText);
      kept.length = 0;
    }
    if (kept.length) item.children = kept;
    // A focusable wrapper with nothing in it (a focus trap's guard) is
    // nothing a person can see or use; one around a single control is
    // that control.
    if (role === 'generic' && !item.name && !item.text) {
      if (!item.children) return;
      if (item.children.length === 1 && item.children[0].ref) {
        out.push(item.children[0]);
        return;
      }
    }
    // So is an empty live region (a polite announcer waiting for news).
    if ((role === 'alert' || role === 'status' || role === 'log') && !item.name && !item.text && !item.children) return;
    out.push(item);
  };

  // The elements `owner` owns, walked as its last children.
  const placeOwned = (owner, depth, out, ctx) => {
    const owned = state.owns.get(owner);
    if (!owned) return;
    state.owns.delete(owner);
    for (const child of owned) {
      state.placing = child;
      build(child, depth, out, null, ctx);
    }
    state.placing = null;
  };

  const roots = [];
  if (options.root) roots.push(options.root);
  else roots.push(document.body || document.documentElement);
  const tree = [];
  pendingHosts = [];
  pendingLists = [];
  try {
    for (const root of roots) build(root, 0, tree, null, { cursor: 'auto', inRef: false, grid: false });
  } catch (error) {
    if (error === NEW_REF_NEEDED) return { newRefNeeded: true };
    throw error;
  }
  probeFrameRequests();
  return {
    pendingHosts: pendingHosts.length,
    pendingLists: pendingLists.length,
    doc,
    url: location.href,
    title: document.title,
    nextRef: state.nextRef,
    tree,
    visited: state.visited,
    omitted: state.omitted,
    fingerprints: state.fingerprints,
    tookMs: performance.now() - started,
  };
}

// Whether a walked item or anything in it has a ref.
function hasRef(item) {
  return !!item.ref || (!!item.children && item.children.some(hasRef));
}

function rootBySelector(selector) {
  try {
    return { element: document.querySelector(selector) };
  } catch (error) {
    return { error: error.message };
  }
}

// For the provider: a host to check for a closed shadow root, and the
// root it found (`this` is the ShadowRoot, resolved in this world).
function pendingHost(index) {
  return pendingHosts[index] || null;
}

// For the provider: a list to check for listeners, and one it found
// listened to (`this`, resolved in this world).
function pendingList(index) {
  return pendingLists[index] || null;
}

function adoptListening(list) {
  if (!list || list.nodeType !== Node.ELEMENT_NODE) return false;
  listening.add(list);
  return true;
}

function adoptClosedRoot(root) {
  if (root && root.host) closedRoots.set(root.host, root);
  return !!(root && root.host);
}
