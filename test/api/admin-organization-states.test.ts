import { createHash } from 'node:crypto';
import pino from 'pino';
import { SecretBox } from '../../src/lib/crypto';
import { createJobRunner } from '../../src/jobs';
import { createOutbound } from '../../src/outbound';
import { createTestApp, type TestApp } from '../support/app';
import type { ManualClock } from '../support/clock';
import { bearer, createOrganization } from '../support/factories';

/**
 * GET /v1/admin/organizations?state= (docs/organization-deletion.md#what-platform-admins-see): active ones, those
 * scheduled for deletion, and the tombstones of purged ones.
 */
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ env: { ORG_DELETION_GRACE: '60s' } });
});
afterAll(() => t.close());

async function runLifecycle(): Promise<void> {
  const runner = createJobRunner({ db: t.db, clock: t.clock, logger: pino({ level: 'silent' }), secrets: new SecretBox(t.settings.secretKey!), outbound: createOutbound({ allowedNetworks: [] }), settings: t.settings, kinds: { webhooks: false, mail: false, lifecycle: true } });
  await runner.runOnce();
  await runner.stop();
}

it('lists organizations by state: active, deletion_scheduled, purged (tombstones)', async () => {
  const admin = await createOrganization(t, 'Platform');
  await t.db.updateTable('users').set({ is_platform_admin: true }).where('id', '=', admin.userId).execute();
  const kept = await createOrganization(t, 'Kept Co');
  const purged = await createOrganization(t, 'Gone Co');
  expect((await t.http.delete('/v1/org').set(...bearer(purged.token)).send({ confirm: 'Gone Co' })).status).toBe(202);
  (t.clock as ManualClock).advance(61_000);
  await runLifecycle();
  const scheduled = await createOrganization(t, 'Leaving Co');
  const del = await t.http.delete('/v1/org').set(...bearer(scheduled.token)).send({ confirm: 'Leaving Co' });
  expect(del.status).toBe(202);

  const list = (state?: string) => t.http.get('/v1/admin/organizations').query(state ? { state } : {}).set(...bearer(admin.token));
  const active = await list('active');
  expect(active.status).toBe(200);
  expect(active.body.items.map((o: { id: string }) => o.id).sort()).toEqual([admin.organizationId, kept.organizationId].sort());
  expect(active.body.items.every((o: { state: string }) => o.state === 'active')).toBe(true);

  const locked = await list('deletion_scheduled');
  expect(locked.body.items).toEqual([expect.objectContaining({ id: scheduled.organizationId, name: 'Leaving Co', state: 'deletion_scheduled', purgeAt: del.body.item.purgeAt })]);

  const gone = await list('purged');
  expect(gone.body.items).toEqual([
    { id: purged.organizationId, state: 'purged', nameSha256: createHash('sha256').update('Gone Co').digest('hex'), deletedAt: expect.any(String), deletedByUserId: purged.userId, purgedAt: expect.any(String) },
  ]);

  const all = await list();
  expect(all.body.items.map((o: { id: string }) => o.id).sort()).toEqual([admin.organizationId, kept.organizationId, scheduled.organizationId].sort());
  const bad = await list('deleted');
  expect([bad.status, bad.body.details?.[0]?.path]).toEqual([400, ['query', 'state']]);
});
