// The page's icon, as `page/icon.rs` asks it in our isolated world: the
// address of the last `<link rel~=icon>` with an http(s) or data address,
// else the origin's `/favicon.ico` for http(s) pages, else null.
(() => {
  const links = [...document.querySelectorAll('link[rel~="icon" i][href]')];
  const usable = links.map((l) => l.href).filter((h) => /^(https?|data):/i.test(h));
  if (usable.length) return usable[usable.length - 1];
  return /^https?:$/.test(location.protocol) ? location.origin + '/favicon.ico' : null;
})()
