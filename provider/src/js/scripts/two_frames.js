// Waits for the page to draw, as `page/screenshot.rs` does between its
// throwaway capture and the real one: resolves true once the page has
// drawn two frames, false at once for a hidden page (it draws none) or
// after 200 ms at most.
new Promise((drawn) => {
  if (document.visibilityState === 'hidden') return drawn(false);
  setTimeout(() => drawn(false), 200);
  requestAnimationFrame(() => requestAnimationFrame(() => drawn(true)));
})
