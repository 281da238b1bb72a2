// The browser column: live frames, tabs, control, activity. Talks to the
// shell over one WebSocket; the token from the address bar is kept in
// memory only and removed from the visible URL at once.
(() => {
  const params = new URLSearchParams(location.search);
  const token = params.get('token') || '';
  // The desktop window asks for pages sized to its picture area, as a
  // browser window would; viewers elsewhere watch pages at their own size.
  const fitPages = params.get('fit') === '1';
  history.replaceState(null, '', location.pathname);
  const $ = (id) => document.getElementById(id);
  const img = $('frame');
  let socket = null;
  let state = { holder: 'agent', viewOnly: false, tabs: [] };
  let meta = { cssWidth: 1, cssHeight: 1 };
  let lastUrl = null;
  let shownTab = null;
  let socketOpen = false;
  let dismissedRestart = null;

  function send(message) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  }

  function connect() {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    socket = new WebSocket(`${scheme}//${location.host}/ws?token=${encodeURIComponent(token)}`);
    socket.binaryType = 'blob';
    socket.onopen = () => { socketOpen = true; showConnection(); sendViewport(); };
    socket.onclose = () => { socketOpen = false; showConnection(); setTimeout(connect, 1500); };
    socket.onmessage = (event) => {
      if (typeof event.data !== 'string') return showFrame(event.data);
      const message = JSON.parse(event.data);
      if (message.type === 'state') render(message);
      else if (message.type === 'frame') {
        meta = message;
        // The picture is never drawn larger than the page's own CSS size:
        // scaled up on a sharp screen, it would blur.
        img.style.maxWidth = `min(100%, ${meta.cssWidth}px)`;
      }
      else if (message.type === 'activity') activity(message);
      else if (message.type === 'hand') hand(message);
      else if (message.type === 'error') notice(message.code + ': ' + message.message);
    };
  }

  // Every frame is acknowledged exactly once, drawn or not, so the
  // server's credit count never drifts (a lost ack would stall the stream).
  function showFrame(blob) {
    const url = URL.createObjectURL(blob);
    const decoded = new Image();
    const sequence = meta.sequence;
    decoded.onload = () => {
      img.src = url;
      img.dataset.sequence = sequence;
      if (lastUrl) URL.revokeObjectURL(lastUrl);
      lastUrl = url;
      $('empty').style.display = 'none';
      send({ type: 'ack' });
    };
    decoded.onerror = () => {
      URL.revokeObjectURL(url);
      send({ type: 'ack' });
    };
    decoded.src = url;
  }

  // "live" only while frames can come: the socket is open and the browser runs.
  function showConnection() {
    const running = !state.browser || state.browser.state === 'running';
    $('conn').textContent = !socketOpen ? 'disconnected; retrying…' : running ? 'live' : 'no live picture';
  }

  // What happened to the browser, in one line; nothing while all is well.
  function browserLine(browser) {
    if (!browser) return null;
    if (browser.state === 'restarting') {
      return browser.reconnecting
        ? `Lost the connection to the browser (${browser.cause}) at ${browser.since}; reconnecting…`
        : `The browser stopped (${browser.cause}) at ${browser.since}; restarting…`;
    }
    if (browser.state === 'failed') return `The browser stopped and could not be restarted: ${browser.cause}`;
    if (browser.state === 'stopped') return 'The browser was shut down.';
    if (browser.restartedAt && dismissedRestart !== browser.restartedAt) {
      return `The browser stopped (${browser.cause}) and was restarted at ${browser.restartedAt}.`;
    }
    return null;
  }

  function render(next) {
    state = next;
    showConnection();
    const line = browserLine(state.browser);
    $('browser-banner').classList.toggle('open', !!line);
    $('browser-banner').classList.toggle('recovered', !!state.browser && state.browser.state === 'running');
    $('browser-text').textContent = line || '';
    $('stage').classList.toggle('down', !!state.browser && state.browser.state !== 'running');
    const human = state.holder === 'human';
    const viewOnly = !!state.viewOnly;
    // A view-only viewer watches: it says who really holds control and
    // offers nothing it cannot use.
    const holderText = human ? (viewOnly ? 'A person has control' : 'You have control') : 'Agent has control';
    $('holder').classList.toggle('human', human);
    $('holder-text').textContent = holderText;
    $('stage').classList.toggle('human', human && !viewOnly);
    $('view-only').hidden = !viewOnly;
    for (const id of ['takeover', 'stop', 'return', 'new-tab', 'back', 'forward', 'reload', 'done', 'crashed-reload', 'report']) $(id).hidden = viewOnly;
    // In the person's own Chrome they open their tabs in Chrome itself.
    if (state.browser && state.browser.personTabs === false) $('new-tab').hidden = true;
    $('takeover').disabled = human;
    $('stop').disabled = human;
    $('return').disabled = !human;
    const tabs = $('tabs');
    tabs.replaceChildren(...state.tabs.map((tab) => {
      const item = document.createElement('div');
      item.className = 'tab' + (tab.shown ? ' shown' : '') + (tab.session ? '' : ' yours') + (tab.crashed ? ' crashed' : '');
      item.title = tab.url;
      item.setAttribute('role', 'button');
      item.innerHTML = '<span class="icon" aria-hidden="true"></span><span class="title"></span><span class="owner"></span><button class="close" aria-label="Close tab" title="Close tab">×</button>';
      item.querySelector('.title').textContent = tab.title || tab.url || 'New tab';
      item.querySelector('.icon').replaceChildren(tabIcon(tab));
      const person = viewOnly ? 'person' : 'you';
      item.querySelector('.owner').textContent = tab.handle + ' · ' + (tab.session || (tab.external ? 'CDP client' : person)) + (tab.crashed ? ' · crashed' : '');
      item.onclick = () => send({ type: 'show', tab: tab.handle });
      const close = item.querySelector('.close');
      close.hidden = viewOnly;
      close.onclick = (e) => { e.stopPropagation(); send({ type: 'closeTab', tab: tab.handle }); };
      return item;
    }));
    const shown = state.tabs.find((t) => t.shown);
    // The shown tab stays in sight in a strip that scrolls.
    const shownItem = tabs.querySelector('.tab.shown');
    if (shownItem && (!shown || shown.handle !== shownTab)) shownItem.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    shownTab = shown ? shown.handle : null;
    // The window (desktop) or browser tab (relay) says what is shown and
    // who drives; a request for help comes first, so it is seen in a task
    // bar or a row of tabs (the desktop window also asks for attention).
    const page = shown ? (shown.title || shown.url) + ' — ' : '';
    document.title = (state.handoff ? `Help needed: ${state.handoff} — ` : '') + page + holderText + ' — browser-shell';
    $('favicon').href = state.handoff ? ATTENTION_ICON : QUIET_ICON;
    if (document.activeElement !== $('url')) $('url').value = shown ? shown.url : '';
    for (const id of ['back', 'forward', 'reload']) $(id).disabled = !shown;
    $('url').readOnly = viewOnly || !shown;
    // A tab of yours can go to an agent session.
    const give = $('give');
    const canGive = !!shown && !shown.session && !viewOnly && (state.sessions || []).length > 0;
    give.hidden = !canGive;
    if (canGive) {
      give.replaceChildren(new Option('Hand to agent…', ''), ...state.sessions.map((s) => new Option(s, s)));
    }
    if (!shown) { $('empty').style.display = ''; img.removeAttribute('src'); }
    $('crashed').hidden = !(shown && shown.crashed);
    $('banner').classList.toggle('open', !!state.handoff);
    $('banner-who').textContent = viewOnly ? 'The agent asks the person in control for help:' : 'The agent asks for help:';
    $('reason').textContent = state.handoff || '';
    if (!shown) clearHand();
  }

  // The tab's icon: the brand's, or with a mark while the agent asks for help.
  const QUIET_ICON = 'data:image/svg+xml,' + encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect x="1" y="2" width="14" height="12" rx="2" fill="#2f6fed"/><rect x="3" y="5" width="10" height="7" fill="#fff"/></svg>');
  const ATTENTION_ICON = 'data:image/svg+xml,' + encodeURIComponent('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7.5" fill="#c2410c"/><rect x="7" y="3" width="2" height="7" fill="#fff"/><rect x="7" y="11.5" width="2" height="2" fill="#fff"/></svg>');

  // The agent's hand over the picture: where it points (kept in the
  // pointer's data-x/data-y, in the page's CSS pixels), a ripple for a
  // click, the target's outline (amber while typing), a drag's path.
  let handTimer = null;
  function pictureBox() {
    if (!img.getAttribute('src')) return null;
    const box = img.getBoundingClientRect();
    const stage = $('stage').getBoundingClientRect();
    if (!box.width || !box.height) return null;
    return { left: box.left - stage.left, top: box.top - stage.top, sx: box.width / meta.cssWidth, sy: box.height / meta.cssHeight };
  }
  function place(element, box, x, y) {
    element.style.left = `${box.left + x * box.sx}px`;
    element.style.top = `${box.top + y * box.sy}px`;
  }
  function hand(gesture) {
    const box = pictureBox();
    if (!box) return;
    const pointer = $('hand-pointer');
    const target = $('hand-target');
    const path = $('hand-path');
    pointer.dataset.x = gesture.x;
    pointer.dataset.y = gesture.y;
    pointer.dataset.kind = gesture.kind;
    place(pointer, box, gesture.x, gesture.y);
    pointer.classList.add('shown');
    if (gesture.target) {
      const t = gesture.target;
      place(target, box, t.x, t.y);
      target.style.width = `${t.width * box.sx}px`;
      target.style.height = `${t.height * box.sy}px`;
      target.classList.toggle('typing', gesture.kind === 'type' || gesture.kind === 'fill');
      target.classList.add('shown');
    } else {
      target.classList.remove('shown');
    }
    path.classList.toggle('shown', !!gesture.to);
    if (gesture.to) {
      const line = $('hand-line');
      line.setAttribute('x1', box.left + gesture.x * box.sx);
      line.setAttribute('y1', box.top + gesture.y * box.sy);
      line.setAttribute('x2', box.left + gesture.to.x * box.sx);
      line.setAttribute('y2', box.top + gesture.to.y * box.sy);
      // The pointer follows the drag to where it drops.
      setTimeout(() => place(pointer, box, gesture.to.x, gesture.to.y), 200);
    }
    if (/click$/.test(gesture.kind)) {
      const ripple = document.createElement('div');
      ripple.className = 'ripple';
      place(ripple, box, gesture.x, gesture.y);
      ripple.addEventListener('animationend', () => ripple.remove());
      $('hand').append(ripple);
    }
    clearTimeout(handTimer);
    handTimer = setTimeout(clearHand, 2500);
  }
  function clearHand() {
    for (const id of ['hand-pointer', 'hand-target', 'hand-path']) $(id).classList.remove('shown');
  }

  // The page's icon, as the shell sends it (a data: URL the agent's
  // browser loaded: this browser never contacts the sites the agent
  // visits); the first letter of the site when it has none.
  function tabIcon(tab) {
    let host = '';
    try { host = new URL(tab.url).hostname; } catch (e) { /* about:blank and the like */ }
    const letter = document.createElement('span');
    letter.className = 'letter';
    const first = host.replace(/^www\./, '')[0] || '';
    letter.textContent = /[a-z]/i.test(first) ? first.toUpperCase() : '•';
    if (!tab.icon || !tab.icon.startsWith('data:image/')) return letter;
    const icon = new Image(16, 16);
    icon.alt = '';
    icon.referrerPolicy = 'no-referrer';
    icon.onerror = () => icon.replaceWith(letter);
    icon.src = tab.icon;
    return icon;
  }

  // The timeline: one row per entry (an agent's call, the person's step),
  // updated in place as the call ends and its pictures arrive; a click
  // opens its details (arguments, result, larger pictures).
  const rows = new Map();
  let newest = 0;
  function activity(entry) {
    let row = rows.get(entry.id);
    if (!row) {
      row = document.createElement('div');
      row.innerHTML = '<div><span class="time"></span> <span class="name"></span> <span class="result"></span></div><div class="args"></div>'
        + '<div class="thumbs"><img class="before" alt="Before" title="Before" hidden><img class="after" alt="After" title="After" hidden></div>'
        + '<div class="detail"><pre class="arguments"></pre><pre class="text"></pre></div>';
      row.onclick = () => row.classList.toggle('open');
      rows.set(entry.id, row);
      const later = [...rows.keys()].filter((id) => id > entry.id);
      const next = later.length ? rows.get(Math.min(...later)) : null;
      if (next && next.parentNode) next.after(row); else $('events').prepend(row);
    }
    const person = entry.actor.kind === 'person';
    row.className = 'event ' + (person ? 'person' : 'agent') + (row.classList.contains('open') ? ' open' : '');
    row.dataset.id = entry.id;
    row.querySelector('.time').textContent = new Date(entry.at).toLocaleTimeString();
    row.querySelector('.name').textContent = person ? (state.viewOnly ? 'The person ' : 'You ') + entry.what : entry.what;
    const result = entry.outcome === null ? 'running…' : entry.outcome === 'ok' ? (entry.headline || 'done') : entry.outcome;
    const cls = entry.outcome === null ? '' : entry.outcome === 'ok' ? 'ok' : 'bad';
    row.querySelector('.result').textContent = person ? '' : result + (entry.millis != null ? ` · ${entry.millis} ms` : '');
    row.querySelector('.result').className = 'result ' + cls;
    row.querySelector('.args').textContent = entry.summary;
    for (const side of ['before', 'after']) {
      const picture = row.querySelector('img.' + side);
      if (entry[side] && picture.getAttribute('src') !== entry[side]) picture.src = entry[side];
      picture.hidden = !entry[side];
    }
    row.querySelector('.arguments').textContent = entry.arguments || '';
    row.querySelector('.arguments').hidden = !entry.arguments;
    row.querySelector('.text').textContent = entry.result || '';
    row.querySelector('.text').hidden = !entry.result;
    while ($('events').children.length > 100) {
      const last = $('events').lastChild;
      rows.delete(Number(last.dataset.id));
      last.remove();
    }
    if (entry.id >= newest && !person) {
      newest = entry.id;
      $('doing').textContent = entry.outcome === null ? `${entry.what} ${entry.summary}` : 'Idle';
    }
  }

  // The report: fetched with the token (never put in a link) and saved.
  $('report').onclick = async () => {
    try {
      const response = await fetch('/report', { headers: { Authorization: 'Bearer ' + token } });
      if (!response.ok) throw new Error(`${response.status} ${await response.text()}`);
      const url = URL.createObjectURL(await response.blob());
      const link = document.createElement('a');
      link.href = url;
      link.download = 'browser-shell-report.html';
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
      notice('Report saved to your downloads as browser-shell-report.html');
    } catch (error) {
      notice('The report could not be made: ' + error.message);
    }
  };

  // Input: positions as fractions of the picture, so any window size maps right.
  function position(event) {
    const box = img.getBoundingClientRect();
    return { x: (event.clientX - box.left) / box.width, y: (event.clientY - box.top) / box.height };
  }
  const buttons = ['left', 'middle', 'right'];
  // Keys go through a hidden text field that holds the focus, so input
  // methods (composition) and paste work as they do in any text box.
  const keys = $('keys');
  img.addEventListener('mousedown', (e) => { keys.focus({ preventScroll: true }); send({ type: 'mouse', kind: 'down', button: buttons[e.button] || 'left', clicks: e.detail || 1, ...position(e) }); e.preventDefault(); });
  img.addEventListener('mouseup', (e) => send({ type: 'mouse', kind: 'up', button: buttons[e.button] || 'left', clicks: e.detail || 1, ...position(e) }));
  img.addEventListener('mousemove', (e) => { if (state.holder === 'human') send({ type: 'mouse', kind: 'move', button: 'none', clicks: 0, ...position(e) }); });
  img.addEventListener('wheel', (e) => { send({ type: 'mouse', kind: 'wheel', button: 'none', clicks: 0, dx: e.deltaX, dy: e.deltaY, ...position(e) }); e.preventDefault(); }, { passive: false });
  img.addEventListener('contextmenu', (e) => e.preventDefault());
  // Keys an input method is handling (keyCode 229) are its business.
  const composing = (e) => e.isComposing || e.keyCode === 229;
  keys.addEventListener('keydown', (e) => {
    if (composing(e)) return;
    send({ type: 'key', kind: 'down', key: e.key, code: e.code, keyCode: e.keyCode, text: e.key.length === 1 && !e.ctrlKey && !e.metaKey ? e.key : '' });
    // Ctrl+V goes on to this field too: its paste event carries the text.
    if (!((e.ctrlKey || e.metaKey) && e.key === 'v')) e.preventDefault();
  });
  keys.addEventListener('keyup', (e) => { if (composing(e)) return; send({ type: 'key', kind: 'up', key: e.key, code: e.code, keyCode: e.keyCode, text: '' }); e.preventDefault(); });
  keys.addEventListener('compositionupdate', (e) => send({ type: 'compose', text: e.data || '' }));
  keys.addEventListener('compositionend', (e) => { send(e.data ? { type: 'text', text: e.data } : { type: 'compose', text: '' }); keys.value = ''; });
  keys.addEventListener('paste', (e) => { const text = e.clipboardData.getData('text'); if (text) send({ type: 'text', text }); e.preventDefault(); });

  // Frames are sized for the picture area (in device pixels), not larger.
  function sendViewport() {
    const stage = $('stage').getBoundingClientRect();
    const scale = window.devicePixelRatio || 1;
    send({
      type: 'viewport', width: Math.round(stage.width * scale), height: Math.round(stage.height * scale),
      fit: fitPages, cssWidth: Math.round(stage.width), cssHeight: Math.round(stage.height),
    });
  }
  // The picture area changes with the window and with the bars above it
  // (a handoff request, a browser notice): pages follow it.
  let resizeTimer = null;
  new ResizeObserver(() => { clearTimeout(resizeTimer); resizeTimer = setTimeout(sendViewport, 200); }).observe($('stage'));

  // Tab strip and address bar.
  function notice(text) { $('doing').textContent = text; }
  $('new-tab').onclick = () => send({ type: 'newTab', url: '' });
  $('back').onclick = () => shownTab && send({ type: 'navigate', tab: shownTab, action: 'back' });
  $('forward').onclick = () => shownTab && send({ type: 'navigate', tab: shownTab, action: 'forward' });
  $('reload').onclick = () => shownTab && send({ type: 'navigate', tab: shownTab, action: 'reload' });
  $('crashed-reload').onclick = () => shownTab && send({ type: 'navigate', tab: shownTab, action: 'reload' });
  $('browser-dismiss').onclick = () => {
    if (state.browser && state.browser.restartedAt) dismissedRestart = state.browser.restartedAt;
    render(state);
  };
  $('address').onsubmit = (e) => {
    e.preventDefault();
    let url = $('url').value.trim();
    if (!url || !shownTab) return;
    if (!/^[a-z]+:/i.test(url)) url = 'https://' + url;
    send({ type: 'navigate', tab: shownTab, url });
    $('url').blur();
  };
  $('give').onchange = () => {
    if ($('give').value && shownTab) send({ type: 'give', tab: shownTab, session: $('give').value });
  };

  // The column's own keys, as a browser window has them; every other key
  // goes to the page. Caught before the page's key field sees them.
  window.addEventListener('keydown', (e) => {
    if (state.viewOnly || composing(e)) return;
    const ctrl = (e.ctrlKey || e.metaKey) && !e.altKey;
    const shown = state.tabs.find((t) => t.shown);
    let handled = true;
    if (ctrl && e.key.toLowerCase() === 'l') { $('url').focus(); $('url').select(); }
    else if (ctrl && e.key.toLowerCase() === 't') send({ type: 'newTab', url: '' });
    else if (ctrl && e.key.toLowerCase() === 'w') { if (shown && !shown.session && !shown.external) send({ type: 'closeTab', tab: shown.handle }); }
    else if ((ctrl && e.key.toLowerCase() === 'r') || e.key === 'F5') { if (shown) send({ type: 'navigate', tab: shown.handle, action: 'reload' }); }
    else if (e.altKey && e.key === 'ArrowLeft') { if (shown) send({ type: 'navigate', tab: shown.handle, action: 'back' }); }
    else if (e.altKey && e.key === 'ArrowRight') { if (shown) send({ type: 'navigate', tab: shown.handle, action: 'forward' }); }
    else if (e.key === 'Escape' && state.holder === 'agent' && document.activeElement !== $('url')) send({ type: 'takeover' });
    else handled = false;
    if (handled) { e.preventDefault(); e.stopPropagation(); }
  }, true);

  $('takeover').onclick = () => send({ type: 'takeover' });
  $('stop').onclick = () => send({ type: 'takeover' });
  $('return').onclick = () => send({ type: 'return' });
  $('done').onclick = () => send({ type: 'return' });
  connect();
})();
