// The TypeScript MCP SDK's Client against browser-shell (mcp_sdk_ts.rs):
// over stdio (it spawns `browser-shell mcp --temporary-profile`) or over
// streamable HTTP (to a running `browser-shell mcp --http`). The Client
// checks every result's structuredContent against the tool's outputSchema
// and throws on a mismatch, or when a tool with an outputSchema answers
// without it; so every call below is that check too.
//
//   node mcp_sdk.mjs stdio <browser-shell> <fixtures base URL>
//   node mcp_sdk.mjs http <MCP endpoint> <bearer token> <fixtures base URL>
//
// Prints one line of JSON: what it found, and the bytes of each call's text
// and structured content.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const CALL_TIMEOUT_MS = 60_000;
// The whole script is bounded too: a hang fails instead of waiting forever.
setTimeout(() => {
  console.error('mcp_sdk.mjs: not done within 180 s');
  process.exit(2);
}, 180_000).unref();

const [mode, ...rest] = process.argv.slice(2);
let transport;
let base;
if (mode === 'stdio') {
  const [binary, fixtures] = rest;
  base = fixtures;
  const env = { ...process.env };
  delete env.DISPLAY;
  delete env.WAYLAND_DISPLAY;
  transport = new StdioClientTransport({
    command: binary,
    args: ['mcp', '--temporary-profile'],
    env,
    stderr: 'inherit',
  });
} else if (mode === 'http') {
  const [endpoint, token, fixtures] = rest;
  base = fixtures;
  transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
} else {
  console.error(`usage: node mcp_sdk.mjs stdio|http …`);
  process.exit(64);
}

const client = new Client({ name: 'browser-shell-sdk-test', version: '1.0.0' });
await client.connect(transport);

const findings = { transport: mode, sizes: {}, errorSizes: {} };
const textOf = (result) =>
  result.content.filter((block) => block.type === 'text').map((block) => block.text).join('');
const bytes = (text) => Buffer.byteLength(text, 'utf8');

// Calls a tool (the SDK validates its structuredContent) and notes the
// bytes of its text and of its structured content under `label`.
async function call(label, name, args) {
  const result = await client.callTool({ name, arguments: args }, undefined, {
    timeout: CALL_TIMEOUT_MS,
  });
  const text = textOf(result);
  const sizes = {
    text: bytes(text),
    structured: result.structuredContent ? bytes(JSON.stringify(result.structuredContent)) : 0,
  };
  (result.isError ? findings.errorSizes : findings.sizes)[label] = sizes;
  return { result, text, data: result.structuredContent };
}

// The tool list: every tool with a title and annotations; which declare an outputSchema.
const { tools } = await client.listTools();
findings.tools = tools.length;
findings.toolsListBytes = bytes(JSON.stringify(tools));
findings.untitled = tools
  .filter((tool) => !tool.title || !tool.annotations || typeof tool.annotations.readOnlyHint !== 'boolean')
  .map((tool) => tool.name);
findings.withOutputSchema = tools.filter((tool) => tool.outputSchema).map((tool) => tool.name).sort();

// Open, snapshot, act by a ref from the snapshot.
const opened = await call('open', 'browser_open', { url: `${base}/form.html` });
findings.opened = !opened.result.isError && /in tab t\d+/.test(opened.text);
const snapshot = await call('snapshot', 'browser_snapshot', {});
const add = /button "Add one"[^\n]*?\[ref=(e\d+)\]/.exec(snapshot.text)?.[1];
findings.ref = add ?? null;
const acted = await call('act', 'browser_act', { action: 'click', ref: add });
findings.acted = !acted.result.isError;

// Data: tabs, a wait, a value, an inspection, content, console, network.
const tabs = await call('list_tabs', 'browser_list_tabs', {});
findings.tabs = tabs.data ?? null;
const waited = await call('wait', 'browser_wait', {
  script: "document.getElementById('count').textContent === '1'",
});
findings.waitedMs = waited.data?.waitedMs ?? null;
const executed = await call('execute', 'browser_execute', {
  script: "console.log('hello from the SDK test'); return arguments[0] + arguments[1]",
  args: [40, 2],
});
findings.value = executed.data?.value ?? null;
const inspected = await call('inspect', 'browser_inspect', { ref: add });
findings.inspectedTag = inspected.data?.inspection?.tag ?? null;
const facts = await call('content_json', 'browser_content', { format: 'json' });
findings.contentTitle = facts.data?.data?.title ?? null;
const markdown = await call('content_markdown', 'browser_content', {});
findings.markdown = markdown.data ?? null;
const consoleRead = await call('console', 'browser_console', {});
findings.console = {
  cursor: consoleRead.data?.cursor ?? null,
  texts: (consoleRead.data?.entries ?? []).map((entry) => entry.text),
};
const network = await call('network', 'browser_network', {});
const page = (network.data?.requests ?? []).find((request) => request.url.endsWith('/form.html'));
findings.network = { cursor: network.data?.cursor ?? null, page: page ?? null };
if (page) {
  const body = await call('network_body', 'browser_network', { body: page.seq });
  findings.body = body.data?.body ?? null;
}

