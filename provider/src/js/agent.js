// The page-side half of snapshots and actions, installed once per document
// in the isolated world "browser-shell" (page scripts cannot see or tamper
// with it). It keeps element references for the document's life: the same
// live element always maps to the same ref, and a ref never moves to
// another element. Returns plain JSON; the provider renders and decides.
(() => {
  if (globalThis.__browserShell) return 'present';

  const MASK = '••••••';
  // Names are compared on their first characters only, so long texts stay cheap.
  const FINGERPRINT_NAME = 100;
  const SENSITIVE_AUTOCOMPLETE = /(^|\s)(current-password|new-password|one-time-code|cc-number|cc-csc|cc-exp)/;
  // Roles a person operates: every element with one gets a ref.
  const INTERACTIVE = new Set([
    'button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox', 'option',
    'slider', 'spinbutton', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'treeitem',
    'gridcell',
  ]);
  const NAME_FROM_CONTENT = new Set([
    'button', 'link', 'heading', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'treeitem',
    'cell', 'gridcell', 'columnheader', 'rowheader', 'switch', 'checkbox', 'radio', 'tooltip', 'caption',
  ]);
  // Roles whose own text is worth showing when it is not already their name.
  const TEXT_ROLES = new Set(['paragraph', 'listitem', 'blockquote', 'code', 'term', 'definition', 'status', 'alert', 'note', 'log', 'figure', 'caption', 'label', 'legend', 'generic', 'cell', 'gridcell', 'columnheader', 'rowheader', 'heading']);
  // Containers whose children are capped: the first few are walked, the rest counted.
  const COLLECTIONS = new Set(['list', 'table', 'grid', 'treegrid', 'listbox', 'menu', 'menubar', 'tree', 'tablist', 'rowgroup', 'navigation']);
  // Attributes that make an element operable (a tabindex needs a second look).
  const OPERABLE_ATTRIBUTES = '[tabindex], [onclick], [onmousedown], [onpointerdown], [draggable=true]';
  // Roles left out of the name of the element that holds them.
  const NESTED_COLLECTIONS = new Set(['group', 'tree', 'list', 'listbox', 'menu', 'grid', 'table', 'treegrid']);
  // Some editor's root class is in this string (checked exactly after).
  const EDITOR_CLASS_HINT = /monaco-editor|cm-editor|CodeMirror|ace_editor/;
  // Native options shown under a <select>; the rest are counted.
  const SELECT_OPTIONS_SHOWN = 25;
  // Characters of a code editor's visible text shown as its value.
  const EDITOR_TEXT = 400;
  // Code editors whose input is a hidden proxy (a zero-size textarea, an
  // EditContext element): the editor's root stands for the whole editor.
  // Each kind: the root, the proxy that takes keys, the lines a person sees.
  const EDITORS = [
    { kind: 'monaco', root: 'monaco-editor', input: '.native-edit-context, textarea.inputarea', lines: '.view-lines > .view-line' },
    { kind: 'codemirror6', root: 'cm-editor', input: '.cm-content', lines: '.cm-content > .cm-line' },
    { kind: 'codemirror5', root: 'CodeMirror', input: 'textarea', lines: '.CodeMirror-code pre.CodeMirror-line' },
    { kind: 'ace', root: 'ace_editor', input: 'textarea.ace_text-input, textarea', lines: '.ace_text-layer .ace_line' },
  ];
  const SKIP_TAGS = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'TITLE']);
  const INPUT_ROLES = {
    button: 'button', submit: 'button', reset: 'button', image: 'button', checkbox: 'checkbox', radio: 'radio',
    range: 'slider', number: 'spinbutton', search: 'searchbox', email: 'textbox', tel: 'textbox', text: 'textbox',
    url: 'textbox', password: 'textbox', '': 'textbox', date: 'textbox', 'datetime-local': 'textbox', month: 'textbox',
    time: 'textbox', week: 'textbox', color: 'button', file: 'button',
  };
  const LANDMARK_TAGS = { NAV: 'navigation', MAIN: 'main', ASIDE: 'complementary', DIALOG: 'dialog' };
  const TAG_ROLES = {
    P: 'paragraph', UL: 'list', OL: 'list', MENU: 'list', LI: 'listitem', TABLE: 'table', TR: 'row', TD: 'cell', CAPTION: 'caption', BLOCKQUOTE: 'blockquote', PRE: 'code', HR: 'separator',
    FIELDSET: 'group', LEGEND: 'legend', OPTION: 'option', OPTGROUP: 'group', TEXTAREA: 'textbox', PROGRESS: 'progressbar',
    METER: 'meter', DL: 'list', DT: 'term', DD: 'definition', FIGURE: 'figure', FIGCAPTION: 'caption', ARTICLE: 'article',
    SUMMARY: 'button', IFRAME: 'iframe', LABEL: 'label',
  };

  const refs = { byElement: new WeakMap(), byRef: new Map(), issued: 0 };
  // Closed shadow roots, handed to us by the provider (through CDP, which
  // can pierce them); hosts already checked; hosts waiting to be checked.
  const closedRoots = new WeakMap();
  const checkedHosts = new WeakSet();
  let pendingHosts = [];
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

  // Tag checks instead of `instanceof`: elements of same-origin frames come
  // from another realm, where our constructors do not match.
  const is = (el, tag) => el.nodeType === Node.ELEMENT_NODE && el.tagName === tag;
  const squash = (text) => text.replace(/\s+/g, ' ').trim();
  const clip = (text, max) => (text.length > max ? text.slice(0, max - 1) + '…' : text);

  const isSensitive = (el) =>
    is(el, 'INPUT') &&
    (el.type === 'password' || SENSITIVE_AUTOCOMPLETE.test(el.getAttribute('autocomplete') || ''));

  // The code editor whose root `el` is, if it is one.
  function editorOf(el) {
    // The class attribute as a string first: cheaper than a class list per element.
    const names = el.getAttribute('class');
    if (!names || !EDITOR_CLASS_HINT.test(names)) return null;
    for (const editor of EDITORS) if (el.classList.contains(editor.root)) return editor;
    return null;
  }

  // The text a person sees in an editor, line by line (bounded). Monaco
  // positions its lines absolutely, in any DOM order.
  function editorText(root, editor) {
    const lines = [...root.querySelectorAll(editor.lines)];
    if (editor.kind === 'monaco') lines.sort((a, b) => (parseFloat(a.style.top) || 0) - (parseFloat(b.style.top) || 0));
    const text = lines.map((line) => line.textContent.replace(/\u00a0/g, ' ').replace(/\u200b/g, '')).join('\n');
    return clip(text, EDITOR_TEXT);
  }

  // The element of an editor that takes keys and text (the kinds' input
  // selectors in order of preference).
  function editorInput(root, editor) {
    for (const selector of editor.input.split(',')) {
      const input = root.querySelector(selector);
      if (input) return input;
    }
    return null;
  }

  function roleOf(el) {
    if (editorOf(el)) return 'textbox';
    const explicit = (el.getAttribute('role') || '').trim().split(/\s+/)[0];
    if (explicit && explicit !== 'none' && explicit !== 'presentation' && explicit !== 'generic') return explicit;
    if (explicit) return null;
    const tag = el.tagName;
    switch (tag) {
      case 'A': case 'AREA': return el.hasAttribute('href') ? 'link' : null;
      case 'BUTTON': return 'button';
      case 'INPUT': return el.type === 'hidden' ? null : INPUT_ROLES[el.type] || 'textbox';
      case 'SELECT': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6': return 'heading';
      case 'IMG': return el.getAttribute('alt') === '' ? null : 'img';
      case 'TH': return el.scope === 'row' ? 'rowheader' : 'columnheader';
      case 'HEADER': return el.closest('article, aside, main, nav, section') ? null : 'banner';
      case 'FOOTER': return el.closest('article, aside, main, nav, section') ? null : 'contentinfo';
      case 'FORM': return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') || el.hasAttribute('name') ? 'form' : null;
      case 'SECTION': return el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby') ? 'region' : null;
      default:
        if (LANDMARK_TAGS[tag]) return LANDMARK_TAGS[tag];
        if (TAG_ROLES[tag]) return TAG_ROLES[tag];
        if (el.isContentEditable && el.getAttribute('contenteditable') !== null) return 'textbox';
        return null;
    }
  }

  function textOfIds(ids, root) {
    return ids
      .split(/\s+/)
      .map((id) => root.getElementById ? root.getElementById(id) : document.getElementById(id))
      .filter(Boolean)
      .map((el) => squash(el.textContent || ''))
      .join(' ');
  }

  function nameOf(el, role) {
    if (role === 'textbox') {
      const editor = editorOf(el);
      const input = editor && editorInput(el, editor);
      if (input) {
        const own = ownName(el);
        return own || ownName(input) || '';
      }
    }
    return ownName(el) || contentName(el, role);
  }

  // A name the element is given: aria-labelledby, then aria-label.
  function ownName(el) {
    const labelledBy = el.getAttribute('aria-labelledby');
    if (labelledBy) {
      const text = textOfIds(labelledBy, el.getRootNode());
      if (text) return text;
    }
    const label = el.getAttribute('aria-label');
    if (label && label.trim()) return squash(label);
    return '';
  }

  // The name from the element itself: its labels, alt text, caption or content.
  function contentName(el, role) {
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      if (tag === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) {
        return el.value || (el.type === 'submit' ? 'Submit' : el.type === 'reset' ? 'Reset' : '');
      }
      if (tag === 'INPUT' && el.type === 'image') return el.alt || 'Submit';
      if (el.labels && el.labels.length) {
        return squash([...el.labels].map((l) => labelText(l, el)).join(' '));
      }
      return el.getAttribute('placeholder') || el.getAttribute('title') || '';
    }
    if (tag === 'IMG' || tag === 'AREA') return el.getAttribute('alt') || el.getAttribute('title') || '';
    if (tag === 'FIELDSET') {
      const legend = el.querySelector(':scope > legend');
      if (legend) return squash(legend.textContent);
    }
    if (tag === 'TABLE' && el.caption) return squash(el.caption.textContent);
    if (tag === 'FIGURE') {
      const caption = el.querySelector(':scope > figcaption');
      if (caption) return squash(caption.textContent);
    }
    if (tag === 'IFRAME') return el.getAttribute('title') || el.getAttribute('name') || '';
    if (NAME_FROM_CONTENT.has(role)) return squash(contentText(el));
    return el.getAttribute('title') || '';
  }

  // A label's text without the value of the control it wraps.
  // (Slotted text counts: a web component's label is often a slot.)
  function labelText(label, control) {
    let text = '';
    const visit = (node) => {
      if (node === control) return;
      if (node.nodeType === Node.TEXT_NODE) text += node.textContent;
      else if (node.nodeType === Node.ELEMENT_NODE && !['INPUT', 'SELECT', 'TEXTAREA', 'SCRIPT', 'STYLE'].includes(node.tagName)) {
        text += ' ';
        for (const child of childrenOf(node)) visit(child);
      }
    };
    for (const node of label.childNodes) visit(node);
    return text;
  }

  // Text of a subtree including open shadow roots and images' alt text.
  function contentText(el) {
    let text = '';
    const visit = (node) => {
      if (node.nodeType === Node.TEXT_NODE) { text += node.textContent; return; }
      if (node.nodeType !== Node.ELEMENT_NODE) return;
      if (SKIP_TAGS.has(node.tagName) || node.getAttribute('aria-hidden') === 'true') return;
      // A nested collection (a tree item's group, a cell's list) names
      // itself, and what is not rendered names nothing.
      if (NESTED_COLLECTIONS.has(node.getAttribute('role'))) return;
      if (!node.checkVisibility() && getComputedStyle(node).display !== 'contents') return;
      if (node.tagName === 'IMG') { text += ' ' + (node.getAttribute('alt') || '') + ' '; return; }
      for (const child of childrenOf(node)) visit(child);
      // (A block's break matters only before what follows it.)
      if (node.tagName === 'BR' || (node.tagName !== 'SLOT' && node.nextSibling && getComputedStyle(node).display.startsWith('block'))) text += ' ';
    };
    const children = shadowOf(el) ? shadowOf(el).childNodes : el.childNodes;
    for (const child of children) visit(child);
    return text;
  }

  function deepActiveElement() {
    let active = document.activeElement;
    while (active && active.shadowRoot && active.shadowRoot.activeElement) active = active.shadowRoot.activeElement;
    return active;
  }

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

  function refFor(el, state) {
    let ref = refs.byElement.get(el);
    if (!ref) {
      // Never below a number this world already handed out, whatever the caller says.
      state.nextRef = Math.max(state.nextRef, refs.issued + 1);
      refs.issued = state.nextRef;
      ref = 'e' + state.nextRef++;
      refs.byElement.set(el, ref);
      refs.byRef.set(ref, new WeakRef(el));
    }
    return ref;
  }

  function valueOf(el, role) {
    if (is(el, 'INPUT')) {
      if (['checkbox', 'radio', 'button', 'submit', 'reset', 'image', 'file', 'color'].includes(el.type)) return undefined;
      if (isSensitive(el)) return el.value ? MASK : '';
      return el.value;
    }
    if (is(el, 'TEXTAREA')) return el.value;
    if (is(el, 'SELECT')) return [...el.selectedOptions].map((o) => squash(o.label || o.text)).join(', ');
    if (is(el, 'PROGRESS') || is(el, 'METER')) return String(el.value);
    if (role === 'textbox' && el.isContentEditable) return squash(el.textContent || '');
    const now = el.getAttribute('aria-valuenow');
    if (now !== null) return el.getAttribute('aria-valuetext') || now;
    return undefined;
  }

  function statesOf(el, role, focused) {
    const states = {};
    const aria = (name) => el.getAttribute('aria-' + name);
    if (role === 'heading') {
      const level = aria('level') || (/^H[1-6]$/.test(el.tagName) ? el.tagName[1] : '');
      if (level) states.level = Number(level);
    }
    if (is(el, 'INPUT') && (el.type === 'checkbox' || el.type === 'radio')) {
      states.checked = el.indeterminate ? 'mixed' : el.checked;
    } else if (aria('checked') !== null) {
      states.checked = aria('checked') === 'mixed' ? 'mixed' : aria('checked') === 'true';
    }
    if (is(el, 'OPTION') ? el.selected : aria('selected') === 'true') states.selected = true;
    if (aria('expanded') !== null) states.expanded = aria('expanded') === 'true';
    else if (el.tagName === 'SUMMARY' && el.parentElement && el.parentElement.tagName === 'DETAILS') states.expanded = el.parentElement.open;
    if (aria('pressed') !== null) states.pressed = aria('pressed') === 'true';
    if ((typeof el.matches === 'function' && el.matches(':disabled')) || aria('disabled') === 'true') states.disabled = true;
    if (el.required || aria('required') === 'true') states.required = true;
    if (el.readOnly === true || aria('readonly') === 'true') states.readonly = true;
    if (aria('invalid') === 'true') states.invalid = true;
    if (role === 'treeitem' || role === 'row') {
      const level = Number(aria('level'));
      if (level > 0) states.level = level;
    }
    const sort = aria('sort');
    if (sort && sort !== 'none') states.sort = sort;
    const current = aria('current');
    if (current && current !== 'false') states.current = current === 'true' ? true : current;
    if (aria('multiselectable') === 'true' || (is(el, 'SELECT') && el.multiple)) states.multiselectable = true;
    if (role === 'dialog' || role === 'alertdialog') {
      if (aria('modal') === 'true' || (is(el, 'DIALOG') && el.matches(':modal'))) states.modal = true;
    }
    if (role === 'slider' || role === 'spinbutton' || role === 'progressbar' || role === 'meter' || role === 'scrollbar') {
      const native = is(el, 'INPUT') || is(el, 'PROGRESS') || is(el, 'METER');
      const min = aria('valuemin') ?? (native && el.min !== '' && el.min !== undefined ? String(el.min) : null);
      const max = aria('valuemax') ?? (native && el.max !== '' && el.max !== undefined ? String(el.max) : null);
      if (min !== null) states.min = min;
      if (max !== null) states.max = max;
    }
    if (el === focused) states.focused = true;
    return states;
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

  // Which elements may show a pointer cursor of their own, without asking
  // every element for its computed style (that doubled the walk on large
  // pages): those a style rule that sets `cursor: pointer` selects (its
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
          if (rule.style && rule.style.cursor === 'pointer' && rule.selectorText) {
            for (const part of rule.selectorText.split(',')) {
              const selector = part.replace(/:(hover|active|focus-visible|focus-within|focus)\b/g, '').trim();
              // A rule for the pointer over it: the element shows the
              // cursor to a person's mouse, if not now.
              if (selector) selectors.push({ selector, hover: selector !== part.trim() });
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
    // Hover rules last: what they select shows a pointer whatever its style says now.
    for (const hover of [false, true]) {
      const group = selectors.filter((s) => s.hover === hover).map((s) => s.selector);
      if (!group.length) continue;
      const add = (selector) => { for (const el of root.querySelectorAll(selector)) state.pointers.set(el, hover); };
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
      const cursor = !askCursor ? ctx.cursor : state.pointers.get(el) === true ? 'pointer' : getComputedStyle(el).cursor;
      const operable = shown && !INTERACTIVE.has(role) && role !== 'label' && (
        ((role === 'columnheader' || role === 'rowheader') && (ctx.grid || el.hasAttribute('aria-sort'))) ||
        (cursor === 'pointer' && ctx.cursor !== 'pointer' && !ctx.inRef) ||
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
      // A cell holding controls is named by them; repeating it is noise.
      if ((role === 'cell' || role === 'gridcell' || role === 'columnheader' || role === 'rowheader') && children.some((c) => c.role !== 'text')) {
        delete item.name;
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
    for (const root of roots) build(root, 0, tree, null, { cursor: 'auto', inRef: false, grid: false });
    probeFrameRequests();
    return {
      pendingHosts: pendingHosts.length,
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

  function deref(ref) {
    const weak = refs.byRef.get(ref);
    return weak ? weak.deref() : undefined;
  }

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

  // Whether the page asks for animation frames. Frame callback ids come from
  // one counter per document that the page's scripts and ours share, so ids
  // taken between two probes beyond our own requests are the page's. The
  // count of probes in a row that saw none tells settle() whether the page
  // renders in requestAnimationFrame lately.
  let lastProbeId = 0;
  let ownFrameRequests = 0;
  let quietProbes = 0;
  function probeFrameRequests() {
    const id = requestAnimationFrame(() => {});
    cancelAnimationFrame(id);
    const pageAsked = lastProbeId === 0 || id - lastProbeId - 1 > ownFrameRequests;
    quietProbes = pageAsked ? 0 : quietProbes + 1;
    lastProbeId = id;
    ownFrameRequests = 0;
  }
  probeFrameRequests();

  const frame = () => new Promise((resolve) => {
    ownFrameRequests++;
    requestAnimationFrame(() => resolve());
  });
  const task = () => new Promise((resolve) => setTimeout(resolve, 0));

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
    const before = box.getBoundingClientRect();
    const inView = before.top >= 0 && before.left >= 0 && before.bottom <= innerHeight && before.right <= innerWidth;
    if (!inView) box.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    let rect = box.getBoundingClientRect();
    // Nothing animates and nothing scrolled: the box is as stable as it gets.
    const animating = typeof document.getAnimations === 'function' && document.getAnimations().length > 0;
    for (let i = 0; (animating || !inView) && i < 10; i++) {
      await frame();
      const next = box.getBoundingClientRect();
      const still = next.x === rect.x && next.y === rect.y && next.width === rect.width && next.height === rect.height;
      rect = next;
      if (still) break;
      if (i === 9) return { status: 'not-actionable', reason: 'still moving' };
    }
    if (!typing && (rect.width < 1 || rect.height < 1)) return { status: 'not-actionable', reason: 'zero-size' };
    const x = rect.left + rect.width / 2;
    const y = rect.top + rect.height / 2;
    if (action !== 'focus' && action !== 'scroll' && !typing) {
      // What covers it may be on its way out (a popup closing with an
      // animation, often inside a shadow root): look again for a few
      // frames (about a third of a second) before calling it covered.
      let hit = hitAt(box, x, y);
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

  // Whether a click at (x, y) reaches `el` (or its label, or text slotted
  // into it); if not, what it reaches.
  function hitAt(el, x, y) {
    const hit = deepElementFromPoint(el.ownerDocument, x, y);
    const ok = !!hit && (hit === el || composedContains(el, hit) || (hit.control && hit.control === el) || (el.labels && [...el.labels].some((l) => composedContains(l, hit))) || slottedInto(el, hit));
    return { ok, by: hit };
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

  function focus(ref) {
    const el = element(ref);
    if (!el) return false;
    el.focus();
    return true;
  }

  function element(ref) {
    const el = deref(ref);
    return el && el.isConnected ? el : null;
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
  function adoptClosedRoot(root) {
    if (root && root.host) closedRoots.set(root.host, root);
    return !!(root && root.host);
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

  // Elements with exactly this role and accessible name.
  function byRole(role, name) {
    const found = [];
    for (const el of document.querySelectorAll('*')) {
      if ((roleOf(el) || 'generic') === role && squash(nameOf(el, role)) === name) found.push(el);
    }
    return found;
  }

  // Waits until `spec` holds: checked now, then after DOM changes (batched
  // by a short timer, never on a fixed poll), until `maxMs`. Returns
  // { ok, seen }: `seen` says what was last observed, for a timeout.
  async function waitFor(spec, maxMs) {
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
      const done = () => { observer.disconnect(); clearTimeout(timer); clearTimeout(deadline); resolve(last); };
      const observer = new MutationObserver(() => {
        if (timer) return;
        timer = setTimeout(() => { timer = null; last = check(); if (last.ok) done(); }, 10);
      });
      observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
      const deadline = setTimeout(done, maxMs);
    });
  }

  // Resolves once the DOM has not changed for `quietMs` (true), or at
  // `maxMs` while it still changes (false).
  function waitStable(quietMs, maxMs) {
    return new Promise((resolve) => {
      let quiet = null;
      const finish = (stable) => { observer.disconnect(); clearTimeout(quiet); clearTimeout(deadline); resolve(stable); };
      const observer = new MutationObserver(() => { clearTimeout(quiet); quiet = setTimeout(() => finish(true), quietMs); });
      observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
      quiet = setTimeout(() => finish(true), quietMs);
      const deadline = setTimeout(() => finish(false), maxMs);
    });
  }

  globalThis.__browserShell = { doc, roleOf, nameOf, describe, deepElementFromPoint, composedContains, waitFor, waitStable, slotOf, pendingHost, adoptClosedRoot, armInput, inputArrived, frames, animationsEnded, walk, prepare, suggest, element, rootBySelector, settle, selectOptions, checkedState, focus, pasteText,
    // For find.js: the helpers it builds on.
    internals: { refFor, fingerprint, clip, squash, shadowOf, elementsDeep, windowOf, deref, byIds, frame, task, FINGERPRINT_NAME },
  };
  return 'installed';
})()
