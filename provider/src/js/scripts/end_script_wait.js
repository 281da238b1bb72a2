// Ends the script-predicate wait `id` (./wait_for_script.js) at once, in
// the page's own world: its observer, frame loop and timer stop. Called as
// (id); true if it was still running.
(id) => {
  const end = globalThis[Symbol.for('browser-shell.waits')]?.get(id);
  if (end) end();
  return !!end;
}
