import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { transformFileSync } from '@swc/core';
import { loadSettings } from '../../src/settings';
import { testDbKind, serverUrl } from '../support/env';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { adminSql, call, freePort } from '../support/service-process';
import { compose, composeEnvironment, dockerfileImages, runtimeStage } from '../support/deploy';

/**
 * The image as an operator starts it with compose.yaml, without a container engine (none runs
 * where CI does): the Dockerfile's runtime stage laid out in a scratch root — its WORKDIR owned by
 * root with the compiled service in it, the directories its RUN lines give to its USER, compose's
 * volumes on top (a named volume starts with the owner of the directory it is mounted on) — and
 * its CMD run as an unprivileged user (uid 1000, `setpriv`; the current user when the test is not
 * root) with the image's ENV and compose's environment. Image paths (`/data`) are read inside the
 * scratch root. What differs from a container: the database URL and the ports, the compiler (swc
 * here, tsc in the image: both compile the same TypeScript to CommonJS), and node_modules (this
 * checkout's). Server database only.
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;
const ROOT = path.resolve(__dirname, '..', '..');
const UNPRIVILEGED = 1000;
const isRoot = process.getuid?.() === 0;

/** Node's release schedule: the last day each LTS line gets fixes. */
const LTS_END_OF_LIFE: Record<string, string> = { '20': '2026-04-30', '22': '2027-04-30', '24': '2028-04-30' };

function compileInto(dist: string): void {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
  for (const file of [...walk('src'), ...walk('generated')]) {
    const out = path.join(dist, file);
    mkdirSync(path.dirname(out), { recursive: true });
    if (file.endsWith('.json')) cpSync(path.join(ROOT, file), out);
    else if (file.endsWith('.ts') && !file.endsWith('.test.ts')) {
      const { code } = transformFileSync(path.join(ROOT, file), { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } });
      writeFileSync(out.replace(/\.ts$/, '.js'), code);
    }
  }
}

/** Whether another user can reach `dir` (every directory on the way lets others through). */
function reachableByOthers(dir: string): boolean {
  for (let at = dir; ; at = path.dirname(at)) {
    if ((statSync(at).mode & 0o001) === 0) return false;
    if (at === path.dirname(at)) return true;
  }
}

/** The checkout's `name` in the image's WORKDIR: linked, or hard-linked copies where the unprivileged user cannot reach the checkout. */
function provide(name: string, into: string): void {
  if (!isRoot || reachableByOthers(ROOT)) symlinkSync(path.join(ROOT, name), path.join(into, name));
  else execFileSync('cp', ['-al', path.join(ROOT, name), path.join(into, name)]);
}

