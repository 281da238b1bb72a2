// Where a navigation ended, as `page/navigate.rs` reads it from the page
// itself: { url, title, status }, the HTTP status from the navigation
// timing entry (null when the browser does not say).
(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {
    url: location.href,
    title: document.title,
    status: nav && nav.responseStatus ? nav.responseStatus : null,
  };
})()
