// The snapshot walk of one frame, as `page/observe/walk.rs` calls it in
// our isolated world: `(<this file>)({ options, ref, selector, settle })`.
// `options` go to the walker (`agent/walk.js`: nextRef and limits); `ref` or
// `selector` scope the walk to one element's subtree (`{ missing: true }`
// when it is not on the page); `settle` ({ boundMs, frameAlways }) first
// waits for the DOM to settle after an action, in the same call. The
// result travels as one JSON string: far cheaper for the browser to hand
// over than a deep object tree. A walk told not to hand out refs
// (`options.newRefs: false`) that meets an element without one answers
// `{ newRefNeeded: true }` instead.
(function walkFrame({ options, ref, selector, settle }) {
  const run = () => {
    let root = null;
    if (ref != null) {
      root = __browserShell.element(ref);
    } else if (selector != null) {
      const found = __browserShell.rootBySelector(selector);
      if (found.error) throw new SyntaxError('bad selector: ' + found.error);
      root = found.element;
    }
    if ((ref != null || selector != null) && !root) return { missing: true };
    const walked = __browserShell.walk(Object.assign(options, { root }));
    return walked.newRefNeeded ? walked : JSON.stringify(walked);
  };
  return settle ? __browserShell.settle(settle.boundMs, settle.frameAlways).then(run) : run();
})