maybe('the image started as compose.yaml starts it, as its non-root user', () => {
  const database = `cp_image_${randomBytes(5).toString('hex')}`;
  const stage = runtimeStage();
  const scratch = mkdtempSync(path.join(tmpdir(), 'image-'));
  const inImage = (p: string) => path.join(scratch, p);
  const app = inImage(stage.workdir);
  const vars = { POSTGRES_PASSWORD: 'unused', SECRET_KEY: 'image-start-secret-key-0123456789abcdef', BOOTSTRAP_TOKEN: 'image-start-bootstrap-token' };
  let env: Record<string, string>;
  let child: ChildProcess | undefined;
  let output = '';
  let base: string;

  function start(environment: Record<string, string>): ChildProcess {
    const [node, ...args] = stage.cmd;
    expect(node).toBe('node');
    const argv = isRoot ? ['setpriv', `--reuid=${UNPRIVILEGED}`, `--regid=${UNPRIVILEGED}`, '--clear-groups', '--', process.execPath, ...args] : [process.execPath, ...args];
    return spawn(argv[0]!, argv.slice(1), { cwd: app, env: { PATH: process.env.PATH ?? '', HOME: '/home/node', ...environment }, stdio: ['ignore', 'pipe', 'pipe'] });
  }

  beforeAll(async () => {
    await adminSql(`CREATE DATABASE ${database}`);
    chmodSync(scratch, 0o755);
    // WORKDIR and what COPY puts there: root's, not writable by the image's user.
    mkdirSync(app, { recursive: true });
    compileInto(path.join(app, 'dist'));
    for (const dir of ['node_modules', 'generated', 'openapi']) provide(dir, app);
    cpSync(path.join(ROOT, 'package.json'), path.join(app, 'package.json'));
    if (!isRoot) chmodSync(app, 0o555);
    // The directories the image gives its user, then compose's volumes mounted on them.
    for (const dir of stage.ownedDirs) {
      mkdirSync(inImage(dir), { recursive: true });
      if (isRoot) chownSync(inImage(dir), UNPRIVILEGED, UNPRIVILEGED);
    }
    for (const volume of compose.services['api-1']!.volumes ?? []) mkdirSync(inImage(volume.split(':')[1]!), { recursive: true });

    const port = await freePort();
    const fromCompose = composeEnvironment('api-1', vars);
    // The image's ENV, then compose's; image paths inside the scratch root; the test's database and ports.
    env = Object.fromEntries(Object.entries({ ...stage.env, ...fromCompose }).map(([k, v]) => [k, v.startsWith('/') ? inImage(v) : v]));
    Object.assign(env, { DATABASE_URL: serverUrl(database), PORT: String(port), METRICS_PORT: String(await freePort()) });
    base = `http://127.0.0.1:${port}`;
    child = start(env);
    child.stdout!.on('data', (c) => (output += c));
    child.stderr!.on('data', (c) => (output += c));
    const deadline = Date.now() + 60_000;
    for (;;) {
      const up = await fetch(`${base}/health`).then((r) => r.ok, () => false);
      if (up) break;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the image's command did not start:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }, 120_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    rmSync(scratch, { recursive: true, force: true });
    await adminSql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it("listens on the container's interface, where bootstrap needs compose's BOOTSTRAP_TOKEN", async () => {
    expect(env.HOST).toBe('0.0.0.0');
    const body = { email: uniqueEmail('boot'), password: PASSWORD, name: 'Boot', organizationName: 'Boot' };
    expect((await call(base, 'POST', '/v1/bootstrap', body)).status).toBe(401);
    const res = await fetch(`${base}/v1/bootstrap`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-bootstrap-token': vars.BOOTSTRAP_TOKEN }, body: JSON.stringify(body) });
    expect(res.status).toBe(201);
    expect(((await res.json()) as { organization: { plan: string } }).organization.plan).toBe('enterprise');
  });

  it('runs as an unprivileged user and delivers mail as shipped: a file whose link verifies the address', async () => {
    if (isRoot) expect(readFileSync(`/proc/${child!.pid}/status`, 'utf8')).toMatch(new RegExp(`^Uid:\\s+${UNPRIVILEGED}\\s`, 'm'));
    // Where the service's own settings say mail goes, from the working directory the image runs in.
    const settings = loadSettings(env);
    expect(settings.mail.smtpUrl).toBeUndefined();
    const folder = path.resolve(app, settings.mail.dir);

    const email = uniqueEmail('image');
    const signUp = await call(base, 'POST', '/v1/auth/sign-up', { email, password: PASSWORD, name: 'Image' });
    expect(signUp.status).toBe(201);
    const deadline = Date.now() + 15_000;
    let file: string | undefined;
    while (!file && Date.now() < deadline) {
      file = (() => {
        try {
          return readdirSync(folder).find((n) => n.endsWith('.eml') && readFileSync(path.join(folder, n), 'utf8').includes(`To: ${email}`));
        } catch {
          return undefined;
        }
      })();
      if (!file) await new Promise((r) => setTimeout(r, 200));
    }
    expect({ file: file ?? null, log: file ? '' : output }).toEqual({ file: expect.stringMatching(/\.eml$/), log: '' });
    const line = readFileSync(path.join(folder, file!), 'utf8').split('\r\n').find((l) => l.includes('/verify-email?token='))!;
    const verified = await call(base, 'POST', '/v1/auth/verify-email', { token: new URL(line).searchParams.get('token') });
    expect(verified.status).toBe(200);
    expect((await call(base, 'GET', '/ready')).body).toEqual({ status: 'ok' });
  });

  it('refuses to start bootstrap-open: the same command without BOOTSTRAP_TOKEN exits naming it', async () => {
    const { BOOTSTRAP_TOKEN: _token, ...open } = env;
    const refused = start({ ...open, PORT: String(await freePort()) });
    let text = '';
    refused.stderr!.on('data', (c) => (text += c));
    const code = await new Promise<number | null>((r) => refused.once('exit', r));
    expect({ code, text }).toEqual({ code: 2, text: expect.stringMatching(/^Invalid setting: HOST=0\.0\.0\.0 .*BOOTSTRAP_TOKEN is unset.*BOOTSTRAP_ALLOW_OPEN=on/) });
  });

  it('builds and runs on a Node LTS line that still gets fixes', () => {
    for (const image of dockerfileImages()) {
      const major = /^node:(\d+)/.exec(image)?.[1];
      expect({ image, endOfLife: LTS_END_OF_LIFE[major ?? ''] ?? 'not an LTS line' }).toEqual({ image, endOfLife: expect.stringMatching(/^\d{4}-/) });
      expect({ image, supported: Date.parse(LTS_END_OF_LIFE[major!]!) > Date.now() }).toEqual({ image, supported: true });
    }
  });
});
