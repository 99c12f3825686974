import http from 'node:http';
import puppeteer, { type Browser } from 'puppeteer-core';
import type { Clock } from '../../src/lib/clock';
import { createTestApp, type TestApp } from './app';
import { freePort } from './service-process';

export interface BrowserHarness {
  t: TestApp;
  /** The service's origin as the browser reaches it. */
  origin: string;
  browser: Browser;
  close(): Promise<void>;
}

/**
 * The test app on a real port, and Debian's Chromium (headless; CHROMIUM_PATH overrides) to drive
 * it as a person would. `host` is the origin's host: `localhost` where WebAuthn needs a domain
 * as its relying party id. PUBLIC_BASE_URL is that origin, so links and pages point at it. `clock`:
 * the service's (a manual one by default; a flow timed by a real client wants the system's).
 */
export async function startBrowserHarness(host: 'localhost' | '127.0.0.1', env: Record<string, string> = {}, clock?: Clock): Promise<BrowserHarness> {
  const port = await freePort();
  const origin = `http://${host}:${port}`;
  const t = await createTestApp({ env: { ...env, PUBLIC_BASE_URL: origin }, clock });
  const server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const browser = await puppeteer.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox'] });
  return {
    t,
    origin,
    browser,
    close: async () => {
      await browser.close();
      await new Promise((resolve) => server.close(resolve));
      await t.close();
    },
  };
}
