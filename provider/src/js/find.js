// Finding what is not simply there, page side: elements by role and name
// as the snapshot shows them (with or without a ref), items of virtualized
// grids and lists that exist only once scrolled to, and the options of a
// custom combobox or listbox wherever its popup is rendered. Installed in
// our isolated world after agent/*.js, whose helpers it uses.
(() => {
  const lib = globalThis.__browserShell;
  const { doc, roleOf, nameOf, element } = lib;
  const { refFor, fingerprint, clip, squash, shownAs, shadowOf, elementsDeep, windowOf, deref, byIds, frame, task, FINGERPRINT_NAME } = lib.internals;

  // Refs for the visible elements with this role and name, as the
  // snapshot shows them (a name, or for unnamed items their text), open
  // shadow roots included: acting by role and name reaches elements the
  // snapshot shows without a ref.
  function refsByRole(role, name, nextRef) {
    const state = { nextRef, fingerprints: {} };
    const refs = [];
    for (const el of elementsDeep(document)) {
      if (refs.length >= 10) break;
      if ((roleOf(el) || 'generic') !== role) continue;
      if (!shownAs(el, role, name) || !el.checkVisibility({ visibilityProperty: true })) continue;
      const ref = refFor(el, state);
      state.fingerprints[ref] = fingerprint(el, role, clip(nameOf(el, role), FINGERPRINT_NAME));
      refs.push(ref);
    }
    return { doc, refs, fingerprints: state.fingerprints, nextRef: state.nextRef };
  }

  // The element that scrolls a collection: itself, else the first of its
  // descendants that scrolls vertically, else its nearest scrolling ancestor.
  function scrollerOf(collection) {
    const scrolls = (el) => {
      if (el.scrollHeight <= el.clientHeight + 1) return false;
      const overflow = getComputedStyle(el).overflowY;
      return overflow === 'auto' || overflow === 'scroll';
    };
    if (scrolls(collection)) return collection;
    for (const el of collection.querySelectorAll('*')) if (scrolls(el)) return el;
    for (let el = collection.parentElement; el; el = el.parentElement) if (scrolls(el)) return el;
    return null;
  }

  // The scrollers of the page's virtualized collections: grids and lists
  // that say more items exist than the DOM holds.
  function virtualScrollers() {
    const scrollers = new Set();
    for (const el of document.querySelectorAll('[aria-rowcount], [aria-setsize]')) {
      const collection = el.hasAttribute('aria-rowcount') ? el : el.closest('[role=listbox], [role=list], [role=tree], [role=menu], [role=feed], ul, ol') || el.parentElement;
      const span = collection && windowOf(collection, roleOf(collection));
      if (!span || (span.of !== null && span.to - span.from + 1 >= span.of)) continue;
      const scroller = scrollerOf(collection);
      if (scroller) scrollers.add(scroller);
    }
    return scrollers;
  }

  // The rows or items of a collection that `scroller` shows, rendered now.
  function renderedItems(scroller) {
    return scroller.querySelectorAll('[aria-rowindex], [aria-posinset]');
  }

  // Waits (at most 10 frames) until the collection has rendered for its
  // scroll position: an item covers the top edge of its viewport. A
  // virtualizer renders on the scroll event, in a later frame, later still
  // on a busy machine; items checked before would be the old ones.
  async function renderedAt(scroller) {
    for (let i = 0; i < 10; i++) {
      await frame();
      await task();
      const top = scroller.getBoundingClientRect().top;
      let any = false;
      for (const item of renderedItems(scroller)) {
        const box = item.getBoundingClientRect();
        if (box.height <= 0) continue;
        any = true;
        if (box.top <= top + 1 && box.bottom > top + 1) return;
      }
      if (!any) return;
    }
  }

  // How far to scroll `scroller` next so that no item goes unrendered: to
  // just above the last item rendered now (a virtualizer renders a buffer
  // beyond the viewport, which this skips over), at least most of a
  // viewport, at most ten.
  function nextStep(scroller) {
    const top = scroller.getBoundingClientRect().top;
    let bottom = 0;
    for (const item of renderedItems(scroller)) {
      const box = item.getBoundingClientRect();
      if (box.height > 0) bottom = Math.max(bottom, box.top - top);
    }
    const viewport = scroller.clientHeight;
    return Math.max(viewport * 0.8, Math.min(bottom, viewport * 10), 20);
  }

  // Scrolls each virtualized collection through, from its current place to
  // its end and then from its start, until `found()` holds (the collection
  // is left there), for at most `maxMs`. A collection where it never held
  // is scrolled back where it was.
  async function seekWhere(found, maxMs) {
    const started = performance.now();
    for (const scroller of virtualScrollers()) {
      const home = scroller.scrollTop;
      let wrapped = false;
      for (;;) {
        if (performance.now() - started > maxMs) { scroller.scrollTop = home; return false; }
        const end = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1;
        if (end && !wrapped) {
          wrapped = true;
          scroller.scrollTop = 0;
        } else if (wrapped && scroller.scrollTop >= home) {
          break;
        } else {
          scroller.scrollTop += nextStep(scroller);
        }
        await renderedAt(scroller);
        if (found()) return true;
      }
      scroller.scrollTop = home;
    }
    return false;
  }

  // Refs for elements with this role and name, scrolling the page's
  // virtualized collections until one is rendered (see seekWhere).
  async function seekByRole(role, name, nextRef, maxMs) {
    let found = { doc, refs: [], fingerprints: {}, nextRef };
    if (!await seekWhere(() => (found = refsByRole(role, name, nextRef)).refs.length > 0, maxMs)) return found;
    // Into the scroller's view; a virtualizer may render the rows anew for
    // that scroll, so the element is looked up again after.
    const el = deref(found.refs[0]);
    if (el) el.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
    await frame();
    await task();
    const again = refsByRole(role, name, found.nextRef);
    return again.refs.length ? again : found;
  }


  // The options of a custom combobox or listbox (the ARIA pattern) that
  // match `wanted` (by name, text or value), with refs: in the popup its
  // `aria-controls`/`aria-owns` name (or those of an input inside it),
  // in the listbox itself, else any visible option. Missing ones are named
  // with the options there are.
  function customOptions(ref, wanted, nextRef) {
    const el = element(ref);
    const state = { nextRef, fingerprints: {} };
    if (!el) return { doc, status: 'gone', refs: [], fingerprints: {}, nextRef };
    const holders = [el, ...el.querySelectorAll('[aria-controls], [aria-owns]')];
    const popups = [];
    for (const holder of holders) {
      for (const id of ['aria-controls', 'aria-owns']) popups.push(...byIds(holder, holder.getAttribute(id)));
    }
    if (roleOf(el) === 'listbox') popups.push(el);
    const options = [];
    const collect = (root) => {
      for (const option of root.querySelectorAll('[role=option]')) {
        if (option.checkVisibility({ visibilityProperty: true })) options.push(option);
      }
      // Web components keep their options in light DOM or their own shadow root.
      const shadow = shadowOf(root);
      if (shadow) collect(shadow);
    };
    for (const popup of popups) collect(popup);
    if (!options.length) {
      collect(el);
      if (!options.length) collect(document);
    }
    const refs = [];
    const missing = [];
    for (const want of wanted) {
      const wantText = squash(want);
      const option = options.find((o) => squash(nameOf(o, 'option')) === wantText) ||
        options.find((o) => squash(o.textContent || '') === wantText) ||
        options.find((o) => (o.getAttribute('data-value') ?? o.getAttribute('value')) === want);
      if (!option) { missing.push(want); continue; }
      const optionRef = refFor(option, state);
      state.fingerprints[optionRef] = fingerprint(option, 'option', clip(nameOf(option, 'option'), FINGERPRINT_NAME));
      refs.push(optionRef);
    }
    const available = options.slice(0, 50).map((o) => squash(nameOf(o, 'option') || o.textContent || ''));
    return { doc, status: missing.length ? 'missing' : 'ok', refs, missing, available, fingerprints: state.fingerprints, nextRef: state.nextRef };
  }

  Object.assign(lib, { refsByRole, virtualScrollers, seekWhere, seekByRole, customOptions });
  return 'installed';
})()
