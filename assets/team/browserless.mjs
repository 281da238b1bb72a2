// Starts browserless (https://github.com/browserless/browserless) without
// Docker, as the browser pool of a browser-shell team, with Debian's
// Chromium and only the Chromium routes (the others need browsers that
// are not installed).
//
//   npm install @browserless.io/browserless@2.42.0   (PUPPETEER_SKIP_DOWNLOAD=1),
//   then, in that directory:
//   mkdir -p pw/chromium-1208/chrome-linux64
//   ln -s /usr/bin/chromium pw/chromium-1208/chrome-linux64/chrome
//   PLAYWRIGHT_BROWSERS_PATH=$PWD/pw TOKEN=… PORT=3000 HOST=127.0.0.1 \
//     CONCURRENT=8 QUEUED=8 node browserless.mjs
//
// The shells then take browsers from ws://127.0.0.1:3000/chromium?token=…
// (BROWSER_SHELL_POOL). CONCURRENT browsers run at once; QUEUED more
// connections wait in its queue; beyond that it answers 429, which the
// shells turn into BUSY after their --pool-wait-ms.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// The package as installed where this runs (the working directory).
const installed = createRequire(join(process.cwd(), 'package.json'));
const { Browserless } = await import(
  pathToFileURL(installed.resolve('@browserless.io/browserless')).href
);

const browserless = new Browserless();
const own = browserless.routeIsDisabled.bind(browserless);
browserless.routeIsDisabled = (route) => {
  const name = route.browser && route.browser.name;
  if (name && name !== 'ChromiumCDP' && name !== 'ChromiumPlaywright') return true;
  return own(route);
};
await browserless.start();
process.stdout.write('browserless is ready\n');
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, async () => {
    await browserless.stop().catch(() => {});
    process.exit(0);
  });
}
