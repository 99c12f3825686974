import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PASSWORD, uniqueEmail } from '../support/factories';
import { serverUrl, testDbKind } from '../support/env';
import { adminSql, call, startService, type ServiceProcess } from '../support/service-process';
import { startReceiver, verifyWith, type Receiver } from '../fakes/webhook-receiver';

/**
 * Dispatch shared by real service processes on one database: every event reaches every endpoint,
 * no attempt is ever in flight twice, and a process killed (SIGKILL) in the middle of a delivery
 * leaves it to be completed by another process once its lease expires. Server database only (the
 * embedded one is single-process by design).
 */
const maybe = testDbKind() === 'pg' ? describe : describe.skip;
const TIMEOUT_MS = 1000;
// Address verification is another suite's (test/api/verify-email.test.ts): off here, the signed-up user acts at once.
const ENV = { EMAIL_VERIFICATION: 'optional', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), WEBHOOK_POLL_MS: '50' };

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

maybe('webhook dispatch across service processes', () => {
  const database = `cp_whk_${randomBytes(5).toString('hex')}`;
  let receiver: Receiver;
  let a: ServiceProcess;
  let b: ServiceProcess;
  let token: string;
  const started: ServiceProcess[] = [];
  const sql = new pg.Pool({ connectionString: serverUrl(database), max: 2 });

  beforeAll(async () => {
    await adminSql(`CREATE DATABASE ${database}`);
    receiver = await startReceiver();
    a = await startService(database, ENV);
    b = await startService(database, ENV);
    started.push(a, b);
    const signUp = await call(a.url, 'POST', '/v1/auth/sign-up', { email: uniqueEmail('whk'), password: PASSWORD, name: 'Hooks' });
    token = signUp.body.session.token;
    expect((await call(a.url, 'POST', '/v1/org', { name: 'Hooks' }, token)).status).toBe(201);
  }, 240_000);

  afterAll(async () => {
    for (const p of started) await p.kill();
    await receiver.close();
    await sql.end();
    await adminSql(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  });

  it('two processes deliver every event to every endpoint, never one attempt twice at once', async () => {
    const hooks: { id: string; secret: string; path: string }[] = [];
    for (const path of ['/p1', '/p2', '/p3']) {
      const res = await call(a.url, 'POST', '/v1/webhooks', { url: receiver.url(path), events: ['webhook.updated'] }, token);
      expect(res.status).toBe(201);
      hooks.push({ id: res.body.item.id, secret: res.body.secret, path });
    }
    // 40 changes through both processes, 8 at a time (one organization's writes queue on its
    // audit chain head, so more at once only waits for the pool).
    const statuses: number[] = [];
    for (let batch = 0; batch < 5; batch++) {
      const writes = Array.from({ length: 8 }, (_, j) => batch * 8 + j).map((i) => call(i % 2 ? a.url : b.url, 'PATCH', `/v1/webhooks/${hooks[i % 3]!.id}`, { description: `change ${i}` }, token));
      statuses.push(...(await Promise.all(writes)).map((r) => r.status));
    }
    expect(statuses).toEqual(Array(40).fill(200));
    const { rows: events } = await sql.query<{ id: string }>("SELECT id FROM events WHERE type = 'webhook.updated'");
    expect(events).toHaveLength(40);
    const expected = new Set(hooks.flatMap((h) => events.map((e) => `${h.path} ${e.id}`)));
    const got = () => new Set(receiver.received.filter((r) => /^\/p\d$/.test(r.path)).map((r) => `${r.path} ${r.headers['webhook-id']}`));
    await waitFor('every delivery', () => got().size === expected.size);
    expect(got()).toEqual(expected);
    expect(receiver.maxInFlightPerKey).toBe(1);
    for (const r of receiver.received.filter((x) => /^\/p\d$/.test(x.path))) verifyWith(hooks.find((h) => h.path === r.path)!.secret, r);
    await waitFor('outcomes recorded', async () => (await sql.query("SELECT 1 FROM webhook_deliveries WHERE status <> 'succeeded'")).rowCount === 0);
    const { rows } = await sql.query<{ n: string }>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'succeeded' AND attempts = 1");
    expect(Number(rows[0]!.n)).toBe(120);
  }, 120_000);

  it('a process killed mid-delivery leaves the delivery to another process: completed, nothing lost', async () => {
    // Only `a` dispatches from here: `b` shuts down gracefully (its in-flight attempts finish).
    expect(await b.stop()).toBe(0);
    let hold = true;
    receiver.respond = (r) => (r.path === '/kill' && hold ? { delayMs: 60_000 } : { status: 200 });
    const hook = await call(a.url, 'POST', '/v1/webhooks', { url: receiver.url('/kill'), events: ['webhook.updated'] }, token);
    const changed = await call(a.url, 'PATCH', `/v1/webhooks/${hook.body.item.id}`, { description: 'deliver me' }, token);
    expect(changed.status).toBe(200);
    await waitFor('the first attempt to arrive', () => receiver.received.some((r) => r.path === '/kill'));
    await a.kill();
    hold = false;
    const { rows: before } = await sql.query<{ status: string; attempts: number; lease_until: Date | null }>(
      'SELECT status, attempts, lease_until FROM webhook_deliveries WHERE endpoint_id = $1',
      [hook.body.item.id],
    );
    expect(before).toEqual([expect.objectContaining({ status: 'pending', attempts: 1 })]);
    expect(before[0]!.lease_until).not.toBeNull();

    const c = await startService(database, ENV);
    started.push(c);
    // The lease (2 × WEBHOOK_TIMEOUT_MS + 1 s) runs out, then `c` sends the same event again.
    await waitFor('the retry', () => receiver.received.filter((r) => r.path === '/kill').length === 2, 30_000);
    const [first, second] = receiver.received.filter((r) => r.path === '/kill');
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    verifyWith(hook.body.secret, second!);
    await waitFor('the outcome', async () => (await sql.query("SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'succeeded' AND attempts = 2", [hook.body.item.id])).rowCount === 1);
    expect(await c.stop()).toBe(0);
  }, 180_000);
});
