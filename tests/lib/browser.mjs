// tests/lib/browser.mjs - headless Chromium (Debian's chromium package) driven by Playwright
// (playwright-core from npm: no browser download of its own).
//
//   const browser = await launchChromium();   // throws, with what to install, when it cannot
//   const page = await browser.newPage();
//
// CHROMIUM names the binary (default: chromium or chromium-browser on PATH, /usr/bin/chromium).
// A browser test fails rather than skips when Chromium cannot run: the status page is only
// tested in a real browser.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

export function chromiumPath() {
  const candidates = [process.env.CHROMIUM,
    ...(process.env.PATH || '').split(':').flatMap((d) => [path.join(d, 'chromium'),
                                                           path.join(d, 'chromium-browser')]),
    '/usr/bin/chromium'].filter(Boolean);
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch { /* next */ }
  }
  throw new Error('Chromium is not installed: apt-get install chromium (scripts/install-deps.sh ' +
                  'test does), or set CHROMIUM to its binary');
}

export async function launchChromium() {
  let playwright;
  try {
    playwright = await import('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core is missing: run npm ci in tests/ (${e.message})`);
  }
  const executablePath = chromiumPath();
  const browser = await playwright.chromium.launch({
    executablePath,
    headless: true,
    // Root (CI) cannot use Chromium's own sandbox; /dev/shm may be small in containers.
    args: ['--no-sandbox', '--disable-dev-shm-usage'],
  });
  // Playwright gives up on a wait or a navigation after 30 s, which a loaded machine reaches
  // with a correct page: every page waits as long as it takes (ctest's timeout bounds a hang).
  const newPage = browser.newPage.bind(browser);
  browser.newPage = async (...args) => {
    const page = await newPage(...args);
    page.setDefaultTimeout(0);
    return page;
  };
  return browser;
}
