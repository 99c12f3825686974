import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'puppeteer-core';
import { startBrowserHarness, type BrowserHarness } from '../support/browser';
import { contractOperations } from '../../scripts/error-contract';
import { contract } from '../../src/server/openapi';

/**
 * The reference page (/docs) as a reader's browser runs it, in Debian's Chromium (headless), under
 * the page's Content-Security-Policy: Swagger UI loads the contract and shows every operation,
 * and the browser reports no violation of the policy and no error. A screenshot of the page is
 * written to PAGE_SHOTS_DIR (default: a folder in the temp dir).
 */
let harness: BrowserHarness;
let browser: Browser;
let origin: string;
const shots = process.env.PAGE_SHOTS_DIR ?? path.join(tmpdir(), 'cp-page-shots');

beforeAll(async () => {
  mkdirSync(shots, { recursive: true });
  harness = await startBrowserHarness('127.0.0.1');
  ({ origin, browser } = harness);
});
afterAll(async () => {
  await harness?.close();
});

/** The reference page in a new tab, with what the browser reports about it collected. */
async function openDocs(hash = '') {
  const page = await browser.newPage();
  // What the browser itself reports (CSP refusals are logged by the browser, not by a page
  // script), what the page's scripts log or throw, and the policy violations the page sees.
  const problems: string[] = [];
  const cdp = await page.createCDPSession();
  await cdp.send('Log.enable');
  cdp.on('Log.entryAdded', ({ entry }) => {
    if (entry.level === 'error' || entry.level === 'warning') problems.push(`${entry.source}: ${entry.text}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warn') problems.push(`console.${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${String(error)}`));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  await page.setViewport({ width: 1280, height: 900 });
  const opened = await page.goto(`${origin}/docs/${hash}`, { waitUntil: 'networkidle0', timeout: 120_000 });
  return { page, problems, opened: opened! };
}

it('Swagger UI shows every operation under the page policy, with no violation or error in the console', async () => {
  const { page, problems, opened } = await openDocs();
  expect(opened.status()).toBe(200);
  const policy = opened.headers()['content-security-policy'];
  expect(policy).toMatch(/default-src 'none'/);
  expect(policy).toMatch(/script-src 'self'(;|$)/);
  expect(policy).not.toMatch(/unsafe-inline|unsafe-eval/);
  expect(await page.$eval('.info .title', (h) => h.textContent)).toContain(contract.info.title);
  await page.screenshot({ path: path.join(shots, 'docs-1-top.png') });

  // Swagger UI renders only the operations in view (a virtual list): scroll through the page and
  // collect every operation it shows on the way.
  await page.waitForSelector('.opblock-summary', { timeout: 60_000 });
  const shown = new Set<string>();
  for (let step = 0; step < 500; step++) {
    const inView = await page.$$eval('.opblock-summary', (blocks) =>
      blocks.map((b) => `${b.querySelector('.opblock-summary-method')?.textContent?.toLowerCase()} ${b.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`),
    );
    for (const operation of inView) shown.add(operation);
    const atEnd = await page.evaluate(() => {
      const before = window.scrollY;
      window.scrollBy(0, window.innerHeight * 0.8);
      return window.scrollY === before;
    });
    if (atEnd) break;
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
  const operations = contractOperations(contract as never);
  expect([...shown].sort()).toEqual(operations.map((op) => `${op.method} ${op.path}`).sort());
  expect(problems).toEqual([]);
  await page.close();
});

it('an operation opens with its examples (a deep link): POST /v1/teams names teams.manage in its 403', async () => {
  const { page, problems } = await openDocs('#/Teams/createTeam');
  const operation = '#operations-Teams-createTeam';
  await page.waitForSelector(`${operation} .responses-table`, { timeout: 60_000 });
  const responses = await page.$eval(`${operation} .responses-table`, (table) => (table as unknown as { innerText: string }).innerText);
  expect(responses).toContain('This action needs the permission teams.manage.');
  await page.$eval(operation, (el) => el.scrollIntoView());
  await page.screenshot({ path: path.join(shots, 'docs-2-create-team.png') });
  expect(problems).toEqual([]);
  await page.close();
});
