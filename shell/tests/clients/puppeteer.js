// Puppeteer's connect against browser-shell's endpoint: it opens a page of
// its own, types there, and reports which pages it sees.
// Env: CDP_ENDPOINT (ws://…), BASE (the fixture server). Prints one JSON line.
const puppeteer = require('puppeteer-core');

(async () => {
  const browser = await puppeteer.connect({ browserWSEndpoint: process.env.CDP_ENDPOINT, protocolTimeout: 20000 });
  const page = await browser.newPage();
  await page.goto(`${process.env.BASE}/form.html`);
  await page.type('#name', 'Puppeteer');
  const name = await page.$eval('#name', (input) => input.value);
  const seen = (await browser.pages()).map((p) => p.url());
  await page.close();
  await browser.disconnect();
  console.log(JSON.stringify({ name, seen }));
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
