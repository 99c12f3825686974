import type { ManualClock } from '../support/clock';
import type { JobRunner } from '../../src/jobs';
import { createTestApp, type TestApp } from '../support/app';
import { bearer, createOrganization, type OrgOwner } from '../support/factories';
import { testDispatcher, WEBHOOK_TEST_ENV } from '../support/webhooks';
import { startReceiver, type Receiver } from '../fakes/webhook-receiver';

/** Long spans of the injected clock: the attempt limit, disabling after 3 days failing, 30-day retention. */
describe('webhook lifecycle over days', () => {
  let t: TestApp;
  let clock: ManualClock;
  let dispatcher: JobRunner;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await createTestApp({ env: { ...WEBHOOK_TEST_ENV, WEBHOOK_MAX_ATTEMPTS: '8', SESSION_TTL: '365d' } });
    clock = t.clock as ManualClock;
    dispatcher = testDispatcher(t);
    receiver = await startReceiver();
    receiver.respond = (r) => (r.path.startsWith('/fail') ? { status: 503 } : { status: 204 });
  }, 240_000);
  afterAll(async () => {
    await receiver.close();
    await t.close();
  });

  async function endpoint(org: OrgOwner, path: string, events: string[]) {
    const res = await t.http.post('/v1/webhooks').set(...bearer(org.token)).send({ url: receiver.url(path), events });
    expect(res.status).toBe(201);
    return res.body.item.id as string;
  }
  const deliveries = async (org: OrgOwner, id: string) => (await t.http.get(`/v1/webhooks/${id}/deliveries`).set(...bearer(org.token))).body.items;
  const touch = (org: OrgOwner, id: string, description: string) => t.http.patch(`/v1/webhooks/${id}`).set(...bearer(org.token)).send({ description });

  it('an endpoint secret that no longer decrypts fails the attempt, unsent and retried, without throwing out of the runner', async () => {
    const org = await createOrganization(t, 'Unreadable');
    const id = await endpoint(org, '/unreadable', ['webhook.updated']);
    // As if SECRET_KEY had changed since the secret was sealed.
    await t.db.updateTable('webhook_endpoints').set({ secret_sealed: 'v1.not-a-sealed-secret' }).where('id', '=', id).execute();
    await touch(org, id, 'x');
    // runOnce rejected here (and the service's loop ended the process with an unhandled rejection).
    await expect(dispatcher.runOnce()).resolves.toBeGreaterThanOrEqual(1);
    const [d] = await deliveries(org, id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, lastError: "the endpoint's signing secret could not be read", lastStatusCode: null });
    expect(receiver.received.filter((r) => r.path === '/unreadable')).toHaveLength(0);
  });

  it('gives up after WEBHOOK_MAX_ATTEMPTS with backoff of about 5 s, 30 s, 2 min, 10 min, 1 h, 6 h, 12 h', async () => {
    const org = await createOrganization(t, 'Limit');
    const id = await endpoint(org, '/fail-limit', ['webhook.updated']);
    await touch(org, id, 'x');
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 8; attempt++) {
      await dispatcher.runOnce();
      const [d] = await deliveries(org, id);
      expect(d.attempts).toBe(attempt);
      if (attempt < 8) {
        expect(d.status).toBe('pending');
        const wait = new Date(d.nextAttemptAt).getTime() - clock.now().getTime();
        waits.push(wait);
        clock.advance(wait);
      } else {
        expect(d).toMatchObject({ status: 'failed', nextAttemptAt: null, lastStatusCode: 503 });
      }
    }
    const nominal = [5_000, 30_000, 120_000, 600_000, 3_600_000, 21_600_000, 43_200_000];
    waits.forEach((w, i) => {
      expect(w).toBeGreaterThanOrEqual(nominal[i]! * 0.8 - 1);
      expect(w).toBeLessThanOrEqual(nominal[i]! * 1.2 + 1);
    });
    expect(receiver.received.filter((r) => r.path === '/fail-limit')).toHaveLength(8);
    // Nothing more happens, however long we wait.
    clock.advance(7 * 24 * 3_600_000);
    await dispatcher.runOnce();
    expect(receiver.received.filter((r) => r.path === '/fail-limit')).toHaveLength(8);
  });

  it('disables an endpoint that has failed for 3 days in a row (event webhook.disabled); a success resets the streak', async () => {
    const org = await createOrganization(t, 'Streak');
    const failing = await endpoint(org, '/fail-streak', ['webhook.updated']);
    await endpoint(org, '/watch', ['webhook.disabled']);
    const day = 24 * 3_600_000;
    await touch(org, failing, 'day 0');
    await dispatcher.runOnce();
    clock.advance(2 * day);
    await touch(org, failing, 'day 2');
    await dispatcher.runOnce();
    expect((await t.http.get(`/v1/webhooks/${failing}`).set(...bearer(org.token))).body.item.enabled).toBe(true);
    clock.advance(day);
    await touch(org, failing, 'day 3');
    await dispatcher.runOnce();
    const item = (await t.http.get(`/v1/webhooks/${failing}`).set(...bearer(org.token))).body.item;
    expect(item.enabled).toBe(false);
    // Its pending deliveries are not held for it.
    expect((await deliveries(org, failing)).every((d: { status: string }) => d.status === 'failed')).toBe(true);
    const disabled = (await t.http.get('/v1/events?type=webhook.disabled').set(...bearer(org.token))).body.items;
    expect(disabled).toHaveLength(1);
    expect(disabled[0].data).toEqual({ target: { type: 'webhook', id: failing }, changes: { enabled: { from: true, to: false } } });
    await dispatcher.runOnce();
    const seen = receiver.received.filter((r) => r.path === '/watch').map((r) => JSON.parse(r.body));
    expect(seen.map((e) => e.id)).toEqual([disabled[0].id]);
    // Disabled: later events are skipped for it.
    const before = receiver.received.filter((r) => r.path === '/fail-streak').length;
    await touch(org, failing, 'while disabled');
    clock.advance(day);
    await dispatcher.runOnce();
    expect(receiver.received.filter((r) => r.path === '/fail-streak')).toHaveLength(before);

    // Re-enabled and healthy: a success clears the streak, so a new failure starts a new window.
    const healthy = await endpoint(org, '/ok-streak', ['webhook.updated']);
    await touch(org, healthy, 'ok');
    await dispatcher.runOnce();
    const row = await t.db.selectFrom('webhook_endpoints').select('failing_since').where('id', '=', healthy).executeTakeFirstOrThrow();
    expect(row.failing_since).toBeNull();
  });

  it('keeps events 30 days: older ones are hidden and pruned with their deliveries', async () => {
    const org = await createOrganization(t, 'Retention');
    const id = await endpoint(org, '/keep', ['*']);
    await touch(org, id, 'old');
    await dispatcher.runOnce();
    const old = (await t.http.get('/v1/events').set(...bearer(org.token))).body.items;
    expect(old.map((e: { type: string }) => e.type)).toEqual(['webhook.updated', 'webhook.created', 'organization.created']);
    clock.advance(29 * 24 * 3_600_000);
    await touch(org, id, 'recent');
    clock.advance(2 * 24 * 3_600_000);
    const listed = (await t.http.get('/v1/events').set(...bearer(org.token))).body.items;
    expect(listed.map((e: { data: { changes: { description?: { to: string } } } }) => e.data.changes.description?.to)).toEqual(['recent']);
    expect(await dispatcher.maintain()).toBeGreaterThanOrEqual(3);
    const left = await t.db.selectFrom('events').select('id').where('organization_id', '=', org.organizationId).execute();
    expect(left).toHaveLength(1);
    expect(await t.db.selectFrom('webhook_deliveries').select('id').where('event_id', 'in', old.map((e: { id: string }) => e.id)).execute()).toEqual([]);
  });
});
