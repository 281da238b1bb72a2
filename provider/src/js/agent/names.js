// Roles, names, values and states as ARIA computes them (close to
// Chrome's accessibility tree), and the code editors whose hidden input a
// person never sees.

const MASK = '••••••';

const SENSITIVE_AUTOCOMPLETE = /(^|\s)(current-password|new-password|one-time-code|cc-number|cc-csc|cc-exp)/;

// Roles a person operates: every element with one gets a ref.
const INTERACTIVE = new Set([
  'button', 'link', 'textbox', 'searchbox', 'checkbox', 'radio', 'combobox', 'listbox', 'option',
  'slider', 'spinbutton', 'switch', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'treeitem',
  'gridcell',
]);

// Cells and headers are named by their own words: the controls they hold
// (a sort button, a row's menu) are shown beside that name, not in it.
const CELL_ROLES = new Set(['cell', 'gridcell', 'columnheader', 'rowheader']);
const NAME_FROM_CONTENT = new Set([
  'button', 'link', 'heading', 'tab', 'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'treeitem',
  'cell', 'gridcell', 'columnheader', 'rowheader', 'switch', 'checkbox', 'radio', 'tooltip', 'caption',
]);

// Roles left out of the name of the element that holds them.
const NESTED_COLLECTIONS = new Set(['group', 'tree', 'list', 'listbox', 'menu', 'grid', 'table', 'treegrid']);

// Some editor's root class is in this string (checked exactly after).
const EDITOR_CLASS_HINT = /monaco-editor|cm-editor|CodeMirror|ace_editor/;

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
  if (NAME_FROM_CONTENT.has(role)) return squash(contentText(el, CELL_ROLES.has(role)));
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

// Text of a subtree including open shadow roots and images' alt text;
// with `ownWordsOnly`, without the controls in it (a header's sort button,
// a row's menu), which have names of their own.
function contentText(el, ownWordsOnly = false) {
  let text = '';
  const visit = (node) => {
    if (node.nodeType === Node.TEXT_NODE) { text += node.textContent; return; }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    if (SKIP_TAGS.has(node.tagName) || node.getAttribute('aria-hidden') === 'true') return;
    // A nested collection (a tree item's group, a cell's list) names
    // itself, and what is not rendered names nothing.
    if (NESTED_COLLECTIONS.has(node.getAttribute('role'))) return;
    if (ownWordsOnly && INTERACTIVE.has(roleOf(node))) return;
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

// Whether the snapshot shows an element as `name`: its name, or for an
// unnamed one its own words (without the controls in it, which are lines
// of their own), as in `listitem: Renew charts`.
function shownAs(el, role, name) {
  const own = squash(nameOf(el, role));
  if (own) return own === name;
  // (The raw text first: most elements are turned away without a walk.)
  if (!squash(el.textContent || '').includes(name)) return false;
  return squash(contentText(el, true)) === name;
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
