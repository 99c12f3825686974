import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { contractVersion, retryAfterMs } from '@org-control-plane/client';
import type { JobRunner } from '../../src/jobs';
import { createTestApp, type TestApp } from '../support/app';
import { testDbKind } from '../support/env';
import { mailEnv, startMailbox, testMailer, tokenIn, type Mailbox } from '../support/mailbox';
import { duplicateTeamError, fullScenario, retryAfter429, type ScenarioResult } from './scenario';

/**
 * The typed client package (packages/client) dogfooded: scenario.ts drives bootstrap → org → team →
 * invitation (token read from the mail a real SMTP server received) → acceptance → marketplace →
 * plugin → grants → paginated list, through the package only, over HTTP against the service on a
 * port (createApp on a fresh database, every response checked against the contract, mail sent by
 * the service's own job runner); and the scenario compiles under the strictest options with no
 * cast. Server database only: the contract layer and the SQL are covered on PGlite elsewhere.
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;
const ROOT = path.resolve(__dirname, '..', '..');
const HERE = path.relative(ROOT, __dirname);
const run = promisify(execFile);

maybe('the client package, dogfooded', () => {
  let mailbox: Mailbox;
  let t: TestApp;
  let mailer: JobRunner;
  let server: http.Server;
  let baseUrl: string;
  let compiled: Promise<{ ok: boolean; output: string }>;
  let result: ScenarioResult;

  beforeAll(async () => {
    // The strict compile runs beside the service's start-up (another process, the other core).
    compiled = run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(HERE, 'tsconfig.json')], { cwd: ROOT }).then(
      ({ stdout }) => ({ ok: true, output: stdout }),
      (err: { stdout?: string; stderr?: string }) => ({ ok: false, output: `${err.stdout ?? ''}${err.stderr ?? ''}` }),
    );
    mailbox = await startMailbox();
    // A fresh database has no user: bootstrap is open.
    t = await createTestApp({ env: { ...mailEnv(mailbox), EMAIL_VERIFICATION: 'optional' } });
    mailer = testMailer(t);
    mailer.start();
    server = http.createServer(t.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 120_000);

  afterAll(async () => {
    await mailer?.stop();
    await new Promise((resolve) => server?.close(resolve));
    await t?.close();
    await mailbox?.close();
    await compiled?.catch(() => undefined);
  });

  it('runs the whole scenario through the package', async () => {
    result = await fullScenario({
      baseUrl,
      invitationToken: async (email) => tokenIn(await mailbox.waitFor(email, { subject: /invit/i }), '/accept-invitation'),
    });
    // Four grants, one page each: the creator's (manager) and the org-wide one (viewer) from the
    // plugin's creation, the team's (editor), the member's (viewer).
    expect(result.grants).toHaveLength(4);
    expect(new Set(result.grants.map((g) => g.id)).size).toBe(4);
    expect(result.grants.filter((g) => g.orgMembershipId !== null && g.role === 'manager')).toHaveLength(1);
    expect(result.grants.filter((g) => g.orgWide)).toHaveLength(1);
    expect(result.grants.filter((g) => g.teamId !== null && g.role === 'editor')).toHaveLength(1);
    expect(result.grants.filter((g) => g.orgMembershipId !== null && g.role === 'viewer')).toHaveLength(1);
  }, 60_000);

  it('narrows a duplicate team name to team_name_taken', async () => {
    expect(await duplicateTeamError(result.admin, result.teamName)).toBe('team_name_taken');
  }, 30_000);

  it('retries a 429 after its Retry-After, for a GET; a POST only when asked', async () => {
    const seen = await retryAfter429();
    expect(seen).toMatchObject({ status: 200, requests: 2, postRequests: 1, postStatus: 429, askedRequests: 2, askedStatus: 200 });
    expect(seen.waitedMs).toBeGreaterThanOrEqual(950);
    expect(seen.waitedMs).toBeLessThan(5000);
  }, 30_000);

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Fri, 27 Nov 2026 12:00:02 GMT', now)).toBe(2000);
    expect(retryAfterMs('Fri, 27 Nov 2026 11:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-1', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });

  it('compiles the scenario under --strict --noUncheckedIndexedAccess --exactOptionalPropertyTypes', async () => {
    const { ok, output } = await compiled;
    expect(output).toBe('');
    expect(ok).toBe(true);
  }, 120_000);

  it('has no cast, `any` or non-null assertion in the scenario', async () => {
    const source = await readFile(path.join(__dirname, 'scenario.ts'), 'utf8');
    const code = source.replace(/\/\/[^\n]*/g, '').replace(/\/\*[\s\S]*?\*\//g, '');
    expect(code.match(/\bas\s+(?!const\b)[\w{[(]/g) ?? []).toEqual([]);
    expect(code.match(/\bas const\b/g) ?? []).toEqual([]);
    expect(code.match(/\bany\b/g) ?? []).toEqual([]);
    expect(code.match(/[\w)\]]!(?=[.[(),;\s])/g) ?? []).toEqual([]);
    expect(code.match(/@ts-(ignore|expect-error|nocheck)/g) ?? []).toEqual([]);
  });

  it('is versioned with the contract', async () => {
    // The info block is at the top of the bundle; parsing only it keeps this quick.
    const head = (await readFile(path.join(ROOT, 'openapi', 'published.yaml'), 'utf8')).split(/\n(?=servers:)/)[0]!;
    const version: unknown = parse(head).info.version;
    const pkg = JSON.parse(await readFile(path.join(ROOT, 'packages', 'client', 'package.json'), 'utf8'));
    expect(typeof version).toBe('string');
    // npm versions are semver: the contract's label `dev` is carried as 0.0.0-dev.
    expect(version).toBe('dev');
    expect(pkg.version).toBe('0.0.0-dev');
    expect(contractVersion).toBe(version);
  });
});
