import http from 'node:http';
import net from 'node:net';
import { sql } from 'kysely';
import { LOCAL_FAKES, createTestApp, type TestApp } from '../support/app';
import { testDbKind } from '../support/env';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';

/**
 * A worker runtime that hangs or refuses: 1,000 runtime calls each end in 502 within the timeout,
 * and afterwards no socket to the runtime stays open and no database client is held (the app
 * still serves a burst at once).
 */
const TIMEOUT_MS = 100;
const CALLS = 1000;
const CONCURRENCY = 25;

let t: TestApp;
let owner: OrgOwner;
let hangingOpen = 0;
const hanging = http.createServer(() => {
  // Never answers.
});
hanging.on('connection', (socket) => {
  hangingOpen++;
  socket.on('close', () => hangingOpen--);
});
let refusedPort: number;

function tcpSockets(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
}

beforeAll(async () => {
  t = await createTestApp({ env: LOCAL_FAKES, settings: { workerRuntimeTimeoutMs: TIMEOUT_MS } });
  owner = await createOrganization(t);
  await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
  refusedPort = await new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}, 120_000);
afterAll(async () => {
  hanging.closeAllConnections();
  await new Promise<void>((r) => hanging.close(() => r()));
  await t.close();
});

async function workerAt(runtimeUrl: string): Promise<string> {
  const res = await t.http.post('/v1/workers').set(...bearer(owner.token)).send({ name: 'upstream', runtimeUrl });
  expect(res.status).toBe(201);
  return res.body.item.id;
}

it(`answers ${CALLS} calls to a hanging or refusing runtime with a bounded 502 and leaks nothing`, async () => {
  const hangId = await workerAt(`http://127.0.0.1:${(hanging.address() as net.AddressInfo).port}`);
  const downId = await workerAt(`http://127.0.0.1:${refusedPort}`);
  const socketsBefore = tcpSockets();

  const wrong: string[] = [];
  let slowest = 0;
  let next = 0;
  const lane = async () => {
    while (next < CALLS) {
      const i = next++;
      const started = Date.now();
      const res = await t.http.get(`/v1/workers/${i % 2 === 0 ? hangId : downId}/runtime`).set(...bearer(owner.token));
      slowest = Math.max(slowest, Date.now() - started);
      if (res.status !== 502 || res.body.error !== 'worker_runtime_error') wrong.push(`${res.status} ${JSON.stringify(res.body)}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  expect(wrong.slice(0, 5)).toEqual([]);
  // Bounded: the timeout plus queueing behind the other lanes, never a hang.
  expect(slowest).toBeLessThan(TIMEOUT_MS + 5000);

  // Every socket to the hanging runtime is closed by the client side once its call timed out.
  const deadline = Date.now() + 5000;
  while (hangingOpen > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(hangingOpen).toBe(0);
  // The process holds no more sockets than before, apart from the database pool growing to its size (10).
  expect(tcpSockets()).toBeLessThanOrEqual(socketsBefore + 10 + 5);

  // No database client was left checked out: a burst larger than the pool is served at once.
  const burst = await Promise.all(Array.from({ length: 30 }, () => t.http.get('/v1/workers').set(...bearer(owner.token))));
  expect(burst.map((r) => r.status)).toEqual(Array(30).fill(200));
  if (testDbKind() === 'pg') {
    const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid()`.execute(t.db);
    expect(rows[0]!.n).toBe(0);
  }
}, 180_000);
