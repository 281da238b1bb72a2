// Waits until an agent's script predicate holds, as `page/wait.rs` runs it
// in the page's own world (the predicate may read the page's variables).
// Called as (predicate, boundMs, id): checks now, after every DOM change
// and once per frame; resolves { ok, seen } (seen: the predicate's last
// value as text, cut to 200 characters) when it holds or at the bound, and
// rejects with whatever the predicate throws. While it runs, `id` names
// how to end it at once in a registry under a global symbol, for a call
// that was cancelled (see ./end_script_wait.js).
(predicate, boundMs, id) => new Promise((resolve, reject) => {
  const waits = (globalThis[Symbol.for('browser-shell.waits')] ||= new Map());
  const test = () => {
    const v = predicate();
    return { ok: !!v, seen: String(v).slice(0, 200) };
  };
  let last;
  try {
    last = test();
  } catch (e) {
    reject(e);
    return;
  }
  if (last.ok) {
    resolve(last);
    return;
  }
  let frame = 0;
  const finish = () => {
    waits.delete(id);
    observer.disconnect();
    cancelAnimationFrame(frame);
    clearTimeout(deadline);
    resolve(last);
  };
  const again = () => {
    try {
      last = test();
    } catch (e) {
      waits.delete(id);
      observer.disconnect();
      cancelAnimationFrame(frame);
      clearTimeout(deadline);
      reject(e);
      return true;
    }
    if (last.ok) {
      finish();
      return true;
    }
    return false;
  };
  const observer = new MutationObserver(again);
  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  const tick = () => {
    if (!again()) frame = requestAnimationFrame(tick);
  };
  frame = requestAnimationFrame(tick);
  const deadline = setTimeout(finish, boundMs);
  waits.set(id, finish);
})
