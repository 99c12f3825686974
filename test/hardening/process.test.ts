import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { LOCAL_FAKES, TEST_RATE_LIMITS, TEST_SECRET_KEY } from '../support/app';
import { ADMIN_DATABASE, serverUrl, testDbKind } from '../support/env';
import { PASSWORD, uniqueEmail } from '../support/factories';

/**
 * The real service process (src/main.ts) on a scratch database: a slow-loris body is cut at the
 * request timeout, and SIGTERM under load lets in-flight requests finish, refuses new connections
 * and exits 0. Runs with the server-database pass only (the process is the same either way).
 */
const ROOT = path.resolve(__dirname, '..', '..');
const maybe = testDbKind() === 'pg' ? describe : describe.skip;
const REQUEST_TIMEOUT_MS = 2000;

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl(ADMIN_DATABASE) });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

interface Answer {
  status: number;
  body: unknown;
}

/** One request on its own connection (no keep-alive agent), so each is a distinct in-flight socket. */
function request(port: number, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, method, path: url, agent: false, headers: { ...headers, ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}) } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

maybe('the service process', () => {
  const database = `cp_proc_${randomBytes(5).toString('hex')}`;
  let child: ChildProcess;
  let port: number;
  let exit: Promise<number | null>;
  let stderr = '';
  // A worker runtime that takes 1.5 s to answer: requests to it are in flight when SIGTERM comes.
  let runtimeHits = 0;
  const runtime = http.createServer((req, res) => {
    runtimeHits++;
    setTimeout(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ version: '1.2.3', status: 'ok' }));
    }, 1500);
  });

  beforeAll(async () => {
    await admin(`CREATE DATABASE ${database}`);
    await new Promise<void>((r) => runtime.listen(0, '127.0.0.1', r));
    port = await freePort();
    child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        DATABASE_URL: serverUrl(database),
        SECRET_KEY: TEST_SECRET_KEY,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
        ...TEST_RATE_LIMITS,
        ...LOCAL_FAKES,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr!.on('data', (c) => (stderr += c));
    exit = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 90_000;
    for (;;) {
      try {
        if ((await request(port, 'GET', '/health')).status === 200) break;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the service did not start: ${stderr}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }, 120_000);

  afterAll(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await new Promise<void>((r) => runtime.close(() => r()));
    await admin(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it('cuts a slow-loris body at the request timeout', async () => {
    const started = Date.now();
    const outcome = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      let answer = '';
      socket.on('connect', () => socket.write('POST /v1/auth/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"email":'));
      const drip = setInterval(() => socket.writable && socket.write(' '), 300);
      socket.on('data', (c) => (answer += c));
      socket.on('close', () => {
        clearInterval(drip);
        resolve(answer.split('\r\n')[0] || 'closed');
      });
      socket.on('error', () => undefined);
      setTimeout(() => socket.destroy(), 15_000);
    });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 200);
    expect(elapsed).toBeLessThan(REQUEST_TIMEOUT_MS + 3000);
    expect(outcome).toMatch(/408|closed/);
  }, 30_000);

  it('on SIGTERM finishes in-flight requests, refuses new connections and exits 0', async () => {
    const signUp = await request(port, 'POST', '/v1/auth/sign-up', { email: uniqueEmail('sig'), password: PASSWORD, name: 'Sig' });
    const auth = { authorization: `Bearer ${(signUp.body as { session: { token: string } }).session.token}` };
    expect((await request(port, 'POST', '/v1/org', { name: 'Sig' }, auth)).status).toBe(201);
    const address = runtime.address() as net.AddressInfo;
    const worker = await request(port, 'POST', '/v1/workers', { name: 'slow', runtimeUrl: `http://127.0.0.1:${address.port}` }, auth);
    expect(worker.status).toBe(201);
    const workerId = (worker.body as { item: { id: string } }).item.id;

    const inFlight = Array.from({ length: 8 }, () => request(port, 'GET', `/v1/workers/${workerId}/runtime`, undefined, auth));
    const deadline = Date.now() + 10_000;
    while (runtimeHits < 8 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(runtimeHits).toBe(8);

    child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 200));
    const refused = await request(port, 'GET', '/health').then(
      (a) => `answered ${a.status}`,
      (err: NodeJS.ErrnoException) => err.code,
    );
    expect(['ECONNREFUSED', 'ECONNRESET']).toContain(refused);

    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(answers[0]!.body).toEqual({ version: '1.2.3', status: 'ok' });
    expect(await exit).toBe(0);
  }, 60_000);
});
