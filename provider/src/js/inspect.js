// browser_inspect, page side: everything an agent needs to verify one
// element — what it is, how it is styled, where it is, whether a person
// can see it, its form state — and a CSS selector checked to match it
// alone, so the agent can write a test for what it just saw. Installed in
// our isolated world after agent/*.js, whose helpers it uses.
(() => {
  const lib = globalThis.__browserShell;
  const MASK = '••••••';
  // Computed style properties shown when the caller names none.
  const DEFAULT_STYLES = [
    'display', 'visibility', 'opacity', 'position', 'z-index', 'color', 'background-color',
    'font-family', 'font-size', 'font-weight', 'line-height', 'text-align', 'margin', 'padding',
    'border', 'border-radius', 'width', 'height', 'box-sizing', 'overflow', 'cursor',
    'pointer-events', 'transform',
  ];
  const MAX_ATTRIBUTES = 40;
  const MAX_ATTRIBUTE_CHARS = 300;
  const MAX_TEXT_CHARS = 500;

  const clip = (text, max) => (text.length > max ? text.slice(0, max) + '…' : text);
  const squash = (text) => text.replace(/\s+/g, ' ').trim();

  // Form values that must never leave the page.
  function isSensitive(el) {
    if (el.tagName !== 'INPUT') return false;
    if (el.type === 'password') return true;
    return /cc-|one-time-code|password|current-password|new-password/.test(el.getAttribute('autocomplete') || '');
  }

  // The element a target names, or why there is none.
  function resolve(target) {
    if (target.ref) {
      const el = lib.element(target.ref);
      return el ? { el } : { error: 'gone', detail: target.ref + ' is no longer in the page' };
    }
    let found;
    try {
      found = document.querySelectorAll(target.selector);
    } catch (e) {
      return { error: 'invalid', detail: String(e.message || e) };
    }
    if (found.length === 1) return { el: found[0] };
    if (found.length === 0) return { error: 'none', detail: 'no element matches' };
    return { error: 'many', detail: found.length + ' elements match' };
  }

  // A short selector that matches `el` and nothing else in its root,
  // checked by querying; null when none was found.
  function selectorFor(el) {
    const root = el.getRootNode();
    const only = (selector) => {
      try {
        const all = root.querySelectorAll(selector);
        return all.length === 1 && all[0] === el;
      } catch (e) {
        return false;
      }
    };
    const quote = (value) => '"' + value.replace(/["\\]/g, '\\$&') + '"';
    if (el.id && only('#' + CSS.escape(el.id))) return '#' + CSS.escape(el.id);
    for (const attribute of ['data-testid', 'data-test', 'data-qa', 'name', 'aria-label', 'placeholder']) {
      const value = el.getAttribute(attribute);
      if (!value) continue;
      const selector = el.localName + '[' + attribute + '=' + quote(value) + ']';
      if (only(selector)) return selector;
    }
    const steps = [];
    for (let node = el; node && node.nodeType === Node.ELEMENT_NODE; node = node.parentElement) {
      if (node !== el && node.id && only('#' + CSS.escape(node.id) + ' > ' + steps.join(' > '))) {
        return '#' + CSS.escape(node.id) + ' > ' + steps.join(' > ');
      }
      let step = node.localName;
      const parent = node.parentElement;
      if (parent) {
        const same = [...parent.children].filter((c) => c.localName === node.localName);
        if (same.length > 1) step += ':nth-of-type(' + (same.indexOf(node) + 1) + ')';
      }
      steps.unshift(step);
      if (only(steps.join(' > '))) return steps.join(' > ');
    }
    return null;
  }

  function styles(el, wanted) {
    const computed = getComputedStyle(el);
    const names = wanted === null ? DEFAULT_STYLES : wanted.includes('all') ? [...computed] : wanted;
    const out = {};
    for (const name of names) out[name] = computed.getPropertyValue(name);
    return out;
  }

  function attributes(el) {
    const out = {};
    for (const attribute of [...el.attributes].slice(0, MAX_ATTRIBUTES)) {
      const secret = attribute.name === 'value' && isSensitive(el);
      out[attribute.name] = secret ? MASK : clip(attribute.value, MAX_ATTRIBUTE_CHARS);
    }
    return out;
  }

  function visibility(el, rect) {
    const computed = getComputedStyle(el);
    const inViewport = rect.width > 0 && rect.height > 0 && rect.right > 0 && rect.bottom > 0 &&
      rect.left < innerWidth && rect.top < innerHeight;
    let coveredBy = null;
    if (inViewport) {
      const x = Math.min(Math.max(rect.left + rect.width / 2, 0), innerWidth - 1);
      const y = Math.min(Math.max(rect.top + rect.height / 2, 0), innerHeight - 1);
      const hit = lib.deepElementFromPoint(document, x, y);
      if (hit && hit !== el && !lib.composedContains(el, hit) && !lib.composedContains(hit, el)) {
        const what = lib.describe(hit);
        coveredBy = what.name ? what.role + ' "' + what.name + '"' : what.role;
      }
    }
    const opacity = Number(computed.opacity);
    const shown = computed.display !== 'none' && computed.visibility !== 'hidden' &&
      computed.visibility !== 'collapse' && opacity > 0 && rect.width > 0 && rect.height > 0;
    return {
      visible: shown,
      display: computed.display,
      visibility: computed.visibility,
      opacity,
      inViewport,
      coveredBy,
    };
  }

  function form(el) {
    const tag = el.tagName;
    if (!['INPUT', 'TEXTAREA', 'SELECT', 'BUTTON', 'OPTION', 'FIELDSET', 'OUTPUT'].includes(tag)) return null;
    const state = { disabled: el.matches(':disabled') };
    if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) state.checked = el.checked;
    else if ('value' in el) state.value = isSensitive(el) ? (el.value ? MASK : '') : el.value;
    if (el.willValidate !== undefined) {
      state.required = !!el.required;
      state.valid = el.validity ? el.validity.valid : true;
      if (el.validationMessage) state.validationMessage = el.validationMessage;
    }
    return state;
  }

  lib.inspect = (target, options) => {
    const found = resolve(target);
    if (!found.el) return found;
    const el = found.el;
    const rect = el.getBoundingClientRect();
    const role = lib.roleOf(el) || null;
    const round = (n) => Math.round(n * 100) / 100;
    const selector = selectorFor(el);
    return {
      tag: el.localName,
      role,
      name: role ? lib.nameOf(el, role) : '',
      selector,
      selectorInShadowRoot: el.getRootNode() !== document,
      attributes: attributes(el),
      text: clip(squash(el.innerText !== undefined ? el.innerText : el.textContent || ''), MAX_TEXT_CHARS),
      styles: styles(el, options.styles || null),
      box: { x: round(rect.x), y: round(rect.y), width: round(rect.width), height: round(rect.height) },
      quads: [...el.getClientRects()].map((r) =>
        [r.left, r.top, r.right, r.top, r.right, r.bottom, r.left, r.bottom].map(round)),
      visibility: visibility(el, rect),
      scroll: {
        pageX: round(scrollX),
        pageY: round(scrollY),
        elementLeft: round(el.scrollLeft),
        elementTop: round(el.scrollTop),
        elementScrollWidth: el.scrollWidth,
        elementScrollHeight: el.scrollHeight,
      },
      form: form(el),
    };
  };
  return 'installed';
})()
