import type { LookupFunction } from 'node:net';
import type { ManualClock } from '../support/clock';
import { createOutbound } from '../../src/outbound';
import type { JobRunner } from '../../src/jobs';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { testDispatcher, WEBHOOK_TEST_ENV } from '../support/webhooks';
import { freePort, startReceiver, verifyWith, type Receiver } from '../fakes/webhook-receiver';

/**
 * Delivery per Standard Webhooks, checked by the `standardwebhooks` package on a local receiver,
 * and the at-least-once machinery (retries, backoff, timeouts, redirects, manual retry), driven by
 * the injected clock and `runOnce`.
 */
describe('webhook delivery', () => {
  let t: TestApp;
  let clock: ManualClock;
  let dispatcher: JobRunner;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await createTestApp({ env: { ...WEBHOOK_TEST_ENV, WEBHOOK_ENDPOINT_CONCURRENCY: '2' } });
    clock = t.clock as ManualClock;
    dispatcher = testDispatcher(t);
    receiver = await startReceiver();
  }, 240_000);
  afterAll(async () => {
    await dispatcher.stop();
    await receiver.close();
    await t.close();
  });

  async function endpoint(org: OrgOwner, path: string, events: string[] = ['*'], url = receiver.url(path)) {
    const res = await t.http.post('/v1/webhooks').set(...bearer(org.token)).send({ url, events });
    expect(res.status).toBe(201);
    return { id: res.body.item.id as string, secret: res.body.secret as string };
  }
  const at = (path: string) => receiver.received.filter((r) => r.path === path);
  const deliveries = async (org: OrgOwner, id: string) => (await t.http.get(`/v1/webhooks/${id}/deliveries`).set(...bearer(org.token))).body.items;
  /** An event of a chosen type for the organization: updating an endpoint writes `webhook.updated`. */
  const touch = (org: OrgOwner, id: string, description: string) => t.http.patch(`/v1/webhooks/${id}`).set(...bearer(org.token)).send({ description });

  it('signs each delivery so standardwebhooks verifies it, with the event as the body', async () => {
    const org = await createOrganization(t, 'Sig');
    const hook = await endpoint(org, '/sig');
    await touch(org, hook.id, 'v2');
    expect(await dispatcher.runOnce()).toBeGreaterThanOrEqual(2);
    const got = at('/sig');
    expect(got.map((r) => JSON.parse(r.body).type)).toEqual(['webhook.created', 'webhook.updated']);
    for (const r of got) {
      const payload = verifyWith(hook.secret, r, clock.now()) as { id: string };
      expect(r.headers['webhook-id']).toBe(payload.id);
      expect(r.headers['webhook-timestamp']).toBe(String(Math.floor(clock.now().getTime() / 1000)));
      expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
      expect(r.headers['content-type']).toBe('application/json');
    }
    const events = (await t.http.get('/v1/events').set(...bearer(org.token))).body.items;
    expect(JSON.parse(got[1]!.body)).toEqual(events[0]);
    // Tampering with the body or using another secret fails verification.
    expect(() => verifyWith(hook.secret, { ...got[0]!, body: got[0]!.body.replace('webhook', 'Webhook') }, clock.now())).toThrow();
    expect((await deliveries(org, hook.id)).map((d: { status: string; attempts: number; lastStatusCode: number }) => [d.status, d.attempts, d.lastStatusCode])).toEqual([
      ['succeeded', 1, 200],
      ['succeeded', 1, 200],
    ]);
    const other = await endpoint(org, '/other', ['member.*']);
    expect(() => verifyWith(other.secret, got[0]!, clock.now())).toThrow();
  });

  it('selects events by exact type, prefix and *, and skips a disabled endpoint without holding events', async () => {
    const org = await createOrganization(t, 'Filters');
    const exact = await endpoint(org, '/f-exact', ['webhook.updated']);
    await endpoint(org, '/f-prefix', ['webhook.*']);
    const none = await endpoint(org, '/f-none', ['member.*', 'team.created']);
    const off = await endpoint(org, '/f-off', ['*']);
    await t.http.patch(`/v1/webhooks/${off.id}`).set(...bearer(org.token)).send({ enabled: false });
    await touch(org, exact.id, 'x');
    await dispatcher.runOnce();
    // exact saw the disabling of `off` and the update of itself, both webhook.updated.
    expect(at('/f-exact').map((r) => JSON.parse(r.body).data.target.id)).toEqual([off.id, exact.id]);
    // prefix saw its own creation, the two later creations, the disabling and the update.
    expect(at('/f-prefix').map((r) => JSON.parse(r.body).type)).toEqual(['webhook.created', 'webhook.created', 'webhook.created', 'webhook.updated', 'webhook.updated']);
    expect(at('/f-none')).toHaveLength(0);
    // off was disabled before its own creation event went out: that pending delivery ended as failed.
    expect(at('/f-off')).toHaveLength(0);
    expect((await deliveries(org, off.id)).map((d: { status: string; lastError: string }) => [d.status, d.lastError])).toEqual([['failed', 'the endpoint was disabled']]);
    // Enabled again: what happened while it was disabled is not delivered later.
    await t.http.patch(`/v1/webhooks/${off.id}`).set(...bearer(org.token)).send({ enabled: true });
    await dispatcher.runOnce();
    expect(at('/f-off').map((r) => JSON.parse(r.body).type)).toEqual(['webhook.updated']);
    expect(JSON.parse(at('/f-off')[0]!.body).data.changes).toEqual({ enabled: { from: false, to: true } });
    expect(none.id).toMatch(/^whk_/);
  });

  it('test sends webhook.test to that endpoint whatever its filter; refused while disabled', async () => {
    const org = await createOrganization(t, 'Test');
    const hook = await endpoint(org, '/t', ['member.*']);
    const res = await t.http.post(`/v1/webhooks/${hook.id}/test`).set(...bearer(org.token));
    expect(res.status).toBe(202);
    expect(res.body.eventId).toMatch(/^evt_/);
    await dispatcher.runOnce();
    expect(at('/t')).toHaveLength(1);
    expect(verifyWith(hook.secret, at('/t')[0]!, clock.now())).toMatchObject({ id: res.body.eventId, type: 'webhook.test', data: { target: { type: 'webhook', id: hook.id } } });
    await t.http.patch(`/v1/webhooks/${hook.id}`).set(...bearer(org.token)).send({ enabled: false });
    const refused = await t.http.post(`/v1/webhooks/${hook.id}/test`).set(...bearer(org.token));
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('webhook_disabled');
  });

  it('signs with both secrets for 24 h after a rotation, then with the new one only', async () => {
    const org = await createOrganization(t, 'Rotate');
    const hook = await endpoint(org, '/rot', ['webhook.updated']);
    const rotated = (await t.http.post(`/v1/webhooks/${hook.id}/rotate-secret`).set(...bearer(org.token))).body.secret as string;
    await touch(org, hook.id, 'after rotation');
    await dispatcher.runOnce();
    const during = at('/rot')[0]!;
    expect(during.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(verifyWith(rotated, during, clock.now())).toMatchObject({ type: 'webhook.updated' });
    expect(verifyWith(hook.secret, during, clock.now())).toMatchObject({ type: 'webhook.updated' });

    clock.advance(24 * 3_600_000 + 1000);
    await touch(org, hook.id, 'a day later');
    await dispatcher.runOnce();
    const later = at('/rot')[1]!;
    expect(later.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(verifyWith(rotated, later, clock.now())).toMatchObject({ type: 'webhook.updated' });
    expect(() => verifyWith(hook.secret, later, clock.now())).toThrow();
  });

  it('retries a receiver that is down until it is up, with the same webhook-id, after about 5 s', async () => {
    const org = await createOrganization(t, 'Down');
    const port = await freePort();
    const hook = await endpoint(org, '/down', ['webhook.updated'], `http://127.0.0.1:${port}/down`);
    await touch(org, hook.id, 'while down');
    await dispatcher.runOnce();
    const [failed] = await deliveries(org, hook.id);
    expect(failed).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null, lastError: 'the connection was refused' });
    const wait = new Date(failed.nextAttemptAt).getTime() - clock.now().getTime();
    expect(wait).toBeGreaterThanOrEqual(4000);
    expect(wait).toBeLessThanOrEqual(6000);
    // Not due yet: nothing is attempted.
    await dispatcher.runOnce();
    expect((await deliveries(org, hook.id))[0].attempts).toBe(1);

    const up = await startReceiver(port);
    try {
      clock.advance(6000);
      await dispatcher.runOnce();
      expect(up.received).toHaveLength(1);
      expect(up.received[0]!.headers['webhook-id']).toBe(failed.eventId);
      verifyWith(hook.secret, up.received[0]!, clock.now());
      expect((await deliveries(org, hook.id))[0]).toMatchObject({ status: 'succeeded', attempts: 2, lastStatusCode: 200, lastError: null, nextAttemptAt: null });
    } finally {
      await up.close();
    }
  });

  it('backs off after 500s (about 5 s, then 30 s) and succeeds when the receiver recovers', async () => {
    const org = await createOrganization(t, 'Five');
    const hook = await endpoint(org, '/500', ['webhook.updated']);
    let failures = 2;
    const previous = receiver.respond;
    receiver.respond = (r) => (r.path === '/500' && failures-- > 0 ? { status: 500 } : previous(r));
    try {
      await touch(org, hook.id, 'x');
      await dispatcher.runOnce();
      let [d] = await deliveries(org, hook.id);
      expect(d).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: 500, lastError: 'the endpoint answered 500' });
      clock.advance(6000);
      await dispatcher.runOnce();
      [d] = await deliveries(org, hook.id);
      expect(d).toMatchObject({ status: 'pending', attempts: 2, lastStatusCode: 500 });
      const wait = new Date(d.nextAttemptAt).getTime() - clock.now().getTime();
      expect(wait).toBeGreaterThanOrEqual(24_000);
      expect(wait).toBeLessThanOrEqual(36_000);
      clock.advance(36_000);
      await dispatcher.runOnce();
      [d] = await deliveries(org, hook.id);
      expect(d).toMatchObject({ status: 'succeeded', attempts: 3, lastStatusCode: 200 });
      expect(new Set(at('/500').map((r) => r.headers['webhook-id']))).toEqual(new Set([d.eventId]));
    } finally {
      receiver.respond = previous;
    }
  });

  it('counts a reply slower than WEBHOOK_TIMEOUT_MS as a failure', async () => {
    const org = await createOrganization(t, 'Slow');
    const hook = await endpoint(org, '/slow', ['webhook.updated']);
    const previous = receiver.respond;
    receiver.respond = (r) => (r.path === '/slow' ? { status: 200, delayMs: 3000 } : previous(r));
    try {
      await touch(org, hook.id, 'x');
      const started = Date.now();
      await dispatcher.runOnce();
      expect(Date.now() - started).toBeLessThan(2900);
      expect((await deliveries(org, hook.id))[0]).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null, lastError: 'no answer within 1000 ms' });
    } finally {
      receiver.respond = previous;
    }
  });

  it('does not follow a redirect', async () => {
    const org = await createOrganization(t, 'Redirect');
    const hook = await endpoint(org, '/moved', ['webhook.updated']);
    const previous = receiver.respond;
    receiver.respond = (r) => (r.path === '/moved' ? { status: 307, headers: { location: receiver.url('/target') } } : previous(r));
    try {
      await touch(org, hook.id, 'x');
      await dispatcher.runOnce();
      expect(at('/moved')).toHaveLength(1);
      expect(at('/target')).toHaveLength(0);
      expect((await deliveries(org, hook.id))[0]).toMatchObject({ status: 'pending', lastStatusCode: 307, lastError: 'redirect (307) not followed' });
    } finally {
      receiver.respond = previous;
    }
  });

  it('refuses a name resolving to a private address at connect time: nothing is sent', async () => {
    const org = await createOrganization(t, 'Private');
    // A public-looking name the policy resolves to the receiver's loopback address, with no network allowed.
    const lookup = ((hostname: string, _options: unknown, callback: (err: Error | null, addresses: { address: string; family: number }[]) => void) =>
      hostname === 'hooks.customer.example'
        ? callback(null, [{ address: '127.0.0.1', family: 4 }])
        : callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), [])) as unknown as LookupFunction;
    const port = new URL(receiver.url()).port;
    const hook = await endpoint(org, '/private', ['webhook.updated'], `https://hooks.customer.example:${port}/private`);
    await touch(org, hook.id, 'x');
    const strict = testDispatcher(t, createOutbound({ allowedNetworks: [], lookup }));
    await strict.runOnce();
    expect(at('/private')).toHaveLength(0);
    const [d] = await deliveries(org, hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, lastStatusCode: null });
    expect(d.lastError).toMatch(/127\.0\.0\.1.*not allowed/);
  });

  it('retries by hand: the same event again, even after success', async () => {
    const org = await createOrganization(t, 'Manual');
    const hook = await endpoint(org, '/manual', ['webhook.updated']);
    await touch(org, hook.id, 'x');
    await dispatcher.runOnce();
    const [d] = await deliveries(org, hook.id);
    expect(d.status).toBe('succeeded');
    const res = await t.http.post(`/v1/webhooks/${hook.id}/deliveries/${d.id}/retry`).set(...bearer(org.token));
    expect(res.status).toBe(202);
    expect(res.body.item).toMatchObject({ id: d.id, status: 'pending' });
    await dispatcher.runOnce();
    expect(at('/manual').map((r) => r.headers['webhook-id'])).toEqual([d.eventId, d.eventId]);
    expect((await deliveries(org, hook.id))[0]).toMatchObject({ status: 'succeeded', attempts: 2 });
    const missing = await t.http.post(`/v1/webhooks/${hook.id}/deliveries/whd_01h2xcejqtf2nbrexx3vqjhp41/retry`).set(...bearer(org.token));
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe('delivery_not_found');
    const other = await createOrganization(t, 'Other');
    expect((await t.http.post(`/v1/webhooks/${hook.id}/deliveries/${d.id}/retry`).set(...bearer(other.token))).status).toBe(404);
  });

  it('a stuck endpoint holds only its own slots: others are delivered meanwhile', async () => {
    const org = await createOrganization(t, 'Stuck');
    const stuck = await endpoint(org, '/stuck', ['webhook.updated']);
    const previous = receiver.respond;
    receiver.respond = (r) => (r.path === '/stuck' ? { delayMs: 2500 } : previous(r));
    try {
      // Six events for the stuck endpoint; the fast one, created after four of them, gets the last two.
      for (let i = 0; i < 4; i++) await touch(org, stuck.id, `s${i}`);
      await endpoint(org, '/fast', ['webhook.updated']);
      for (let i = 4; i < 6; i++) await touch(org, stuck.id, `s${i}`);
      // The running loop (as in the service process), not runOnce: attempts overlap.
      const started = Date.now();
      dispatcher.start();
      const deadline = started + 20_000;
      while ((at('/fast').length < 2 || at('/stuck').length < 6) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await dispatcher.stop();
      expect(at('/fast')).toHaveLength(2);
      expect(at('/stuck')).toHaveLength(6);
      // WEBHOOK_ENDPOINT_CONCURRENCY=2: the stuck endpoint never has more than two requests open,
      // so its third request waits for a timeout, while the fast endpoint was served long before.
      expect(receiver.maxOpenByPath.get('/stuck')).toBe(2);
      const thirdStuck = at('/stuck')[2]!.at;
      expect(Math.max(...at('/fast').map((r) => r.at))).toBeLessThan(thirdStuck);
      const stuckDeliveries = await deliveries(org, stuck.id);
      expect(stuckDeliveries.every((d: { status: string; lastError: string }) => d.status === 'pending' && d.lastError === 'no answer within 1000 ms')).toBe(true);
    } finally {
      receiver.respond = previous;
    }
  });
});
