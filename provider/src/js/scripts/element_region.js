// The box of the first element matching a CSS selector, in document
// coordinates, for a screenshot clipped to it (`page/screenshot.rs`).
// Called as (selector); returns { status: 'ok', x, y, width, height } |
// { status: 'no-match' } | { status: 'bad-selector', message }.
(selector) => {
  let el;
  try {
    el = document.querySelector(selector);
  } catch (e) {
    return { status: 'bad-selector', message: e.message };
  }
  if (!el) return { status: 'no-match' };
  const r = el.getBoundingClientRect();
  return { status: 'ok', x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height };
}
