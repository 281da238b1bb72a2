// What the provider (and find.js, inspect.js) call.

globalThis.__browserShell = { doc, roleOf, watchDragStart, dragStarted, placeOf, elementAt, scrolledView, nameOf, describe, deepElementFromPoint, composedContains, waitFor, waitStable, endWait, slotOf, pendingHost, adoptClosedRoot, pendingList, adoptListening, armInput, inputArrived, frames, animationsEnded, walk, prepare, suggest, element, rootBySelector, settle, selectOptions, checkedState, focus, pasteText,
  // For find.js: the helpers it builds on.
  internals: { refFor, fingerprint, clip, squash, shownAs, shadowOf, elementsDeep, windowOf, deref, byIds, frame, task, FINGERPRINT_NAME },
};
