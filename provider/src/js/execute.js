// Applies an agent's script to its arguments and returns the result in a
// shape the provider can always read: undefined, capped JSON text, or a
// description of a value JSON cannot carry (DOM nodes, functions, cycles).
async (fn, args, maxBytes) => {
  const value = await fn.apply(globalThis, args);
  if (value === undefined) return { kind: 'undefined' };
  if (typeof Node !== 'undefined' && value instanceof Node) {
    const el = value.nodeType === 1 ? value : null;
    const name = el
      ? '<' + el.localName + (el.id ? '#' + el.id : '') + '>'
      : value.nodeName;
    return { kind: 'unserializable', description: 'DOM node ' + name };
  }
  let json;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    return { kind: 'unserializable', description: String(value) + ' (' + error.message + ')' };
  }
  if (json === undefined) {
    return { kind: 'unserializable', description: typeof value === 'function' ? 'function' : String(value) };
  }
  if (json.length > maxBytes) return { kind: 'json', json: json.slice(0, maxBytes), truncated: true };
  return { kind: 'json', json, truncated: false };
}
