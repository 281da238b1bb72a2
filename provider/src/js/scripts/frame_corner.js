// Where an out-of-process frame's viewport sits, as `page/observe/frames.rs`
// asks it of the frame's iframe element (`this`, through
// Runtime.callFunctionOn in the parent document): the corner of the
// iframe's content box in its document's viewport, plus that document's
// own same-origin frame offsets. Scrolls the iframe into view first when
// it is cut off.
function frameCorner() {
  const rect = this.getBoundingClientRect();
  if (rect.top < 0 || rect.bottom > innerHeight) this.scrollIntoView({ block: 'nearest' });
  const box = this.getBoundingClientRect();
  const style = getComputedStyle(this);
  let x = box.left + this.clientLeft + parseFloat(style.paddingLeft);
  let y = box.top + this.clientTop + parseFloat(style.paddingTop);
  for (let win = this.ownerDocument.defaultView; win && win.frameElement; win = win.parent) {
    const outer = win.frameElement.getBoundingClientRect();
    x += outer.left + win.frameElement.clientLeft;
    y += outer.top + win.frameElement.clientTop;
  }
  return { x, y };
}
