import { mkdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import * as oauth from 'openid-client';
import type { Browser, Page } from 'puppeteer-core';
import type { TestApp } from './app';
import { PASSWORD, type OrgOwner } from './factories';

/**
 * What the hosted OAuth pages' browser tests share: an organization client written straight into
 * its table, an unmodified standard client (openid-client) configured from the discovery document,
 * a fresh browser context per person, and screenshots in PAGE_SHOTS_DIR (default: a folder in the
 * temp dir) to look at each page.
 */
/** The application's redirect endpoint: it only has to answer, the tests read the URL the browser lands on. */
export async function startRedirectTarget(): Promise<{ redirectUri: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end('back at the application'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    redirectUri: `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const shotsDir = process.env.PAGE_SHOTS_DIR ?? path.join(tmpdir(), 'cp-page-shots');

export async function shoot(page: Page, name: string): Promise<void> {
  mkdirSync(shotsDir, { recursive: true });
  await page.screenshot({ path: path.join(shotsDir, `${name}.png`), fullPage: true });
}

export async function insertOrganizationClient(t: TestApp, owner: OrgOwner, input: { scopes: string[]; redirectUris: string[]; name?: string }): Promise<string> {
  const id = `oac_${randomUUID().replace(/-/g, '').slice(0, 26)}`;
  const now = t.clock.now();
  await t.db
    .insertInto('oauth_clients')
    .values({ id, organization_id: owner.organizationId, name: input.name ?? 'Deploy <bot>', type: 'public', redirect_uris: input.redirectUris, scopes: input.scopes, logo_url: null, secret_hash: null, created_by_member_id: owner.memberId, created_at: now, updated_at: now })
    .execute();
  return id;
}

export function clientConfig(origin: string, clientId: string): Promise<oauth.Configuration> {
  return oauth.discovery(new URL(origin), clientId, undefined, oauth.None(), { algorithm: 'oauth2', execute: [oauth.allowInsecureRequests] });
}

/** A page in a fresh browser context: no cookie of an earlier test's sign-in. */
export async function freshPage(browser: Browser): Promise<Page> {
  const context = await browser.createBrowserContext();
  return context.newPage();
}

export const mainText = (page: Page): Promise<string> => page.$eval('main', (m) => (m as unknown as { innerText: string }).innerText);

/** Submits the page's form by clicking `selector`, and waits for the answer. */
export async function submit(page: Page, selector = 'button[type=submit]') {
  const [answer] = await Promise.all([page.waitForNavigation(), page.click(selector)]);
  return answer;
}

/** Types e-mail and password into the hosted sign-in page and submits it. */
export async function signInAs(page: Page, email: string, password = PASSWORD) {
  await page.waitForSelector('input[name=email]');
  await page.type('#email', email);
  await page.type('#password', password);
  return submit(page);
}

/** The claims of a JWT (unverified: the API verifies; the test reads what it carries). */
export function claimsOf(jwt: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
}
