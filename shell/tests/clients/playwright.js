// Playwright's connectOverCDP against browser-shell's endpoint: it opens a
// page of its own, fills a form there, and reports which pages it sees.
// Env: CDP_ENDPOINT (ws://…), BASE (the fixture server). Prints one JSON line.
const { chromium } = require('playwright-core');

(async () => {
  const browser = await chromium.connectOverCDP(process.env.CDP_ENDPOINT, { timeout: 20000 });
  const context = browser.contexts()[0];
  const page = await context.newPage();
  await page.goto(`${process.env.BASE}/form.html`);
  await page.fill('#name', 'Playwright');
  await page.check('#terms');
  const name = await page.inputValue('#name');
  const seen = browser.contexts().flatMap((c) => c.pages()).map((p) => p.url());
  await page.close();
  // Leaving: the shell's browser stays up.
  await browser.close();
  console.log(JSON.stringify({ name, seen }));
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
