import path from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { LOCAL_FAKES } from '../support/app';
import { testDbKind } from '../support/env';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { adminSql, freePort, startService, type ServiceProcess } from '../support/service-process';

/**
 * The real service process (src/main.ts) on a scratch database: a slow-loris body is cut at the
 * request timeout, a connection that never sends a byte at the headers timeout (on the API's and
 * the metrics' listeners), and SIGTERM under load lets in-flight requests finish, refuses new connections
 * and exits 0. Runs with the server-database pass only (the process is the same either way).
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;
const REQUEST_TIMEOUT_MS = 2000;
// Shorter than the worker runtime's 1.5 s answer below: a request whose head has arrived is not cut by it.
const HEADERS_TIMEOUT_MS = 1000;

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
  let service: ServiceProcess;
  let port: number;
  let metricsPort: number;
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
    await adminSql(`CREATE DATABASE ${database}`);
    await new Promise<void>((r) => runtime.listen(0, '127.0.0.1', r));
    // Address verification is another suite's: off here, the signed-up user acts at once.
    // --expose-gc as the start command passes it, and a probe that reports each collection.
    const gcProbe = path.join(__dirname, '..', 'support', 'gc-probe.cjs');
    metricsPort = await freePort();
    service = await startService(database, { EMAIL_VERIFICATION: 'optional', METRICS_PORT: String(metricsPort), REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), NODE_OPTIONS: `--expose-gc --require ${gcProbe}`, ...LOCAL_FAKES });
    port = service.port;
  }, 120_000);

  afterAll(async () => {
    await service?.kill();
    await new Promise<void>((r) => runtime.close(() => r()));
    await adminSql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it("hands start-up's garbage back once the router is ready, before the first API answer (src/main.ts)", async () => {
    const answer = await fetch(`${service.url}/v1/org`);
    expect(answer.status).toBe(401);
    expect(service.stderr()).toContain('gc-probe: full collection');
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

  it('closes connections that never send a byte at the headers timeout, with a 408, on the API\'s and the metrics\' listeners', async () => {
    const started = Date.now();
    // The metrics listener kept Node's defaults before: a silent socket there lived 60 to 90 s.
    const closed = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        new Promise<{ lifetime: number; received: string }>((resolve) => {
          const socket = net.connect(i % 2 === 0 ? port : metricsPort, '127.0.0.1');
          const giveUp = setTimeout(() => socket.destroy(), 15_000);
          // Read what comes: a socket whose received bytes are never read never sees the end.
          let received = '';
          socket.on('data', (chunk) => (received += chunk));
          socket.on('close', () => {
            clearTimeout(giveUp);
            resolve({ lifetime: Date.now() - started, received });
          });
          socket.on('error', () => undefined);
        }),
      ),
    );
    for (const { lifetime, received } of closed) {
      expect(lifetime).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 200);
      expect(lifetime).toBeLessThan(HEADERS_TIMEOUT_MS + 3000);
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
    }
    // A connection that sends its request later than that, on a fresh socket, is still served.
    expect((await request(port, 'GET', '/health')).status).toBe(200);
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

    const exit = service.stop();
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
