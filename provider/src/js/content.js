// Extracts page content as html, markdown, txt or json.
// Called as (format, selector, maxChars); returns
// { status: 'ok', content, truncated } | { status: 'no-match' } | { status: 'bad-selector', message }.
// Sensitive form values (passwords, card numbers, one-time codes) never leave the page.
(format, selector, maxChars) => {
  const MASK = '••••••';
  const SENSITIVE_AUTOCOMPLETE = /(^|\s)(current-password|new-password|one-time-code|cc-number|cc-csc|cc-exp)/;
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'SVG', 'CANVAS', 'IFRAME', 'OBJECT', 'EMBED', 'BUTTON', 'INPUT', 'SELECT', 'TEXTAREA', 'OPTION']);
  const LIST_CAP = 500;

  const isSensitive = (el) =>
    el instanceof HTMLInputElement &&
    (el.type === 'password' || SENSITIVE_AUTOCOMPLETE.test(el.autocomplete || el.getAttribute('autocomplete') || ''));

  let root = document.documentElement;
  if (selector) {
    try {
      root = document.querySelector(selector);
    } catch (error) {
      return { status: 'bad-selector', message: error.message };
    }
    if (!root) return { status: 'no-match' };
  }
  const body = selector ? root : document.body || document.documentElement;

  const clip = (text) => {
    if (text.length <= maxChars) return { status: 'ok', content: text, truncated: false };
    let end = maxChars;
    const code = text.charCodeAt(end - 1);
    if (code >= 0xd800 && code <= 0xdbff) end -= 1; // never split a surrogate pair
    return { status: 'ok', content: text.slice(0, end), truncated: true };
  };

  const visible = (el) => {
    if (el.hidden || el.getAttribute('aria-hidden') === 'true') return false;
    return typeof el.checkVisibility === 'function' ? el.checkVisibility({ visibilityProperty: true }) : true;
  };

  const squash = (text) => text.replace(/\s+/g, ' ');
  const textOf = (el) => squash(el.innerText || el.textContent || '').trim();

  // ---- html --------------------------------------------------------------
  const html = () => {
    const needsScrub = root.querySelector('input[value]');
    if (!needsScrub) return root.outerHTML;
    const copy = root.cloneNode(true);
    const originals = root.querySelectorAll('input');
    const copies = copy.querySelectorAll('input');
    originals.forEach((input, i) => {
      if (isSensitive(input) && copies[i] && copies[i].hasAttribute('value')) copies[i].setAttribute('value', MASK);
    });
    return copy.outerHTML;
  };

  // ---- markdown ----------------------------------------------------------
  const escapeCell = (text) => text.replace(/\|/g, '\\|');

  // The longest run of backticks in `text`: code must be fenced by more.
  const longestTicks = (text) => Math.max(0, ...(text.match(/`+/g) || []).map((run) => run.length));
  const codeSpan = (text) => {
    const longest = longestTicks(text);
    const ticks = '`'.repeat(longest + 1);
    return longest ? `${ticks} ${text} ${ticks}` : ticks + text + ticks;
  };

  // Emphasis and links keep the spaces at their edges outside their marks
  // (`<em>class </em>Owl` is `*class* Owl`, not `*class*Owl`).
  const wrap = (raw, open, close) => {
    const text = raw.trim();
    if (!text) return /\s/.test(raw) ? ' ' : '';
    return (/^\s/.test(raw) ? ' ' : '') + open + text + close + (/\s$/.test(raw) ? ' ' : '');
  };

  // Spaces and blank lines tidied; leading indentation of two or more kept.
  const tidy = (text) =>
    text
      .replace(/[ \t]+\n/g, '\n')
      .replace(/\n (?=\S)/g, '\n')
      .replace(/(\S) {2,}/g, '$1 ')
      .replace(/\n{3,}/g, '\n\n')
      .trim();

  const inline = (node) => {
    let out = '';
    for (const child of node.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        out += squash(child.textContent);
        continue;
      }
      if (child.nodeType !== Node.ELEMENT_NODE || SKIP.has(child.tagName) || !visible(child)) continue;
      out += element(child);
    }
    return out;
  };

  const block = (text) => {
    const trimmed = text.trim();
    return trimmed ? '\n\n' + trimmed + '\n\n' : '';
  };

  // An item is its blocks, indented under its marker; an item of words
  // and nested lists stays tight, one with paragraphs or code is loose.
  const list = (el) => {
    const ordered = el.tagName === 'OL';
    let index = Number(el.getAttribute('start') || 1);
    const items = [];
    for (const item of el.children) {
      if (item.tagName !== 'LI' || !visible(item)) continue;
      const marker = ordered ? `${index++}. ` : '- ';
      const parts = tidy(blocks(item)).split(/\n\n+/);
      const tight = parts.every((part, i) => i === 0 || /^([-*] |\d+\. )/.test(part));
      const lines = parts.join(tight ? '\n' : '\n\n').split('\n');
      const indent = ' '.repeat(marker.length);
      items.push({ tight, text: marker + lines.map((line, i) => (i === 0 || !line ? line : indent + line)).join('\n') });
    }
    const loose = items.some((item) => !item.tight);
    return block(items.map((item) => item.text).join(loose ? '\n\n' : '\n'));
  };

  // A cell is one line: its paragraphs joined, its code inline.
  const cell = (el) =>
    tidy(blocks(el))
      .replace(/\u0000(\d+)\u0000/g, (_, i) => codeSpan(preformatted[Number(i)].body.replace(/\n/g, ' ')))
      .replace(/\s*\n\s*/g, ' ');

  const table = (el) => {
    const rows = [...el.rows].filter(visible);
    if (rows.length === 0) return '';
    const cells = (row) => [...row.cells].map((c) => escapeCell(cell(c)));
    const headerRow = el.tHead && el.tHead.rows[0] ? el.tHead.rows[0] : rows[0];
    const header = cells(headerRow);
    const bodyRows = rows.filter((row) => row !== headerRow).map(cells);
    const width = Math.max(header.length, ...bodyRows.map((r) => r.length));
    const pad = (r) => r.concat(Array(Math.max(0, width - r.length)).fill(''));
    const line = (r) => '| ' + pad(r).join(' | ') + ' |';
    const caption = el.caption ? textOf(el.caption) + '\n\n' : '';
    return block(caption + [line(header), line(Array(width).fill('---')), ...bodyRows.map(line)].join('\n'));
  };

  const element = (el) => {
    const tag = el.tagName;
    switch (tag) {
      case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6':
        return block('#'.repeat(Number(tag[1])) + ' ' + inline(el).trim());
      case 'P': case 'FIGCAPTION': case 'CAPTION':
        return block(inline(el));
      case 'BR':
        return '\n';
      case 'HR':
        return block('---');
      case 'A': {
        const raw = inline(el);
        const href = el.href;
        if (!href || href.startsWith('javascript:')) return raw;
        return wrap(raw, '[', `](${href})`);
      }
      case 'STRONG': case 'B':
        return wrap(inline(el), '**', '**');
      case 'EM': case 'I':
        return wrap(inline(el), '*', '*');
      case 'CODE':
        return codeSpan(squash(el.textContent));
      case 'PRE': {
        const code = el.querySelector('code');
        const match = ((code && code.className) || el.className || '').match(/(?:language|lang)-([\w+-]+)/);
        const body = el.textContent.replace(/\n$/, '');
        // Code keeps its whitespace: park it until the clean-up below is done;
        // its fence is longer than any run of backticks inside.
        const fence = '`'.repeat(Math.max(3, longestTicks(body) + 1));
        preformatted.push({ body, text: fence + (match ? match[1] : '') + '\n' + body + '\n' + fence });
        return block('\u0000' + (preformatted.length - 1) + '\u0000');
      }
      case 'BLOCKQUOTE':
        return block(tidy(blocks(el)).split('\n').map((l) => '> ' + l).join('\n'));
      case 'UL': case 'OL':
        return list(el);
      case 'TABLE':
        return table(el);
      case 'IMG': {
        const alt = el.getAttribute('alt') || '';
        return el.src ? `![${alt}](${el.src})` : '';
      }
      case 'DIV': case 'SECTION': case 'ARTICLE': case 'MAIN': case 'HEADER': case 'FOOTER':
      case 'NAV': case 'ASIDE': case 'FORM': case 'FIELDSET': case 'FIGURE': case 'BODY': case 'HTML':
      case 'DL': case 'DETAILS': case 'SUMMARY': case 'DD': case 'DT': case 'ADDRESS': case 'LEGEND': case 'LABEL':
        return tag === 'LABEL' ? inline(el) : block(blocks(el));
      default:
        return inline(el);
    }
  };

  const blocks = (el) => {
    let out = '';
    for (const child of el.childNodes) {
      if (child.nodeType === Node.TEXT_NODE) {
        out += squash(child.textContent);
      } else if (child.nodeType === Node.ELEMENT_NODE && !SKIP.has(child.tagName) && visible(child)) {
        out += element(child);
      }
    }
    return out;
  };

  // Code blocks, each written where its placeholder line is, every line
  // under the placeholder's indentation or quote marks (the first line after
  // a list marker, the rest under the marker's width).
  const preformatted = [];
  const unpark = (text) =>
    text
      .replace(/^([ \t>]*)([-*] |\d+\. )?\u0000(\d+)\u0000$/gm, (_, prefix, marker, i) => {
        const under = prefix + ' '.repeat(marker ? marker.length : 0);
        return preformatted[Number(i)].text
          .split('\n')
          .map((line, n) => (n === 0 ? prefix + (marker || '') + line : line ? under + line : under.trimEnd()))
          .join('\n');
      })
      // One that shares its line (code inside a link or a heading) is inline code.
      .replace(/\u0000(\d+)\u0000/g, (_, i) => codeSpan(squash(preformatted[Number(i)].body)));
  const markdown = () => {
    // The title leads the document unless the page's own first h1 says the same.
    const h1 = document.querySelector('h1');
    const titled = document.title && !(h1 && textOf(h1) === document.title.trim());
    const title = !selector && titled ? '# ' + document.title.trim() + '\n\n' : '';
    const text = unpark(tidy(selector ? element(body) : blocks(body)));
    return title + text + '\n';
  };

  // ---- txt ---------------------------------------------------------------
  const txt = () => (body.innerText || '').replace(/\n{3,}/g, '\n\n').trim() + '\n';

  // ---- json --------------------------------------------------------------
  const capped = (items) => ({ items: items.slice(0, LIST_CAP), omitted: Math.max(0, items.length - LIST_CAP) });

  const labelFor = (field) => {
    if (field.labels && field.labels.length) return textOf(field.labels[0]);
    const aria = field.getAttribute('aria-label');
    if (aria) return aria.trim();
    const by = field.getAttribute('aria-labelledby');
    if (by) {
      const text = by.split(/\s+/).map((id) => document.getElementById(id)).filter(Boolean).map(textOf).join(' ');
      if (text) return text;
    }
    return field.getAttribute('placeholder') || field.getAttribute('title') || '';
  };

  const fieldInfo = (field) => {
    const type = field instanceof HTMLSelectElement ? 'select' : field instanceof HTMLTextAreaElement ? 'textarea' : (field.type || 'text');
    const info = { label: labelFor(field), type, name: field.name || field.id || '' };
    if (isSensitive(field)) {
      info.value = field.value ? MASK : '';
      info.masked = true;
    } else if (field instanceof HTMLSelectElement) {
      info.value = field.multiple ? [...field.selectedOptions].map((o) => o.value) : field.value;
      info.options = [...field.options].slice(0, LIST_CAP).map((o) => ({ value: o.value, label: o.label, selected: o.selected }));
    } else if (type === 'checkbox' || type === 'radio') {
      info.value = field.value;
      info.checked = field.checked;
    } else {
      info.value = field.value;
    }
    if (field.required) info.required = true;
    if (field.disabled) info.disabled = true;
    return info;
  };

  const json = () => {
    const scope = selector ? root : document;
    const meta = (name) => {
      const el = document.querySelector(`meta[name="${name}"], meta[property="og:${name}"]`);
      return el ? el.getAttribute('content') || '' : '';
    };
    const headings = [...scope.querySelectorAll('h1, h2, h3, h4, h5, h6')]
      .filter(visible)
      .map((h) => ({ level: Number(h.tagName[1]), text: textOf(h) }));
    const links = capped(
      [...scope.querySelectorAll('a[href]')]
        .filter((a) => visible(a) && !a.href.startsWith('javascript:'))
        .map((a) => ({ text: textOf(a) || a.getAttribute('aria-label') || a.getAttribute('title') || '', href: a.href })),
    );
    const forms = [...scope.querySelectorAll('form')].map((form) => ({
      name: form.getAttribute('name') || form.id || '',
      action: form.action || '',
      method: (form.getAttribute('method') || 'get').toLowerCase(),
      fields: [...form.elements]
        .filter((f) => (f instanceof HTMLInputElement || f instanceof HTMLSelectElement || f instanceof HTMLTextAreaElement) && f.type !== 'hidden' && f.type !== 'submit' && f.type !== 'button')
        .map(fieldInfo),
    }));
    const tables = [...scope.querySelectorAll('table')].filter(visible).map((t) => {
      const rows = [...t.rows];
      const headerRow = t.tHead && t.tHead.rows[0] ? t.tHead.rows[0] : rows[0] && [...rows[0].cells].every((c) => c.tagName === 'TH') ? rows[0] : null;
      const cellTexts = (row) => [...row.cells].map(textOf);
      const body = rows.filter((r) => r !== headerRow).map(cellTexts);
      return {
        caption: t.caption ? textOf(t.caption) : '',
        headers: headerRow ? cellTexts(headerRow) : [],
        rows: body.slice(0, LIST_CAP),
        omittedRows: Math.max(0, body.length - LIST_CAP),
      };
    });
    const jsonLd = [...document.querySelectorAll('script[type="application/ld+json"]')].map((s) => {
      try {
        return JSON.parse(s.textContent);
      } catch (error) {
        return { error: 'invalid JSON-LD: ' + error.message };
      }
    });
    return {
      title: document.title,
      url: location.href,
      language: document.documentElement.lang || '',
      description: meta('description'),
      headings,
      links: links.items,
      omittedLinks: links.omitted,
      forms,
      tables,
      jsonLd,
    };
  };

  switch (format) {
    case 'html': return clip(html());
    case 'markdown': return clip(markdown());
    case 'txt': return clip(txt());
    case 'json': return { status: 'ok', data: json() };
    default: return { status: 'bad-format' };
  }
}