// Errors: data with the code, isError still true; and a script that throws.
const stale = await call('act_error', 'browser_act', { action: 'click', ref: 'e9999' });
findings.actError = {
  isError: stale.result.isError === true,
  code: stale.data?.error?.code ?? null,
  textCode: /^Error ([A-Z_]+):/.exec(stale.text)?.[1] ?? null,
  hint: Boolean(stale.data?.error?.hint),
};
const missing = await call('inspect_error', 'browser_inspect', { ref: 'e9999' });
findings.inspectError = {
  isError: missing.result.isError === true,
  code: missing.data?.error?.code ?? null,
};
const threw = await call('execute_error', 'browser_execute', { script: "throw new Error('boom')" });
findings.threw = {
  isError: threw.result.isError === true,
  code: threw.data?.error?.code ?? null,
  message: threw.data?.error?.message ?? null,
};

// Progress: a wait that runs out tells the client what it does, with its
// own bound (2.5 s asked, 5 s to answer in) as the total.
const progress = [];
await client.callTool(
  { name: 'browser_wait', arguments: { text: 'Never on this page', timeoutMs: 2500 } },
  undefined,
  { timeout: CALL_TIMEOUT_MS, onprogress: (update) => progress.push(update) },
);
findings.progress = {
  count: progress.length,
  total: progress[0]?.total ?? null,
  message: progress[0]?.message ?? null,
};

// Cancellation reaches the page: a wait whose predicate counts its checks
// is cancelled by the client; the count then stops.
const cancel = new AbortController();
const waiting = client
  .callTool(
    { name: 'browser_wait', arguments: { script: '(window.checks = (window.checks || 0) + 1, false)', timeoutMs: 20000 } },
    undefined,
    { timeout: CALL_TIMEOUT_MS, signal: cancel.signal },
  )
  .then(() => 'answered', (error) => (error?.name === 'AbortError' || /abort/i.test(String(error)) ? 'aborted' : String(error)));
const checks = async () => (await call('checks', 'browser_execute', { script: 'window.checks || 0' })).data?.value ?? 0;
const started = Date.now();
while ((await checks()) < 3 && Date.now() - started < 10000) {
  await new Promise((next) => setTimeout(next, 20));
}
cancel.abort();
findings.cancelled = await waiting;
// The server hears the cancellation a moment later; then nothing counts.
const pause = (ms) => new Promise((next) => setTimeout(next, ms));
await pause(200);
const settled = await checks();
await pause(400);
findings.counterStopped = (await checks()) === settled;

// Long answers, where data with its keys on every entry would outweigh
// the text: a page that logs some 220 console messages of every level
// (with where they came from, and stacks) and makes some 100 requests; a
// big value; the facts of a long page; every computed style; eight tabs.
await call('open_busy', 'browser_open', { url: `${base}/busy.html`, newTab: true });
await call('wait_busy', 'browser_wait', { script: 'window.busyDone === true', timeoutMs: 20000 });
const longConsole = await call('console_long', 'browser_console', { limit: 1000 });
await call('console_errors', 'browser_console', { level: 'error', limit: 1000 });
const longNetwork = await call('network_long', 'browser_network', { limit: 1000 });
await call('network_headers', 'browser_network', { limit: 1000, headers: true });
await call('network_failed', 'browser_network', { failed: true, limit: 1000 });
await call('execute_big', 'browser_execute', {
  script: "return Array.from({length: 300}, (_, i) => ({id: i, name: 'owl ' + i, tags: ['night', 'barn'], price: i * 1.5, inStock: i % 2 === 0, note: i % 7 ? null : 'says \"hoo\"'}))",
});
await call('inspect_all_styles', 'browser_inspect', { selector: 'h1', styles: ['all'] });
await call('open_large', 'browser_open', { url: `${base}/large.html`, newTab: true });
await call('content_json_large', 'browser_content', { format: 'json' });
for (const page of ['article.html', 'species/barn-owl.html', 'index.html', 'colors.html', 'todo.html']) {
  await call(`open_${page}`, 'browser_open', { url: `${base}/${page}`, newTab: true });
}
const manyTabs = await call('list_tabs_many', 'browser_list_tabs', {});
findings.long = {
  consoleEntries: longConsole.data?.entries?.length ?? 0,
  consoleErrors: (longConsole.data?.entries ?? []).filter((entry) => entry.level === 'error').length,
  stacks: (longConsole.data?.entries ?? []).filter((entry) => entry.stack).length,
  requests: longNetwork.data?.requests?.length ?? 0,
  tabs: manyTabs.data?.tabs?.length ?? 0,
};

await client.close();
console.log(JSON.stringify(findings));
process.exit(0);
